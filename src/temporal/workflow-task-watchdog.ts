/**
 * The workflow-task watchdog: finds runs whose workflow task this worker took and never answered,
 * and has the worker replaced (docs/OPERATIONS.md §A workflow task nobody answers; why it decides
 * the way it does: docs/DESIGN.md §6.1).
 *
 * Why it exists: under workflow-cache eviction, Temporal's TypeScript SDK 1.24 can leave one run's
 * workflow task started and unanswered inside one worker process: the task times out (start-to-close),
 * Temporal retries it, the same worker takes every attempt and answers none, and the run never moves
 * again, while every other run progresses. A fresh worker process completes the same attempt from
 * the run's full history at once, so the state that hangs is the worker's, not the run's.
 *
 * How it finds them, without listing every open run: Temporal sets the system search attribute
 * `TemporalReportedProblems` on a run after consecutive workflow-task failures or timeouts
 * (server 1.30+, dynamic config `system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute`;
 * the embedded dev server sets it, `src/temporal/dev-server.ts`). Every `intervalMs` the watchdog
 * lists the open runs of its task queue that carry it (normally none). Only timeouts count
 * (`category=WorkflowTaskTimedOut`): a task that fails (a nondeterminism error, a bug) fails on any
 * worker, and replacing this one would not help. For each such run it describes it: a pending
 * workflow task in state started with attempt ≥ `minAttempts`, whose last recorded
 * `WorkflowTaskStarted` names this worker's identity, concerns this worker.
 *
 * Who holds it: Temporal records only the streak's first attempt (its `WorkflowTaskStarted` and
 * identity); later attempts are transient, and neither describe nor history names who took them.
 * Each attempt goes to a worker polling the task queue, so the watchdog asks the queue
 * (DescribeTaskQueue, workflow pollers; Temporal lists a poller for five minutes after its last poll):
 * - no other identity listed: every attempt came here, the run is held here: `replace` (action
 *   `replaced`);
 * - other identities listed: any of them may hold the current attempt, and an attempt a worker without
 *   the broken state takes completes the run, so the watchdog waits (action `shared`, logged with the
 *   candidates); if the run is still held `2 × candidates` attempts later, this worker, which took
 *   the streak's first attempt, is replaced once anyway (action `replaced`): it is then the likely
 *   holder, and a fresh poller on the queue is what recovers the run.
 * A worker the history does not name never acts. Identities this process used before a replacement
 * are not candidates once their last poll is more than a long poll older than the current attempt.
 * After a replacement a cooldown of two intervals lets the fresh worker take the next attempt, and a
 * run is replaced for at most once: a run still held after that is not held by a worker's state, and
 * is logged at error (action `unresolved`). A server that refuses the list query (older, or
 * visibility without the attribute) turns the watchdog off with one warning.
 *
 * Deliberately does not: name the holder of an attempt when several workers poll (Temporal does not
 * publish it), replace another worker, or exit the process.
 */
import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from '@countersign/http/log';

/** gRPC status INVALID_ARGUMENT (a query on an unknown search attribute). */
const GRPC_INVALID_ARGUMENT = 3;
/** `PendingWorkflowTaskState.STARTED`. */
const PENDING_WORKFLOW_TASK_STARTED = 2;

/** The system search attribute Temporal sets on a run with repeated workflow-task problems. */
const REPORTED_PROBLEMS = 'TemporalReportedProblems';

/** Whether the attribute's value (a JSON keyword list, e.g. `["category=WorkflowTaskTimedOut","cause=…"]`) reports timeouts. */
function timedOut(data: Uint8Array | null | undefined): boolean {
  if (!data) return false;
  try {
    const value: unknown = JSON.parse(Buffer.from(data).toString('utf8'));
    return Array.isArray(value) && value.includes('category=WorkflowTaskTimedOut');
  } catch {
    return false;
  }
}

/** A longest long poll and some slack, ms: a poll started this long before an attempt could not have taken it. */
const LONG_POLL_MS = 70_000;

/** A run whose workflow task this worker holds: its ids and the attempt Temporal is on. */
export interface HeldRun {
  workflowId: string;
  runId: string;
  attempt: number;
}

/**
 * What the watchdog did about a held run (the `action` label of
 * `countersign_workflow_task_holds_total`, src/ops/metrics.ts): `replaced` this worker; left a
 * `shared` hold to the other workers polling the queue; or found a run `unresolved`, still held after
 * this worker was replaced for it.
 */
