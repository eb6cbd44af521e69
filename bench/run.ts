// Scope: `npm run bench` (issue 7): starts the real stack once and measures Countersign against
// its own baselines in the same run — allowed-call overhead (plain SDK 2.x server vs the gate) and
// task creation (requestable denials vs raw Update-with-Start of an empty workflow) — with
// interleaved, repeated runs; writes bench/results.json and BENCHMARKS.md.
// `--smoke`: tiny N, one run, results to bench/results.smoke.json only (BENCHMARKS.md untouched).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, copyFileSync, writeFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Hono } from 'hono';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';
import { WireClient } from '../src/client/wire-client.js';
import { loadConfig, type Config } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startStack, type Stack } from '../src/stack.js';
import { PROJECT_ROOT } from '../src/temporal/binaries.js';
import { createWireTransferTool } from '../src/tools/wire-transfer.js';
import { bundleWorkflows } from '../src/worker.js';
import { emptyWorkflow, readyUpdate } from './workflows/empty.js';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const TASKS_CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const EMPTY_QUEUE = 'bench-empty';

export interface BenchOptions {
  smoke?: boolean;
  /** Where results go; default: bench/ (results.json) and the project root (BENCHMARKS.md). */
  outDir?: string;
  /** Write BENCHMARKS.md (default: not in smoke mode). */
  writeMarkdown?: boolean;
  log?: (line: string) => void;
}

export interface LatencyFigures {
  p50Ms: number;
  p99Ms: number;
}

export interface BenchResults {
  generatedAt: string;
  command: string;
  mode: 'full' | 'smoke';
  machine: { cores: number; cpuModel: string; totalMemoryMiB: number; platform: string; node: string };
  allowedCall: {
    callsPerRun: number;
    runs: number;
    baseline: LatencyFigures & { perRun: LatencyFigures[] };
    countersign: LatencyFigures & { perRun: LatencyFigures[] };
    ratio: { p50: number; p99: number };
    target: { p50: number; p99: number };
    met: { p50: boolean; p99: boolean };
  };
  taskCreation: {
    tasksPerRun: number;
    runs: number;
    levels: Array<{
      concurrency: number;
      baselinePerSec: number;
      countersignPerSec: number;
      baselinePerRun: number[];
      countersignPerRun: number[];
      countersignLatencyMs: LatencyFigures;
      ratio: number;
      target: number;
      met: boolean;
    }>;
    cancelled: number;
    cancelFailures: number;
  };
  peakRss: { benchProcessMiB: number; temporalDevServerMiB: number | null };
  notImplemented: string[];
  notes: string[];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const percentile = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;
const latencies = (xs: number[]): LatencyFigures => ({ p50Ms: round(percentile(xs, 50)), p99Ms: round(percentile(xs, 99)) });

function benchConfig(): Config {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'countersign-bench-'));
  const policyDir = mkdtempSync(join(os.tmpdir(), 'countersign-bench-policies-'));
  for (const f of readdirSync(join(PROJECT_ROOT, 'policies'))) if (f.endsWith('.cedar')) copyFileSync(join(PROJECT_ROOT, 'policies', f), join(policyDir, f));
  return loadConfig(
    {},
    {
      COUNTERSIGN_DATA_DIR: dataDir,
      COUNTERSIGN_POLICY_DIR: policyDir,
      COUNTERSIGN_PORT: 0,
      COUNTERSIGN_APPROVALS_PORT: 0,
      COUNTERSIGN_ISSUER_PORT: 0,
      TEMPORAL_PORT: 0,
      TEMPORAL_UI_PORT: 0,
      COUNTERSIGN_CREATE_WAIT_MS: 30_000,
      COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: 100_000,
      COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: 100_000,
    },
  );
}

