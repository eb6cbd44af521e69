/**
 * Where a replay's calls come from: the approval workflows' recorded call bindings. Every call that
 * opened a task (requestable at the time, in band or out of band) started an `approvalWorkflow`
 * whose input is the call binding, arguments included, encrypted by the payload codec
 * (`src/temporal/payload-codec.ts`); decoding it gives the call exactly as the gate evaluated it,
 * hidden (sensitive) fields with their real values, which stay in this process (the report never
 * carries arguments). Why this source and not the receipts: docs/DESIGN.md §Policy replay and
 * shadow mode.
 *
 * Deliberately does not: see calls that opened no task (allowed, plainly denied, and requestable or
 * in-band calls that ended without a task are in the call records, `call-records.ts`, when those are on), or read a run twice (a retried call with
 * the same binding joins its task, so it is one call).
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { workflowInputOf } from '../receipts/task-evidence.js';
import type { RecordedCall } from './replay.js';

/**
 * The calls recorded since `sinceMs` (ms since the epoch, by workflow start time), oldest first:
 * every approval workflow run of the namespace `temporal` reads, open or closed, its input decoded
 * with `codec`. Throws Temporal's error when the server cannot be reached, and the codec's when a
 * payload key is missing.
 */
export async function recordedCallsSince(temporal: Client, codec: PayloadCodec, sinceMs: number): Promise<RecordedCall[]> {
  const query = `WorkflowType = 'approvalWorkflow' AND StartTime >= '${new Date(sinceMs).toISOString()}'`;
  const runs: Array<{ workflowId: string; runId: string; startMs: number }> = [];
  for await (const w of temporal.workflow.list({ query }))
    runs.push({ workflowId: w.workflowId, runId: w.runId, startMs: w.startTime.getTime() });
  runs.sort((a, b) => a.startMs - b.startMs || a.workflowId.localeCompare(b.workflowId));
  const calls: RecordedCall[] = [];
  for (const run of runs) {
    const history = await temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    const { binding } = await workflowInputOf(history, codec);
    calls.push({
      ref: run.workflowId,
      at: new Date(run.startMs).toISOString(),
      tool: binding.tool,
      principal: binding.principal,
      arguments: binding.arguments,
    });
  }
  return calls;
}