export type HoldAction = 'replaced' | 'shared' | 'unresolved';

/** Options of {@link startWorkflowTaskWatchdog}. Times in ms. */
export interface WorkflowTaskWatchdogOptions {
  /** The worker's connection (its `workflowService` answers list, describe, history and DescribeTaskQueue). */
  connection: Pick<NativeConnection, 'workflowService'>;
  namespace: string;
  taskQueue: string;
  /** This worker's current identity (it changes when the worker is replaced). */
  identity(): string;
  /** Replace the worker; the watchdog waits for it before its next check. */
  replace(held: HeldRun): Promise<void>;
  logger: Logger;
  /** What the worker is doing, logged with every hold this worker acts on (`RunningWorker.status`); default none. */
  status?(): Record<string, unknown>;
  /** Called once per action on a run (module header); the stack counts it. Must not throw. */
  onAction?(action: HoldAction, held: HeldRun): void;
  /** Between checks; default 30,000. */
  intervalMs?: number;
  /** A pending attempt at least this high counts as held; default 3 (two timeouts). */
  minAttempts?: number;
  /** Runs described per check, at most; default 50. */
  maxRunsPerCheck?: number;
  /** After a replacement, no other one for this long; default two intervals. */
  cooldownMs?: number;
}

/** A running watchdog: `check()` runs one check now (tests); `stop()` ends the timer. */
export interface WorkflowTaskWatchdog {
  /** One check; resolves with the held run it replaced the worker for, if any. Never throws. */
  check(): Promise<HeldRun | null>;
  stop(): void;
}

/** A run this worker took the streak's first attempt of, with what the queue says about who else could hold it. */
interface Candidate extends HeldRun {
  /** Other identities listed as workflow pollers of the queue (possible holders of the current attempt). */
  others: string[];
}

