/**
 * The Temporal worker of every composition (`src/compose.ts` is its only caller outside the tests,
 * and this is the only `Worker.create` outside them): by default the approval workflow and the
 * per-principal submission limiter (`workflows/index.ts`, or the bundle `npm run build` made),
 * with the activities the caller composed; the conformance profile and the bench's baseline run
 * their own workflows through the same starter. `startApprovalWorker` returns once the worker polls;
 * `stop()` stops it within `shutdownGraceMs` (a deploy); `replace()` swaps in a fresh worker and lets
 * the old one finish its in-flight activities for up to `drainMs` (docs/OPERATIONS.md §A workflow
 * task nobody answers, "Tools running at a replacement").
 */
import {
  type NativeConnection,
  Worker,
  bundleWorkflowCode,
  type InjectedSinks,
  type WorkerOptions,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DataConverter } from '@temporalio/common';
import { connectWorker, type TemporalConnection } from './temporal/connect.js';
import type { AppMetrics } from './ops/metrics.js';
import type { CountersignSinks } from '../workflows/metrics-sink.js';
import { TRACING_OFF, WORKFLOW_TRACING_MODULE, type Tracing } from './ops/tracing.js';
import { PROJECT_ROOT, SOURCE_EXTENSION } from './project-root.js';

/** Absolute path of the workflow module the worker bundles (re-exports every workflow). */
export const WORKFLOWS_PATH = fileURLToPath(new URL(`../workflows/index${SOURCE_EXTENSION}`, import.meta.url));

/**
 * Bundle the workflow code once (1–2 s); pass the result to every worker of this process.
 * The bundle always holds Temporal's OpenTelemetry workflow interceptors (`src/ops/tracing.ts`),
 * tracing on or off: they change the order of a workflow task's commands (their handler spans add
 * awaits), so a run started by a worker with them must be replayed with them, and switching
 * `OTEL_*` on or off must not change the workflow code (test/e2e/tracing.test.ts,
 * test/workflow/replay-corpus.test.ts). They trace only the runs whose start memo asks for it
 * (`workflows/tracing-interceptors.ts`); in the others they pass every call straight through.
 */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  const prebuilt = prebuiltWorkflowBundle();
  if (prebuilt) return Promise.resolve(prebuilt);
  return bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [WORKFLOW_TRACING_MODULE],
    logger: { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} } as never,
  });
}

/** Where `npm run build` writes the worker's workflow bundle (`scripts/bundle-workflows.mjs`): `dist/workflow-bundle.js`. */
export const PREBUILT_WORKFLOW_BUNDLE = join(PROJECT_ROOT, 'dist', 'workflow-bundle.js');

/**
 * The bundle `npm run build` made of the compiled workflows, read once, when this process runs the
 * compiled code (`dist/`) and the file exists; undefined when it runs the TypeScript sources, which
 * are bundled at start so a change is never run stale. The build bundles exactly what
 * {@link bundleWorkflows} would (the same modules, OpenTelemetry interceptors included), so a
 * worker starts without webpack.
 */
export function prebuiltWorkflowBundle(): WorkflowBundleWithSourceMap | undefined {
  if (SOURCE_EXTENSION !== '.js' || !existsSync(PREBUILT_WORKFLOW_BUNDLE)) return undefined;
  prebuilt ??= { code: readFileSync(PREBUILT_WORKFLOW_BUNDLE, 'utf8'), sourceMap: '' };
  return prebuilt;
}
let prebuilt: WorkflowBundleWithSourceMap | undefined;

/** A running worker. */
export interface RunningWorker {
  /** The Temporal worker polling now (another object after {@link RunningWorker.replace}). */
  readonly worker: Worker;
  /** The worker's connection to Temporal (the watchdog reads run state through it). */
  readonly connection: NativeConnection;
  /** Its identity, as Temporal records it on the workflow tasks it starts (`<pid>@<host>`, then `…-r<n>`). */
  identity(): string;
  /**
   * Resolves when the worker polls and Temporal answers on its connection (`GetSystemInfo`);
   * rejects with a short reason otherwise (`/readyz`, `src/ops/ops-routes.ts`).
   */
  ready(): Promise<void>;
  /**
   * What the polling worker is doing now, from the SDK's `Worker.getStatus()`: `state`, workflow
   * poller state and whether a workflow poll is outstanding, `inFlightWorkflowActivations`,
   * `cachedWorkflows`, `inFlightActivities`, `heartbeatingActivities`, and `draining` (replaced
   * workers still waiting for their activities). Counts, no run ids. Slot use is not in the SDK's
   * status; it is in the runtime metrics (`temporal_worker_task_slots_*`, docs/OPERATIONS.md §Metrics).
   */
  status(): Record<string, unknown>;
  /**
   * Replace the polling worker with a fresh one on its own connection, with the same bundle and options (an
   * empty workflow cache), then shut the old one down without waiting for it: it stops polling at
   * once, so Temporal's next attempt of a workflow task it held goes to the fresh worker, which
   * replays that run from its history (`src/temporal/workflow-task-watchdog.ts`). The old worker's
   * in-flight activities are not cancelled: they run to their end and report their results, for up to
   * `drainMs` (then they are cancelled, and the worker stops waiting `shutdownGraceMs` later). Resolves
   * once the fresh worker polls; throws, keeping the old worker, when it cannot be created.
   */
  replace(): Promise<void>;
  /**
   * Stop every worker of this handle (a deploy, the process ending): they stop polling at once; at
   * 80% of `shutdownGraceMs` `onStopping` runs (long-running tools get their abort signal); at
   * `shutdownGraceMs` it resolves even if an activity still runs: that attempt ends by its
   * start-to-close or heartbeat timeout as a lost execution (`outcome-unknown`, or as the tool's
   * idempotency hook says), never run again (SEP-2848 §Completion). Resolves sooner once all stopped.
   */
  stop(): Promise<void>;
}

