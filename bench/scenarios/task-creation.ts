// Scope: task creation. Requestable denials → CreateTaskResult per second through MCP instance A
// (own process) at each concurrency, vs raw Update-with-Start of an empty workflow (its own worker
// and queue in the bench process) on the same Temporal server; interleaved runs, median rate.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { emptyWorkflow, readyUpdate } from '../workflows/empty.js';
import { shapeApprovalWorkflow, shapeCreatedUpdate, shapeLimiterWorkflow, shapeReserveUpdate } from '../workflows/shaped.js';
import { BASELINE_QUEUE, createTask, type BenchContext } from '../lib/context.js';
import { closedLoop, interleave, latencies, median, round, type LatencyFigures } from '../lib/stats.js';

export interface TaskCreationLevel {
  concurrency: number;
  baselinePerSec: number;
  countersignPerSec: number;
  baselinePerRun: number[];
  countersignPerRun: number[];
  baselineLatencyMs: LatencyFigures;
  countersignLatencyMs: LatencyFigures;
  /** Fair variant: the same Temporal operations per task (bench/workflows/shaped.ts). */
  shapedPerSec: number;
  shapedPerRun: number[];
  shapedLatencyMs: LatencyFigures;
  ratioVsShaped: number;
  ratio: number;
  target: number;
  met: boolean;
  /** CPU ms per created task in each process, summed over this level's runs (where the cost goes). */
  cpuMsPerTask: { baseline: Record<string, number>; countersign: Record<string, number> };
}

export interface TaskCreationResult {
  tasksPerRun: number;
  runs: number;
  levels: TaskCreationLevel[];
}

let seq = 0;
const perTask = (cpu: Record<string, number>, n: number) => Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v / n, 2)]));

export async function taskCreationScenario(ctx: BenchContext, levels: number[], tasks?: number): Promise<TaskCreationResult> {
  const runs = ctx.smoke ? 1 : 3;
  const tasksPerRun = tasks ?? (ctx.smoke ? 4 : 48);
  ctx.log(`bench: task creation, ${runs} runs × ${tasksPerRun} tasks per side, concurrency ${levels.join('/')}`);
  const rawUws = async () => {
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof emptyWorkflow>('emptyWorkflow', {
      workflowId: `bench-empty-${randomUUID()}`,
      taskQueue: BASELINE_QUEUE,
      args: [],
      workflowIdConflictPolicy: 'USE_EXISTING',
    });
    await ctx.rawClient.workflow.executeUpdateWithStart(readyUpdate, { startWorkflowOperation });
  };
  const shaped = async (principal: string) => {
    const limiterId = `bench-shape-limiter-${principal}`;
    const id = `bench-shape-${randomUUID()}`;
    await ctx.rawClient.workflow.executeUpdateWithStart(shapeReserveUpdate, {
      args: [id],
      startWorkflowOperation: new WithStartWorkflowOperation<typeof shapeLimiterWorkflow>('shapeLimiterWorkflow', {
        workflowId: limiterId,
        taskQueue: BASELINE_QUEUE,
        args: [],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
    await ctx.rawClient.workflow.executeUpdateWithStart(shapeCreatedUpdate, {
      startWorkflowOperation: new WithStartWorkflowOperation<typeof shapeApprovalWorkflow>('shapeApprovalWorkflow', {
        workflowId: id,
        taskQueue: BASELINE_QUEUE,
        args: [limiterId],
        workflowIdConflictPolicy: 'USE_EXISTING',
      }),
    });
  };
  const out: TaskCreationLevel[] = [];
  for (const c of levels) {
    const warm = await ctx.client(`bench-warm-${c}`);
    await closedLoop(Math.min(c, 4), c, async () => {
      ctx.toCancel.push({ client: warm, taskId: await createTask(warm, `warm ${seq++}`) });
      await rawUws();
      await shaped(`warm-${c}`);
    });
    const basePerRun: number[] = [];
    const gatePerRun: number[] = [];
    const baseLat: number[] = [];
    const gateLat: number[] = [];
    const shapedPerRun: number[] = [];
    const shapedLat: number[] = [];
    const cpu = { base: {} as Record<string, number>, gate: {} as Record<string, number> };
    const addCpu = (into: Record<string, number>, before: Record<string, number>) => {
      const after = ctx.sampler.cpuMs();
      for (const k of Object.keys(after)) into[k] = (into[k] ?? 0) + (after[k]! - (before[k] ?? after[k]!));
    };
    for (let r = 0; r < runs; r++) {
      const [x, y] = interleave(r, 'base' as const, 'gate' as const);
      for (const which of [x, 'shaped' as const, y]) {
        const before = ctx.sampler.cpuMs();
        if (which === 'shaped') {
          const res = await closedLoop(tasksPerRun, c, () => shaped(`c${c}-r${r}`));
          shapedPerRun.push(round(res.perSec, 2));
          shapedLat.push(...res.lat);
        } else if (which === 'base') {
          const res = await closedLoop(tasksPerRun, c, rawUws);
          basePerRun.push(round(res.perSec, 2));
          baseLat.push(...res.lat);
          addCpu(cpu.base, before);
        } else {
          // a fresh principal per run: one run's tasks never meet another run's limiter
          const client = await ctx.client(`bench-c${c}-r${r}`);
          const res = await closedLoop(tasksPerRun, c, async () => {
            ctx.toCancel.push({ client, taskId: await createTask(client, `bench task ${seq++}`) });
          });
          gatePerRun.push(round(res.perSec, 2));
          gateLat.push(...res.lat);
          addCpu(cpu.gate, before);
        }
      }
    }
    const baselinePerSec = round(median(basePerRun), 2);
    const countersignPerSec = round(median(gatePerRun), 2);
    const ratio = round(countersignPerSec / baselinePerSec);
    const shapedPerSec = round(median(shapedPerRun), 2);
    out.push({
      concurrency: c,
      baselinePerSec,
      countersignPerSec,
      baselinePerRun: basePerRun,
      countersignPerRun: gatePerRun,
      baselineLatencyMs: latencies(baseLat),
      countersignLatencyMs: latencies(gateLat),
      shapedPerSec,
      shapedPerRun,
      shapedLatencyMs: latencies(shapedLat),
      ratioVsShaped: round(countersignPerSec / shapedPerSec),
      ratio,
      target: 0.7,
      met: ratio >= 0.7,
      cpuMsPerTask: { baseline: perTask(cpu.base, runs * tasksPerRun), countersign: perTask(cpu.gate, runs * tasksPerRun) },
    });
    ctx.log(
      `  concurrency ${c}: raw UwS ${baselinePerSec}/s, countersign ${countersignPerSec}/s, ratio ${ratio}; same-shape ${shapedPerSec}/s (ratio ${out.at(-1)!.ratioVsShaped}); CPU ms/task raw ${JSON.stringify(out.at(-1)!.cpuMsPerTask.baseline)} countersign ${JSON.stringify(out.at(-1)!.cpuMsPerTask.countersign)}`,
    );
  }
  return { tasksPerRun, runs, levels: out };
}
