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
 * - update (`provideInput`): the `provideInput` update, refused by its validator without recording
 *   anything when the task is not waiting for input or the answer does not fit;
 * - cancel: the `cancel` update, which performs the claim-vs-cancel compare-and-set; when no worker
 *   takes it in time, the `cancelRequest` signal records it for the same compare-and-set later.
 * Each is a named step below (`createOrJoinNow` → `startApproval` → `taskCreatedOf`; `cancelNow`,
 * `recordCancel`; `provideInputNow`); the reads are `task-reads.ts`'s.
 * Every access checks the caller against the owner recorded in the run's memo (for `get` of an open
 * or completed run, the same key in the snapshot it returned) before returning or changing task state; a
 * mismatch is indistinguishable from an unknown task (returns null).
 *
 * Holds no task state itself: any instance serves any task.
 */
import {
  WorkflowClient,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { approvalWorkflowId, type CallBinding } from '../binding/call-binding.js';
import type { Principal } from '../auth/principal.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';
import type { ClientIdentity } from '../backends/approval-backend.js';
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
import { createSubmissionLimiter, type SubmissionLimiter, type SubmissionLimits } from './submission-limiter.js';
import type { LimiterReservation } from '../../workflows/limiter-messages.js';
import { faultPoint } from '@countersign/http/fault-point';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { createTemporalGuard, TemporalUnavailableError, type TemporalGuard } from '../temporal/availability.js';
import {
  describeOwnedRun,
  isTerminalStatus,
  readByQuery,
  readByRecord,
  readClosedRun,
  type ReadContext,
  type ReadSource,
  type RunIds,
} from './task-reads.js';
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
  /** The calling MCP client (`clientInfo`), shown to approvers with the request; not part of the binding. A join keeps the first run's. */
  client?: ClientIdentity;
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

/** What one creation asks for: the binding, the requestable denial's hints, and what the new run captures besides. */
interface CreateRequest {
  binding: CallBinding;
  accessRequest: AccessRequestHint;
  submissionInput: { justification?: string } | undefined;
  options: CreateOptions;
}

/** What every step of the service works with: built once per service by {@link serviceContext}. */
interface ServiceContext {
  opts: TaskServiceOptions;
  client: Client;
  guard: TemporalGuard;
  limits: SubmissionLimiter | undefined;
  readCtx: ReadContext;
  /** How an open run is read (`opts.reads`). */
  read: typeof readByRecord;
  feed: TaskFeed | undefined;
  /** The feed as a cache of reads: only on the record path (the query path is the comparison). */
  cache: TaskFeed | undefined;
  /** The snapshot as answered: the interval its phase and age call for. */
  present(s: TaskSnapshot): TaskSnapshot;
}

/** Build the task service over a Temporal client. */
export function createTaskService(opts: TaskServiceOptions): TaskService {
  const svc = serviceContext(opts);
  return {
    get: (taskId, caller) => getTask(svc, taskId, caller),
    follow: (taskId, caller, listener) => followTask(svc, taskId, caller, listener),
    createOrJoin: (binding, accessRequest, submissionInput, options = {}) =>
      createOrJoin(svc, { binding, accessRequest, submissionInput, options }),
    referenceOf: (binding) => approvalWorkflowId(opts.dedupKey, binding.digest),
    provideInput: (taskId, caller, inputResponses) => provideInput(svc, taskId, caller, inputResponses),
    cancel: (taskId, caller) => cancel(svc, taskId, caller),
  };
}

/**
 * The service's context: the guard (default: over `client` with its defaults), the submission
 * limiter (when limits are set), the read path and a second client over the same connection,
 * codec and interceptors whose queries of a closed run are rejected (status only), never
 * dispatched to a worker for replay.
 */
function serviceContext(opts: TaskServiceOptions): ServiceContext {
  const { client } = opts;
  const openRuns = new WorkflowClient({
    connection: client.connection,
    namespace: client.options.namespace,
    dataConverter: client.options.dataConverter,
    identity: client.options.identity,
    ...(client.options.interceptors?.workflow ? { interceptors: client.options.interceptors.workflow } : {}),
    queryRejectCondition: 'NOT_OPEN',
  });
  const policy: PollIntervalPolicy = opts.pollInterval ?? { baseMs: opts.workflowConfig.clientPollIntervalMs, maxMs: 60_000 };
  const now = opts.now ?? Date.now;
  return {
    opts,
    client,
    guard: opts.guard ?? createTemporalGuard({ client }),
    limits: opts.submissionLimits
      ? createSubmissionLimiter({ client, taskQueue: opts.taskQueue, limits: opts.submissionLimits, traceRuns: opts.traceRuns ?? false })
      : undefined,
    readCtx: {
      client,
      openRuns,
      resultRetentionMs: opts.workflowConfig.resultRetentionMs,
      clientPollIntervalMs: opts.workflowConfig.clientPollIntervalMs,
    },
    read: opts.reads === 'query' ? readByQuery : readByRecord,
    feed: opts.feed,
    cache: opts.reads === 'query' ? undefined : opts.feed,
    present: (s) => ({ ...s, pollIntervalMs: pollIntervalFor(s, now(), policy) ?? s.pollIntervalMs }),
  };
}

/** `TaskService.get`: from the feed while it watches the run, else one read (`task-reads.ts`), which the feed then keeps. */
async function getTask(svc: ServiceContext, taskId: unknown, caller: Principal): Promise<TaskSnapshot | null> {
  const ids = parseTaskId(taskId);
  if (!ids) return null;
  const ownerKey = taskOwnerKeyOf(caller);
  const watched = svc.cache?.peek(ids);
  if (watched) {
    svc.opts.onRead?.('feed');
    if (watched.ownerKey !== ownerKey) return null;
    const shown = svc.present(watched);
    // a read served by the watch is a read too: it keeps the watch its intervals from now
    // (`TaskFeedOptions.retainForIntervals`), so a task polled steadily is not re-read from
    // Temporal, and its history re-fetched by a new watch, every few intervals
    svc.cache?.keep(ids, watched, shown.pollIntervalMs);
    return shown;
  }
  const answer = await svc.guard.run(() => svc.read(svc.readCtx, ids, ownerKey));
  if (!answer) return null;
  svc.opts.onRead?.(answer.source);
  const shown = svc.present(answer.snapshot);
  svc.cache?.keep(ids, answer.snapshot, shown.pollIntervalMs);
  return shown;
}

/** `TaskService.follow`: the current snapshot, then the feed's changes of a run still open. */
async function followTask(
  svc: ServiceContext,
  taskId: unknown,
  caller: Principal,
  listener: (snapshot: TaskSnapshot | null) => void,
): Promise<{ current: TaskSnapshot; stop: () => void } | null> {
  const ids = parseTaskId(taskId);
  const feed = svc.feed;
  if (!ids || !feed) return null;
  const current = await getTask(svc, taskId, caller);
  if (!current) return null;
  if (isTerminalStatus(current.status)) return { current, stop: () => undefined };
  const ownerKey = taskOwnerKeyOf(caller);
  let stopped = false;
  const unsubscribe = feed.subscribe(ids, (event) => {
    if (stopped) return;
    if ('snapshot' in event) {
      if (event.snapshot.ownerKey === ownerKey) listener(svc.present(event.snapshot));
      return;
    }
    if (event.ended === 'terminal') return; // its terminal snapshot was the last event
    // closed abnormally (terminated, failed) or gone: read it once more, as tasks/get would
    getTask(svc, taskId, caller).then(listener, () => listener(null));
  });
  if (!unsubscribe) return null;
  // a change the watch saw before this subscriber was added (`current` came from Temporal, or
  // from an older answer) is not lost: a newer state it holds is delivered first
  const seen = feed.latest(ids);
  if (seen && seen.ownerKey === ownerKey && seen.lastUpdatedAt > current.lastUpdatedAt)
    queueMicrotask(() => !stopped && listener(svc.present(seen)));
  return {
    current,
    stop: () => {
      stopped = true;
      unsubscribe();
    },
  };
}

/**
 * `TaskService.createOrJoin` under the creation wait (`createWaitMs`). The wait lasts until a
 * worker has submitted to the approval backend: its length says little about Temporal itself, so
 * running out of it does not count toward the circuit; Temporal answering but the task not
 * confirmed in time is `TaskCreationPendingError` (retryable, and the retry joins).
 */
async function createOrJoin(svc: ServiceContext, request: CreateRequest): Promise<{ taskId: string; snapshot: TaskSnapshot }> {
  const progress: { at: CreationProgress } = { at: 'not-started' };
  try {
    return await svc.guard.run(() => createOrJoinNow(svc, request, progress), svc.opts.createWaitMs, { tripsCircuit: false });
  } catch (err) {
    if (err instanceof TemporalUnavailableError && err.reason === 'no-answer') throw new TaskCreationPendingError(progress.at);
    throw err;
  }
}

/**
 * One creation attempt, in the steps that let a wait that runs out say how far it got
 * (`progress`, {@link CreationProgress}): the caller's submission limiter reserves a slot (throws
 * `SubmissionLimitedError` past a limit), the durable start (Temporal server only), then the
 * `taskCreated` update, which resolves once the backend's handle is in workflow state (SEP-2848
 * §Crash-consistent creation). A join that lands on a run whose task has already ended starts
 * afresh, once (`afterClose`).
 */
async function createOrJoinNow(
  svc: ServiceContext,
  request: CreateRequest,
  progress: { at: CreationProgress },
  afterClose = false,
): Promise<{ taskId: string; snapshot: TaskSnapshot }> {
  const { opts } = svc;
  const workflowId = approvalWorkflowId(opts.dedupKey, request.binding.digest);
  const limiter = svc.limits ? await svc.limits.reserve(quotaKeyOf(opts.dedupKey, request.binding.principal), workflowId) : null;
  progress.at = 'unknown';
  const run = await startApproval(svc, workflowId, request, limiter);
  progress.at = 'started';
  const created = await taskCreatedOf(run, afterClose);
  // the run we found closed before it took the update (its task had ended): start afresh, once
  if (!created) return createOrJoinNow(svc, request, progress, true);
  if (isTerminalStatus(created.snapshot.status) && !afterClose) {
    // Joined a run that has already ended its task and is only finishing (its last workflow
    // task, e.g. the limiter release): the identical call is a new intent, never the ended task
    // (SEP-2848 §Lifecycle). Wait for that run to close, then start afresh, once.
    await run.result().catch(() => undefined);
    return createOrJoinNow(svc, request, progress, true);
  }
  faultPoint('mcp.create.after-start'); // task durable, CreateTaskResult not yet returned (a crash point of the fault tests, `packages/http/src/fault-point.ts`)
  return { taskId: taskIdFor(workflowId, created.runId), snapshot: svc.present(created.snapshot) };
}

/**
 * Start the approval workflow `workflowId`, or find it running (`USE_EXISTING`): a handle on the
 * run the start answered with. Its input fixes the binding and what the run captures
 * ({@link approvalInputOf}); its memo the owner key (and tracing); its summary line, when on.
 */
async function startApproval(
  svc: ServiceContext,
  workflowId: string,
  request: CreateRequest,
  limiter: LimiterReservation | null,
): Promise<WorkflowHandle<typeof approvalWorkflow>> {
  const { opts, client } = svc;
  const ownerKey = taskOwnerKeyOf(request.binding.principal);
  const { tool } = request.binding;
  const handle = await client.workflow.start<typeof approvalWorkflow>('approvalWorkflow', {
    workflowId,
    taskQueue: opts.taskQueue,
    args: [approvalInputOf(request, ownerKey, opts.workflowConfig, limiter)],
    workflowIdConflictPolicy: 'USE_EXISTING',
    memo: { owner: ownerKey, ...runTracingMemo(opts.traceRuns ?? false) },
    ...(opts.workflowSummary
      ? { staticSummary: workflowSummaryOf(tool, request.accessRequest.approverGroup, request.options.toolInfo?.upstream) }
      : {}),
  });
  // the start answered with the run id of the run it started or found running (`USE_EXISTING`)
  return client.workflow.getHandle<typeof approvalWorkflow>(workflowId, handle.firstExecutionRunId);
}

/**
 * The run's answer to `taskCreated`: its run id and snapshot once the backend handle is in state;
 * undefined when the run closed before it took the update (rethrown after a fresh start,
 * `afterClose`: a second close is not retried).
 */
async function taskCreatedOf(
  run: WorkflowHandle<typeof approvalWorkflow>,
  afterClose: boolean,
): Promise<{ runId: string; snapshot: TaskSnapshot } | undefined> {
  try {
    return await run.executeUpdate(taskCreatedUpdate);
  } catch (err) {
    if (!isWorkflowNotFound(err) || afterClose) throw err;
    return undefined;
  }
}

/** `TaskService.provideInput`; the feed serves the run again only once it has seen the answer. */
async function provideInput(
  svc: ServiceContext,
  taskId: unknown,
  caller: Principal,
  inputResponses: Record<string, unknown>,
): Promise<{ accepted: true } | { refused: string } | null> {
  const out = await svc.guard.run(() => provideInputNow(svc, taskId, caller, inputResponses));
  forget(svc, taskId);
  return out;
}

/**
 * The `provideInput` update on the caller's running task. A refusal by the update's validator
 * records nothing: a task not waiting for input or an unknown input key keep their reason, any
 * other refusal reads as a bad answer; a run that closed meanwhile was not waiting for input,
 * and one whose task has expired is unknown (null), as `tasks/get` answers it.
 */
async function provideInputNow(
  svc: ServiceContext,
  taskId: unknown,
  caller: Principal,
  inputResponses: Record<string, unknown>,
): Promise<{ accepted: true } | { refused: string } | null> {
  const owned = await describeOwnedRun(svc.client, taskId, caller);
  if (!owned) return null;
  if (owned.desc.status.name !== 'RUNNING')
    return (await expiredClosedRun(svc, owned, caller)) ? null : { refused: REFUSAL_TEXT[REFUSAL.noInputRequested] };
  try {
    await owned.handle.executeUpdate(provideInputUpdate, { args: [inputResponses] });
    return { accepted: true };
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      const type = refusalOf(err.cause);
      return {
        refused: REFUSAL_TEXT[type === REFUSAL.noInputRequested || type === REFUSAL.unknownInputKey ? type : REFUSAL.invalidInput],
      };
    }
    if (isWorkflowNotFound(err))
      return (await expiredClosedRun(svc, owned, caller, 'describe')) ? null : { refused: REFUSAL_TEXT[REFUSAL.noInputRequested] };
    throw err;
  }
}

