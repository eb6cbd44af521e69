/**
 * The approval workflow: one MCP approval task = one workflow run (SEP-2848 on Temporal).
 *
 * Holds the three kinds of task state the SEP names: the immutable call binding (workflow
 * input, never changed), the mutable approval state (generations with their idempotency keys and
 * backend handles, the request deadline, the approval validity) and the mutable execution state
 * (the claim, the terminal result). Time is workflow time; every wait is a durable timer.
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
 *   recorded result, or fenced and not executed; otherwise outcome-unknown (issue 6 §4);
 * - `failed` only before the claim; a terminal task never changes again (§Lifecycle).
 *
 * Deliberately does not: talk to the network (activities do), compose model-facing status text
 * (the MCP front does, from `phase`), or continue-as-new (the status poll backs off to
 * `statusPollMaxMs`, so a 7-day wait stays a few hundred events).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  patched,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { ApprovalActivities } from '../activities/activities.js';
import { backendCallbackUpdate, cancelUpdate, provideInputUpdate, taskCreatedUpdate, taskQuery } from './messages.js';
import { deniedResult, executedResult, executionErrorResult, outcomeUnknownResult } from './results.js';
import { taskIdFor } from './task-id.js';
import { claimReservation, reservationReleaser } from './limiter-release.js';
import { EXECUTION_RESOLUTION_PATCH, executionLostFencedResult } from './execution-resolution.js';
import { justificationRequest, readJustification } from './justification.js';
import { JUSTIFICATION_INPUT_KEY } from './wire.js';
import { REFUSAL, refusal } from './refusals.js';
import {
  FAILURE,
  type AccessRequestHint,
  type ApprovalMaterial,
  type ApprovalWorkflowInput,
  type BackendHandle,
  type BackendStatus,
  type CancelOutcome,
  type DenialReason,
  type StoredCallToolResult,
  type SubmissionBody,
  type TaskSnapshot,
} from './types.js';

/**
 * Backend, policy and cancel calls. `startToCloseMs` also bounds how long a call lost with its
 * worker waits before the retry (no heartbeats): `config.backendCallTimeoutMs`, default 30 s.
 */
function backendActivities(startToCloseMs: number) {
  return proxyActivities<ApprovalActivities>({
    startToCloseTimeout: startToCloseMs,
    scheduleToCloseTimeout: '15m',
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '1m',
      nonRetryableErrorTypes: [FAILURE.backendConflict, FAILURE.backendInvalid, FAILURE.backendUnauthorized, FAILURE.backendNotFound],
    },
  });
}

/** The lost-execution lookup: retried like a backend call (the tool's hook is idempotent). */
const resolver = proxyActivities<Required<Pick<ApprovalActivities, 'resolveExecution'>>>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '15m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/** One submission to the approval backend. */
interface Generation {
  generation: number;
  idempotencyKey: string;
  body: SubmissionBody;
  submittedAtMs: number;
  handle?: BackendHandle;
  consumed: boolean;
}

