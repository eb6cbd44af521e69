/**
 * Standalone reproduction: the Temporal server refuses workflow updates as `UnprocessedUpdate`
 * ("Workflow Update is rejected because it wasn't processed by worker") and the TypeScript SDK's
 * Core logs "There are unprocessed protocol messages while receiving new work", under workflow
 * cache eviction. Plain @temporalio/client + @temporalio/worker and the dev server of the Temporal
 * CLI; no Countersign code. Findings and numbers: README.md beside this file.
 *
 *   npx tsx bench/repro/unprocessed-update/repro.ts [--runs 20] [--cache 2] [--rate 20] [--duration 60]
 *     [--tick-ms 1000] [--activity] [--sticky-timeout-ms n] [--wft-slots n] [--reject-every n]
 *     [--address host:port] [--core-log <tracing filter>] [--log-file path]
 *
 * Starts `temporal server start-dev` (TEMPORAL_CLI, else this checkout's .tools/py/bin/temporal)
 * unless --address is given, a worker with `maxCachedWorkflows: --cache`, `--runs` runs of the
 * `counter` workflow, then sends `--rate` `bump` updates a second to random runs for
 * `--duration` seconds, each awaited (executeUpdate). Prints one JSON summary: updates completed,
 * refused as UnprocessedUpdate, other errors, latencies, the Core's log lines counted by message,
 * its forced-eviction counter, and workflow-task timeouts/failures found in the runs' histories.
 * Exits 0 whatever it measured (it reports, it does not judge).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString, type LogEntry } from '@temporalio/worker';
import * as activities from './activities.js';
import { bumpUpdate, counter, stopSignal } from './workflows.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    cache: { type: 'string', default: '2' },
    rate: { type: 'string', default: '20' },
    duration: { type: 'string', default: '60' },
    'tick-ms': { type: 'string', default: '1000' },
    activity: { type: 'boolean', default: false },
    'sticky-timeout-ms': { type: 'string' },
    'wft-slots': { type: 'string' },
    'reject-every': { type: 'string', default: '0' },
    address: { type: 'string' },
    'core-log': { type: 'string' },
    'log-file': { type: 'string' },
  },
});
const RUNS = Number(args.runs);
const CACHE = Number(args.cache);
const RATE = Number(args.rate);
const DURATION_S = Number(args.duration);
const TICK_MS = Number(args['tick-ms']);
const WITH_ACTIVITY = args.activity ?? false;
const STICKY_TIMEOUT_MS = args['sticky-timeout-ms'] ? Number(args['sticky-timeout-ms']) : undefined;
const WFT_SLOTS = args['wft-slots'] ? Number(args['wft-slots']) : undefined;
/** Every n-th update asks for a bump the validator refuses (0: none): exercises discarded speculative tasks. */
const REJECT_EVERY = Number(args['reject-every']);
const TASK_QUEUE = 'unprocessed-update-repro';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function startDevServer(): Promise<{ address: string; child: ChildProcess }> {
  const bin = process.env.TEMPORAL_CLI || join(HERE, '..', '..', '..', '.tools', 'py', 'bin', 'temporal');
  if (!existsSync(bin)) throw new Error(`temporal CLI not found at ${bin}; set TEMPORAL_CLI or pass --address`);
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const child = spawn(
    bin,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--headless',
      '--log-level',
      'error',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  for (let i = 0; i < 120; i++) {
    try {
      const c = await Connection.connect({ address, connectTimeout: 1000 });
      await c.workflowService.getSystemInfo({});
      await c.close();
      return { address, child };
    } catch {
      await sleep(500);
    }
  }
  child.kill('SIGTERM');
  throw new Error('dev server did not become ready in 60 s');
}

/** The Core's log lines (WARN and up, or what --core-log asks for), counted by message. */
const coreLines = new Map<string, number>();
function installRuntime(metricsPort: number): void {
  const filter = args['core-log'] ?? makeTelemetryFilterString({ core: 'WARN' });
  const logFile = args['log-file'];
  Runtime.install({
    logger: new DefaultLogger('TRACE', (entry: LogEntry) => {
      if (entry.level === 'WARN' || entry.level === 'ERROR') {
        // one count per kind: the per-task duration warning names its run and event
        const key = entry.message.replace(/^\[TMPRL1104\] \S+ /, '[TMPRL1104] ');
        coreLines.set(key, (coreLines.get(key) ?? 0) + 1);
      }
      if (logFile) {
        const t = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
        appendFileSync(
          logFile,
          `${t} ${entry.level} ${entry.message} ${JSON.stringify(entry.meta ?? {}, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n`,
        );
      }
    }),
    telemetryOptions: {
      logging: { filter, forward: {} },
      metrics: { prometheus: { bindAddress: `127.0.0.1:${metricsPort}` } },
    },
  });
}

async function scrapeForcedEvictions(metricsPort: number): Promise<number | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('temporal_sticky_cache_total_forced_eviction'));
    return line ? Number(line.trim().split(/\s+/).at(-1)) : 0;
  } catch {
    return undefined;
  }
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const server = args.address ? undefined : await startDevServer();
  const address = args.address ?? server!.address;
  const metricsPort = await freePort();
  installRuntime(metricsPort);

  const workerConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: workerConnection,
    taskQueue: TASK_QUEUE,
    workflowsPath: join(HERE, 'workflows.ts'),
    maxCachedWorkflows: CACHE,
    activities,
    ...(STICKY_TIMEOUT_MS !== undefined ? { stickyQueueScheduleToStartTimeout: STICKY_TIMEOUT_MS } : {}),
    ...(WFT_SLOTS !== undefined ? { maxConcurrentWorkflowTaskExecutions: WFT_SLOTS } : {}),
  });
  const workerRun = worker.run();

  const connection = await Connection.connect({ address });
  const client = new Client({ connection });
  const prefix = `counter-${Date.now()}`;
  const handles = await Promise.all(
    Array.from({ length: RUNS }, (_, i) =>
      client.workflow.start(counter, { taskQueue: TASK_QUEUE, workflowId: `${prefix}-${i}`, args: [TICK_MS, WITH_ACTIVITY] }),
    ),
  );

  const accepted = new Map<string, number>(); // workflow id -> updates that completed
  const unprocessedByRun = new Map<string, number>();
  let sent = 0;
  let completed = 0;
  let unprocessed = 0;
  let validatorRefusals = 0;
  const otherErrors = new Map<string, number>();
  const latencies: number[] = [];
  const unprocessedLatencies: number[] = [];
  const inFlight = new Set<Promise<void>>();

  const started = Date.now();
  const endAt = started + DURATION_S * 1000;
  const interval = 1000 / RATE;
  for (let next = Date.now(); next < endAt; next += interval) {
    const wait = next - Date.now();
    if (wait > 0) await sleep(wait);
    const h = handles[Math.floor(Math.random() * handles.length)]!;
    sent++;
    const refusedByValidator = REJECT_EVERY > 0 && sent % REJECT_EVERY === 0;
    const t0 = Date.now();
    const p = h
      .executeUpdate(bumpUpdate, { args: [refusedByValidator ? -1 : 1] })
      .then(() => {
        completed++;
        latencies.push(Date.now() - t0);
        accepted.set(h.workflowId, (accepted.get(h.workflowId) ?? 0) + 1);
      })
      .catch((err: unknown) => {
        const cause = err instanceof WorkflowUpdateFailedError ? (err.cause as { type?: string; message?: string }) : undefined;
        if (refusedByValidator && err instanceof WorkflowUpdateFailedError && cause?.type !== 'UnprocessedUpdate') {
          validatorRefusals++;
        } else if (cause?.type === 'UnprocessedUpdate') {
          unprocessed++;
          unprocessedLatencies.push(Date.now() - t0);
          unprocessedByRun.set(h.workflowId, (unprocessedByRun.get(h.workflowId) ?? 0) + 1);
          if (args['log-file']) appendFileSync(args['log-file'], `${new Date().toISOString()} REPRO UnprocessedUpdate ${h.workflowId}\n`);
        } else {
          const inner = (err as { cause?: { message?: string } }).cause;
          const key = cause
            ? `${cause.type}: ${cause.message}`
            : `${(err as Error).name}: ${(err as Error).message}${inner?.message ? ` (${inner.message})` : ''}`;
          otherErrors.set(key, (otherErrors.get(key) ?? 0) + 1);
        }
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  const sendSeconds = (Date.now() - started) / 1000;
  await Promise.race([Promise.allSettled([...inFlight]), sleep(60_000)]);
  const stillInFlight = inFlight.size;

  // Stop the runs and check each result equals the updates the client saw completed.
  await Promise.all(handles.map((h) => h.signal(stopSignal)));
  const results = await Promise.all(handles.map((h) => Promise.race([h.result(), sleep(60_000).then(() => undefined)])));
  let mismatched = 0;
  handles.forEach((h, i) => {
    if (results[i] !== (accepted.get(h.workflowId) ?? 0)) mismatched++;
  });

  // Workflow-task timeouts and failures in the runs' histories.
  let wftTimedOut = 0;
  let wftFailed = 0;
  let runsWithWftTimeout = 0;
  for (const h of handles) {
    const history = await h.fetchHistory().catch(() => ({ events: [] }));
    const events = history.events ?? [];
    const timeouts = events.filter((e) => e.workflowTaskTimedOutEventAttributes).length;
    wftTimedOut += timeouts;
    wftFailed += events.filter((e) => e.workflowTaskFailedEventAttributes).length;
    if (timeouts > 0) runsWithWftTimeout++;
  }

  const forcedEvictions = await scrapeForcedEvictions(metricsPort);
  latencies.sort((a, b) => a - b);
  unprocessedLatencies.sort((a, b) => a - b);
  const summary = {
    settings: {
      runs: RUNS,
      cache: CACHE,
      ratePerSecond: RATE,
      durationSeconds: DURATION_S,
      tickMs: TICK_MS,
      activity: WITH_ACTIVITY,
      stickyTimeoutMs: STICKY_TIMEOUT_MS ?? null,
      wftSlots: WFT_SLOTS ?? null,
      rejectEvery: REJECT_EVERY,
    },
    updates: {
      sent,
      completed,
      refusedUnprocessedUpdate: unprocessed,
      refusedByTheValidatorAsAsked: validatorRefusals,
      runsWithAnUnprocessedUpdate: unprocessedByRun.size,
      otherErrors: Object.fromEntries(otherErrors),
      stillInFlightAfter60s: stillInFlight,
      sendSeconds,
    },
    latencyMs: {
      completed: { p50: pct(latencies, 50), p99: pct(latencies, 99), max: latencies.at(-1) ?? 0 },
      refused: { p50: pct(unprocessedLatencies, 50), p99: pct(unprocessedLatencies, 99), max: unprocessedLatencies.at(-1) ?? 0 },
    },
    runs: {
      resultsNotMatchingCompletedUpdates: mismatched,
      workflowTasksTimedOut: wftTimedOut,
      runsWithAWorkflowTaskTimeout: runsWithWftTimeout,
      workflowTasksFailed: wftFailed,
    },
    worker: { forcedCacheEvictions: forcedEvictions },
    coreLogLines: Object.fromEntries([...coreLines].sort((a, b) => b[1] - a[1])),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);

  worker.shutdown();
  await workerRun;
  await workerConnection.close();
  await connection.close();
  if (server) {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
