/**
 * How the MCP front reads one approval run for `tasks/get` (and for the push stream of
 * `subscriptions/listen`, the companion `approval_status` tool and the 2025-11-25 face), as named
 * steps over a Temporal client with the payload codec:
 *
 * - {@link readByRecord} (the default): one DescribeWorkflowExecution. An open run answers with
 *   the task record in its memo (`workflows/task-record.ts`) — the `task` query's snapshot written
 *   by the workflow in the same workflow task as each change — plus a long-running tool's latest
 *   heartbeat from the same answer. No query, so no worker, no workflow activation, no billable
 *   action, and a pending task reads the same while every worker is stopped. The query still
 *   answers whenever the record cannot: a record of a version this reader does not know, a completed
 *   task whose result is too large for the record (in the moment before its run closes), a record
 *   of an unknown version.
 * - {@link readByQuery}: today's alternative and the definition the record follows — the `task`
 *   query while the run is open (a worker answers; one action), the run's result once closed.
 *   `COUNTERSIGN_TASK_READS=query` selects it (docs/PRODUCTION.md), the bench compares the two.
 * - {@link readClosedRun}: a run that has closed: its result (the terminal snapshot) when it
 *   completed — from the record when the record holds it, else from the close event — answered
 *   until `createdAt + ttlMs`; a terminated or failed run answered as outcome-unknown (the tool was
 *   scheduled) or `failed` (it was not), never as an unknown task.
 * - {@link describeOwnedRun}: the caller's run before a change (`tasks/update`, `tasks/cancel`):
 *   its handle and description.
 *
 * Every read checks the caller's owner key against the run's and answers `null` for a mismatch,
 * exactly like an unknown or expired task (SEP-2848 §Security: the task id is not an oracle).
 * Errors: Temporal's own (the caller's guard turns "no answer" into a retryable 503).
 * Deliberately does not: cache (`task-feed.ts` does), or compute the poll interval (`poll-interval.ts`).
 */
import {
  QueryNotRegisteredError,
  QueryRejectedError,
  type Client,
  type WorkflowClient,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { approvalWorkflow } from '../../workflows/approval.js';
import { taskQuery } from '../../workflows/messages.js';
import { outcomeUnknownResult } from '../../workflows/results.js';
import { readTaskRecord, servableSnapshot, TASK_RECORD_MEMO_KEY } from '../../workflows/task-record.js';
import type { TaskSnapshot, ToolProgress } from '../../workflows/types.js';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { isRecord } from './narrow.js';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { parseTaskId } from '../../workflows/task-id.js';

/** `WorkflowExecutionStatus.COMPLETED` of the Temporal API, as a query rejection reports it. */
const WORKFLOW_EXECUTION_STATUS_COMPLETED = 2;

/** A run: the two halves of a task id (`workflows/task-id.ts`). */
export interface RunIds {
  workflowId: string;
  runId: string;
}

/** What every read needs: the client (payload codec installed), a client whose queries are refused on closed runs, and retention. */
export interface ReadContext {
  client: Client;
  /** The same connection and codec with `queryRejectCondition: 'NOT_OPEN'`: a query of a closed run is refused by the server, never replayed. */
  openRuns: WorkflowClient;
  /** How long a terminal result stays retrievable after close, ms (SEP-2848 resultRetention). */
  resultRetentionMs: number;
  /** `pollIntervalMs` of a snapshot made up here (a terminated run), ms. */
  clientPollIntervalMs: number;
}

/** Where a read's snapshot came from: the memo record, the `task` query, or the closed run. */
export type ReadSource = 'record' | 'query' | 'closed';

/** A read's answer: the caller's task snapshot and where it came from; `null` = unknown, expired or not the caller's. */
export type ReadAnswer = { snapshot: TaskSnapshot; source: ReadSource } | null;

/**
 * Read the run by its record (module header): one describe; the query only when the record
 * cannot answer. `ownerKey`: the caller's (`taskOwnerKeyOf`).
 */
export async function readByRecord(ctx: ReadContext, ids: RunIds, ownerKey: string): Promise<ReadAnswer> {
  const described = await describeApprovalRun(ctx.client, ids);
  if (!described || described.memo?.owner !== ownerKey) return null;
  if (described.status.name !== 'RUNNING') return readClosedRun(ctx, ids, ownerKey, described);
  const record = readTaskRecord(described.memo?.[TASK_RECORD_MEMO_KEY]);
  const fromRecord = record ? servableSnapshot(record) : undefined;
  if (fromRecord) return { snapshot: await withProgress(ctx.client, described, fromRecord), source: 'record' };
  // no record this reader can serve: ask the workflow itself
  return queryOpenRun(ctx, ids, ownerKey, described);
}

/**
 * Read the run by its `task` query while open (a worker answers), its result once closed: the
 * path `tasks/get` took before the record, and the definition the record follows.
 */
export async function readByQuery(ctx: ReadContext, ids: RunIds, ownerKey: string): Promise<ReadAnswer> {
  try {
    const snap = await ctx.openRuns.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId).query(taskQuery);
    if (typeof snap?.ownerKey === 'string') {
      if (snap.ownerKey !== ownerKey) return null;
      const described = snap.phase === 'executing' ? await describeApprovalRun(ctx.client, ids).catch(() => null) : null;
      return { snapshot: described ? await withProgress(ctx.client, described, snap) : snap, source: 'query' };
    }
  } catch (err) {
    if (isWorkflowNotFound(err)) return null;
    // QueryNotRegisteredError is any INVALID_ARGUMENT answer, also a query that failed inside an
    // open approval workflow: the describe below decides (a foreign id stays unknown; the owner of
    // an open task whose query fails gets an internal error, never "unknown task").
    if (!(err instanceof QueryRejectedError) && !(err instanceof QueryNotRegisteredError)) throw err;
    if (err instanceof QueryRejectedError && err.status === WORKFLOW_EXECUTION_STATUS_COMPLETED) {
      const closed = await completedSnapshot(ctx.client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId));
      if (closed) return closed.ownerKey === ownerKey ? unlessExpired(closed) : null;
    }
  }
  const described = await describeApprovalRun(ctx.client, ids);
  if (!described || described.memo?.owner !== ownerKey) return null;
  if (described.status.name === 'RUNNING') return queryOpenRun(ctx, ids, ownerKey, described);
  return readClosedRun(ctx, ids, ownerKey, described);
}

