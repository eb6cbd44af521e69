// Scope: approve → result. From the approver's decision (POST to the reference approval service)
// to the first `tasks/get` through MCP instance A that shows `completed`; vs a bare
// signal-then-query round trip on the same Temporal server (signal a waiting workflow, query until
// the query shows it). Both sides poll with the same gap; samples interleaved, median of runs.
import { randomUUID } from 'node:crypto';
import { shapedDecisionWorkflow, signalWorkflow, decideSignal, stateQuery } from '../workflows/signal.js';
import type { WireClient } from '@countersign/client';
import { BASELINE_QUEUE, createTask, decide, pendingRequestId, type BenchContext } from '../lib/context.js';
import { interleave, latencies, medianFigures, round, type LatencyFigures } from '../lib/stats.js';

export interface ApproveResultResult {
  samplesPerRun: number;
  runs: number;
  pollGapMs: number;
  baseline: LatencyFigures & { perRun: LatencyFigures[] };
  countersign: LatencyFigures & { perRun: LatencyFigures[] };
  /** Fair variant: signal, then three no-op activities (as many as an approval runs), then query. */
  shaped: LatencyFigures & { perRun: LatencyFigures[] };
  ratioVsShaped: { p50: number; p99: number };
  ratio: { p50: number; p99: number };
  target: number;
  met: { p50: boolean; p99: boolean };
  dispositions: Record<string, number>;
}

export const POLL_GAP_MS = 5;
/** Ratio to a bare signal → query that approve → result must stay under (bench/perf-notes.md). */
const TARGET = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;

/**
 * One approve → result sample: create a task for `memo` through `client`, approve its request, and
 * poll `tasks/get` every {@link POLL_GAP_MS} until it shows `completed`; ms from the decision.
 */
export async function approveThenPoll(ctx: BenchContext, client: WireClient, memo: string): Promise<{ ms: number; disposition: string }> {
  const taskId = await createTask(client, memo);
  const id = await pendingRequestId(ctx, memo);
  const t0 = performance.now();
  await decide(ctx, id, 'approve');
  for (;;) {
    const t = await client.request<{ status: string; result?: { _meta?: Record<string, unknown> } }>('tasks/get', { taskId });
    if (t.status === 'completed') {
      const ms = performance.now() - t0;
      const v = t.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition'];
      return { ms, disposition: typeof v === 'string' ? v : JSON.stringify(v ?? 'unknown') };
    }
    if (t.status !== 'working') throw new Error(`task ended ${t.status}`);
    await sleep(POLL_GAP_MS);
  }
}

export async function approveResultScenario(ctx: BenchContext): Promise<ApproveResultResult> {
  const runs = ctx.smoke ? 1 : 3;
  const samples = ctx.smoke ? 2 : 12;
  ctx.log(`bench: approve → result, ${runs} runs × ${samples} samples per side`);
  const client = await ctx.client('bench-approve');
  const dispositions: Record<string, number> = {};

  const countersignOnce = async (): Promise<number> => {
    const { ms, disposition } = await approveThenPoll(ctx, client, `approve ${seq++} ${randomUUID()}`);
    dispositions[disposition] = (dispositions[disposition] ?? 0) + 1;
    return ms;
  };

  const baselineOnce = async (shape = false): Promise<number> => {
    const handle = await ctx.rawClient.workflow.start(shape ? shapedDecisionWorkflow : signalWorkflow, {
      workflowId: `bench-signal-${randomUUID()}`,
      taskQueue: BASELINE_QUEUE,
    });
    await handle.query(stateQuery); // started and cached, as a pending task is
    const t0 = performance.now();
    await handle.signal(decideSignal, 'approved');
    for (;;) {
      if ((await handle.query(stateQuery)) !== 'working') return performance.now() - t0;
      await sleep(POLL_GAP_MS);
    }
  };

  await countersignOnce(); // warm-up
  await baselineOnce();
  await baselineOnce(true);
  const per = { base: [] as LatencyFigures[], gate: [] as LatencyFigures[], shaped: [] as LatencyFigures[] };
  for (let r = 0; r < runs; r++) {
    const lat = { base: [] as number[], gate: [] as number[], shaped: [] as number[] };
    for (let i = 0; i < samples; i++) {
      const [x, y] = interleave(i + r, 'base' as const, 'gate' as const);
      for (const which of [x, 'shaped' as const, y])
        lat[which].push(which === 'base' ? await baselineOnce() : which === 'shaped' ? await baselineOnce(true) : await countersignOnce());
    }
    per.base.push(latencies(lat.base));
    per.gate.push(latencies(lat.gate));
    per.shaped.push(latencies(lat.shaped));
    ctx.log(
      `  run ${r + 1}: signal-then-query ${JSON.stringify(per.base[r])} same shape ${JSON.stringify(per.shaped[r])} approve → completed ${JSON.stringify(per.gate[r])}`,
    );
  }
  const base = medianFigures(per.base);
  const gate = medianFigures(per.gate);
  const shaped = medianFigures(per.shaped);
  const ratio = { p50: round(gate.p50Ms / base.p50Ms), p99: round(gate.p99Ms / base.p99Ms) };
  return {
    samplesPerRun: samples,
    runs,
    pollGapMs: POLL_GAP_MS,
    baseline: { ...base, perRun: per.base },
    countersign: { ...gate, perRun: per.gate },
    shaped: { ...shaped, perRun: per.shaped },
    ratioVsShaped: { p50: round(gate.p50Ms / shaped.p50Ms), p99: round(gate.p99Ms / shaped.p99Ms) },
    ratio,
    target: TARGET,
    met: { p50: ratio.p50 <= TARGET, p99: ratio.p99 <= TARGET },
    dispositions,
  };
}
