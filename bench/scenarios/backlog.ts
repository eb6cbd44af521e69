// Scope: backlog. Grows the number of pending approval tasks to N (10,000 in the full run) through
// MCP instance A at high concurrency, over many principals, sampling the RSS of the MCP server,
// the worker and the Temporal server at every tenth; then `tasks/get` latency on random pending
// tasks vs a bare Temporal query of the same workflows (strict baseline) and vs describe + query
// (the two calls `tasks/get` made before it learnt to answer an open run with the query alone).
// Samples interleaved.
import { taskQuery } from '../../workflows/messages.js';
import { parseTaskId } from '../../workflows/task-id.js';
import type { WireClient } from '@countersign/client';
import { createTask, type BenchContext } from '../lib/context.js';
import { closedLoop, latencies, round, type LatencyFigures } from '../lib/stats.js';

export interface BacklogPoint {
  pending: number;
  elapsedS: number;
  mcpRssMiB: number | null;
  /** MCP server heap in use right after a full GC (what it retains), MiB. */
  mcpHeapAfterGcMiB: number | null;
  workerRssMiB: number | null;
  temporalRssMiB: number | null;
}

export interface BacklogResult {
  /** Pending tasks asked for, and the time budget for creating them (s). */
  targetPending: number;
  budgetS: number;
  /** Pending tasks reached (less than `target` only when the budget ran out first). */
  pending: number;
  principals: number;
  concurrency: number;
  creationSeconds: number;
  creationPerSec: number;
  points: BacklogPoint[];
  workerSettings: Record<string, unknown>;
  samples: number;
  tasksGet: LatencyFigures;
  bareQuery: LatencyFigures;
  describeQuery: LatencyFigures;
  ratio: { p99: number; p50: number };
  ratioVsDescribeQuery: { p99: number; p50: number };
  target: number;
  met: boolean;
  /** MCP server RSS at the last point / at the first point with a backlog (1 = flat). */
  mcpRssGrowth: number | null;
  /** The same for its heap after a full GC (what it retains). */
  mcpHeapGrowth: number | null;
}

let seq = 0;

export async function backlogScenario(ctx: BenchContext, target: number, budgetS: number): Promise<BacklogResult> {
  const principals = ctx.smoke ? 2 : 100;
  const concurrency = ctx.smoke ? 8 : 32;
  const samples = ctx.smoke ? 20 : 600;
  ctx.log(
    `bench: backlog of ${target} pending tasks (${principals} principals, concurrency ${concurrency}), then ${samples} tasks/get samples`,
  );
  const clients: WireClient[] = [];
  for (let p = 0; p < principals; p++) clients.push(await ctx.client(`bench-backlog-${p}`));
  const tasks: Array<{ client: WireClient; taskId: string }> = [];
  const heap = async (): Promise<number | null> => {
    try {
      const r = (await (await fetch(`${ctx.mcpA.origin}/__bench/heap`)).json()) as { gc: boolean; heapUsedMiB: number };
      return r.gc ? round(r.heapUsedMiB, 1) : null;
    } catch {
      return null;
    }
  };
  const point = async (t0: number): Promise<BacklogPoint> => {
    ctx.sampler.sample();
    return {
      pending: tasks.length,
      elapsedS: round((performance.now() - t0) / 1000, 1),
      mcpHeapAfterGcMiB: await heap(),
      mcpRssMiB: ctx.sampler.rssOf('mcp-a'),
      workerRssMiB: ctx.sampler.rssOf('worker'),
      temporalRssMiB: ctx.sampler.rssOf('temporal'),
    };
  };
  const t0 = performance.now();
  const points: BacklogPoint[] = [await point(t0)];
  const step = Math.max(1, Math.ceil(target / 10));
  for (let done = 0; done < target && performance.now() - t0 < budgetS * 1000;) {
    const n = Math.min(step, target - done);
    await closedLoop(n, concurrency, async (i) => {
      const client = clients[(done + i) % principals]!;
      tasks.push({ client, taskId: await createTask(client, `backlog ${seq++}`) });
    });
    done += n;
    points.push(await point(t0));
    ctx.log(
      `  ${points.at(-1)!.pending} pending after ${points.at(-1)!.elapsedS} s; MCP heap after GC ${points.at(-1)!.mcpHeapAfterGcMiB} MiB; RSS mcp ${points.at(-1)!.mcpRssMiB} MiB, worker ${points.at(-1)!.workerRssMiB} MiB, temporal ${points.at(-1)!.temporalRssMiB} MiB`,
    );
  }
  const creationSeconds = round((performance.now() - t0) / 1000, 1);

  // tasks/get vs bare query vs describe + query, interleaved, random pending tasks
  const lat = { get: [] as number[], query: [] as number[], dq: [] as number[] };
  const temporal = ctx.stack.temporal; // same payload codec as the product
  const pick = () => tasks[Math.floor(Math.random() * tasks.length)]!;
  for (let i = 0; i < samples; i++) {
    const order = [0, 1, 2].map((k) => (k + i) % 3);
    for (const k of order) {
      const t = pick();
      const ids = parseTaskId(t.taskId)!;
      const s = performance.now();
      if (k === 0) {
        const got = await t.client.request<{ status?: string }>('tasks/get', { taskId: t.taskId });
        if (got.status !== 'working') throw new Error(`backlog task not working: ${got.status}`);
        lat.get.push(performance.now() - s);
      } else if (k === 1) {
        await temporal.workflow.getHandle(ids.workflowId, ids.runId).query(taskQuery);
        lat.query.push(performance.now() - s);
      } else {
        const h = temporal.workflow.getHandle(ids.workflowId, ids.runId);
        await h.describe();
        await h.query(taskQuery);
        lat.dq.push(performance.now() - s);
      }
    }
  }
  const get = latencies(lat.get);
  const query = latencies(lat.query);
  const dq = latencies(lat.dq);
  const first = points.find((p) => p.pending > 0)?.mcpRssMiB ?? null;
  const last = points.at(-1)?.mcpRssMiB ?? null;
  const ratioP99 = round(get.p99Ms / query.p99Ms);
  if (tasks.length < target) ctx.log(`  budget of ${budgetS} s spent: backlog stops at ${tasks.length} of ${target}`);
  return {
    targetPending: target,
    budgetS,
    pending: tasks.length,
    principals,
    concurrency,
    creationSeconds,
    creationPerSec: round(tasks.length / creationSeconds, 1),
    points,
    workerSettings: Object.fromEntries(Object.entries(ctx.worker.ready).filter(([k, v]) => k !== 'ready' && v !== null)),
    samples,
    tasksGet: get,
    bareQuery: query,
    describeQuery: dq,
    ratio: { p99: ratioP99, p50: round(get.p50Ms / query.p50Ms) },
    ratioVsDescribeQuery: { p99: round(get.p99Ms / dq.p99Ms), p50: round(get.p50Ms / dq.p50Ms) },
    target: 3,
    met: ratioP99 <= 3,
    mcpRssGrowth: first && last ? round(last / first) : null,
    mcpHeapGrowth: (() => {
      const h0 = points.find((p) => p.pending > 0)?.mcpHeapAfterGcMiB;
      const h1 = points.at(-1)?.mcpHeapAfterGcMiB;
      return h0 && h1 ? round(h1 / h0) : null;
    })(),
  };
}
