/**
 * The approval workflow: one MCP approval task = one workflow run (SEP-2848 on Temporal).
 *
 * Holds the three kinds of task state the SEP names: the immutable call binding (workflow
 * input, never changed), the mutable approval state (generations with their idempotency keys and
 * backend handles, the request deadline, the approval validity) and the mutable execution state
 * (the claim, the terminal result). Time is workflow time; every wait is a durable timer. The
 * state and its synchronous transitions (retention, terminal rules, claim vs cancel, generations)
 * are `ApprovalState` (`approval-state.ts`); this file registers the handlers over it and runs the
 * steps that wait: submit, await the decision, re-evaluate, claim and execute.
 *
 * Guarantees, each traced to the SEP:
 * - submission-intent before contact: the idempotency key (uuid4 from workflow randomness) and
 *   the submission body are in history before the submit activity is scheduled; activity retries
 *   reuse the key (§Crash-consistent creation);
 * - `taskCreated` resolves only once the handle is in state, so the front's Update-with-Start
 *   returns a durable task (§Crash-consistent creation);
 * - callbacks are hints: a callback for the current generation triggers an authoritative status
 *   fetch; a stale or consumed generation's callback is ignored (§Completion, request);
 * - re-evaluation after a grant: allow → claim; retry → backoff with jitter, stops at approval
 *   expiry; request → consume the generation, new key, new submission, bounded chain; deny → terminal
 *   denial (§Completion);
 * - the claim is a synchronous compare-and-set against cancel and expiry; after it the tool runs
 *   once (`maximumAttempts: 1`); a thrown tool error is `execution-error`, a timeout or lost worker
 *   `outcome-unknown`, never a re-run (§Completion, §Cancellation);
 * - a lost (not failed) attempt is resolved by the tool's idempotency hook when it has one: the
 *   recorded result, or fenced and not executed; otherwise outcome-unknown (`execution-resolution.ts`);
 * - `failed` only before the claim; a terminal task never changes again (§Lifecycle).
 *
 * Deliberately does not: talk to the network (activities do), compose model-facing status text
 * (the MCP front does, from `phase`), or continue-as-new (the status poll backs off to
 * `statusPollMaxMs`, so a 7-day wait stays a few hundred events).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  proxyActivities,
  proxySinks,
  setHandler,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
  type ActivityInterfaceFor,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ApprovalActivities } from '../activities/activities.js';
import { backendCallbackUpdate, cancelRequestSignal, cancelUpdate, provideInputUpdate, taskCreatedUpdate, taskQuery } from './messages.js';
import { answerDiscardedResult, executedResult, executionErrorResult, notExecutedResult, outcomeUnknownResult } from './results.js';
import { taskIdFor } from './task-id.js';
import { claimReservation, reservationReleaser } from './limiter-release.js';
import { executionLostFencedResult } from './execution-resolution.js';
import { ApprovalState, type SubmittedGeneration } from './approval-state.js';
import { inTaskJustificationKey } from './wire.js';
import { SearchAttributePublisher } from './search-attributes.js';
import { publishTaskRecord } from './task-record.js';
import type { CountersignSinks, DecisionOutcome } from './metrics-sink.js';
import {
  FAILURE,
  type AccessRequestHint,
  type ApprovalMaterial,
  type ApprovalWorkflowInput,
  type BackendStatus,
  type CancelOutcome,
  type StoredCallToolResult,
  type TaskSnapshot,
} from './types.js';

/**
 * Timeouts and retry of every backend, policy and cancel call. `startToCloseMs` also bounds how
 * long a call lost with its worker waits before the retry (no heartbeats):
 * `config.backendCallTimeoutMs`, default 30 s.
 */
function backendCallOptions(startToCloseMs: number): ActivityOptions {
  return {
    startToCloseTimeout: startToCloseMs,
    scheduleToCloseTimeout: '15m',
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '1m',
      nonRetryableErrorTypes: [FAILURE.backendConflict, FAILURE.backendInvalid, FAILURE.backendUnauthorized, FAILURE.backendNotFound],
    },
  };
}

/** Backend, policy and cancel calls as regular activities ({@link backendCallOptions}). */
function backendActivities(startToCloseMs: number) {
  return proxyActivities<ApprovalActivities>(backendCallOptions(startToCloseMs));
}

