// Scope: `npm run bench:heap`. What holds the worker's memory with N cached approval workflows.
// Starts a Temporal dev server (its own process), the stack around it (approval service, token
// issuer), then the worker and one MCP server as their own processes, the worker running its
// workflows in its main thread (`workflowsInMainThread`, src/worker.ts) so a heap snapshot of that
// thread sees every cached run. Creates N pending approval tasks through the MCP front (as
// bench/lib/context.ts `createTask` does), takes a heap snapshot of the worker with no task and
// with N, and summarizes both (bench/heap/summarize.ts). Adds the run to bench/heap/last-run.json
// (one entry per N and tracing, replaced when run again); bench/perf-notes.md §Where the worker's
// memory goes reads them.
// Options: --cached N (default 1000), --traced (the runs are started traced, memo `tracing` on,
// as by an MCP server with OpenTelemetry on), --out <file>, --keep-snapshots <dir>, and
// --preload a,b (an experiment: the bundle with Temporal's `preloadModules`, not the product's).
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { WireClient } from '@countersign/client';
import { createLogger } from '@countersign/http/log';
import { startStack } from '../../src/stack.js';
import { freePort, startDevServer } from '../../src/temporal/dev-server.js';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { Configuration } from 'webpack';
import { WORKFLOW_TRACING_MODULE } from '../../src/ops/tracing.js';
import { bundleWorkflows, WORKFLOWS_PATH } from '../../src/worker.js';
import { createTask, TASKS_CAPS } from '../lib/context.js';
import { machineInfo, type MachineInfo } from '../lib/procs.js';
import { closedLoop, round } from '../lib/stats.js';
import { startRole, type RoleSpec } from '../roles/spec.js';
import { benchConfig } from '../run.js';
import { readHeapSnapshot, summarizeHeapSnapshot, type HeapSummary } from './summarize.js';

const MiB = 2 ** 20;
/** `--preload otel-api`: the bench module that loads `@opentelemetry/api` into the shared context. */
const OTEL_API_PRELOAD = fileURLToPath(new URL('./preload-otel-api.ts', import.meta.url));
/** Principals the tasks are spread over (each has one submission limiter workflow, also cached). */
const PRINCIPALS = 10;

/** Memory figures the worker role wrote next to one snapshot (bench/roles/worker.ts). */
interface WorkerMemory {
  file: string | null;
  rssBytes: number;
  heapUsedBytes: number;
  rssAfterGcBytes: number;
  heapUsedAfterGcBytes: number;
  externalBytes: number;
  tagsOnNewPromise: number;
  cachedWorkflows: number;
  inFlightActivities: number;
}

/** One point of the heap bench: the worker with `cached` pending approval runs (plus the limiters). */
export interface HeapPoint {
  /** Approval workflows the worker held in its cache at the snapshot, and limiter runs. */
  cachedWorkflows: number;
  /** Worker process RSS before / after a full GC, MiB. */
  rssMiB: number;
  rssAfterGcMiB: number;
  /** V8 heap in use in the workflow thread before / after a full GC, MiB. */
  heapUsedMiB: number;
  heapUsedAfterGcMiB: number;
  /** AsyncLocalStorage tags a promise made at the snapshot carries (counted live, in the worker). */
  tagsOnNewPromise: number;
  /** The snapshot's summary, sizes in bytes; null at the empty point (figures only, no snapshot). */
  snapshot: HeapSummary | null;
}

/** One run of `npm run bench:heap`. */
export interface HeapRun {
  key: string;
  generatedAt: string;
  command: string;
  machine: MachineInfo;
  cached: number;
  traced: boolean;
  /** Modules preloaded into the shared V8 context (experiment; empty: the product's bundle). */
  preload: string[];
  maxCachedWorkflows: number;
  creationSeconds: number;
  empty: HeapPoint;
  loaded: HeapPoint;
  /** (loaded − empty) / cached: what each cached run adds, KiB (heap after GC, and RSS). */
  perRunKiB: { heapAfterGc: number; rss: number };
}

/** A preload entry as the results name it: a bench module by its file name, a package as it is. */
const shortName = (m: string) => (m.endsWith('.ts') ? basename(m, '.ts').replace(/^preload-/, '') : m);

