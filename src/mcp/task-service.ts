/**
 * The MCP front's side of Temporal: tasks/* methods as workflow operations (`workflows/messages.ts`).
 *
 * - create or join: a durable start with `workflowIdConflictPolicy: USE_EXISTING` and a workflow
 *   id keyed on the binding, then the `taskCreated` update, waited on (bounded) so `CreateTaskResult`
 *   is only returned once the backend handle is persisted; before it, the caller's submission
 *   limiter reserves a slot (`submission-limiter.ts`; a join of a pending task consumes none). A wait
 *   that runs out says how far creation got (`TaskCreationPendingError.progress`); a retry of the
 *   same call joins (docs/DESIGN.md §3.1); a join that lands on a run whose task has already ended
 *   (the run is finishing its last workflow task) waits for it to close and starts a new run, so an
 *   identical call after the end is a new task, never the ended one;
 * - get: the run's task record, with one DescribeWorkflowExecution (no query, no worker), or the
 *   `task` query where the record cannot answer (`task-reads.ts`); from this instance's task feed
 *   without any call while the run is being watched (`task-feed.ts`); the stored result once
 *   closed, answered until `createdAt + ttlMs`. `pollIntervalMs` is the one the task's phase and age
 *   call for (`poll-interval.ts`);
 * - cancel: the `cancel` update, which performs the claim-vs-cancel compare-and-set.
 * Every access checks the caller against the owner recorded in the run's memo (for `get` of an open
 * or completed run, the same key in the snapshot it returned) before returning or changing task state; a
 * mismatch is indistinguishable from an unknown task (returns null).
 *
 * Holds no task state itself: any instance serves any task.
 */