/** Start the watchdog (module header). The first check runs after one interval. */
export function startWorkflowTaskWatchdog(opts: WorkflowTaskWatchdogOptions): WorkflowTaskWatchdog {
  const intervalMs = opts.intervalMs ?? 30_000;
  const minAttempts = opts.minAttempts ?? 3;
  const maxRuns = opts.maxRunsPerCheck ?? 50;
  // read on every call: the worker's client changes when the worker is replaced
  const service = () => opts.connection.workflowService;
  const query = `${REPORTED_PROBLEMS} IS NOT NULL AND ExecutionStatus = 'Running' AND TaskQueue = '${opts.taskQueue.replace(/'/g, "\\'")}'`;
  const cooldownMs = opts.cooldownMs ?? 2 * intervalMs;
  // runs this watchdog replaced the worker for (bounded: the oldest are forgotten)
  const replacedFor = new Set<string>();
  // runs whose hold was first seen shared, with the attempt then and the candidates' count
  const shared = new Map<string, { attempt: number; candidates: number }>();
  // runs already logged as unresolved
  const unresolved = new Set<string>();
  // every identity this process's worker has had (a replaced one lingers in the poller list)
  const own = new Set<string>();
  let off = false;
  let quietUntil = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  /** Forget the oldest entry past 1,000. */
  const bound = (c: Set<string> | Map<string, unknown>): void => {
    if (c.size > 1_000) c.delete(c.keys().next().value!);
  };

  /** The identity on the run's last recorded `WorkflowTaskStarted` event, or null. */
  async function lastStartedBy(workflowId: string, runId: string): Promise<string | null> {
    const page = await service().getWorkflowExecutionHistoryReverse({
      namespace: opts.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 50,
    });
    for (const e of page.history?.events ?? []) {
      const identity = e.workflowTaskStartedEventAttributes?.identity;
      if (identity) return identity;
    }
    return null;
  }

  /**
   * Identities other than `me` that may hold an attempt started at `attemptStartedMs`: every
   * workflow poller the queue lists, except this process's former identities whose last poll began
   * more than a long poll before it.
   */
  async function otherPollers(me: string, attemptStartedMs: number): Promise<string[]> {
    const described = await service().describeTaskQueue({
      namespace: opts.namespace,
      taskQueue: { name: opts.taskQueue, kind: 1 },
      taskQueueType: 1,
    });
    const others = new Set<string>();
    for (const p of described.pollers ?? []) {
      const identity = p.identity ?? '';
      if (!identity || identity === me) continue;
      const lastMs = Number(p.lastAccessTime?.seconds ?? 0) * 1000 + Math.floor((p.lastAccessTime?.nanos ?? 0) / 1e6);
      if (own.has(identity) && lastMs + LONG_POLL_MS < attemptStartedMs) continue;
      others.add(identity);
    }
    return [...others].sort();
  }

  async function findCandidates(): Promise<Candidate[]> {
    const listed = await service().listWorkflowExecutions({ namespace: opts.namespace, query, pageSize: maxRuns });
    const me = opts.identity();
    own.add(me);
    const found: Candidate[] = [];
    for (const info of (listed.executions ?? []).slice(0, maxRuns)) {
      const workflowId = info.execution?.workflowId;
      const runId = info.execution?.runId;
      if (!workflowId || !runId || !timedOut(info.searchAttributes?.indexedFields?.[REPORTED_PROBLEMS]?.data)) continue;
      const d = await service().describeWorkflowExecution({ namespace: opts.namespace, execution: { workflowId, runId } });
      const pending = d.pendingWorkflowTask;
      const attempt = Number(pending?.attempt ?? 0);
      if (!pending || Number(pending.state) !== PENDING_WORKFLOW_TASK_STARTED || attempt < minAttempts) continue;
      if ((await lastStartedBy(workflowId, runId)) !== me) continue;
      const startedMs = Number(pending.startedTime?.seconds ?? 0) * 1000;
      found.push({ workflowId, runId, attempt, others: await otherPollers(me, startedMs) });
    }
    return found;
  }

  /** Log and count an action on a run, with the worker's status. */
  function report(action: HoldAction, run: Candidate, message: string): void {
    const fields = {
      workflowId: run.workflowId,
      runId: run.runId,
      attempt: run.attempt,
      identity: opts.identity(),
      otherPollers: run.others,
      action,
      worker: opts.status?.(),
    };
    if (action === 'unresolved') opts.logger.error(fields, message);
    else opts.logger.warn(fields, message);
    opts.onAction?.(action, { workflowId: run.workflowId, runId: run.runId, attempt: run.attempt });
  }

  /** The run to replace this worker for now, if any; logs the runs it leaves alone. */
  function decide(candidates: Candidate[]): Candidate | null {
    // a shared hold that ended is forgotten: a later streak on the run starts over
    for (const runId of shared.keys()) if (!candidates.some((c) => c.runId === runId)) shared.delete(runId);
    for (const run of candidates) {
      if (replacedFor.has(run.runId)) {
        if (!unresolved.has(run.runId)) {
          unresolved.add(run.runId);
          bound(unresolved);
          report('unresolved', run, 'a workflow task is still unanswered after the worker was replaced for it; not replacing again');
        }
        continue;
      }
      if (run.others.length === 0) return run;
      const first = shared.get(run.runId);
      if (!first) {
        shared.set(run.runId, { attempt: run.attempt, candidates: run.others.length + 1 });
        bound(shared);
        report(
          'shared',
          run,
          'a workflow task this worker took first is unanswered; other workers poll the queue and may hold it, leaving it to them',
        );
        continue;
      }
      if (run.attempt >= first.attempt + 2 * first.candidates) return run;
    }
    return null;
  }

  async function check(): Promise<HeldRun | null> {
    if (off || stopped || Date.now() < quietUntil) return null;
    try {
      const run = decide(await findCandidates());
      if (!run) return null;
      const held: HeldRun = { workflowId: run.workflowId, runId: run.runId, attempt: run.attempt };
      report(
        'replaced',
        run,
        run.others.length === 0
          ? 'a workflow task this worker took is unanswered; replacing the worker'
          : 'a workflow task this worker took first is still unanswered after the other workers had their turns; replacing the worker',
      );
      quietUntil = Date.now() + cooldownMs;
      await opts.replace(held);
      // only a replacement that happened uses up the run's one replacement
      replacedFor.add(held.runId);
      bound(replacedFor);
      return held;
    } catch (err) {
      if ((err as { code?: unknown }).code === GRPC_INVALID_ARGUMENT) {
        off = true;
        opts.logger.warn(
          { err: (err as Error).message },
          'workflow-task watchdog off: this Temporal server cannot list runs by TemporalReportedProblems (server 1.30+ with the dynamic config)',
        );
      } else {
        opts.logger.warn(
          { err: (err as Error).name, message: (err as Error).message, code: (err as { code?: unknown }).code },
          'workflow-task watchdog check failed',
        );
      }
      return null;
    }
  }

  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void check().finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();
  return {
    check,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