/**
 * A closed run (status other than RUNNING in `described`): completed → its terminal snapshot,
 * expired after `createdAt + ttlMs`; terminated, failed or timed out by an operator or a bug →
 * outcome-unknown when the tool was ever scheduled (the claim was made and a side effect may exist),
 * else `failed` with -32603 (SEP-2848 §Lifecycle), expired `resultRetentionMs` after close.
 */
export async function readClosedRun(
  ctx: ReadContext,
  ids: RunIds,
  ownerKey: string,
  described: WorkflowExecutionDescription,
): Promise<ReadAnswer> {
  const handle = ctx.client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId);
  if (described.status.name === 'COMPLETED') {
    const record = readTaskRecord(described.memo?.[TASK_RECORD_MEMO_KEY]);
    const recorded = record ? servableSnapshot(record) : undefined;
    // the record is terminal only if the run's last workflow task wrote it (it always does: `flush`)
    const terminal = recorded && isTerminalStatus(recorded.status) ? recorded : ((await completedSnapshot(handle)) ?? undefined);
    if (!terminal) return null;
    return terminal.ownerKey === ownerKey ? unlessExpired(terminal) : null;
  }
  const closedAt = described.closeTime?.getTime() ?? Date.now();
  if (Date.now() > closedAt + ctx.resultRetentionMs) return null; // expired
  const base = {
    ownerKey,
    policyReason: '',
    createdAt: described.startTime.toISOString(),
    lastUpdatedAt: (described.closeTime ?? described.startTime).toISOString(),
    ttlMs: closedAt - described.startTime.getTime() + ctx.resultRetentionMs,
    pollIntervalMs: ctx.clientPollIntervalMs,
    generation: 0,
    phase: 'terminal' as const,
  };
  const history = await handle.fetchHistory();
  const claimed = (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool');
  if (claimed) {
    return {
      snapshot: { ...base, status: 'completed', claimed: true, result: outcomeUnknownResult(), disposition: 'outcome-unknown' },
      source: 'closed',
    };
  }
  return {
    snapshot: {
      ...base,
      status: 'failed',
      claimed: false,
      error: { code: -32603, message: 'Internal error: the approval task ended abnormally' },
    },
    source: 'closed',
  };
}

