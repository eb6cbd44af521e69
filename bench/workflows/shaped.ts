// Scope: the "same Temporal shape" baseline of the task-creation benchmark (a fair variant beside
// the strict raw Update-with-Start one): per new task, an Update-with-Start `reserve` on a
// long-lived per-principal workflow, then an Update-with-Start on a new workflow whose update
// answers once a (no-op) submit activity has completed, and which signals the first workflow — the
// Temporal operations Countersign performs, without its gate, codec, approval service or state.
import {
  allHandlersFinished,
  condition,
  defineSignal,
  defineUpdate,
  getExternalWorkflowHandle,
  proxyActivities,
  setHandler,
  uuid4,
} from '@temporalio/workflow';

export const shapeReserveUpdate = defineUpdate<string, [string]>('reserve');
export const shapeClaimSignal = defineSignal<[string]>('claim');
export const shapeCreatedUpdate = defineUpdate<string>('created');

const { noopSubmit } = proxyActivities<{ noopSubmit(id: string): Promise<string> }>({ startToCloseTimeout: '10s' });

export async function shapeLimiterWorkflow(): Promise<void> {
  const pending = new Map<string, string>();
  setHandler(shapeReserveUpdate, (id) => {
    const r = uuid4();
    pending.set(id, r);
    return r;
  });
  setHandler(shapeClaimSignal, () => undefined);
  await condition(() => false);
}

export async function shapeApprovalWorkflow(limiterId: string): Promise<void> {
  let handle: string | undefined;
  setHandler(shapeCreatedUpdate, async () => {
    await condition(() => handle !== undefined);
    return handle!;
  });
  // Like the approval workflow: the claim signal is issued, not awaited, before the submit.
  const claimed = getExternalWorkflowHandle(limiterId).signal(shapeClaimSignal, 'claimed');
  handle = await noopSubmit(limiterId);
  await claimed;
  // Finish once the update is answered, so baseline runs do not pile up in the worker cache.
  await condition(allHandlersFinished);
}