async function snapshotWorker(dir: string, n: number, withSnapshot: boolean, keepDir?: string): Promise<HeapPoint> {
  const json = join(dir, `worker-${n}.json`);
  writeFileSync(join(dir, `worker-${n}.request`), withSnapshot ? 'snapshot' : 'figures');
  // the snapshot blocks the worker for seconds to minutes; its figures file is written last
  for (let waited = 0; !existsSync(json); waited += 500) {
    if (waited > 900_000) throw new Error('the worker wrote no heap snapshot in 15 min');
    await new Promise((r) => setTimeout(r, 500));
  }
  const m = JSON.parse(readFileSync(json, 'utf8')) as WorkerMemory;
  const snapshot = m.file ? summarizeHeapSnapshot(readHeapSnapshot(m.file)) : null;
  if (m.file && keepDir) renameSync(m.file, join(keepDir, `worker-${n}.heapsnapshot`));
  else if (m.file) rmSync(m.file, { force: true });
  return {
    cachedWorkflows: m.cachedWorkflows,
    rssMiB: round(m.rssBytes / MiB, 1),
    rssAfterGcMiB: round(m.rssAfterGcBytes / MiB, 1),
    heapUsedMiB: round(m.heapUsedBytes / MiB, 1),
    heapUsedAfterGcMiB: round(m.heapUsedAfterGcBytes / MiB, 1),
    tagsOnNewPromise: m.tagsOnNewPromise,
    snapshot,
  };
}