/**
 * Workflow entry point. Returns the terminal snapshot, which `tasks/get` serves once closed.
 * However the run ends (a terminal result or a thrown failure) it first releases its
 * submission-limiter slot (issue 5 §5); a terminated run cannot, and the limiter's audit drops it.
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

async function runApproval(input: ApprovalWorkflowInput, releaseSlot: () => Promise<void>): Promise<TaskSnapshot> {
  const { binding, config: cfg } = input;
  const info = workflowInfo();
  const taskId = taskIdFor(info.workflowId, info.runId);
  const createdAtMs = Date.now();
  const backend = backendActivities(cfg.backendCallTimeoutMs ?? 30_000);
  const execution = proxyActivities<ApprovalActivities>({
    startToCloseTimeout: cfg.executionTimeoutMs,
    retry: { maximumAttempts: 1 },
  });

  const snap: TaskSnapshot = {
    status: 'working',
    phase: 'submitting',
    ownerKey: input.ownerKey,
    policyReason: input.accessRequest.reason,
    createdAt: iso(createdAtMs),
    lastUpdatedAt: iso(createdAtMs),
    ttlMs: null,
    pollIntervalMs: cfg.clientPollIntervalMs,
    generation: 0,
    claimed: false,
  };
  const generations: Generation[] = [];
  let callbackPending = false;

  const terminal = (): boolean => snap.phase === 'terminal';
  const current = (): Generation | undefined => generations[generations.length - 1];

  /** Grow `ttlMs` so createdAt + ttlMs covers `deadlineMs` + resultRetention (§Retention). */
  const coverUntil = (deadlineMs: number): void => {
    const needed = deadlineMs - createdAtMs + cfg.resultRetentionMs;
    if (snap.ttlMs === null || needed > snap.ttlMs) snap.ttlMs = needed;
  };
  const touch = (): void => {
    snap.lastUpdatedAt = iso(Date.now());
  };
  const setPhase = (phase: TaskSnapshot['phase']): void => {
    if (terminal()) return;
    snap.phase = phase;
    touch();
  };
  const finish = (patch: Pick<TaskSnapshot, 'status'> & Partial<TaskSnapshot>): void => {
    if (terminal()) return; // a terminal task never changes again
    Object.assign(snap, patch, { phase: 'terminal' });
    touch();
    // Retention restarts at terminalization: the result stays retrievable for resultRetention from
    // now (§Retention). The pending window no longer applies, so ttlMs is recomputed, not maxed;
    // the front expires the task at exactly createdAt + ttlMs.
    snap.ttlMs = Date.now() - createdAtMs + cfg.resultRetentionMs;
  };
  const complete = (result: StoredCallToolResult): void => {
    finish({ status: 'completed', result, disposition: result._meta['io.modelcontextprotocol/tool-approval-disposition'] as TaskSnapshot['disposition'] });
  };
  const deny = (reason: DenialReason): void => complete(deniedResult(reason));
  const fail = (message: string): void => {
    if (snap.claimed) return complete(outcomeUnknownResult()); // never `failed` after the claim
    finish({ status: 'failed', error: { code: -32603, message } });
  };

  setHandler(taskQuery, () => snap);
  setHandler(taskCreatedUpdate, async () => {
    await condition(() => current()?.handle !== undefined || terminal());
    return { runId: info.runId, snapshot: snap };
  });
  // The cancel compare-and-set: synchronous up to `finish`, so it cannot interleave with the claim.
  // The answer waits for the limiter slot's release: a caller told `cancelled` may open another task.
  setHandler(cancelUpdate, async (): Promise<CancelOutcome> => {
    if (terminal()) return 'already-terminal';
    if (snap.claimed) return 'already-claimed';
    finish({ status: 'cancelled' });
    await releaseSlot();
    return 'cancelled';
  });
  const acceptedCallbacks: string[] = []; // recent delivery ids, bounded
  setHandler(
    backendCallbackUpdate,
    (cb) => {
      acceptedCallbacks.push(cb.callbackId);
      if (acceptedCallbacks.length > 256) acceptedCallbacks.shift();
      callbackPending = true;
      return 'accepted' as const;
    },
    {
      validator: (cb) => {
        if (acceptedCallbacks.includes(cb.callbackId)) throw refusal(REFUSAL.replayedCallback);
        const g = current();
        if (terminal() || !g || g.consumed || !g.handle || cb.generation !== g.generation || cb.requestId !== g.handle.requestId) {
          throw refusal(REFUSAL.staleCallback);
        }
      },
    },
  );

  let justification = input.submissionInput?.justification;
  let pendingInput: string | undefined;
  setHandler(
    provideInputUpdate,
    (responses) => {
      pendingInput = readJustification(responses);
      return 'accepted' as const;
    },
    {
      validator: (responses) => {
        if (snap.status !== 'input_required') throw refusal(REFUSAL.noInputRequested);
        if (readJustification(responses) === undefined) throw refusal(REFUSAL.invalidInput);
      },
    },
  );
  /** Wait in `input_required` until answered (true), or the task is fenced or the window passes (false). */
  const awaitJustification = async (hint: AccessRequestHint): Promise<boolean> => {
    pendingInput = undefined;
    snap.status = 'input_required';
    snap.inputRequests = { [JUSTIFICATION_INPUT_KEY]: justificationRequest() };
    snap.policyReason = hint.reason;
    touch();
    const window = Math.min(hint.requestTtlMs, cfg.maxRequestWindowMs);
    coverUntil(Date.now() + window);
    const answered = await condition(() => pendingInput !== undefined || terminal(), window);
    if (terminal()) return false;
    delete snap.inputRequests;
    snap.status = 'working';
    touch();
    if (!answered) {
      deny('request-expired');
      return false;
    }
    justification = pendingInput;
    return true;
  };

  const submit = async (hint: AccessRequestHint): Promise<Generation | null> => {
    // A request that needs a justification nobody gave yet (a chained request whose policy asks
    // for one) waits in `input_required` for `tasks/update` (SEP-2848 §Collecting submission input).
    if (hint.requiresJustification && !(generations.length === 0 && justification)) {
      const answered = await awaitJustification(hint);
      if (!answered) return null;
    }
    const now = Date.now();
    const n = generations.length + 1;
    const window = Math.min(hint.requestTtlMs, cfg.maxRequestWindowMs);
    const g: Generation = {
      generation: n,
      idempotencyKey: uuid4(),
      submittedAtMs: now,
      consumed: false,
      body: {
        tool: binding.tool,
        arguments: binding.arguments,
        requester: binding.principal,
        approverGroup: hint.approverGroup,
        reason: hint.reason,
        expiresAt: iso(now + window),
        bindingDigest: binding.digest,
        generation: n,
        ...(cfg.callbackBaseUrl ? { callbackUrl: `${cfg.callbackBaseUrl}/${info.workflowId}/${n}` } : {}),
        ...(justification ? { justification } : {}),
      },
    };
    // The submission-intent is durable from here: key and body are in workflow state and history.
    generations.push(g);
    snap.generation = n;
    snap.policyReason = hint.reason;
    coverUntil(now + window);
    setPhase(n === 1 ? 'submitting' : 'resubmitting');
    try {
      g.handle = await backend.submitApprovalRequest({ body: g.body, idempotencyKey: g.idempotencyKey });
    } catch {
      fail('The approval backend did not accept the request.');
      return null;
    }
    return g;
  };

  /** Wait for the backend to resolve generation `g`; null when the task was fenced meanwhile. */
  const awaitDecision = async (g: Generation): Promise<BackendStatus | null> => {
    const handle = g.handle!;
    let deadline = Math.min(Date.parse(handle.expiresAt), g.submittedAtMs + cfg.maxRequestWindowMs);
    coverUntil(deadline);
    setPhase('awaiting-approval');
    let pollDelay = cfg.statusPollInitialMs;
    for (;;) {
      const wait = Math.max(1, Math.min(pollDelay, deadline - Date.now()));
      const woken = await condition(() => callbackPending || terminal(), wait);
      if (terminal()) return null;
      callbackPending = false;
      let status: BackendStatus | null = null;
      try {
        status = await backend.fetchApprovalStatus(handle);
      } catch {
        status = null; // backend unreachable: keep waiting; the request deadline still applies
      }
      if (terminal()) return null;
      if (status && status.state !== 'pending') return status;
      if (status?.state === 'pending') {
        const extended = Math.min(Date.parse(status.expiresAt), g.submittedAtMs + cfg.maxRequestWindowMs);
        if (extended > deadline) {
          deadline = extended;
          coverUntil(deadline);
          touch();
        }
      }
      if (Date.now() >= deadline) return { state: 'expired' };
      if (!woken) pollDelay = Math.min(pollDelay * 2, cfg.statusPollMaxMs);
    }
  };

  /** Claim, then run the tool at most once (§Completion). */
  const claimAndExecute = async (approvalDeadlineMs: number): Promise<void> => {
    if (terminal()) return;
    if (Date.now() >= approvalDeadlineMs) return deny('approval-expired');
    snap.claimed = true; // the irrevocable enforcement point
    setPhase('executing');
    coverUntil(Date.now() + cfg.executionTimeoutMs);
    try {
      const out = await execution.executeTool({ binding, taskId, executionId: `${taskId}/execution` });
      complete(executedResult(out));
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === FAILURE.toolExecutionError) complete(executionErrorResult());
      else if (patched(EXECUTION_RESOLUTION_PATCH)) complete(await resolveLostExecution(binding, `${taskId}/execution`));
      else complete(outcomeUnknownResult());
    }
  };

  /** Re-evaluate with the approval until allow/deny/request; retry waits stop at approval expiry. */
  const reEvaluate = async (approval: ApprovalMaterial): Promise<AccessRequestHint | null> => {
    const approvalDeadline = Math.min(Date.parse(approval.approvedUntil), Date.now() + cfg.maxRequestWindowMs);
    coverUntil(approvalDeadline);
    for (let attempt = 0; ; attempt++) {
      if (terminal()) return null;
      if (Date.now() >= approvalDeadline) {
        deny('approval-expired');
        return null;
      }
      setPhase('re-evaluating');
      const r = await backend.evaluatePolicy({ binding, approval });
      if (terminal()) return null;
      switch (r.outcome) {
        case 'allow':
          await claimAndExecute(approvalDeadline);
          return null;
        case 'deny':
          deny(r.reason);
          return null;
        case 'request':
          return r.accessRequest;
        case 'retry': {
          setPhase('retry-wait');
          const backoff = Math.min(cfg.retryMaxMs, cfg.retryBaseMs * 2 ** attempt);
          const delay = r.retryAfterMs ?? Math.round(backoff * (0.5 + Math.random() * 0.5));
          const remaining = approvalDeadline - Date.now();
          await condition(terminal, Math.max(1, Math.min(delay, remaining)));
          break; // loop: re-checks expiry first
        }
      }
    }
  };

  let hint: AccessRequestHint = input.accessRequest;
  while (!terminal()) {
    const g = await submit(hint);
    if (!g || terminal()) break;
    const status = await awaitDecision(g);
    if (!status) break;
    if (status.state === 'approved') {
      const next = await reEvaluate(status.approval);
      if (!next) break;
      g.consumed = true; // before any new submission: a late callback for g can no longer act
      if (generations.length >= cfg.maxGenerations) {
        deny('request-chain-exhausted');
        break;
      }
      hint = next;
      continue;
    }
    if (status.state === 'denied') deny('backend-denied');
    else if (status.state === 'expired') deny('request-expired');
    else if (status.state === 'cancelled') finish({ status: 'cancelled' });
    else if (status.state === 'failed') fail('The approval backend reported a failure.');
  }

  // A winning cancel also cancels the live backend request, when the backend supports it.
  const last = current();
  if (snap.status === 'cancelled' && last?.handle && !last.consumed) {
    try {
      await backend.cancelApprovalRequest(last.handle);
    } catch {
      // best effort: the local fence, not backend cancellation, guarantees the tool does not run
    }
  }
  await condition(allHandlersFinished);
  return snap;
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

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