/**
 * The one execution attempt (`maximumAttempts: 1`): the installation's execution timeout, or, for
 * a tool that declared itself long-running when the task started (`input.execution`), its own
 * timeout and a heartbeat timeout. A missed heartbeat is a lost attempt, resolved like any other
 * (`resolveLostExecution`), never a re-run. Options only, no command: replay is unaffected.
 */
function executionActivities(input: ApprovalWorkflowInput) {
  const long = input.execution;
  return proxyActivities<ApprovalActivities>({
    startToCloseTimeout: long ? long.timeoutMs : input.config.executionTimeoutMs,
    ...(long ? { heartbeatTimeout: long.heartbeatMs } : {}),
    retry: { maximumAttempts: 1 },
  });
}

/** The lost-execution lookup: retried like a backend call (the tool's hook is idempotent). */
const resolver = proxyActivities<Required<Pick<ApprovalActivities, 'resolveExecution'>>>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '15m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * Workflow entry point. Returns the terminal snapshot, which `tasks/get` serves once closed.
 * However the run ends (a terminal result or a thrown failure) it first releases its
 * submission-limiter slot (`limiter-release.ts`); a terminated run cannot, and the limiter's audit
 * drops it.
 */
export async function approvalWorkflow(input: ApprovalWorkflowInput): Promise<TaskSnapshot> {
  const releaseSlot = reservationReleaser(input.limiter, workflowInfo().workflowId);
  // Issued first, not awaited: handlers must be registered in this first activation; the claim
  // command still precedes any release this run sends.
  const claimed = claimReservation(input.limiter, workflowInfo().workflowId);
  try {
    return await runApproval(input, releaseSlot);
  } finally {
    await claimed;
    await releaseSlot();
  }
}

/** What the steps of one run share: its state, the binding, the activity proxies and the task id. */
interface Run {
  state: ApprovalState;
  input: ApprovalWorkflowInput;
  backend: ActivityInterfaceFor<ApprovalActivities>;
  execution: ActivityInterfaceFor<ApprovalActivities>;
  taskId: string;
}

async function runApproval(input: ApprovalWorkflowInput, releaseSlot: () => Promise<void>): Promise<TaskSnapshot> {
  const info = workflowInfo();
  const state = new ApprovalState(input, info.workflowId);
  const backend = backendActivities(input.config.backendCallTimeoutMs ?? 30_000);
  const run: Run = {
    state,
    input,
    backend,
    execution: executionActivities(input),
    taskId: taskIdFor(info.workflowId, info.runId),
  };
  // Typed search attributes for the Web UI and visibility queries, upserted on every transition
  // (`search-attributes.ts`); only when the front found them registered.
  let publish: (() => void) | undefined;
  if (input.config.searchAttributes === true) {
    const publisher = new SearchAttributePublisher(upsertSearchAttributes);
    publish = () =>
      publisher.publish({
        tool: input.binding.tool,
        approverGroup: state.approverGroup(),
        ownerKey: input.ownerKey,
        snapshot: state.snapshot,
      });
    publish();
  }
  // Metrics through a sink (no history, not called during replay; `metrics-sink.ts`).
  const metrics = proxySinks<CountersignSinks>().countersignMetrics;
  let terminalReported = false;
  state.onTransition = () => {
    publish?.();
    if (terminalReported || !state.isTerminal()) return;
    terminalReported = true;
    metrics.terminal(state.snapshot.status, state.snapshot.disposition, state.expiryKind());
  };

  // The client-facing snapshot in the run's memo, written in the same workflow task as each change
  // (`task-record.ts`): what `tasks/get` reads without a query or a worker.
  const record = publishTaskRecord(() => state.snapshot);

  setHandler(taskQuery, () => state.snapshot);
  setHandler(taskCreatedUpdate, async () => {
    await condition(() => state.isCreated());
    return { runId: info.runId, snapshot: state.snapshot };
  });
  // The cancel compare-and-set: synchronous up to the state change, so it cannot interleave with
  // the claim. The answer waits for the limiter slot's release: a caller told `cancelled` may open
  // another task.
  const cancel = async (): Promise<CancelOutcome> => {
    const outcome = state.cancel();
    if (outcome === 'cancelled') await releaseSlot();
    return outcome;
  };
  setHandler(cancelUpdate, cancel);
  // The same compare-and-set, recorded by the front when no worker took the update in time.
  setHandler(cancelRequestSignal, async () => {
    await cancel();
  });
  setHandler(backendCallbackUpdate, (cb) => state.acceptCallback(cb), { validator: (cb) => state.validateCallback(cb) });
  setHandler(provideInputUpdate, (responses) => state.acceptInput(responses), { validator: (responses) => state.validateInput(responses) });

  let hint: AccessRequestHint = input.accessRequest;
  if (input.confirmation) {
    // The requester confirmed in band (src/mcp/in-band-confirmation.ts): nothing to submit; claim and run.
    // valid for the policy's window from the run's start, on workflow time (no clock of the front)
    const until = Date.now() + input.accessRequest.requestTtlMs;
    state.confirmedInBand(until);
    await claimAndExecute(run, until);
  }
  while (!state.isTerminal()) {
    const g = await submit(run, hint);
    if (!g || state.isTerminal()) break;
    const status = await awaitDecision(run, g);
    if (!status) break;
    if (status.state !== 'pending') metrics.decided(status.state as DecisionOutcome, (Date.now() - g.submittedAtMs) / 1000);
    if (status.state === 'approved') {
      const next = await reEvaluate(run, status.approval);
      if (!next || !state.consumeForNextRequest(g)) break;
      hint = next;
      continue;
    }
    if (status.state !== 'pending') state.settle(status);
  }

  // A winning cancel also cancels the live backend request, when the backend supports it.
  const live = state.backendRequestToCancel();
  if (live) {
    try {
      await run.backend.cancelApprovalRequest(live);
    } catch {
      // best effort: the local fence, not backend cancellation, guarantees the tool does not run
    }
  }
  await condition(allHandlersFinished);
  record.flush();
  return state.snapshot;
}

