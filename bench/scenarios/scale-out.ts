// Scope: scale-out. MCP instance B (own process) joins A behind a round-robin proxy; the same worker
// process serves both. (1) Any instance serves any task: tasks created on A are read and cancelled
// on B. (2) Throughput through the proxy with [A] vs [A, B] upstreams: each operation creates a
// task and reads it back with `tasks/get` (so the read usually lands on the other instance).
import { startRole } from '../roles/spec.js';
import { createTask, type BenchContext } from '../lib/context.js';
import { startRoundRobinProxy } from '../lib/proxy.js';
import { closedLoop, interleave, latencies, median, round, type LatencyFigures } from '../lib/stats.js';

export interface ScaleOutResult {
  concurrency: number;
  opsPerRun: number;
  runs: number;
  oneInstancePerSec: number;
  twoInstancesPerSec: number;
  onePerRun: number[];
  twoPerRun: number[];
  oneLatencyMs: LatencyFigures;
  twoLatencyMs: LatencyFigures;
  ratio: number;
  target: number;
  met: boolean;
  crossInstance: { createdOnA: number; readOnB: number; cancelledOnB: number };
  requestsPerUpstream: number[];
  instanceRssMiB: { a: number | null; b: number | null };
}

let seq = 0;

export async function scaleOutScenario(ctx: BenchContext): Promise<ScaleOutResult> {
  const runs = ctx.smoke ? 1 : 3;
  const ops = ctx.smoke ? 4 : 96;
  const concurrency = 16;
  ctx.log(`bench: scale-out, ${runs} runs × ${ops} create+get operations at concurrency ${concurrency}`);
  const b = await startRole('mcp-b', 'mcp-server.ts', ctx.roleSpec('ledger-mcp-b.db'));
  ctx.sampler.watch('mcp-b', b.pid);
  const mcpB = { ...b, url: String(b.ready.url) };
  const one = await startRoundRobinProxy([ctx.mcpA.origin]);
  const two = await startRoundRobinProxy([ctx.mcpA.origin, String(b.ready.origin)]);
  try {
    // (1) cross-instance: create on A, read and cancel on B, same principal
    const onA = await ctx.client('bench-cross');
    const onB = await ctx.client('bench-cross', mcpB.url);
    const cross = { createdOnA: 0, readOnB: 0, cancelledOnB: 0 };
    for (let i = 0; i < (ctx.smoke ? 2 : 10); i++) {
      const taskId = await createTask(onA, `cross ${seq++}`);
      cross.createdOnA++;
      const got = await onB.request<{ taskId?: string; status?: string }>('tasks/get', { taskId });
      if (got.taskId === taskId && got.status === 'working') cross.readOnB++;
      await onB.request('tasks/cancel', { taskId }); // throws on a JSON-RPC error
      cross.cancelledOnB++;
    }
    ctx.log(`  cross-instance: ${JSON.stringify(cross)}`);

    // (2) throughput, interleaved one/two
    const op = async (client: Awaited<ReturnType<BenchContext['client']>>) => {
      const taskId = await createTask(client, `scale ${seq++}`);
      ctx.toCancel.push({ client, taskId });
      const got = await client.request<{ status?: string }>('tasks/get', { taskId });
      if (got.status !== 'working') throw new Error(`tasks/get via the proxy: ${got.status}`);
    };
    const warmOne = await ctx.client('bench-scale-warm', one.url);
    const warmTwo = await ctx.client('bench-scale-warm', two.url);
    await closedLoop(4, 4, () => op(warmOne));
    await closedLoop(4, 4, () => op(warmTwo));
    const perRun = { one: [] as number[], two: [] as number[] };
    const lat = { one: [] as number[], two: [] as number[] };
    for (let r = 0; r < runs; r++) {
      for (const which of interleave(r, 'one' as const, 'two' as const)) {
        const client = await ctx.client(`bench-scale-${which}-${r}`, which === 'one' ? one.url : two.url);
        const res = await closedLoop(ops, concurrency, () => op(client));
        perRun[which].push(round(res.perSec, 2));
        lat[which].push(...res.lat);
      }
      ctx.log(`  run ${r + 1}: one instance ${perRun.one[r]}/s, two instances ${perRun.two[r]}/s`);
    }
    const oneRate = round(median(perRun.one), 2);
    const twoRate = round(median(perRun.two), 2);
    const ratio = round(twoRate / oneRate);
    ctx.sampler.sample();
    return {
      concurrency,
      opsPerRun: ops,
      runs,
      oneInstancePerSec: oneRate,
      twoInstancesPerSec: twoRate,
      onePerRun: perRun.one,
      twoPerRun: perRun.two,
      oneLatencyMs: latencies(lat.one),
      twoLatencyMs: latencies(lat.two),
      ratio,
      target: 0.9,
      met: ratio >= 0.9,
      crossInstance: cross,
      requestsPerUpstream: [...two.counts],
      instanceRssMiB: { a: ctx.sampler.rssOf('mcp-a'), b: ctx.sampler.rssOf('mcp-b') },
    };
  } finally {
    await one.close();
    await two.close();
    await b.stop();
  }
}
