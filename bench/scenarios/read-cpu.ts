// Scope: read CPU, record vs query, same run. MCP server Q (its own process, COUNTERSIGN_TASK_READS
// =query: the `task` query, the path before the task record) joins A (the record and A's task feed,
// the default). N pending tasks are created through A; then the two paths take turns, record,
// query, query, record (half the phase time each turn): clients read every task at the
// `pollIntervalMs` its last answer advertised (each task's next read due at its last answer plus
// that interval; a closed loop with bounded concurrency), and the CPU time of the serving MCP
// process, the worker and the Temporal server is taken over the turn (for A, until its feed's
// watches have stopped). Then a describe-only phase on A (each task read at most once per 15 s,
// so a read rarely finds a feed watch); an idle phase (nobody reads: the stack's own background)
// before the turns and another at the end. Reports CPU ms per read, the record/query ratio of the
// whole stack's, reads by source (the instances' `countersign_task_reads_total`), read latency and
// the advertised intervals.
import type { WireClient } from '@countersign/client';
import { startRole } from '../roles/spec.js';
import { createTask, type BenchContext } from '../lib/context.js';
import { counterDelta, feedStats, taskReads } from '../lib/mcp-probe.js';
import { closedLoop, latencies, percentile, round, type LatencyFigures } from '../lib/stats.js';

const PROCS = ['mcp', 'worker', 'temporal', 'stack'] as const;
type Proc = (typeof PROCS)[number];
type Cpu = Record<Proc, number>;

export interface ReadPhaseResult {
  path: 'record' | 'query' | 'describe';
  instance: 'mcp-a' | 'mcp-q';
  /** Seconds clients were reading; seconds measured (for A, until its feed's watches had stopped). */
  readSeconds: number;
  measuredSeconds: number;
  reads: number;
  errors: number;
  readsPerSec: number;
  /** Share of reads sent more than 500 ms after they were due (the loop could not keep up). */
  lateShare: number;
  latencyMs: LatencyFigures;
  /** CPU ms over the measured time: the serving MCP server, the worker, the Temporal server, their sum. */
  cpuMs: Cpu;
  cpuMsPerRead: Cpu;
  /** The same less what the idle phase used over as long (the stack's background). */
  netCpuMsPerRead: Cpu;
  /** `countersign_task_reads_total` of the serving instance over the phase, by source. */
  sources: Record<string, number>;
  /** History long-polls its task feed made (each watch's first one reads the run's whole history). */
  feedLongPolls: number;
  /** Advertised `pollIntervalMs` in whole seconds → answers; and its p50 / p99, s. */
  intervalsS: Record<string, number>;
  intervalP50S: number;
  intervalP99S: number;
}

export interface ReadCpuResult {
  tasks: number;
  principals: number;
  concurrency: number;
  /** Seconds of reading per path (record and query each, in two turns); the describe-only phase the same (smoke: half). */
  phaseSeconds: number;
  order: string[];
  record: ReadPhaseResult;
  query: ReadPhaseResult;
  describe: ReadPhaseResult;
  /** Each turn as run: reads, sources and whole-stack CPU ms per read (turns of one path can differ: task ages, warm-up). */
  turns: Array<{ path: string; reads: number; measuredSeconds: number; stackCpuMsPerRead: number; sources: Record<string, number> }>;
  /** CPU ms per second of each process while nobody read. */
  idleCpuMsPerSec: Record<string, number>;
  /** Whole-stack CPU per read, record / query: as measured, and net of the idle background. */
  ratio: { raw: number; net: number };
  target: number;
  met: boolean;
}

/** The target for whole-stack CPU per read, record / query. */
const TARGET = 0.3;
/** The describe-only phase reads each task at most this often. */
const DESCRIBE_EVERY_MS = 15_000;
const LATE_MS = 500;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
let seq = 0;

interface Task {
  client: WireClient;
  taskId: string;
  /** The interval the last answer advertised, ms. */
  intervalMs: number;
}

interface Turn {
  reads: number;
  errors: number;
  late: number;
  lat: number[];
  intervals: number[];
  cpu: Record<string, number>;
  readSeconds: number;
  measuredSeconds: number;
  sources: Record<string, number>;
  longPolls: number;
}