/**
 * Submit the next generation for `hint`: first, if it needs a justification nobody gave, wait in
 * `input_required` for `tasks/update` (SEP-2848 §Collecting submission input); then record the
 * submission-intent (key and body durable in state and history) before contacting the backend.
 * null when the task ended instead (unanswered, fenced, or the backend refused the submission).
 */
async function submit({ state, backend }: Run, hint: AccessRequestHint): Promise<SubmittedGeneration | null> {
  if (state.needsJustification(hint)) {
    // each round gets its own key, never reused (SEP-2663 §Task Update Requests)
    const window = state.openInputRequest(hint, inTaskJustificationKey(state.nextGeneration()));
    const answered = await condition(() => state.hasInput() || state.isTerminal(), window);
    if (!state.closeInputRequest(answered)) return null;
  }
  const g = state.recordSubmission(hint, uuid4());
  try {
    g.handle = await backend.submitApprovalRequest({ body: g.body, idempotencyKey: g.idempotencyKey });
  } catch {
    state.fail('The approval backend did not accept the request.');
    return null;
  }
  return g as SubmittedGeneration;
}

/**
 * Wait for the backend to resolve generation `g`: a callback (a hint) triggers an authoritative
 * status fetch; without one, the fallback status poll finds the decision; `expired` once the request
 * deadline passes; null when the task was fenced meanwhile.
 *
 * The poll is one `fetchApprovalStatus` activity in poll mode
 * whose attempts are the polls: the activity answers only news (a decision, a later expiry), and
 * Temporal retries it with the poll's backoff (`statusPollInitialMs` doubling to
 * `statusPollMaxMs`) until the request deadline (its schedule-to-close). So a week of waiting is a
 * few dozen attempts — one action each, nothing in history — one timer before each (re)start of
 * the poll (the first wait, which most requests do not outlast: their callback comes first), and one
 * to the deadline once no further attempt fits before it. An
 * activity that answers "pending, nothing new" instead of retrying (a test fake) ends its poll, and
 * the next one starts after a timer: the loop never polls twice without one. A callback does not
 * cancel it (a cancel racing the poll's own answer is a workflow-task failure on some servers): the
 * status is read at once beside it, and a poll still running when the task moves on stops with the
 * run.
 */