/**
 * `TaskService.cancel`: the `cancel` update; when Temporal answers but no worker takes it in
 * time, the cancel is recorded durably instead ({@link recordCancel}). Either way the feed serves
 * the run again only once it has seen the change.
 */
async function cancel(svc: ServiceContext, taskId: unknown, caller: Principal): Promise<CancelOutcome | 'recorded' | null> {
  try {
    return await svc.guard.run(() => cancelNow(svc, taskId, caller));
  } catch (err) {
    if (!(err instanceof TemporalUnavailableError) || err.reason !== 'no-answer') throw err;
    return svc.guard.run(() => recordCancel(svc, taskId, caller));
  } finally {
    forget(svc, taskId);
  }
}

/**
 * The `cancel` update on the caller's running task: the claim-vs-cancel compare-and-set in the
 * workflow. A closed run is `already-terminal` while its task is answered, null (unknown) once it
 * has expired.
 */
async function cancelNow(svc: ServiceContext, taskId: unknown, caller: Principal): Promise<CancelOutcome | null> {
  const owned = await describeOwnedRun(svc.client, taskId, caller);
  if (!owned) return null;
  if (owned.desc.status.name !== 'RUNNING') return (await expiredClosedRun(svc, owned, caller)) ? null : 'already-terminal';
  try {
    return await owned.handle.executeUpdate(cancelUpdate);
  } catch (err) {
    // the run closed between describe and update
    if (isWorkflowNotFound(err)) return (await expiredClosedRun(svc, owned, caller, 'describe')) ? null : 'already-terminal';
    throw err;
  }
}