/**
 * Where a worker connects: a frontend's `host:port` with its API key, TLS and gRPC metadata
 * (`src/temporal/connect.ts`; default plain gRPC, no credentials), each worker on a connection of
 * its own; or a connection lent by its owner (the time-skipping test server's), used as it is and
 * never closed here — `replace()` then throws (the SDK refuses a second worker for the same queue
 * on one connection).
 */
export type WorkerConnection = { address: string; settings?: TemporalConnection } | { lent: NativeConnection };

/**
 * Start a worker on `taskQueue` of `namespace` over `connection`. Throws when the
 * connection fails, the workflow module does not bundle, or Temporal refuses the registration.
 */
export async function startApprovalWorker(opts: {
  connection: WorkerConnection;
  namespace: string;
  taskQueue: string;
  /** The activity implementations by name (`src/compose.ts` composes the approval workflow's). */
  activities: object;
  /** The workflow code, bundled (`{code}` or `{codePath}`); default the bundle `npm run build` made (unless `workflowsPath` is given), else the module bundled at start. */
  workflowBundle?: WorkflowBundleOption;
  /** The workflow module bundled when there is no bundle; default {@link WORKFLOWS_PATH}. */
  workflowsPath?: string;
  /** Workflow cache size (runs kept in memory); default 1000. */
  maxCachedWorkflows?: number;
  /**
   * Payload codecs etc.; must match the clients' (the stack passes the AES-GCM payload codec,
   * `src/temporal/payload-codec.ts`). Default: the SDK's, payloads in plain text.
   */
  dataConverter?: DataConverter;
  /**
   * How long `stop()` waits for in-flight activities, ms (default 30,000). Past it the worker stops
   * anyway — a hung tool cannot hold a rolling deploy — and the abandoned execution attempt ends
   * by its start-to-close timeout as `outcome-unknown`, or as the tool's idempotency hook says; it
   * is never run again (SEP-2848 §Completion).
   */
  shutdownGraceMs?: number;
  /**
   * How long a worker that `replace()` retired waits for its in-flight activities, ms, before they are
   * cancelled; default the larger of `shutdownGraceMs` and 60,000. Set it to the longest
   * start-to-close timeout of the activities the worker runs (`src/compose.ts` does): an attempt
   * older than that has been timed out by Temporal, and its result would be refused anyway.
   */
  drainMs?: number;
  /** Called once by `stop()` at 80% of `shutdownGraceMs` (the stack aborts the long-running tools' signal). Not called by `replace()`. */
  onStopping?: () => void;
  /** Where the workflows' metrics sink lands (`src/ops/metrics.ts`); default: nowhere. */
  metrics?: AppMetrics;
  /**
   * OpenTelemetry (`src/ops/tracing.ts`): activity interceptors and the sink the workflow
   * interceptors export through. Default: off (the sink drops the workflow spans).
   */
  tracing?: Tracing;
  /**
   * The worker's interceptors instead of the default (the tracing's activity interceptors and, when
   * bundling at start, the workflow tracing module): for workflows other than Countersign's.
   */
  interceptors?: WorkerOptions['interceptors'];
  /** The injected sinks instead of the default (the tracing exporter's and, with `metrics`, `countersignMetrics`). */
  sinks?: WorkerOptions['sinks'];
  /**
   * Run the workflows in this process's main thread instead of Temporal's workflow worker thread
   * (the SDK's `debugMode`, which also lifts the 5 s deadlock timeout of a workflow activation).
   * For heap snapshots (`npm run bench:heap`: `v8.writeHeapSnapshot()` then sees the cached runs)
   * and debugging only; default false. Not read from the configuration.
   */
  workflowsInMainThread?: boolean;
}): Promise<RunningWorker> {
  const tracing = opts.tracing ?? TRACING_OFF;
  const graceMs = opts.shutdownGraceMs ?? 30_000;
  const drainMs = opts.drainMs ?? Math.max(graceMs, 60_000);
  // another workflow module is bundled at start: the prebuilt bundle holds Countersign's workflows only
  const workflowBundle = opts.workflowBundle ?? (opts.workflowsPath ? undefined : prebuiltWorkflowBundle());
  const baseIdentity = `${process.pid}@${hostname()}`;
  let generation = 0;
  // Each worker gets its own connection: the SDK refuses a second worker for the same namespace and
  // task queue on one client, and a replaced worker may take a while to let go of its own.
  const target = opts.connection;
  const lent = 'lent' in target ? target.lent : undefined;
  const create = async (identity: string): Promise<{ worker: Worker; connection: NativeConnection }> => {
    const connection = 'lent' in target ? target.lent : await connectWorker(target.address, target.settings);
    try {
      const worker = await Worker.create({
        connection,
        identity,
        namespace: opts.namespace,
        taskQueue: opts.taskQueue,
        ...(workflowBundle ? { workflowBundle } : { workflowsPath: opts.workflowsPath ?? WORKFLOWS_PATH }),
        // the workflow interceptors whatever the tracing (see bundleWorkflows); a prebuilt bundle has them
        interceptors: opts.interceptors ?? {
          ...tracing.workerInterceptors,
          ...(workflowBundle ? {} : { workflowModules: [WORKFLOW_TRACING_MODULE] }),
        },
        activities: opts.activities,
        maxCachedWorkflows: opts.maxCachedWorkflows ?? 1000,
        // The SDK fixes these at creation, for every way a worker ends: they are the replaced worker's
        // (its activities run up to drainMs, are then cancelled, and a grace later it stops waiting);
        // stop() bounds a deploy by shutdownGraceMs itself
        shutdownGraceTime: drainMs,
        shutdownForceTime: drainMs + graceMs,
        // a long-running tool's progress reaches Temporal (and `tasks/get`) within a second
        maxHeartbeatThrottleInterval: '1s',
        ...(opts.dataConverter ? { dataConverter: opts.dataConverter } : {}),
        sinks: opts.sinks ?? { ...tracing.workflowSinks, ...(opts.metrics ? metricsSinks(opts.metrics) : {}) },
        ...(opts.workflowsInMainThread ? { debugMode: true } : {}),
      });
      return { worker, connection };
    } catch (err) {
      if (!lent) await connection.close().catch(() => undefined);
      throw err;
    }
  };
  let identity = baseIdentity;
  let current = await create(identity);
  // every worker this handle started, until its run() ends and its connection is closed
  const runs = new Map<Worker, Promise<void>>();
  const track = (c: { worker: Worker; connection: NativeConnection }): void => {
    runs.set(
      c.worker,
      c.worker
        .run()
        .catch(() => undefined)
        .finally(() => (lent ? undefined : c.connection.close().catch(() => undefined))),
    );
  };
  track(current);
  return {
    get worker() {
      return current.worker;
    },
    get connection() {
      return current.connection;
    },
    identity: () => identity,
    async ready() {
      const { worker, connection } = current;
      if (worker.getState() !== 'RUNNING') throw new Error(`worker ${worker.getState().toLowerCase()}`);
      await connection.workflowService.getSystemInfo({});
    },
    status() {
      const st = current.worker.getStatus();
      return {
        state: st.runState,
        workflowPollerState: st.workflowPollerState,
        outstandingWorkflowPoll: st.hasOutstandingWorkflowPoll,
        inFlightWorkflowActivations: st.numInFlightWorkflowActivations,
        cachedWorkflows: st.numCachedWorkflows,
        inFlightActivities: st.numInFlightActivities,
        heartbeatingActivities: st.numHeartbeatingActivities,
        draining: runs.size - 1,
      };
    },
    async replace() {
      if (lent) throw new Error('a worker on a lent connection cannot be replaced');
      const old = current.worker;
      // the fresh worker polls before the old one stops, on its own client (see create)
      const fresh = await create(`${baseIdentity}-r${generation + 1}`);
      generation++;
      current = fresh;
      identity = `${baseIdentity}-r${generation}`;
      track(fresh);
      if (old.getState() === 'RUNNING') old.shutdown();
      void runs.get(old)?.finally(() => runs.delete(old));
    },
    async stop() {
      for (const w of runs.keys()) if (w.getState() === 'RUNNING') w.shutdown();
      let stopping: NodeJS.Timeout | undefined;
      let bound: NodeJS.Timeout | undefined;
      try {
        stopping = setTimeout(() => opts.onStopping?.(), Math.floor(graceMs * 0.8));
        // past the grace, a tool still running is abandoned with the process (see RunningWorker.stop)
        await Promise.race([Promise.all(runs.values()), new Promise<void>((r) => (bound = setTimeout(r, graceMs)))]);
      } finally {
        clearTimeout(stopping);
        clearTimeout(bound);
      }
    },
  };
}

/** The `countersignMetrics` sink over `m`; not called during replay (the SDK's default), so nothing is counted twice. */
export function metricsSinks(m: AppMetrics): InjectedSinks<CountersignSinks> {
  return {
    countersignMetrics: {
      decided: { fn: (_info, outcome, seconds) => m.decisionSeconds.observe({ outcome }, seconds) },
      terminal: {
        fn: (_info, status, disposition, expiry) => {
          m.terminal.inc({ status, disposition: disposition ?? 'none' });
          if (expiry) m.expiries.inc({ kind: expiry });
        },
      },
    },
  };
}