/** The baseline: the same `wire_transfer` tool and ledger on a plain SDK 2.x server, no gate, no bearer check. */
async function startPlainServer(stack: Stack): Promise<{ url: string; close: () => Promise<void> }> {
  const tool = createWireTransferTool(stack.ledger);
  const handler = createMcpHandler(
    () => {
      const server = new Server({ name: 'plain-baseline', version: '0.0.0' }, { capabilities: { tools: {} } });
      server.setRequestHandler('tools/call', async (req) => {
        const parsed = tool.inputSchema.safeParse(req.params.arguments ?? {});
        if (!parsed.success) return { content: [{ type: 'text', text: 'invalid arguments' }], isError: true } as never;
        const out = await tool.execute(parsed.data, { executionId: `plain/${randomUUID()}` });
        return { content: out.content, ...(out.structuredContent ? { structuredContent: out.structuredContent } : {}), isError: out.isError === true } as never;
      });
      return server;
    },
    { legacy: 'reject', responseMode: 'json' },
  );
  const app = new Hono();
  app.all('/mcp', (c) => handler.fetch(c.req.raw));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await handler.close();
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** PID of the Temporal dev server: our child process whose command is the Temporal CLI. */
function devServerPid(): number | null {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (cmd.includes('start-dev')) return Number(d);
    } catch {
      // process gone or unreadable
    }
  }
  return null;
}

function vmHwmKiB(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

async function allowedCallRun(client: WireClient, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await client.request<{ isError?: boolean }>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-100', amount: 1000, memo: `bench ${i}` } });
    out.push(performance.now() - t0);
    if (r.isError) throw new Error('allowed call failed');
  }
  return out;
}

