/**
 * The workflow-task watchdog: finds runs whose workflow task this worker took and never answered,
 * and has the worker replaced (docs/OPERATIONS.md §A workflow task nobody answers).
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
 * workflow task in state started with attempt ≥ `minAttempts` whose last recorded
 * `WorkflowTaskStarted` names this worker's identity is held here. It then calls `replace` (a
 * cooldown of two intervals lets the fresh worker take the next attempt), at most once per run: a
 * run still held after a replacement is not held by a worker's state, and is only logged. A server
 * that refuses the query (older, or visibility without the attribute) turns the watchdog off with
 * one warning.
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

/** A run whose workflow task this worker holds: its ids and the attempt Temporal is on. */
export interface HeldRun {
  workflowId: string;
  runId: string;
  attempt: number;
}

/** Options of {@link startWorkflowTaskWatchdog}. Times in ms. */
export interface WorkflowTaskWatchdogOptions {
  /** The worker's connection (its `workflowService` answers list, describe and history). */
  connection: Pick<NativeConnection, 'workflowService'>;
  namespace: string;
  taskQueue: string;
  /** This worker's current identity (it changes when the worker is replaced). */
  identity(): string;
  /** Replace the worker; the watchdog waits for it before its next check. */
  replace(held: HeldRun): Promise<void>;
  logger: Logger;
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

/** Start the watchdog (module header). The first check runs after one interval. */
export function startWorkflowTaskWatchdog(opts: WorkflowTaskWatchdogOptions): WorkflowTaskWatchdog {
  const intervalMs = opts.intervalMs ?? 30_000;
  const minAttempts = opts.minAttempts ?? 3;
  const maxRuns = opts.maxRunsPerCheck ?? 50;
  // read on every call: the worker's client changes when the worker is replaced
  const service = () => opts.connection.workflowService;
  const query = `${REPORTED_PROBLEMS} IS NOT NULL AND ExecutionStatus = 'Running' AND TaskQueue = '${opts.taskQueue.replace(/'/g, "\\'")}'`;
  const cooldownMs = opts.cooldownMs ?? 2 * intervalMs;
  // runs this watchdog already replaced the worker for (bounded: the oldest are forgotten)
  const handled = new Set<string>();
  let off = false;
  let quietUntil = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

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

  async function findHeld(): Promise<HeldRun | null> {
    const listed = await service().listWorkflowExecutions({ namespace: opts.namespace, query, pageSize: maxRuns });
    const me = opts.identity();
    for (const info of (listed.executions ?? []).slice(0, maxRuns)) {
      const workflowId = info.execution?.workflowId;
      const runId = info.execution?.runId;
      if (!workflowId || !runId || !timedOut(info.searchAttributes?.indexedFields?.[REPORTED_PROBLEMS]?.data)) continue;
      const d = await service().describeWorkflowExecution({ namespace: opts.namespace, execution: { workflowId, runId } });
      const pending = d.pendingWorkflowTask;
      const attempt = Number(pending?.attempt ?? 0);
      if (!pending || Number(pending.state) !== PENDING_WORKFLOW_TASK_STARTED || attempt < minAttempts) continue;
      if ((await lastStartedBy(workflowId, runId)) !== me) continue;
      if (handled.has(runId)) {
        opts.logger.warn(
          { workflowId, runId, attempt },
          'a workflow task is still unanswered after the worker was replaced for it; not replacing again',
        );
        continue;
      }
      return { workflowId, runId, attempt };
    }
    return null;
  }

  async function check(): Promise<HeldRun | null> {
    if (off || stopped || Date.now() < quietUntil) return null;
    try {
      const held = await findHeld();
      if (!held) return null;
      opts.logger.warn(
        { workflowId: held.workflowId, runId: held.runId, attempt: held.attempt, identity: opts.identity() },
        'a workflow task this worker took is unanswered; replacing the worker',
      );
      quietUntil = Date.now() + cooldownMs;
      await opts.replace(held);
      // only a replacement that happened uses up the run's one replacement
      handled.add(held.runId);
      if (handled.size > 1_000) handled.delete(handled.values().next().value!);
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
