// Scope: the raw Update-with-Start baseline of the task-creation benchmark: a workflow that
// accepts one `ready` update, answers it at once, and returns.
import { condition, defineUpdate, setHandler } from '@temporalio/workflow';

export const readyUpdate = defineUpdate<string>('ready');

export async function emptyWorkflow(): Promise<void> {
  let done = false;
  setHandler(readyUpdate, () => {
    done = true;
    return 'ok';
  });
  await condition(() => done);
}