/** True for the SEP-2663 statuses that end a task. */
export function isTerminalStatus(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/**
 * Describe the run; null when it does not exist or is not an approval workflow (a task id naming
 * another workflow type reads as unknown).
 */
export async function describeApprovalRun(client: Client, ids: RunIds): Promise<WorkflowExecutionDescription | null> {
  try {
    const desc = await client.workflow.getHandle(ids.workflowId, ids.runId).describe();
    return desc.type === 'approvalWorkflow' ? desc : null;
  } catch (err) {
    if (isWorkflowNotFound(err)) return null;
    throw err;
  }
}

/**
 * The caller's run of task `taskId` for a change (`tasks/update`, `tasks/cancel`): its handle and
 * description, or null when the id is malformed, the run unknown or not an approval workflow, or
 * not the caller's (the owner key in its memo; the same null as unknown). Closed runs are returned
 * too: the caller decides what a change of one means.
 */
export async function describeOwnedRun(
  client: Client,
  taskId: unknown,
  caller: Principal,
): Promise<{ handle: WorkflowHandle<typeof approvalWorkflow>; desc: WorkflowExecutionDescription } | null> {
  const ids = parseTaskId(taskId);
  if (!ids) return null;
  const handle = client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId);
  try {
    const desc = await handle.describe();
    if (desc.type !== 'approvalWorkflow' || desc.memo?.owner !== taskOwnerKeyOf(caller)) return null;
    return { handle, desc };
  } catch (err) {
    if (isWorkflowNotFound(err)) return null;
    throw err;
  }
}

/** The `task` query of an open run the caller owns (`described` says so); a run that closed meanwhile is read as closed. */
async function queryOpenRun(ctx: ReadContext, ids: RunIds, ownerKey: string, described: WorkflowExecutionDescription): Promise<ReadAnswer> {
  try {
    const snap = await ctx.openRuns.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId).query(taskQuery);
    return { snapshot: await withProgress(ctx.client, described, snap), source: 'query' };
  } catch (err) {
    if (!(err instanceof QueryRejectedError)) throw err;
    const again = await describeApprovalRun(ctx.client, ids);
    if (!again || again.status.name === 'RUNNING') throw err;
    return readClosedRun(ctx, ids, ownerKey, again);
  }
}

/** A completed run's result (its terminal snapshot), or null when it is not one. */
async function completedSnapshot(handle: WorkflowHandle<typeof approvalWorkflow>): Promise<TaskSnapshot | null> {
  const snap: TaskSnapshot | undefined = await handle.result();
  return typeof snap?.ownerKey === 'string' ? snap : null;
}

/** The answer for a completed snapshot, or null once past `createdAt + ttlMs` (exactly what the task advertised). */
function unlessExpired(snap: TaskSnapshot): ReadAnswer {
  if (snap.ttlMs !== null && Date.now() > Date.parse(snap.createdAt) + snap.ttlMs) return null;
  return { snapshot: snap, source: 'closed' };
}

/**
 * A task executing a long-running tool, with the execution attempt's latest heartbeat details as
 * `progress` (docs/CHANGE-GATE.md §Progress): read from the run's pending `executeTool` activity in
 * `described`, decoded through the client's data converter (the payload codec). Best effort: any
 * problem, or details that are not a well-formed `ToolProgress`, leaves the snapshot as it is.
 */
export async function withProgress(client: Client, described: WorkflowExecutionDescription, snap: TaskSnapshot): Promise<TaskSnapshot> {
  if (snap.status !== 'working' || snap.phase !== 'executing') return snap;
  try {
    const pending = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'executeTool');
    let payloads: Payload[] = pending?.heartbeatDetails?.payloads ?? [];
    if (payloads.length === 0) return snap;
    const converter = client.options.loadedDataConverter;
    for (const codec of [...converter.payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    const progress = toolProgressOf(payloads[0] ? converter.payloadConverter.fromPayload(payloads[0]) : undefined);
    return progress ? { ...snap, progress } : snap;
  } catch {
    return snap;
  }
}

/** `details` as a `ToolProgress` when it is one (1 ≤ step ≤ of ≤ 1000, a string label), else undefined. */
function toolProgressOf(details: unknown): ToolProgress | undefined {
  if (!isRecord(details)) return undefined;
  const { step, of, label } = details;
  if (typeof step !== 'number' || typeof of !== 'number' || !Number.isInteger(step) || !Number.isInteger(of)) return undefined;
  if (typeof label !== 'string' || step < 1 || step > of || of > 1000) return undefined;
  return { step, of, label };
}
