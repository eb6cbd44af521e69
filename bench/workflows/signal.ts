// Scope: the bare signal-then-query baseline of the approve → result benchmark: a workflow that
// waits for one `decide` signal, records it, and returns; `state` answers the query meanwhile.
import { condition, defineQuery, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';

export const decideSignal = defineSignal<[string]>('decide');
export const stateQuery = defineQuery<string>('state');

export async function signalWorkflow(): Promise<string> {
  let state = 'working';
  setHandler(decideSignal, (d) => {
    state = d;
  });
  setHandler(stateQuery, () => state);
  await condition(() => state !== 'working');
  return state;
}

const { noopStep } = proxyActivities<{ noopStep(step: string): Promise<string> }>({ startToCloseTimeout: '10s' });

/**
 * Fair variant of the baseline: after the signal, the same number of activity round trips a
 * Countersign approval makes before its result (authoritative status, policy re-evaluation, the
 * tool), each a no-op, then the result.
 */
export async function shapedDecisionWorkflow(): Promise<string> {
  let state = 'working';
  let decided = false;
  setHandler(decideSignal, () => {
    decided = true;
  });
  setHandler(stateQuery, () => state);
  await condition(() => decided);
  for (const step of ['status', 'reevaluate', 'execute']) await noopStep(step);
  state = 'approved';
  return state;
}