/** Run `total` operations with `concurrency` in flight; returns ops/s and per-op latencies. */
async function closedLoop(total: number, concurrency: number, op: (i: number) => Promise<void>): Promise<{ perSec: number; lat: number[] }> {
  let next = 0;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const s = performance.now();
        await op(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { perSec: total / ((performance.now() - t0) / 1000), lat };
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchResults> {
  const smoke = opts.smoke ?? false;
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const runs = smoke ? 1 : 3;
  const calls = smoke ? 20 : 300;
  const tasksPerRun = smoke ? 4 : 40;
  const levels = [1, 4, 16];

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 100);
  sampler.unref();

  const config = benchConfig();
  log('bench: starting stack');
  const stack = await startStack(config, { workflowBundle: await bundleWorkflows(), logger: createLogger({ level: process.env.LOG_LEVEL ?? 'error' }) });
  const cleanups: Array<() => Promise<void>> = [() => stack.stop()];
  try {
    const temporalPid = devServerPid();
    const plain = await startPlainServer(stack);
    cleanups.unshift(plain.close);

    // Raw Update-with-Start baseline: its own worker and queue, same Temporal server, default codec.
    const nativeConn = await NativeConnection.connect({ address: stack.urls.temporal });
    const emptyWorker = await Worker.create({
      connection: nativeConn,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: EMPTY_QUEUE,
      workflowsPath: fileURLToPath(new URL('./workflows/empty.ts', import.meta.url)),
    });
    const emptyRunning = emptyWorker.run();
    cleanups.unshift(async () => {
      emptyWorker.shutdown();
      await emptyRunning.catch(() => undefined);
      await nativeConn.close();
    });
    const conn = await Connection.connect({ address: stack.urls.temporal });
    cleanups.unshift(() => conn.close());
    const rawClient = new Client({ connection: conn, namespace: config.TEMPORAL_NAMESPACE });

    const token = await stack.issuer.mintToken({ sub: 'bench-allowed' });
    const gated = new WireClient({ url: stack.urls.mcp, token, capabilities: TASKS_CAPS });
    const direct = new WireClient({ url: plain.url, token, capabilities: TASKS_CAPS });

    // Warm-up (JIT, connections, Cedar, SQLite)
    await allowedCallRun(gated, smoke ? 5 : 30);
    await allowedCallRun(direct, smoke ? 5 : 30);

    // 1. Allowed-call overhead, interleaved: baseline, countersign, baseline, ...
    log(`bench: allowed-call overhead, ${runs} × ${calls} calls each`);
    const basePer: LatencyFigures[] = [];
    const gatePer: LatencyFigures[] = [];
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? (['base', 'gate'] as const) : (['gate', 'base'] as const);
      for (const which of order) {
        const lat = await allowedCallRun(which === 'base' ? direct : gated, calls);
        (which === 'base' ? basePer : gatePer).push(latencies(lat));
      }
      log(`  run ${r + 1}: plain p50 ${basePer[r]!.p50Ms} ms p99 ${basePer[r]!.p99Ms} ms; gate p50 ${gatePer[r]!.p50Ms} ms p99 ${gatePer[r]!.p99Ms} ms`);
    }
    const baseMed = { p50Ms: round(median(basePer.map((x) => x.p50Ms))), p99Ms: round(median(basePer.map((x) => x.p99Ms))) };
    const gateMed = { p50Ms: round(median(gatePer.map((x) => x.p50Ms))), p99Ms: round(median(gatePer.map((x) => x.p99Ms))) };
    const ratioP50 = round(gateMed.p50Ms / baseMed.p50Ms);
    const ratioP99 = round(gateMed.p99Ms / baseMed.p99Ms);

    // 2. Task creation vs raw Update-with-Start, per concurrency level, interleaved runs.
    log(`bench: task creation, ${runs} runs × ${tasksPerRun} tasks per level ${levels.join('/')}`);
    const created: Array<{ client: WireClient; taskId: string }> = [];
    const levelResults: BenchResults['taskCreation']['levels'] = [];
    let seq = 0;
    for (const c of levels) {
      // warm-up at this level
      const warmClient = new WireClient({ url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub: `bench-warm-${c}` }), capabilities: TASKS_CAPS });
      await closedLoop(Math.min(c, 4), c, async () => {
        const r = await warmClient.request<{ resultType: string; taskId: string }>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-200', amount: 50_000, memo: `warm ${seq++}` } });
        created.push({ client: warmClient, taskId: r.taskId });
      });
      const basePerRun: number[] = [];
      const gatePerRun: number[] = [];
      const gateLat: number[] = [];
      for (let r = 0; r < runs; r++) {
        const order = r % 2 === 0 ? (['base', 'gate'] as const) : (['gate', 'base'] as const);
        for (const which of order) {
          if (which === 'base') {
            const res = await closedLoop(tasksPerRun, c, async () => {
              const startWorkflowOperation = new WithStartWorkflowOperation<typeof emptyWorkflow>('emptyWorkflow', {
                workflowId: `bench-empty-${randomUUID()}`,
                taskQueue: EMPTY_QUEUE,
                args: [],
                workflowIdConflictPolicy: 'USE_EXISTING',
              });
              await rawClient.workflow.executeUpdateWithStart(readyUpdate, { startWorkflowOperation });
            });
            basePerRun.push(round(res.perSec, 2));
          } else {
            // a fresh principal per run: tasks of one run never meet the per-principal limiter of another
            const client = new WireClient({ url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub: `bench-c${c}-r${r}` }), capabilities: TASKS_CAPS });
            const res = await closedLoop(tasksPerRun, c, async () => {
              const out = await client.request<{ resultType: string; taskId: string }>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-200', amount: 50_000, memo: `bench task ${seq++}` } });
              if (out.resultType !== 'task') throw new Error(`expected CreateTaskResult, got ${out.resultType}`);
              created.push({ client, taskId: out.taskId });
            });
            gatePerRun.push(round(res.perSec, 2));
            gateLat.push(...res.lat);
          }
        }
      }
      const baselinePerSec = round(median(basePerRun), 2);
      const countersignPerSec = round(median(gatePerRun), 2);
      const ratio = round(countersignPerSec / baselinePerSec);
      levelResults.push({ concurrency: c, baselinePerSec, countersignPerSec, baselinePerRun: basePerRun, countersignPerRun: gatePerRun, countersignLatencyMs: latencies(gateLat), ratio, target: 0.7, met: ratio >= 0.7 });
      log(`  concurrency ${c}: raw UwS ${baselinePerSec}/s, countersign ${countersignPerSec}/s, ratio ${ratio}`);
    }

    // Cancel every created task (keeps the approval service and Temporal clean for the next run).
    log(`bench: cancelling ${created.length} tasks`);
    let cancelFailures = 0;
    await closedLoop(created.length, 4, async (i) => {
      const t = created[i]!;
      try {
        await t.client.request('tasks/cancel', { taskId: t.taskId });
      } catch {
        cancelFailures++;
      }
    });

    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const hwm = temporalPid ? vmHwmKiB(temporalPid) : null;
    const results: BenchResults = {
      generatedAt: new Date().toISOString(),
      command: smoke ? 'npm run bench -- --smoke' : 'npm run bench',
      mode: smoke ? 'smoke' : 'full',
      machine: {
        cores: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? 'unknown',
        totalMemoryMiB: Math.round(os.totalmem() / 2 ** 20),
        platform: `${os.platform()} ${os.release()}`,
        node: process.version,
      },
      allowedCall: {
        callsPerRun: calls,
        runs,
        baseline: { ...baseMed, perRun: basePer },
        countersign: { ...gateMed, perRun: gatePer },
        ratio: { p50: ratioP50, p99: ratioP99 },
        target: { p50: 1.1, p99: 1.25 },
        met: { p50: ratioP50 <= 1.1, p99: ratioP99 <= 1.25 },
      },
      taskCreation: { tasksPerRun, runs, levels: levelResults, cancelled: created.length - cancelFailures, cancelFailures },
      peakRss: { benchProcessMiB: round(peakRss / 2 ** 20, 1), temporalDevServerMiB: hwm === null ? null : round(hwm / 1024, 1) },
      notImplemented: [
        'Approve → result (decision to tasks/get completed vs bare signal-then-query)',
        'Backlog (10,000 pending tasks: tasks/get p99 vs bare query p99, MCP server and worker RSS)',
        'Scale-out (two MCP server instances behind a round-robin proxy vs one)',
        'Plot (SVG/PNG of task-creation throughput and latency against concurrency)',
        'Per-process RSS of the MCP server and worker separately (they share the bench process here)',
      ],
      notes: [
        'Bench process = MCP server + worker + approval service + plain baseline server + bench clients (one Node process); its RSS is not the MCP server alone.',
        'Allowed-call baseline has no bearer verification, no Cedar, no call binding: the ratio is the whole gate cost including JWT verification.',
        'Task creation per Countersign call = limiter Update-with-Start + approval Update-with-Start (AES-GCM payload codec) + backend submission awaited by the taskCreated update; the raw baseline is one Update-with-Start with the default codec.',
        'Sequential latency: one client, one request in flight. Throughput: closed loop with N requests in flight.',
      ],
    };
    const outDir = opts.outDir ?? BENCH_DIR;
    writeFileSync(join(outDir, smoke ? 'results.smoke.json' : 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    if (opts.writeMarkdown ?? !smoke) writeFileSync(opts.outDir ? join(opts.outDir, 'BENCHMARKS.md') : join(PROJECT_ROOT, 'BENCHMARKS.md'), markdown(results));
    return results;
  } finally {
    clearInterval(sampler);
    for (const c of cleanups) await c().catch(() => undefined);
    rmSync(config.COUNTERSIGN_DATA_DIR, { recursive: true, force: true });
    rmSync(config.COUNTERSIGN_POLICY_DIR, { recursive: true, force: true });
  }
}

