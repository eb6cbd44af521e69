// Scope: approve → notification vs approve → result, same run. For K tasks created through MCP
// instance A: open a `subscriptions/listen` stream for the task on A, approve its request at the
// approval service, and time until the `completed` `notifications/tasks` arrives; interleaved with
// it, the approve-result scenario's sample (poll `tasks/get` every 5 ms until `completed`). Also
// checks, from A's `countersign_task_reads_total`, that no read of a subscribed task was a query.
import { randomUUID } from 'node:crypto';
import type { JsonRpcMessage, WireClient } from '@countersign/client';
import { createTask, decide, pendingRequestId, type BenchContext } from '../lib/context.js';
import { counterDelta, taskReads } from '../lib/mcp-probe.js';
import { interleave, latencies, round, type LatencyFigures } from '../lib/stats.js';
import { approveThenPoll, POLL_GAP_MS } from './approve-result.js';

export interface ApproveNotifyResult {
  samplesPerSide: number;
  pollGapMs: number;
  /** Decision → the `completed` notification on the task's `subscriptions/listen` stream. */
  notification: LatencyFigures;
  /** Decision → the first `tasks/get` answering `completed` (as approve → result). */
  result: LatencyFigures;
  ratio: { p50: number; p99: number };
  target: number;
  met: boolean;
  /** A's reads by source while each subscribed task was followed (its stream's first state; no poll). */
  subscribedReads: Record<string, number>;
  /** Of them by query: 0 when the subscription is served from the record and the feed. */
  subscribedQueryReads: number;
  dispositions: Record<string, number>;
}

/** Notification latency / result latency, p50, the target. */
const TARGET = 1.2;
const STREAM_TIMEOUT_MS = 30_000;
let seq = 0;

/** The next `notifications/tasks` for `taskId` on the stream (acknowledgement and keep-alives skipped). */
async function nextTask(it: AsyncIterator<JsonRpcMessage>, taskId: string): Promise<{ status: string; result?: Record<string, unknown> }> {
  for (;;) {
    const next = await it.next();
    if (next.done) throw new Error('subscriptions/listen stream ended before the task completed');
    const m = next.value;
    if (m.error) throw new Error(`subscriptions/listen refused: ${m.error.message}`);
    if (m.method === 'notifications/subscriptions/acknowledged') {
      const ids = (m.params?.notifications as { taskIds?: unknown } | undefined)?.taskIds;
      if (!Array.isArray(ids) || !ids.includes(taskId)) throw new Error('subscriptions/listen did not acknowledge the task');
    }
    if (m.method === 'notifications/tasks' && m.params?.taskId === taskId) return m.params as { status: string };
  }
}

/** One sample: subscribe, approve, ms until the completed notification; and A's reads meanwhile. */
async function approveThenNotify(ctx: BenchContext, client: WireClient) {
  const memo = `notify ${seq++} ${randomUUID()}`;
  const taskId = await createTask(client, memo);
  const id = await pendingRequestId(ctx, memo);
  const before = await taskReads(ctx.mcpA.origin);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error('no completed notification in time')), STREAM_TIMEOUT_MS);
  const { messages } = await client.stream('subscriptions/listen', { notifications: { taskIds: [taskId] } }, { signal: abort.signal });
  const it = messages[Symbol.asyncIterator]();
  try {
    const first = await nextTask(it, taskId); // the task's current state
    if (first.status !== 'working') throw new Error(`subscribed task is ${first.status}`);
    const t0 = performance.now();
    await decide(ctx, id, 'approve');
    for (;;) {
      const t = await nextTask(it, taskId);
      if (t.status === 'completed') {
        const ms = performance.now() - t0;
        const v = (t.result?._meta as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/tool-approval-disposition'];
        return { ms, disposition: typeof v === 'string' ? v : 'unknown', reads: counterDelta(before, await taskReads(ctx.mcpA.origin)) };
      }
      if (t.status !== 'working') throw new Error(`subscribed task ended ${t.status}`);
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
    await it.return?.().catch(() => undefined);
  }
}

export async function approveNotifyScenario(ctx: BenchContext, samples = ctx.smoke ? 3 : 30): Promise<ApproveNotifyResult> {
  ctx.log(`bench: approve → notification vs approve → result, ${samples} samples per side, interleaved`);
  const client = await ctx.client('bench-notify');
  await approveThenPoll(ctx, client, `notify warm-up ${randomUUID()}`);
  await approveThenNotify(ctx, client);
  const lat = { push: [] as number[], poll: [] as number[] };
  const subscribedReads: Record<string, number> = {};
  const dispositions: Record<string, number> = {};
  for (let i = 0; i < samples; i++) {
    for (const side of interleave(i, 'push' as const, 'poll' as const)) {
      const s: { ms: number; disposition: string; reads?: Record<string, number> } =
        side === 'push' ? await approveThenNotify(ctx, client) : await approveThenPoll(ctx, client, `notify poll ${seq++} ${randomUUID()}`);
      lat[side].push(s.ms);
      dispositions[s.disposition] = (dispositions[s.disposition] ?? 0) + 1;
      for (const [k, v] of Object.entries(s.reads ?? {})) subscribedReads[k] = (subscribedReads[k] ?? 0) + v;
    }
  }
  const notification = latencies(lat.push);
  const result = latencies(lat.poll);
  const ratio = { p50: round(notification.p50Ms / result.p50Ms), p99: round(notification.p99Ms / result.p99Ms) };
  ctx.log(
    `  notification ${JSON.stringify(notification)} result ${JSON.stringify(result)} ratio ${JSON.stringify(ratio)}; subscribed reads ${JSON.stringify(subscribedReads)}`,
  );
  return {
    samplesPerSide: samples,
    pollGapMs: POLL_GAP_MS,
    notification,
    result,
    ratio,
    target: TARGET,
    met: ratio.p50 <= TARGET,
    subscribedReads,
    subscribedQueryReads: subscribedReads.query ?? 0,
    dispositions,
  };
}
