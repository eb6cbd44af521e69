// Scope: `npm run bench`. Starts a Temporal dev server (in memory, its own process), the
// stack around it (approval service, token issuer, an in-process MCP server for the allowed-call
// scenario), then the worker and MCP server instances as their own processes so each one's memory
// is measured alone, and runs the scenarios in bench/scenarios/ against their baselines in the same
// run: allowed-call overhead, task creation, approve → result, approve → notification, Temporal
// actions (per task, and by wait length in simulated time), read CPU record vs query, scale-out,
// backlog. Writes
// bench/results.json, bench/task-creation.svg and BENCHMARKS.md.
// `--smoke`: tiny N, one run, results to bench/results.smoke.json only (BENCHMARKS.md untouched).
// `--backlog N`: backlog size (default 10,000; smoke 40); `--backlog-budget S`: time budget for
// growing it (default 900 s), after which it stops and reports the size reached.
// Profiling: `--only allowed,gateway,create,approve,actions,notify,waits,reads,scale,backlog`, `--tasks N`,
// `--levels 1,16`, `--action-tasks N`, `--read-tasks N`, `--read-seconds S`, `--notify-samples K`, and
// BENCH_CPU_PROF=<dir> (a V8 CPU profile of every role process).
import { mkdtempSync, readdirSync, copyFileSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { WireClient } from '@countersign/client';
import { loadConfig, type Config } from '../src/config.js';
import { createLogger } from '@countersign/http/log';
import { startStack } from '../src/stack.js';
import { PROJECT_ROOT } from '../src/temporal/binaries.js';
import { freePort, startDevServer } from '../src/temporal/dev-server.js';
import { bundleWorkflows } from '../src/worker.js';
import { TASKS_CAPS, type BenchContext } from './lib/context.js';
import { taskCreationSvg } from './lib/plot.js';
import { machineInfo, RssSampler, type MachineInfo } from './lib/procs.js';
import { closedLoop, round } from './lib/stats.js';
import { markdown } from './report.js';
import { startRole, type RoleProcess, type RoleSpec } from './roles/spec.js';
import { allowedCallScenario, type AllowedCallResult } from './scenarios/allowed-call.js';
import { gatewayCallScenario, type GatewayCallResult } from './scenarios/gateway-call.js';
import { actionsScenario, type ActionsResult } from './scenarios/actions.js';
import { approveNotifyScenario, type ApproveNotifyResult } from './scenarios/approve-notify.js';
import { approveResultScenario, type ApproveResultResult } from './scenarios/approve-result.js';
import { backlogScenario, type BacklogResult } from './scenarios/backlog.js';
import { readCpuScenario, type ReadCpuResult } from './scenarios/read-cpu.js';
import { scaleOutScenario, type ScaleOutResult } from './scenarios/scale-out.js';
import { taskCreationScenario, type TaskCreationResult } from './scenarios/task-creation.js';
import { waitActionsScenario, type WaitActionsResult } from './scenarios/wait-actions.js';

const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
const WORKER_CACHE = 1000;

export interface BenchOptions {
  smoke?: boolean;
  /** Pending tasks in the backlog scenario; default 10,000 (smoke: 40). */
  backlog?: number;
  /** Time budget for growing the backlog, s; default 900 (smoke: 60). It stops early, and says so, when spent. */
  backlogBudgetS?: number;
  /** Where results go; default: bench/ (results.json, task-creation.svg) and the project root (BENCHMARKS.md). */
  outDir?: string;
  /** Write BENCHMARKS.md (default: not in smoke mode). */
  writeMarkdown?: boolean;
  log?: (line: string) => void;
  /** Run only these scenarios (allowed, gateway, create, approve, actions, notify, waits, reads, scale, backlog): results.partial.json, no report. For profiling. */
  only?: string[];
  /** Override tasks per run of the task-creation scenario and its levels (profiling). */
  createTasksPerRun?: number;
  createLevels?: number[];
  /** Tasks per outcome (approved, denied) of the actions scenario; default 10 (smoke: 2). */
  actionTasks?: number;
  /** Pending tasks of the read-CPU scenario (default 1,000; smoke 40) and seconds of reading per path (default 60; smoke 8). */
  readTasks?: number;
  readSeconds?: number;
  /** Samples per side of approve → notification vs approve → result; default 30 (smoke 3). */
  notifySamples?: number;
}

export interface BenchResults {
  generatedAt: string;
  command: string;
  mode: 'full' | 'smoke';
  durationS: number;
  machine: MachineInfo;
  temporal: string;
  allowedCall: AllowedCallResult;
  /** Gateway allowed call vs the same upstream called directly, stdio and HTTP (bench/scenarios/gateway-call.ts). */
  gatewayCall: GatewayCallResult;
  taskCreation: TaskCreationResult & { cancelled: number; cancelFailures: number };
  approveResult: ApproveResultResult;
  /** Temporal Cloud actions per approved and per denied task (bench/scenarios/actions.ts). */
  actions: ActionsResult;
  /** Approve → `notifications/tasks` on a subscription vs approve → `tasks/get` result (bench/scenarios/approve-notify.ts). */
  approveNotify: ApproveNotifyResult;
  /** Actions per approved task by wait length, simulated time (bench/scenarios/wait-actions.ts). */
  waitActions: WaitActionsResult;
  /** CPU per task read, record vs query path (bench/scenarios/read-cpu.ts). */
  readCpu: ReadCpuResult;
  scaleOut: ScaleOutResult;
  backlog: BacklogResult;
  /** Peak RSS per process, MiB (VmHWM / sampled VmRSS). */
  peakRssMiB: Record<string, number>;
  notes: string[];
}

/**
 * The bench's configuration over `temporalAddress`: fresh data and policy folders in the OS temp
 * folder (the caller removes them), ephemeral ports, limits raised, status poll at 1 h.
 */
export function benchConfig(temporalAddress: string): Config {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'countersign-bench-'));
  const policyDir = mkdtempSync(join(os.tmpdir(), 'countersign-bench-policies-'));
  for (const f of readdirSync(join(PROJECT_ROOT, 'policies')))
    if (f.endsWith('.cedar')) copyFileSync(join(PROJECT_ROOT, 'policies', f), join(policyDir, f));
  return loadConfig(
    {},
    {
      COUNTERSIGN_DATA_DIR: dataDir,
      COUNTERSIGN_POLICY_DIR: policyDir,
      COUNTERSIGN_PORT: 0,
      COUNTERSIGN_APPROVALS_PORT: 0,
      COUNTERSIGN_ISSUER_PORT: 0,
      TEMPORAL_ADDRESS: temporalAddress,
      COUNTERSIGN_CREATE_WAIT_MS: 60_000,
      // limits raised so the bench measures throughput, not the limiter refusing it (the limiter
      // round trip still happens on every new task)
      COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: 1_000_000,
      COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: 1_000_000,
      // a pending backlog of 10,000 must not poll the approval service every 15 s: decisions reach
      // the workflows by signed callback, and the status poll is only the fallback
      COUNTERSIGN_STATUS_POLL_INITIAL_MS: 3_600_000,
      // approve → result and the actions scenario poll tasks/get every few ms to time the moment a
      // task completes; the per-task poll limit (src/mcp/poll-interval.ts) would refuse them past
      // its burst. Clients of the read scenarios honour pollIntervalMs, which the limit never refuses.
      COUNTERSIGN_POLL_RATE_LIMIT: 'off',
    },
  );
}