function markdown(r: BenchResults): string {
  const yes = (b: boolean) => (b ? 'met' : '**missed**');
  const a = r.allowedCall;
  const lines = [
    '# Benchmarks',
    '',
    `Generated by \`${r.command}\` (\`tsx bench/run.ts\`) at ${r.generatedAt}; machine-readable copy in \`bench/results.json\`. Do not edit by hand.`,
    '',
    `Machine: ${r.machine.cores} cores (${r.machine.cpuModel}), ${r.machine.totalMemoryMiB} MiB memory, ${r.machine.platform}, Node ${r.machine.node}. The machine may have been shared with other work; figures are medians of interleaved runs and ratios against a baseline measured in the same run.`,
    '',
    '## Allowed-call overhead',
    '',
    `\`wire_transfer\` (amount 1,000, policy allow) over Streamable HTTP with the same wire client: a plain SDK 2.x \`Server\` (same tool, same ledger, no gate, no bearer check) vs Countersign's gate. ${a.callsPerRun} sequential calls per run, ${a.runs} interleaved runs per side, median of the per-run percentiles.`,
    '',
    '| figure | plain SDK server | Countersign | ratio | target | |',
    '|---|---|---|---|---|---|',
    `| p50 latency | ${a.baseline.p50Ms} ms | ${a.countersign.p50Ms} ms | ${a.ratio.p50}× | ≤ ${a.target.p50}× | ${yes(a.met.p50)} |`,
    `| p99 latency | ${a.baseline.p99Ms} ms | ${a.countersign.p99Ms} ms | ${a.ratio.p99}× | ≤ ${a.target.p99}× | ${yes(a.met.p99)} |`,
    '',
    '## Task creation',
    '',
    `Requestable denials (amount 50,000, distinct memo per call) → \`CreateTaskResult\` per second, closed loop at each concurrency, vs raw Update-with-Start of an empty workflow (\`bench/workflows/empty.ts\`, its own worker and task queue) on the same Temporal dev server. ${r.taskCreation.tasksPerRun} tasks per run, ${r.taskCreation.runs} interleaved runs per side, median rate. Created tasks are cancelled afterwards (${r.taskCreation.cancelled} cancelled, ${r.taskCreation.cancelFailures} failures).`,
    '',
    '| concurrency | raw Update-with-Start | Countersign | ratio | target | | Countersign latency p50 / p99 |',
    '|---|---|---|---|---|---|---|',
    ...r.taskCreation.levels.map((l) => `| ${l.concurrency} | ${l.baselinePerSec}/s | ${l.countersignPerSec}/s | ${l.ratio}× | ≥ ${l.target}× | ${yes(l.met)} | ${l.countersignLatencyMs.p50Ms} / ${l.countersignLatencyMs.p99Ms} ms |`),
    '',
    '## Peak memory',
    '',
    '| process | peak RSS | how |',
    '|---|---|---|',
    `| bench process (MCP server, worker, approval service, baseline server, clients) | ${r.peakRss.benchProcessMiB} MiB | \`process.memoryUsage().rss\` sampled every 100 ms |`,
    `| Temporal dev server | ${r.peakRss.temporalDevServerMiB ?? 'n/a'} MiB | \`VmHWM\` from \`/proc/<pid>/status\` |`,
    '',
    '## Notes',
    '',
    ...r.notes.map((n) => `- ${n}`),
    '',
    '## Not yet implemented (issue 7)',
    '',
    ...r.notImplemented.map((n) => `- ${n}`),
    '',
  ];
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const smoke = process.argv.includes('--smoke');
  const t0 = Date.now();
  runBench({ smoke })
    .then((r) => {
      process.stdout.write(`${JSON.stringify({ allowedCall: r.allowedCall.ratio, taskCreation: r.taskCreation.levels.map((l) => ({ c: l.concurrency, ratio: l.ratio })), peakRss: r.peakRss, seconds: (Date.now() - t0) / 1000 })}\n`);
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
      process.exit(1);
    });
}