/** A cancel no worker took in time, as the `cancelRequest` signal: applied, by the same compare-and-set, when a worker next runs the task. */
async function recordCancel(svc: ServiceContext, taskId: unknown, caller: Principal): Promise<'already-terminal' | 'recorded' | null> {
  const owned = await describeOwnedRun(svc.client, taskId, caller);
  if (!owned) return null;
  if (owned.desc.status.name !== 'RUNNING') return (await expiredClosedRun(svc, owned, caller)) ? null : 'already-terminal';
  await owned.handle.signal(cancelRequestSignal);
  return 'recorded';
}

/**
 * True when `owned` is a closed run whose task `tasks/get` no longer answers (past `createdAt +
 * ttlMs`, SEP-2848 §Retention): every method then answers it as an unknown task, by the same
 * read (`readClosedRun`), so no method is an oracle for a task another has forgotten. A run that
 * is open, or closed and still answered, is false. `describe`: the run closed after `owned.desc`
 * was taken (an update found it gone), so describe it again first. Throws as the reads do.
 */
async function expiredClosedRun(
  svc: ServiceContext,
  owned: { handle: WorkflowHandle<typeof approvalWorkflow>; desc: WorkflowExecutionDescription },
  caller: Principal,
  describe?: 'describe',
): Promise<boolean> {
  let desc = owned.desc;
  if (describe) {
    try {
      desc = await owned.handle.describe();
    } catch (err) {
      if (isWorkflowNotFound(err)) return true; // gone: unknown, as tasks/get answers it
      throw err;
    }
  }
  if (desc.status.name === 'RUNNING') return false;
  const ids = { workflowId: owned.handle.workflowId, runId: desc.runId };
  return (await readClosedRun(svc.readCtx, ids, taskOwnerKeyOf(caller), desc)) === null;
}

/** This instance changed the task: its feed serves the run again only once it has seen the change. */
function forget(svc: ServiceContext, taskId: unknown): void {
  const ids: RunIds | null = parseTaskId(taskId);
  if (ids) svc.cache?.forget(ids);
}

/**
 * The approval workflow's input: the binding and the denial's hints, the owner key and the
 * workflow config, and what this creation adds (the justification, the limiter's ticket, a
 * long-running tool's execution options, an in-band confirmation, what approvers are shown).
 */
function approvalInputOf(request: CreateRequest, ownerKey: string, config: ApprovalWorkflowConfig, limiter: LimiterReservation | null) {
  const { binding, accessRequest, submissionInput, options } = request;
  return {
    binding,
    accessRequest,
    ownerKey,
    config,
    ...(submissionInput ? { submissionInput } : {}),
    ...(limiter ? { limiter } : {}),
    ...(options.execution ? { execution: options.execution } : {}),
    ...(options.confirmation ? { confirmation: options.confirmation } : {}),
    ...(options.toolInfo ? { toolInfo: options.toolInfo } : {}),
    ...(options.client ? { client: options.client } : {}),
  };
}