async function awaitDecision(run: Run, g: SubmittedGeneration): Promise<BackendStatus | null> {
  const { state, backend, input } = run;
  const cfg = input.config;
  let deadline = state.awaitingDecision(g);
  let knownExpiresAt = g.handle.expiresAt;
  let delay = cfg.statusPollInitialMs;
  let poll: Promise<PollOutcome> | undefined;
  for (;;) {
    if (state.isTerminal()) return null;
    let outcome: PollOutcome | { kind: 'callback' };
    if (poll) outcome = await pollOrCallback(state, poll);
    else {
      // each (re)start of the poll first waits one timer: most requests are decided, and called back, within it
      const woken = await condition(
        () => state.hasPendingCallback() || state.isTerminal(),
        Math.max(1, Math.min(delay, deadline - Date.now())),
      );
      if (state.isTerminal()) return null;
      if (woken) outcome = { kind: 'callback' };
      else if (Date.now() >= deadline) outcome = { kind: 'deadline' };
      else {
        delay = Math.min(delay * 2, cfg.statusPollMaxMs);
        poll = startStatusPoll(cfg, g, knownExpiresAt, deadline - Date.now(), delay);
        outcome = await pollOrCallback(state, poll);
      }
    }
    if (outcome.kind !== 'callback') poll = undefined; // that poll has ended
    if (outcome.kind === 'failed') {
      // Temporal gave up on the poll because its next attempt would pass the request deadline:
      // wait for a callback or the deadline (one timer), then read the status one last time
      const woken = await condition(() => state.hasPendingCallback() || state.isTerminal(), Math.max(1, deadline - Date.now()));
      outcome = woken ? { kind: 'callback' } : { kind: 'deadline' };
    }
    if (state.isTerminal()) return null;
    let status: BackendStatus | null;
    if (outcome.kind === 'status') status = outcome.status;
    else {
      // a callback (a hint), or the request deadline: read the status once
      state.clearPendingCallback();
      try {
        status = await backend.fetchApprovalStatus(g.handle);
      } catch {
        status = null; // backend unreachable: keep waiting; the request deadline still applies
      }
      if (state.isTerminal()) return null;
    }
    if (status && status.state !== 'pending') return status;
    if (status?.state === 'pending' && Date.parse(status.expiresAt) > Date.parse(knownExpiresAt)) {
      knownExpiresAt = status.expiresAt;
      deadline = state.extendDecisionDeadline(g, deadline, status.expiresAt);
      poll = undefined; // a poll running to the old deadline ends with the run; the next one runs to the new
    }
    if (Date.now() >= deadline) return { state: 'expired' };
  }
}

/**
 * How a fallback poll ended: with news; out of time (its schedule-to-close: the request deadline);
 * or failed before it — Temporal fails a retried activity with its last failure when the next
 * attempt would start after its schedule-to-close, so a poll ends this way shortly before the deadline.
 */
type PollOutcome = { kind: 'status'; status: BackendStatus } | { kind: 'deadline' } | { kind: 'failed' };

/**
 * Start the fallback poll of `g` until the request deadline, `remainingMs` from now: its first
 * attempt at once, the next `firstRetryMs` later, doubling to `statusPollMaxMs` ({@link awaitDecision}).
 */
function startStatusPoll(
  cfg: ApprovalWorkflowInput['config'],
  g: SubmittedGeneration,
  knownExpiresAt: string,
  remainingMs: number,
  firstRetryMs: number,
) {
  const deadline = Date.now() + remainingMs;
  const poll = proxyActivities<ApprovalActivities>({
    startToCloseTimeout: cfg.backendCallTimeoutMs ?? 30_000,
    scheduleToCloseTimeout: remainingMs,
    // after the timer before it: attempts at 1, 3, 7, 15 … × statusPollInitialMs from the submission, as the timer loop polled
    retry: { initialInterval: firstRetryMs, backoffCoefficient: 2, maximumInterval: cfg.statusPollMaxMs },
  });
  return poll.fetchApprovalStatus(g.handle, { knownExpiresAt }).then(
    (status): PollOutcome => ({ kind: 'status', status }),
    (): PollOutcome => (Date.now() >= deadline ? { kind: 'deadline' } : { kind: 'failed' }),
  );
}

