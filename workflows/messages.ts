/**
 * Every signal, query and update of the approval workflow, defined once and imported by the
 * workflow, the MCP front and the tests. The SEP-2848 ↔ Temporal mapping: task creation is
 * a durable start, then the `taskCreated` update; `tasks/get` is the `task` query; `tasks/update` the
 * `provideInput` update; `tasks/cancel` the `cancel` update; backend callbacks the
 * `backendCallback` update.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { BackendCallback, CancelOutcome, TaskSnapshot } from './types.js';

/**
 * Update used with Update-with-Start: resolves once the backend handle of the first submission is
 * persisted in workflow state (or the task already terminalized), so `CreateTaskResult` is only
 * returned for a durable task (SEP-2848 §Crash-consistent creation). Returns the snapshot and the
 * run id the task id is derived from.
 */
export const taskCreatedUpdate = defineUpdate<{ runId: string; snapshot: TaskSnapshot }>('taskCreated');

/**
 * Update behind `tasks/update`: answers the outstanding `inputRequests` of an `input_required`
 * task. Its validator refuses (nothing recorded) when the task is not waiting for input or an
 * outstanding key lacks an accepted, valid answer; the front answers those -32602.
 */
export const provideInputUpdate = defineUpdate<'accepted', [Record<string, unknown>]>('provideInput');

/** Query behind `tasks/get` while the workflow is open. */
export const taskQuery = defineQuery<TaskSnapshot>('task');

/**
 * Update behind `tasks/cancel`: the cancel compare-and-set against the execution claim
 * (SEP-2848 §Cancellation). Returns what won.
 */
export const cancelUpdate = defineUpdate<CancelOutcome>('cancel');

/**
 * Signal behind `tasks/cancel` when no worker took {@link cancelUpdate} in time: the durable form
 * of the same request. Recorded in history at once, it performs the same compare-and-set when a
 * worker next runs the task (a cancel that loses to an earlier claim changes nothing), so the
 * front can truthfully answer "recorded, will be applied" while no worker runs.
 */
export const cancelRequestSignal = defineSignal('cancelRequested');

/**
 * Update from the callback receiver: the backend says something changed. A hint, never authority.
 * Its synchronous validator rejects a replayed delivery (same `callbackId`) and a callback for a
 * consumed, superseded or unknown generation, so those leave no trace in history and trigger no
 * status fetch (SEP-2848 §Security, callback authenticity; §Completion, request). An update rather
 * than a signal because only an update can be refused before it is recorded.
 */
export const backendCallbackUpdate = defineUpdate<'accepted', [BackendCallback]>('backendCallback');