/** Read every task for `ms` at `cadence(advertised)` through `clients` (one per principal, on the instance), at most `concurrency` in flight. */
async function readTurn(
  ctx: BenchContext,
  tasks: Task[],
  clients: Map<WireClient, WireClient>,
  origin: string,
  ms: number,
  concurrency: number,
  cadence: (advertisedMs: number) => number,
): Promise<Turn> {
  const t: Turn = {
    reads: 0,
    errors: 0,
    late: 0,
    lat: [],
    intervals: [],
    cpu: {},
    readSeconds: 0,
    measuredSeconds: 0,
    sources: {},
    longPolls: 0,
  };
  const sourcesBefore = await taskReads(origin);
  const longPollsBefore = (await feedStats(origin)).longPolls;
  const cpuBefore = ctx.sampler.cpuMs();
  const start = performance.now();
  const end = start + ms;
  let free = concurrency;
  const waiting: Array<() => void> = [];
  const acquire = async (): Promise<void> => {
    if (free > 0) free--;
    else await new Promise<void>((r) => waiting.push(r));
  };
  const release = (): void => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  await Promise.all(
    tasks.map(async (task, i) => {
      // first reads spread over each task's interval, as clients that started at different times
      let due = start + (i / tasks.length) * cadence(task.intervalMs);
      for (;;) {
        await sleep(Math.min(due, end) - performance.now());
        if (performance.now() >= end) return;
        await acquire();
        const sent = performance.now();
        try {
          if (sent >= end) return;
          if (sent - due > LATE_MS) t.late++;
          const got = await clients.get(task.client)!.request<{ pollIntervalMs?: number }>('tasks/get', { taskId: task.taskId });
          const now = performance.now();
          t.lat.push(now - sent);
          t.reads++;
          task.intervalMs = got.pollIntervalMs ?? task.intervalMs;
          t.intervals.push(task.intervalMs);
          due = now + cadence(task.intervalMs);
        } catch {
          t.errors++;
          due = performance.now() + 1000;
        } finally {
          release();
        }
      }
    }),
  );
  t.readSeconds = (performance.now() - start) / 1000;
  // the feed's watches (A) outlive the last read by up to three intervals: their long-polls count too
  let feed = await feedStats(origin);
  for (let i = 0; i < 240 && feed.watches > 0; i++) {
    await sleep(250);
    feed = await feedStats(origin);
  }
  t.longPolls = feed.longPolls - longPollsBefore;
  t.measuredSeconds = (performance.now() - start) / 1000;
  const cpuAfter = ctx.sampler.cpuMs();
  for (const k of Object.keys(cpuAfter)) t.cpu[k] = cpuAfter[k]! - (cpuBefore[k] ?? 0);
  t.sources = counterDelta(sourcesBefore, await taskReads(origin));
  return t;
}

/** CPU ms per second of each watched process over `seconds` of nobody reading. */
async function idleRates(ctx: BenchContext, seconds: number): Promise<Record<string, number>> {
  const before = ctx.sampler.cpuMs();
  await sleep(seconds * 1000);
  const after = ctx.sampler.cpuMs();
  return Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - (before[k] ?? 0)) / seconds]));
}

/** Fold turns of one path into its figures; `mcp` names the serving instance; `idle` is CPU ms/s per process. */
function phase(path: ReadPhaseResult['path'], mcp: 'mcp-a' | 'mcp-q', turns: Turn[], idle: Record<string, number>): ReadPhaseResult {
  const sum = (f: (t: Turn) => number) => turns.reduce((a, t) => a + f(t), 0);
  const reads = sum((t) => t.reads);
  const measured = sum((t) => t.measuredSeconds);
  const pick = (src: Record<string, number>): Cpu => {
    const c = { mcp: src[mcp] ?? 0, worker: src.worker ?? 0, temporal: src.temporal ?? 0, stack: 0 };
    c.stack = c.mcp + c.worker + c.temporal;
    return c;
  };
  const cpuMs = pick(Object.fromEntries(['mcp-a', 'mcp-q', 'worker', 'temporal'].map((k) => [k, sum((t) => t.cpu[k] ?? 0)])));
  const idleMs = pick(Object.fromEntries(Object.entries(idle).map(([k, v]) => [k, v * measured])));
  const per = (c: Cpu, sub?: Cpu): Cpu =>
    Object.fromEntries(PROCS.map((p) => [p, reads ? round((c[p] - (sub?.[p] ?? 0)) / reads) : 0])) as Cpu;
  const intervals = turns.flatMap((t) => t.intervals);
  const intervalsS: Record<string, number> = {};
  for (const v of intervals) intervalsS[String(Math.round(v / 1000))] = (intervalsS[String(Math.round(v / 1000))] ?? 0) + 1;
  const sources: Record<string, number> = {};
  for (const t of turns) for (const [k, v] of Object.entries(t.sources)) sources[k] = (sources[k] ?? 0) + v;
  return {
    path,
    instance: mcp,
    readSeconds: round(
      sum((t) => t.readSeconds),
      1,
    ),
    measuredSeconds: round(measured, 1),
    reads,
    errors: sum((t) => t.errors),
    readsPerSec: round(reads / sum((t) => t.readSeconds), 1),
    lateShare: reads ? round(sum((t) => t.late) / reads) : 0,
    latencyMs: latencies(turns.flatMap((t) => t.lat)),
    cpuMs,
    cpuMsPerRead: per(cpuMs),
    netCpuMsPerRead: per(cpuMs, idleMs),
    sources,
    feedLongPolls: sum((t) => t.longPolls),
    intervalsS,
    intervalP50S: round(percentile(intervals, 50) / 1000, 1),
    intervalP99S: round(percentile(intervals, 99) / 1000, 1),
  };
}