/** Run the heap bench once; resolves with the run (not yet written anywhere). */
export async function runHeapBench(opts: {
  cached: number;
  traced: boolean;
  /** Experiment: modules the bundle loads once per V8 context instead of once per run (Temporal's `preloadModules`). */
  preload?: string[];
  keepDir?: string;
  log?: (l: string) => void;
}): Promise<HeapRun> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const machine = machineInfo();
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' });
  const cleanups: Array<() => Promise<void>> = [];
  const snapDir = mkdtempSync(join(os.tmpdir(), 'countersign-heap-'));
  log('bench:heap: starting Temporal dev server (in memory)');
  const dev = await startDevServer({ port: await freePort(), namespace: 'default' });
  cleanups.push(() => dev.stop());
  const config = benchConfig(dev.address);
  try {
    // --preload: the product's bundle plus Temporal's `preloadModules` (an experiment, see the notes)
    const bundle = opts.preload?.length
      ? await bundleWorkflowCode({
          workflowsPath: WORKFLOWS_PATH,
          workflowInterceptorModules: [WORKFLOW_TRACING_MODULE],
          preloadModules: opts.preload,
          // packages marked side-effect free (OpenTelemetry's) are otherwise dropped from the preload
          // list; a path ending in .ts (bench/heap/preload-otel-api.ts) is kept as it is
          ...(opts.preload.every((m) => m.endsWith('.ts'))
            ? {}
            : { webpackConfigHook: (c: Configuration) => ({ ...c, optimization: { ...c.optimization, sideEffects: false } }) }),
          logger: {
            log() {},
            info() {},
            warn() {},
            error: (m: string, meta?: unknown) => log(`bundler: ${m} ${JSON.stringify(meta ?? '')}`),
            debug() {},
            trace() {},
          } as never,
        })
      : await bundleWorkflows();
    const bundlePath = join(config.COUNTERSIGN_DATA_DIR, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle.code);
    const stack = await startStack(config, { workflowBundle: bundle, logger });
    cleanups.unshift(() => stack.stop());
    await stack.stopWorker();
    const spec = (ledger: string): RoleSpec => ({
      config,
      temporalAddress: dev.address,
      approvalsUrl: stack.urls.approvals,
      issuerUrl: stack.urls.issuer,
      resourceUrl: stack.urls.mcp,
      ledgerFile: join(config.COUNTERSIGN_DATA_DIR, ledger),
    });
    const maxCachedWorkflows = opts.cached + PRINCIPALS + 54;
    const worker = await startRole('worker', 'worker.ts', {
      ...spec('ledger.db'),
      workflowBundlePath: bundlePath,
      maxCachedWorkflows,
      heapSnapshotDir: snapDir,
    });
    cleanups.unshift(() => worker.stop());
    const mcp = await startRole('mcp', 'mcp-server.ts', { ...spec('ledger-mcp.db'), traceRuns: opts.traced });
    cleanups.unshift(() => mcp.stop());

    log(`bench:heap: worker pid ${worker.pid}, workflows in its main thread; figures with no task`);
    const empty = await snapshotWorker(snapDir, 1, false);
    const clients = await Promise.all(
      Array.from(
        { length: PRINCIPALS },
        async (_, p) =>
          new WireClient({
            url: String(mcp.ready.url),
            token: await stack.issuer.mintToken({ sub: `bench-heap-${p}`, ttlSeconds: 6 * 3600 }),
            capabilities: TASKS_CAPS,
          }),
      ),
    );
    log(`bench:heap: creating ${opts.cached} pending tasks (${opts.traced ? 'traced' : 'untraced'} runs)`);
    const t0 = performance.now();
    await closedLoop(opts.cached, 8, async (i) => {
      await createTask(clients[i % PRINCIPALS]!, `heap ${i}`);
    });
    const creationSeconds = round((performance.now() - t0) / 1000, 1);
    // let the last workflow tasks finish (each created task's run waits on a signal or timer)
    await new Promise((r) => setTimeout(r, 3000));
    log(`bench:heap: ${opts.cached} created in ${creationSeconds} s; snapshot`);
    const loaded = await snapshotWorker(snapDir, 2, true, opts.keepDir);
    const per = (a: number, b: number) => round(((a - b) * 1024) / opts.cached, 1);
    return {
      key: `${opts.traced ? 'traced' : 'untraced'}-${opts.cached}${opts.preload?.length ? `-preload-${opts.preload.map(shortName).join('+')}` : ''}`,
      generatedAt: new Date().toISOString(),
      command: `npm run bench:heap -- --cached ${opts.cached}${opts.traced ? ' --traced' : ''}${opts.preload?.length ? ` --preload ${opts.preload.map(shortName).join(',')}` : ''}`,
      preload: opts.preload ?? [],
      machine: { ...machine, loadAvgEnd: round(os.loadavg()[0]!, 2) },
      cached: opts.cached,
      traced: opts.traced,
      maxCachedWorkflows,
      creationSeconds,
      empty,
      loaded,
      perRunKiB: { heapAfterGc: per(loaded.heapUsedAfterGcMiB, empty.heapUsedAfterGcMiB), rss: per(loaded.rssMiB, empty.rssMiB) },
    };
  } finally {
    for (const c of cleanups) await c().catch(() => undefined);
    rmSync(snapDir, { recursive: true, force: true });
    rmSync(config.COUNTERSIGN_DATA_DIR, { recursive: true, force: true });
    rmSync(config.COUNTERSIGN_POLICY_DIR, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const program = new Command('bench:heap')
    .description("what holds the worker's memory with N cached approval workflows (heap snapshot of the workflow thread)")
    .option('--cached <n>', 'pending approval tasks (cached runs)', '1000')
    .option('--traced', 'start the runs traced (memo tracing on)', false)
    .option(
      '--preload <modules>',
      "experiment: comma-separated modules for Temporal's preloadModules (loaded once, shared by all runs); otel-api = bench/heap/preload-otel-api.ts",
    )
    .option('--out <file>', 'results file (runs keyed by tracing and N)', fileURLToPath(new URL('./last-run.json', import.meta.url)))
    .option('--keep-snapshots <dir>', 'keep the .heapsnapshot files in this folder')
    .parse();
  const o = program.opts<{ cached: string; traced: boolean; out: string; keepSnapshots?: string; preload?: string }>();
  const cached = Number(o.cached);
  if (!Number.isInteger(cached) || cached < 1) program.error(`--cached must be a positive integer, got ${o.cached}`);
  runHeapBench({
    cached,
    traced: o.traced,
    ...(o.preload ? { preload: o.preload.split(',').map((m) => (m === 'otel-api' ? OTEL_API_PRELOAD : m)) } : {}),
    ...(o.keepSnapshots ? { keepDir: o.keepSnapshots } : {}),
  })
    .then((run) => {
      const all = existsSync(o.out) ? (JSON.parse(readFileSync(o.out, 'utf8')) as { runs: HeapRun[] }) : { runs: [] };
      all.runs = [...all.runs.filter((r) => r.key !== run.key), run].sort(
        (a, b) => Number(a.traced) - Number(b.traced) || a.cached - b.cached,
      );
      writeFileSync(o.out, `${JSON.stringify(all, null, 2)}\n`);
      const l = run.loaded;
      process.stdout.write(
        `${JSON.stringify({
          key: run.key,
          rssMiB: l.rssMiB,
          heapUsedAfterGcMiB: l.heapUsedAfterGcMiB,
          perRunKiB: run.perRunKiB,
          tagsOnNewPromise: l.tagsOnNewPromise,
          tagsInSnapshot: l.snapshot?.promises.resourceStoreTags,
          promisePropertyArraysMiB: l.snapshot && round(l.snapshot.promises.propertyArrayBytes / MiB, 1),
          cachedWorkflows: l.cachedWorkflows,
        })}\n`,
      );
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(`bench:heap failed: ${(err as Error).stack ?? err}\n`);
      process.exit(1);
    });
}
