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
 * - get: the `task` query while the run is open (one round trip: the query is refused by the server,
 *   not replayed, once the run has closed, and the owner check reads the owner key the run carries
 *   in its snapshot, the same value as in its memo); the stored workflow result once closed (no
 *   live worker needed; a completed run's result is that terminal snapshot, owner key included, so
 *   it needs no describe either), answered for `resultRetentionMs` after close;
 * - cancel: the `cancel` update, which performs the claim-vs-cancel compare-and-set.
 * Every access checks the caller against the owner recorded in the run's memo (for `get` of an open
 * or completed run, the same key in the snapshot it returned) before returning or changing task state; a
 * mismatch is indistinguishable from an unknown task (returns null).
 *
 * Holds no task state itself: any instance serves any task.
 */
import { QueryNotRegisteredError, QueryRejectedError, WorkflowClient, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { approvalWorkflowId, type CallBinding } from '../binding/call-binding.js';
import type { Principal } from '../auth/principal.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';
import { quotaKeyOf, taskOwnerKeyOf } from '../auth/principal-keys.js';
import type { approvalWorkflow } from '../../workflows/approval.js';
import { cancelRequestSignal, cancelUpdate, provideInputUpdate, taskCreatedUpdate, taskQuery } from '../../workflows/messages.js';
import { parseTaskId, taskIdFor } from '../../workflows/task-id.js';
import { runTracingMemo } from '../../workflows/wire.js';
import { outcomeUnknownResult } from '../../workflows/results.js';
import { REFUSAL, REFUSAL_TEXT, refusalOf } from '../../workflows/refusals.js';
import type {
  AccessRequestHint,
  ApprovalWorkflowConfig,
  CancelOutcome,
  InBandConfirmation,
  LongRunning,
  TaskSnapshot,
  ToolProgress,
} from '../../workflows/types.js';
import type { Payload } from '@temporalio/common';
import { createSubmissionLimiter, type SubmissionLimits } from './submission-limiter.js';
import { faultPoint } from '../fault-point.js';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { createTemporalGuard, TemporalUnavailableError, type TemporalGuard } from '../temporal/availability.js';

/** Task statuses that end a task (SEP-2663): a run whose snapshot shows one is finishing. */
const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** `WorkflowExecutionStatus.COMPLETED` of the Temporal API, as a query rejection reports it. */
const WORKFLOW_EXECUTION_STATUS_COMPLETED = 2;

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
  /** The keyed reference of a binding (its approval workflow id): safe to log, unlike the digest. */
  referenceOf(binding: CallBinding): string;
  /** The caller's task, or null if unknown, expired, or owned by someone else. */
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

  return {
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

    async get(taskId, caller) {
      return guard.run(() => getNow(taskId, caller));
    },

    referenceOf(binding) {
      return approvalWorkflowId(opts.dedupKey, binding.digest);
    },

    async provideInput(taskId, caller, inputResponses) {
      return guard.run(() => provideInputNow(taskId, caller, inputResponses));
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
      }
    },
  };

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
        const { runId, snapshot } = await run.executeUpdate(taskCreatedUpdate);
        if (TERMINAL_STATUSES.has(snapshot.status) && !afterClose) {
          // Joined a run that has already ended its task and is only finishing (its last workflow
          // task, e.g. the limiter release): the identical call is a new intent, never the ended task
          // (SEP-2848 §Lifecycle). Wait for that run to close, then start afresh, once.
          await run.result().catch(() => undefined);
          return createOrJoinNow(binding, accessRequest, submissionInput, options, progress, true);
        }
        faultPoint('mcp.create.after-start'); // task durable, CreateTaskResult not yet returned (a crash point of the fault tests, `src/fault-point.ts`)
        return { taskId: taskIdFor(workflowId, runId), snapshot };
      }
    }
  }

  async function getNow(taskId: unknown, caller: Principal): Promise<TaskSnapshot | null> {
    {
      const ids = parseTaskId(taskId);
      if (!ids) return null;
      try {
        const snap = await openRuns.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId).query(taskQuery);
        if (typeof snap?.ownerKey === 'string') return snap.ownerKey === taskOwnerKeyOf(caller) ? withProgress(ids, snap) : null;
      } catch (err) {
        if (isWorkflowNotFound(err)) return null;
        // QueryNotRegisteredError is any INVALID_ARGUMENT answer, also a query that failed inside an
        // open approval workflow: the describe path below decides (a foreign id stays unknown; the
        // owner of an open task whose query fails gets an internal error, never "unknown task").
        if (!(err instanceof QueryRejectedError) && !(err instanceof QueryNotRegisteredError)) throw err;
        if (err instanceof QueryRejectedError && err.status === WORKFLOW_EXECUTION_STATUS_COMPLETED) {
          // Closed normally: its result is the terminal snapshot, which carries the owner key too.
          const snap = (await client.workflow.getHandle<typeof approvalWorkflow>(ids.workflowId, ids.runId).result()) as TaskSnapshot;
          if (typeof snap?.ownerKey === 'string') {
            if (snap.ownerKey !== taskOwnerKeyOf(caller)) return null;
            // expired: past createdAt + ttlMs, exactly what the task advertised
            if (snap.ttlMs !== null && Date.now() > Date.parse(snap.createdAt) + snap.ttlMs) return null;
            return snap;
          }
        }
        // otherwise (terminated, failed, ...): described and answered below
      }
      const owned = await describeOwned(taskId, caller);
      if (!owned) return null;
      const { handle, desc } = owned;
      if (desc.status.name === 'RUNNING') return handle.query(taskQuery);
      const closedAt = desc.closeTime?.getTime() ?? Date.now();
      if (desc.status.name === 'COMPLETED') {
        const snap = (await handle.result()) as TaskSnapshot;
        // expired: past createdAt + ttlMs, exactly what the task advertised
        if (snap.ttlMs !== null && Date.now() > Date.parse(snap.createdAt) + snap.ttlMs) return null;
        return snap;
      }
      if (Date.now() > closedAt + opts.workflowConfig.resultRetentionMs) return null; // expired
      // Terminated or failed by an operator or a bug. If the tool was ever scheduled, the claim was
      // made and a side effect may exist: that is outcome-unknown, never `failed` (§Lifecycle).
      const base = {
        ownerKey: taskOwnerKeyOf(caller),
        policyReason: '',
        createdAt: desc.startTime.toISOString(),
        lastUpdatedAt: (desc.closeTime ?? desc.startTime).toISOString(),
        ttlMs: closedAt - desc.startTime.getTime() + opts.workflowConfig.resultRetentionMs,
        pollIntervalMs: opts.workflowConfig.clientPollIntervalMs,
        generation: 0,
        phase: 'terminal' as const,
      };
      const history = await handle.fetchHistory();
      const claimed = (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool');
      if (claimed) {
        const result = outcomeUnknownResult();
        return { ...base, status: 'completed', claimed: true, result, disposition: 'outcome-unknown' };
      }
      return {
        ...base,
        status: 'failed',
        claimed: false,
        error: { code: -32603, message: 'Internal error: the approval task ended abnormally' },
      };
    }
  }

  /**
   * A task executing a long-running tool, with the execution attempt's latest heartbeat details as
   * `progress` (docs/CHANGE-GATE.md §Progress): read from the run's pending `executeTool` activity,
   * decoded through the client's data converter (the payload codec). Best effort: any problem, or
   * details that are not a well-formed `ToolProgress`, leaves the snapshot as it is.
   */
  async function withProgress(ids: { workflowId: string; runId: string }, snap: TaskSnapshot): Promise<TaskSnapshot> {
    if (snap.status !== 'working' || snap.phase !== 'executing') return snap;
    try {
      const desc = await client.workflow.getHandle(ids.workflowId, ids.runId).describe();
      const pending = desc.raw.pendingActivities?.find((a) => a.activityType?.name === 'executeTool');
      let payloads = (pending?.heartbeatDetails?.payloads ?? []) as Payload[];
      if (payloads.length === 0) return snap;
      const converter = client.options.loadedDataConverter;
      for (const codec of [...converter.payloadCodecs].reverse()) payloads = await codec.decode(payloads);
      const progress = toolProgressOf(payloads[0] ? converter.payloadConverter.fromPayload(payloads[0]) : undefined);
      return progress ? { ...snap, progress } : snap;
    } catch {
      return snap;
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

/** `details` as a `ToolProgress` when it is one (1 ≤ step ≤ of ≤ 1000, a string label), else undefined. */
function toolProgressOf(details: unknown): ToolProgress | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const { step, of, label } = details as Record<string, unknown>;
  if (!Number.isInteger(step) || !Number.isInteger(of) || typeof label !== 'string') return undefined;
  if ((step as number) < 1 || (step as number) > (of as number) || (of as number) > 1000) return undefined;
  return { step: step as number, of: of as number, label };
}