export async function readCpuScenario(ctx: BenchContext, opts: { tasks?: number; seconds?: number } = {}): Promise<ReadCpuResult> {
  const n = opts.tasks ?? (ctx.smoke ? 40 : 1000);
  const seconds = opts.seconds ?? (ctx.smoke ? 8 : 60);
  const principals = Math.max(2, Math.ceil(n / 50));
  const concurrency = ctx.smoke ? 8 : 32;
  ctx.log(
    `bench: read CPU, record vs query: ${n} pending tasks over ${principals} principals, ${seconds} s per path, ${concurrency} reads in flight`,
  );
  const q = await startRole('mcp-q', 'mcp-server.ts', {
    ...ctx.roleSpec('ledger-mcp-q.db'),
    config: { ...ctx.config, COUNTERSIGN_TASK_READS: 'query' },
  });
  ctx.sampler.watch('mcp-q', q.pid);
  const qOrigin = String(q.ready.origin);
  const tasks: Task[] = [];
  try {
    const onA: WireClient[] = [];
    const onQ = new Map<WireClient, WireClient>();
    const self = new Map<WireClient, WireClient>();
    for (let p = 0; p < principals; p++) {
      const a = await ctx.client(`bench-reads-${p}`);
      onA.push(a);
      self.set(a, a);
      onQ.set(a, await ctx.client(`bench-reads-${p}`, String(q.ready.url)));
    }
    await closedLoop(n, 16, async (i) => {
      const client = onA[i % principals]!;
      tasks.push({ client, taskId: await createTask(client, `reads ${seq++}`), intervalMs: ctx.config.COUNTERSIGN_POLL_INTERVAL_MS });
    });
    const honour = (advertised: number) => advertised;
    const half = (seconds * 1000) / 2;
    // idle: the stack's own CPU while nobody reads (the dev server's timers, the runtimes' own
    // work), taken before the turns and again after them, averaged
    const idleS = ctx.smoke ? 2 : Math.max(4, seconds / 4);
    const idleRuns = [await idleRates(ctx, idleS)];
    const order = ['record', 'query', 'query', 'record'] as const;
    const turns = { record: [] as Turn[], query: [] as Turn[] };
    const asRun: ReadCpuResult['turns'] = [];
    for (const path of order) {
      const t = await readTurn(
        ctx,
        tasks,
        path === 'record' ? self : onQ,
        path === 'record' ? ctx.mcpA.origin : qOrigin,
        half,
        concurrency,
        honour,
      );
      turns[path].push(t);
      const stackMs = (t.cpu[path === 'record' ? 'mcp-a' : 'mcp-q'] ?? 0) + (t.cpu.worker ?? 0) + (t.cpu.temporal ?? 0);
      asRun.push({
        path,
        reads: t.reads,
        measuredSeconds: round(t.measuredSeconds, 1),
        stackCpuMsPerRead: t.reads ? round(stackMs / t.reads) : 0,
        sources: t.sources,
      });
      ctx.log(
        `  ${path}: ${t.reads} reads in ${round(t.readSeconds, 1)} s (measured ${round(t.measuredSeconds, 1)} s), CPU ms ${JSON.stringify(t.cpu)}, sources ${JSON.stringify(t.sources)}`,
      );
    }
    const describeTurn = await readTurn(ctx, tasks, self, ctx.mcpA.origin, (ctx.smoke ? seconds / 2 : seconds) * 1000, concurrency, (adv) =>
      Math.max(DESCRIBE_EVERY_MS, adv),
    );
    idleRuns.push(await idleRates(ctx, idleS));
    const idle = Object.fromEntries(Object.keys(idleRuns[1]!).map((k) => [k, round(((idleRuns[0]![k] ?? 0) + idleRuns[1]![k]!) / 2, 2)]));
    const record = phase('record', 'mcp-a', turns.record, idle);
    const query = phase('query', 'mcp-q', turns.query, idle);
    const describe = phase('describe', 'mcp-a', [describeTurn], idle);
    const ratio = {
      raw: round(record.cpuMsPerRead.stack / query.cpuMsPerRead.stack),
      net: round(record.netCpuMsPerRead.stack / query.netCpuMsPerRead.stack),
    };
    ctx.log(
      `  stack CPU ms per read: record ${record.cpuMsPerRead.stack}, query ${query.cpuMsPerRead.stack}, describe-only ${describe.cpuMsPerRead.stack}; ratio ${JSON.stringify(ratio)}`,
    );
    return {
      tasks: n,
      principals,
      concurrency,
      phaseSeconds: seconds,
      order: ['idle', ...order, 'describe', 'idle'],
      record,
      query,
      describe,
      turns: asRun,
      idleCpuMsPerSec: idle,
      ratio,
      target: TARGET,
      met: ratio.raw <= TARGET,
    };
  } finally {
    // cancel them: the approval service's pending list stays short for the scenarios after this one
    await closedLoop(tasks.length, 8, async (i) => {
      await tasks[i]!.client.request('tasks/cancel', { taskId: tasks[i]!.taskId }).catch(() => undefined);
    });
    await q.stop();
  }
}