import { WorkflowClient, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { approvalWorkflowId, type CallBinding } from '../binding/call-binding.js';
import type { Principal } from '../auth/principal.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';
import { quotaKeyOf, taskOwnerKeyOf } from '../auth/principal-keys.js';
import type { approvalWorkflow } from '../../workflows/approval.js';
import { cancelRequestSignal, cancelUpdate, provideInputUpdate, taskCreatedUpdate } from '../../workflows/messages.js';
import { parseTaskId, taskIdFor } from '../../workflows/task-id.js';
import { runTracingMemo } from '../../workflows/wire.js';
import { REFUSAL, REFUSAL_TEXT, refusalOf } from '../../workflows/refusals.js';
import type {
  AccessRequestHint,
  ApprovalWorkflowConfig,
  CancelOutcome,
  InBandConfirmation,
  LongRunning,
  TaskSnapshot,
} from '../../workflows/types.js';
import { createSubmissionLimiter, type SubmissionLimits } from './submission-limiter.js';
import { faultPoint } from '@countersign/http/fault-point';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { createTemporalGuard, TemporalUnavailableError, type TemporalGuard } from '../temporal/availability.js';
import { isTerminalStatus, readByQuery, readByRecord, type ReadContext, type ReadSource, type RunIds } from './task-reads.js';
import type { TaskFeed } from './task-feed.js';
import { pollIntervalFor, type PollIntervalPolicy } from './poll-interval.js';

/** How `tasks/get` reads an open run: its task record (default) or the `task` query (`task-reads.ts`). */
export type TaskReadPath = 'record' | 'query';

/** Options of the task service. `createWaitMs` bounds the creation wait (limiter reserve, start, `taskCreated`). */
export interface TaskServiceOptions {
  client: Client;
  taskQueue: string;
  /** Server secret keying the workflow id (HMAC). Same value on every instance. */
  dedupKey: string;
  workflowConfig: ApprovalWorkflowConfig;
  createWaitMs: number;
  /**
   * Per-principal limits on new approval tasks, shared by every instance through Temporal
   * (`submission-limiter.ts`); unset: no limits (tests of other concerns only).
   */
  submissionLimits?: SubmissionLimits;
  /**
   * Deadline and circuit breaker for every Temporal call (`src/temporal/availability.ts`); default:
   * a guard over `client` with its defaults (5 s per call, circuit after 3 failures, open 10 s).
   * Methods then throw `TemporalUnavailableError` when Temporal or a worker does not answer.
   */
  guard?: TemporalGuard;
  /**
   * Set each new run's Temporal Web UI summary line (user metadata `staticSummary`,
   * {@link workflowSummaryOf}). It is a payload, so the client's payload codec seals it like every
   * other (docs/OPERATIONS.md §Workflow summary). Default: off.
   */
  workflowSummary?: boolean;
  /** How open runs are read (`task-reads.ts`); default `record`. `query` is the path before the record (bench comparison). */
  reads?: TaskReadPath;
  /** This instance's task feed (`task-feed.ts`): record reads of watched runs are answered from it. Unset: every read asks Temporal. */
  feed?: TaskFeed;
  /**
   * Bounds of the advertised `pollIntervalMs` (`poll-interval.ts`); default: the workflow's
   * `clientPollIntervalMs` as the base, 60 s as the cap.
   */
  pollInterval?: PollIntervalPolicy;
  /** Clock of the advertised interval, ms since the epoch (tests, simulated time in the bench). */
  now?: () => number;
  /** Called with where each read was answered (metrics, the bench): `feed`, or a `ReadSource` of `task-reads.ts`. */
  onRead?: (source: 'feed' | ReadSource) => void;
  /**
   * Whether the runs this service starts are traced by their workflow interceptors (memo
   * `tracing`, `workflows/tracing-interceptors.ts`); pass whether this process traces. Default:
   * false — an untraced run holds no OpenTelemetry state in the worker.
   */
  traceRuns?: boolean;
}

/**
 * The summary line of an approval workflow for the Temporal Web UI: the tool, whether it is native
 * or whose upstream, and the approver group, e.g. `approval: submit_change (native) for group
 * change-advisory`. Never arguments, justifications or names of people (the same facts as the
 * run's search attributes, `workflows/search-attributes.ts`).
 */
export function workflowSummaryOf(tool: string, approverGroup: string, upstream?: string): string {
  return `approval: ${tool} (${upstream ? `upstream ${upstream}` : 'native'}) for group ${approverGroup}`;
}

/**
 * How far a creation got before its wait ran out: `started` — the approval workflow is durably
 * started (or was already running) and is submitting the request, so the task exists; `unknown` —
 * the start request was in flight; `not-started` — the caller's submission limiter had not answered,
 * so this call started nothing. In every case a retry of the same call joins the task if one exists
 * (workflow id keyed on the call binding, `USE_EXISTING`) and never opens a second.
 */
export type CreationProgress = 'started' | 'unknown' | 'not-started';

/** Thrown by `createOrJoin` when the task was not confirmed within `createWaitMs`; `progress` says how far it got. */
export class TaskCreationPendingError extends Error {
  constructor(readonly progress: CreationProgress) {
    super(`approval task not confirmed in time (${progress})`);
    this.name = 'TaskCreationPendingError';
  }
}

/** What a new task captures besides the binding (both fixed in the workflow's input at start). */
export interface CreateOptions {
  /** The tool's long-running declaration (`Tool.longRunning`): the execution attempt's options. */
  execution?: LongRunning;
  /** The requester's in-band confirmation: the task then runs the tool without a backend request. */
  confirmation?: InBandConfirmation;
  /** Shown to approvers with the request (title, upstream, hints); not part of the binding. A join keeps the first run's. */
  toolInfo?: ToolPresentation;
}

/** The task service. */
export interface TaskService {
  /**
   * Start or join the approval workflow for this binding; resolves with a durable task. Throws
   * `SubmissionLimitedError` when a new task would pass a submission limit (a join never does).
   */
  createOrJoin(
    binding: CallBinding,
    accessRequest: AccessRequestHint,
    submissionInput?: { justification?: string },
    options?: CreateOptions,
  ): Promise<{ taskId: string; snapshot: TaskSnapshot }>;
  /**
   * Follow the caller's task (`subscriptions/listen`, `task-subscriptions.ts`): `current` is what
   * {@link get} answers now; `listener` then receives every later snapshot, as `get` would answer
   * it at that moment, until the task ends — `null` when it became unreadable (expired, gone). From
   * this instance's task feed: no billable operation, no worker. null when the task is not the
   * caller's (like unknown), when there is no feed, or when the feed watches the most runs it may.
   * Throws like {@link get}.
   */
  follow(
    taskId: unknown,
    caller: Principal,
    listener: (snapshot: TaskSnapshot | null) => void,
  ): Promise<{ current: TaskSnapshot; stop: () => void } | null>;
  /** The keyed reference of a binding (its approval workflow id): safe to log, unlike the digest. */
  referenceOf(binding: CallBinding): string;
  /**
   * The caller's task, or null if unknown, expired, or owned by someone else; `pollIntervalMs` as
   * the task's phase and age call for (`poll-interval.ts`). Throws `TemporalUnavailableError` when
   * Temporal does not answer (or, for a run without a readable record, no worker does).
   */
  get(taskId: unknown, caller: Principal): Promise<TaskSnapshot | null>;
  /**
   * Cancel (SEP-2848 §Cancellation); null if the task is not the caller's (same as unknown).
   * `recorded`: Temporal answered but no worker took the cancel update in time, so the cancel was
   * recorded as a signal and will be applied, by the same compare-and-set, when a worker next runs
   * the task. Throws `TemporalUnavailableError` when Temporal itself does not answer.
   */
  cancel(taskId: unknown, caller: Principal): Promise<CancelOutcome | 'recorded' | null>;
  /**
   * Answer an `input_required` task's outstanding input (`tasks/update`). null if the task is not
   * the caller's; `{refused}` (with a fixed reason) when it is not waiting for input or the answer
   * is not acceptable — nothing is recorded then.
   */
  provideInput(
    taskId: unknown,
    caller: Principal,
    inputResponses: Record<string, unknown>,
  ): Promise<{ accepted: true } | { refused: string } | null>;
}

/** Build the task service over a Temporal client. */
export function createTaskService(opts: TaskServiceOptions): TaskService {
  const { client } = opts;
  const guard = opts.guard ?? createTemporalGuard({ client });
  const limits = opts.submissionLimits
    ? createSubmissionLimiter({ client, taskQueue: opts.taskQueue, limits: opts.submissionLimits, traceRuns: opts.traceRuns ?? false })
    : undefined;
  // Same connection, codec and interceptors; queries of a closed run are rejected (status only),
  // never dispatched to a worker for replay.
  const openRuns = new WorkflowClient({
    connection: client.connection,
    namespace: client.options.namespace,
    dataConverter: client.options.dataConverter,
    identity: client.options.identity,
    ...(client.options.interceptors?.workflow ? { interceptors: client.options.interceptors.workflow } : {}),
    queryRejectCondition: 'NOT_OPEN',
  });

  const readCtx: ReadContext = {
    client,
    openRuns,
    resultRetentionMs: opts.workflowConfig.resultRetentionMs,
    clientPollIntervalMs: opts.workflowConfig.clientPollIntervalMs,
  };
  const read = opts.reads === 'query' ? readByQuery : readByRecord;
  const feed = opts.feed;
  // reads are answered from the feed only on the record path (the query path is the comparison)
  const cache = opts.reads === 'query' ? undefined : opts.feed;
  const policy: PollIntervalPolicy = opts.pollInterval ?? { baseMs: opts.workflowConfig.clientPollIntervalMs, maxMs: 60_000 };
  const now = opts.now ?? Date.now;
  /** The snapshot as answered: the interval its phase and age call for. */
  const present = (s: TaskSnapshot): TaskSnapshot => ({ ...s, pollIntervalMs: pollIntervalFor(s, now(), policy) ?? s.pollIntervalMs });

  const describeOwned = async (taskId: unknown, caller: Principal) => {
    const ids = parseTaskId(taskId);
    if (!ids) return null;
    const handle = client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId);
    try {
      const desc = await handle.describe();
      if (desc.type !== 'approvalWorkflow' || desc.memo?.owner !== taskOwnerKeyOf(caller)) return null;
      return { handle, desc };
    } catch (err) {
      if (isWorkflowNotFound(err)) return null;
      throw err;
    }
  };

  async function get(taskId: unknown, caller: Principal): Promise<TaskSnapshot | null> {
    const ids = parseTaskId(taskId);
    if (!ids) return null;
    const ownerKey = taskOwnerKeyOf(caller);
    const watched = cache?.peek(ids);
    if (watched) {
      opts.onRead?.('feed');
      return watched.ownerKey === ownerKey ? present(watched) : null;
    }
    const answer = await guard.run(() => read(readCtx, ids, ownerKey));
    if (!answer) return null;
    opts.onRead?.(answer.source);
    const shown = present(answer.snapshot);
    cache?.keep(ids, answer.snapshot, shown.pollIntervalMs);
    return shown;
  }

  return {
    get,

    async follow(taskId, caller, listener) {
      const ids = parseTaskId(taskId);
      if (!ids || !feed) return null;
      const current = await get(taskId, caller);
      if (!current) return null;
      if (isTerminalStatus(current.status)) return { current, stop: () => undefined };
      const ownerKey = taskOwnerKeyOf(caller);
      let stopped = false;
      const unsubscribe = feed.subscribe(ids, (event) => {
        if (stopped) return;
        if ('snapshot' in event) {
          if (event.snapshot.ownerKey === ownerKey) listener(present(event.snapshot));
          return;
        }
        if (event.ended === 'terminal') return; // its terminal snapshot was the last event
        // closed abnormally (terminated, failed) or gone: read it once more, as tasks/get would
        get(taskId, caller).then(listener, () => listener(null));
      });
      if (!unsubscribe) return null;
      // a change the watch saw before this subscriber was added (`current` came from Temporal, or
      // from an older answer) is not lost: a newer state it holds is delivered first
      const seen = feed.latest(ids);
      if (seen && seen.ownerKey === ownerKey && seen.lastUpdatedAt > current.lastUpdatedAt)
        queueMicrotask(() => !stopped && listener(present(seen)));
      return {
        current,
        stop: () => {
          stopped = true;
          unsubscribe();
        },
      };
    },

    async createOrJoin(binding, accessRequest, submissionInput, options) {
      const progress = { at: 'not-started' as CreationProgress };
      try {
        // The wait lasts until a worker has submitted to the approval backend: its length says little
        // about Temporal itself, so running out of it does not count toward the circuit.
        return await guard.run(() => createOrJoinNow(binding, accessRequest, submissionInput, options, progress), opts.createWaitMs, {
          tripsCircuit: false,
        });
      } catch (err) {
        // Temporal answers but the task was not confirmed in time: retryable, and the retry joins.
        if (err instanceof TemporalUnavailableError && err.reason === 'no-answer') throw new TaskCreationPendingError(progress.at);
        throw err;
      }
    },

    referenceOf(binding) {
      return approvalWorkflowId(opts.dedupKey, binding.digest);
    },

    async provideInput(taskId, caller, inputResponses) {
      const out = await guard.run(() => provideInputNow(taskId, caller, inputResponses));
      forget(taskId);
      return out;
    },

    async cancel(taskId, caller) {
      try {
        return await guard.run(() => cancelNow(taskId, caller));
      } catch (err) {
        if (!(err instanceof TemporalUnavailableError) || err.reason !== 'no-answer') throw err;
        // Temporal answers, no worker does: record the cancel durably instead of leaving it in doubt.
        return guard.run(async () => {
          const owned = await describeOwned(taskId, caller);
          if (!owned) return null;
          if (owned.desc.status.name !== 'RUNNING') return 'already-terminal' as const;
          await owned.handle.signal(cancelRequestSignal);
          return 'recorded' as const;
        });
      } finally {
        forget(taskId);
      }
    },
  };

  /** This instance changed the task: its feed serves the run again only once it has seen the change. */
  function forget(taskId: unknown): void {
    const ids: RunIds | null = parseTaskId(taskId);
    if (ids) cache?.forget(ids);
  }

  async function createOrJoinNow(
    binding: CallBinding,
    accessRequest: AccessRequestHint,
    submissionInput: { justification?: string } | undefined,
    options: CreateOptions = {},
    progress: { at: CreationProgress },
    afterClose = false,
  ): Promise<{ taskId: string; snapshot: TaskSnapshot }> {
    {
      const workflowId = approvalWorkflowId(opts.dedupKey, binding.digest);
      const ownerKey = taskOwnerKeyOf(binding.principal);
      {
        // Per-principal submission limits (`submission-limiter.ts`): throws SubmissionLimitedError past one.
        // Both steps run under the guard's deadline (createWaitMs): a late answer is TaskCreationPendingError.
        const limiter = limits ? await limits.reserve(quotaKeyOf(opts.dedupKey, binding.principal), workflowId) : null;
        // Two steps, so that a wait that runs out knows whether the task exists (`CreationProgress`):
        // the durable start (Temporal server only), then the `taskCreated` update, which resolves once
        // the backend's handle is in workflow state (SEP-2848 §Crash-consistent creation).
        progress.at = 'unknown';
        const handle = await client.workflow.start<typeof approvalWorkflow>('approvalWorkflow', {
          workflowId,
          taskQueue: opts.taskQueue,
          args: [
            {
              binding,
              accessRequest,
              ownerKey,
              config: opts.workflowConfig,
              ...(submissionInput ? { submissionInput } : {}),
              ...(limiter ? { limiter } : {}),
              ...(options.execution ? { execution: options.execution } : {}),
              ...(options.confirmation ? { confirmation: options.confirmation } : {}),
              ...(options.toolInfo ? { toolInfo: options.toolInfo } : {}),
            },
          ],
          workflowIdConflictPolicy: 'USE_EXISTING',
          memo: { owner: ownerKey, ...runTracingMemo(opts.traceRuns ?? false) },
          ...(opts.workflowSummary
            ? { staticSummary: workflowSummaryOf(binding.tool, accessRequest.approverGroup, options.toolInfo?.upstream) }
            : {}),
        });
        progress.at = 'started';
        // the start answered with the run id of the run it started or found running (`USE_EXISTING`)
        const run = client.workflow.getHandle<typeof approvalWorkflow>(workflowId, handle.firstExecutionRunId);
        let created: { runId: string; snapshot: TaskSnapshot };
        try {
          created = await run.executeUpdate(taskCreatedUpdate);
        } catch (err) {
          // the run we found closed before it took the update (its task had ended): start afresh, once
          if (!isWorkflowNotFound(err) || afterClose) throw err;
          return createOrJoinNow(binding, accessRequest, submissionInput, options, progress, true);
        }
        const { runId, snapshot } = created;
        if (isTerminalStatus(snapshot.status) && !afterClose) {
          // Joined a run that has already ended its task and is only finishing (its last workflow
          // task, e.g. the limiter release): the identical call is a new intent, never the ended task
          // (SEP-2848 §Lifecycle). Wait for that run to close, then start afresh, once.
          await run.result().catch(() => undefined);
          return createOrJoinNow(binding, accessRequest, submissionInput, options, progress, true);
        }
        faultPoint('mcp.create.after-start'); // task durable, CreateTaskResult not yet returned (a crash point of the fault tests, `packages/http/src/fault-point.ts`)
        return { taskId: taskIdFor(workflowId, runId), snapshot: present(snapshot) };
      }
    }
  }

  async function provideInputNow(
    taskId: unknown,
    caller: Principal,
    inputResponses: Record<string, unknown>,
  ): Promise<{ accepted: true } | { refused: string } | null> {
    {
      const owned = await describeOwned(taskId, caller);
      if (!owned) return null;
      if (owned.desc.status.name !== 'RUNNING') return { refused: REFUSAL_TEXT[REFUSAL.noInputRequested] };
      try {
        await owned.handle.executeUpdate(provideInputUpdate, { args: [inputResponses] });
        return { accepted: true };
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) {
          // refused by the validator: nothing was recorded; any other update failure reads as a bad answer
          const type = refusalOf(err.cause);
          return {
            refused: REFUSAL_TEXT[type === REFUSAL.noInputRequested || type === REFUSAL.unknownInputKey ? type : REFUSAL.invalidInput],
          };
        }
        if (isWorkflowNotFound(err)) return { refused: REFUSAL_TEXT[REFUSAL.noInputRequested] };
        throw err;
      }
    }
  }

  async function cancelNow(taskId: unknown, caller: Principal): Promise<CancelOutcome | null> {
    {
      const owned = await describeOwned(taskId, caller);
      if (!owned) return null;
      if (owned.desc.status.name !== 'RUNNING') return 'already-terminal';
      try {
        return await owned.handle.executeUpdate(cancelUpdate);
      } catch (err) {
        // the run closed between describe and update
        if (isWorkflowNotFound(err)) return 'already-terminal';
        throw err;
      }
    }
  }
}