/** The poll's outcome, or `callback` as soon as a callback is pending or the task is terminal (the wait is then dropped; no timer, no command). */
async function pollOrCallback(state: ApprovalState, poll: Promise<PollOutcome>): Promise<PollOutcome | { kind: 'callback' }> {
  const wait = new CancellationScope();
  const woken = wait
    .run(() => condition(() => state.hasPendingCallback() || state.isTerminal()))
    .then(
      () => ({ kind: 'callback' as const }),
      () => ({ kind: 'callback' as const }),
    );
  const first = await Promise.race([poll, woken]);
  wait.cancel();
  return first;
}

/**
 * Re-evaluate with the approval until allow / deny / request (SEP-2848 §Completion): allow claims
 * and runs the tool; deny is a terminal denial; request returns the next hint; retry waits with
 * backoff and jitter, and the waits stop at approval expiry. null unless a further request follows.
 */
async function reEvaluate(run: Run, approval: ApprovalMaterial): Promise<AccessRequestHint | null> {
  const { state, backend, input } = run;
  const approvalDeadline = state.approvalDeadline(approval);
  for (let attempt = 0; ; attempt++) {
    if (state.isTerminal()) return null;
    if (Date.now() >= approvalDeadline) {
      state.deny('approval-expired');
      return null;
    }
    state.setPhase('re-evaluating');
    const r = await backend.evaluatePolicy({ binding: input.binding, approval });
    if (state.isTerminal()) return null;
    switch (r.outcome) {
      case 'allow':
        await claimAndExecute(run, approvalDeadline);
        return null;
      case 'deny':
        state.deny(r.reason);
        return null;
      case 'request':
        return r.accessRequest;
      case 'retry': {
        state.setPhase('retry-wait');
        const delay = state.retryDelayMs(attempt, r.retryAfterMs, () => Math.random());
        const remaining = approvalDeadline - Date.now();
        await condition(() => state.isTerminal(), Math.max(1, Math.min(delay, remaining)));
        break; // loop: re-checks expiry first
      }
    }
  }
}

/**
 * Claim, then run the tool at most once (`maximumAttempts: 1`; SEP-2848 §Completion): a thrown
 * tool error is execution-error (its body saying the tool ran and failed, did not run, or ran and
 * its answer was discarded, by the failure's type); a lost attempt (timeout, lost worker) is resolved by the tool's
 * idempotency hook when it has one, else outcome-unknown; never a re-run.
 */
async function claimAndExecute({ state, execution, input, taskId }: Run, approvalDeadlineMs: number): Promise<void> {
  if (!state.claim(approvalDeadlineMs)) return;
  try {
    const out = await execution.executeTool({ binding: input.binding, taskId, executionId: `${taskId}/execution` });
    state.complete(executedResult(out));
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    const type = cause instanceof ApplicationFailure ? cause.type : undefined;
    if (type === FAILURE.toolExecutionError) state.complete(executionErrorResult());
    else if (type === FAILURE.toolNotExecuted) state.complete(notExecutedResult());
    else if (type === FAILURE.toolAnswerDiscarded) {
      const d = ((cause as ApplicationFailure).details?.[0] ?? {}) as { sizeBytes?: number; limitBytes?: number };
      state.complete(answerDiscardedResult(Number(d.sizeBytes), Number(d.limitBytes)));
    } else state.complete(await resolveLostExecution(input.binding, `${taskId}/execution`));
  }
}

/**
 * The attempt was lost, not failed: ask the tool's idempotency hook (never re-invoke it) and
 * complete with what it proves; outcome-unknown when it cannot (`execution-resolution.ts`).
 */
async function resolveLostExecution(binding: ApprovalWorkflowInput['binding'], executionId: string): Promise<StoredCallToolResult> {
  try {
    const r = await resolver.resolveExecution({ binding, executionId });
    if (r.state === 'executed') return executedResult(r.result);
    if (r.state === 'not-executed') return executionLostFencedResult();
  } catch {
    // the hook could not tell within the retry budget
  }
  return outcomeUnknownResult();
}