export async function runBench(opts: BenchOptions = {}): Promise<BenchResults> {
  const smoke = opts.smoke ?? false;
  const backlogSize = opts.backlog ?? (smoke ? 40 : 10_000);
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const t0 = Date.now();
  const machine = machineInfo();
  const sampler = new RssSampler(250);
  sampler.watch('bench', process.pid);
  const cleanups: Array<() => Promise<void>> = [];
  const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' });

  log('bench: starting Temporal dev server (in memory)');
  const dev = await startDevServer({ port: await freePort(), namespace: 'default' });
  cleanups.push(() => dev.stop());
  sampler.watch('temporal', dev.process.pid!);
  const config = benchConfig(dev.address);
  try {
    const bundle = await bundleWorkflows();
    const bundlePath = join(config.COUNTERSIGN_DATA_DIR, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle.code);
    log('bench: starting stack');
    const stack = await startStack(config, { workflowBundle: bundle, logger });
    cleanups.unshift(() => stack.stop());

    const conn = await Connection.connect({ address: dev.address });
    cleanups.unshift(() => conn.close());
    const rawClient = new Client({ connection: conn, namespace: config.TEMPORAL_NAMESPACE });

    const roleSpec = (ledgerName: string): RoleSpec => ({
      config,
      temporalAddress: dev.address,
      approvalsUrl: stack.urls.approvals,
      issuerUrl: stack.urls.issuer,
      resourceUrl: stack.urls.mcp,
      ledgerFile: join(config.COUNTERSIGN_DATA_DIR, ledgerName),
    });
    const approver = stack.secrets.approvers.find((a) => a.groups.includes('treasury'))!;
    const ctxBase = {
      smoke,
      log,
      stack,
      config,
      rawClient,
      roleSpec,
      sampler,
      toCancel: [] as BenchContext['toCancel'],
      approverAuth: `Basic ${Buffer.from(`${approver.id}:${approver.secret}`).toString('base64')}`,
      client: async (sub: string, url?: string) =>
        new WireClient({
          url: url ?? ctxA.mcpA.url,
          token: await stack.issuer.mintToken({ sub, ttlSeconds: 6 * 3600 }),
          capabilities: TASKS_CAPS,
        }),
    };

    // 1. allowed-call overhead: in the bench process, before the roles start
    const want = (s: string) => !opts.only || opts.only.includes(s);
    const allowedCall = !want('allowed')
      ? (undefined as never)
      : await allowedCallScenario({ ...ctxBase, mcpA: undefined as never, worker: undefined as never });
    // 1b. gateway allowed call vs the same upstream called directly: in the bench process too
    const gatewayCall = !want('gateway') ? (undefined as never) : await gatewayCallScenario(ctxBase);

    // Roles as their own processes, started together: the baselines' worker (raw Update-with-Start,
    // same shape, signal-then-query; own queue), and the Countersign worker and MCP server A (the
    // stack's in-process worker makes way for the worker role first).
    // `--only allowed,gateway` runs in the bench process alone: no role processes to start.
    const inProcessOnly = opts.only?.every((s) => s === 'allowed' || s === 'gateway') ?? false;
    let ctxA: BenchContext = { ...ctxBase, mcpA: undefined as never, worker: undefined as never };
    if (!inProcessOnly) {
      await stack.stopWorker();
      const started = await Promise.allSettled([
        startRole('baseline-worker', 'baseline-worker.ts', { ...roleSpec('unused.db'), maxCachedWorkflows: WORKER_CACHE }),
        startRole('worker', 'worker.ts', { ...roleSpec('ledger.db'), workflowBundlePath: bundlePath, maxCachedWorkflows: WORKER_CACHE }),
        startRole('mcp-a', 'mcp-server.ts', roleSpec('ledger-mcp-a.db')),
      ]);
      for (const r of started) {
        if (r.status !== 'fulfilled') continue;
        cleanups.unshift(() => r.value.stop());
        sampler.watch(r.value.name, r.value.pid);
      }
      const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      const [, worker, a] = started.map((r) => (r as PromiseFulfilledResult<RoleProcess>).value) as [RoleProcess, RoleProcess, RoleProcess];
      ctxA = { ...ctxBase, mcpA: { ...a, url: String(a.ready.url), origin: String(a.ready.origin) }, worker };
      log(`bench: worker pid ${worker.pid} ${JSON.stringify(worker.ready)}; MCP server A pid ${a.pid}`);
    }

    // 2. task creation, then cancel what it created (keeps the approval service's pending list short)
    const taskCreation = !want('create')
      ? (undefined as never)
      : await taskCreationScenario(ctxA, opts.createLevels ?? (smoke ? [1, 4, 16] : [1, 2, 4, 8, 16, 32]), opts.createTasksPerRun);
    log(`bench: cancelling ${ctxA.toCancel.length} tasks`);
    let cancelFailures = 0;
    const cancelAll = async () => {
      const list = ctxA.toCancel.splice(0);
      await closedLoop(list.length, 8, async (i) => {
        try {
          await list[i]!.client.request('tasks/cancel', { taskId: list[i]!.taskId });
        } catch {
          cancelFailures++;
        }
      });
      return list.length;
    };
    const cancelled = await cancelAll();

    // 3. approve → result; 4. scale-out; 5. backlog (last: its tasks stay pending until the end)
    const approveResult = !want('approve') ? (undefined as never) : await approveResultScenario(ctxA);
    const actions = !want('actions') ? (undefined as never) : await actionsScenario(ctxA, opts.actionTasks);
    const approveNotify = !want('notify') ? (undefined as never) : await approveNotifyScenario(ctxA, opts.notifySamples);
    const waitActions = !want('waits') ? (undefined as never) : await waitActionsScenario(ctxA, bundle);
    // after the scenarios that look requests up in the approver's pending list: it cancels its tasks at the end
    const readCpu = !want('reads')
      ? (undefined as never)
      : await readCpuScenario(ctxA, {
          ...(opts.readTasks ? { tasks: opts.readTasks } : {}),
          ...(opts.readSeconds ? { seconds: opts.readSeconds } : {}),
        });
    const scaleOut = !want('scale') ? (undefined as never) : await scaleOutScenario(ctxA);
    const backlog = !want('backlog')
      ? (undefined as never)
      : await backlogScenario(ctxA, backlogSize, opts.backlogBudgetS ?? (smoke ? 60 : 900));

    sampler.stop();
    machine.loadAvgEnd = round(os.loadavg()[0]!, 2);
    const results: BenchResults = {
      generatedAt: new Date().toISOString(),
      command: smoke
        ? 'npm run bench -- --smoke'
        : `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
      mode: smoke ? 'smoke' : 'full',
      durationS: round((Date.now() - t0) / 1000, 1),
      machine,
      temporal: 'temporal server start-dev, in-memory SQLite, its own process',
      allowedCall,
      gatewayCall,
      taskCreation: taskCreation && { ...taskCreation, cancelled: cancelled - cancelFailures, cancelFailures },
      approveResult,
      actions,
      approveNotify,
      waitActions,
      readCpu,
      scaleOut,
      backlog,
      peakRssMiB: { ...sampler.peakMiB },
      notes: [
        'Processes: Temporal dev server; worker (approval + limiter workflows, activities); MCP server instance A (and B in scale-out); the baselines\u2019 worker (bench/workflows, no-op activities); the bench process (approval service, token issuer, the in-process MCP server and plain baselines of the allowed-call scenario, all clients).',
        'Task creation per Countersign call = JWT + Cedar + binding, limiter Update-with-Start (reserve), approval Update-with-Start (AES-GCM payload codec), the submit activity to the approval service awaited by the taskCreated update; the raw baseline is one Update-with-Start of an empty workflow with the default codec.',
        'Bench configuration: submission limits raised to 1,000,000 (the limiter round trip still runs on every task); status poll starts at 1 h so a pending backlog is quiet (decisions arrive by signed callback).',
        'Sequential latency: one client, one request in flight. Throughput: closed loop with N requests in flight.',
      ],
    };
    const outDir = opts.outDir ?? BENCH_DIR;
    if (opts.only) {
      writeFileSync(join(outDir, 'results.partial.json'), `${JSON.stringify(results, null, 2)}\n`);
      return results;
    }
    writeFileSync(join(outDir, smoke ? 'results.smoke.json' : 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(
      join(outDir, smoke ? 'task-creation.smoke.svg' : 'task-creation.svg'),
      taskCreationSvg(taskCreation.levels, `${results.command} · ${results.generatedAt} · ${machine.cores} cores`),
    );
    if (opts.writeMarkdown ?? !smoke)
      writeFileSync(opts.outDir ? join(opts.outDir, 'BENCHMARKS.md') : join(PROJECT_ROOT, 'BENCHMARKS.md'), markdown(results));
    return results;
  } finally {
    sampler.stop();
    for (const c of cleanups) await c().catch(() => undefined);
    rmSync(config.COUNTERSIGN_DATA_DIR, { recursive: true, force: true });
    rmSync(config.COUNTERSIGN_POLICY_DIR, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const smoke = process.argv.includes('--smoke');
  const bi = process.argv.indexOf('--backlog');
  const backlog = bi > 0 ? Number(process.argv[bi + 1]) : undefined;
  const arg = (name: string) => (process.argv.indexOf(name) > 0 ? process.argv[process.argv.indexOf(name) + 1] : undefined);
  const only = arg('--only')?.split(',');
  const tasks = arg('--tasks');
  const budget = arg('--backlog-budget');
  const levels = arg('--levels')?.split(',').map(Number);
  const actionTasks = arg('--action-tasks');
  const readTasks = arg('--read-tasks');
  const readSeconds = arg('--read-seconds');
  const notifySamples = arg('--notify-samples');
  runBench({
    smoke,
    ...(backlog ? { backlog } : {}),
    ...(only ? { only } : {}),
    ...(tasks ? { createTasksPerRun: Number(tasks) } : {}),
    ...(levels ? { createLevels: levels } : {}),
    ...(budget ? { backlogBudgetS: Number(budget) } : {}),
    ...(actionTasks ? { actionTasks: Number(actionTasks) } : {}),
    ...(readTasks ? { readTasks: Number(readTasks) } : {}),
    ...(readSeconds ? { readSeconds: Number(readSeconds) } : {}),
    ...(notifySamples ? { notifySamples: Number(notifySamples) } : {}),
  })
    .then((r) => {
      process.stdout.write(
        `${JSON.stringify({
          allowedCall: r.allowedCall?.ratio,
          gatewayCall: r.gatewayCall && { stdio: r.gatewayCall.stdio.ratio, http: r.gatewayCall.http.ratio },
          taskCreation: r.taskCreation?.levels.map((l) => ({ c: l.concurrency, ratio: l.ratio, perSec: l.countersignPerSec })),
          approveResult: r.approveResult?.ratio,
          actions: r.actions && { approved: r.actions.approved.total, denied: r.actions.denied.total },
          approveNotify: r.approveNotify?.ratio,
          waitActions: r.waitActions?.ratio,
          readCpu: r.readCpu?.ratio,
          scaleOut: r.scaleOut?.ratio,
          backlog: r.backlog && { ratio: r.backlog.ratio, mcpRssGrowth: r.backlog.mcpRssGrowth, creationPerSec: r.backlog.creationPerSec },
          peakRssMiB: r.peakRssMiB,
          seconds: r.durationS,
        })}\n`,
      );
      process.exit(0);
    })
    .catch((err) => {
      process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
      process.exit(1);
    });
}
