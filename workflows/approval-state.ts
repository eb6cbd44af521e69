/**
 * The approval workflow's state and its synchronous transitions (SEP-2848 on Temporal): the task
 * snapshot `tasks/get` serves, the submission generations, and the pending callback and input.
 * `workflows/approval.ts` registers the handlers and runs the loop; every rule about what may
 * change when lives here, so it is unit-tested without Temporal (`test/unit/approval-state.test.ts`).
 *
 * Rules it enforces:
 * - retention: while working, `ttlMs` only grows, so createdAt + ttlMs covers every pending
 *   deadline learned + `resultRetentionMs`; at terminalization it is set to terminalizedAt −
 *   createdAt + `resultRetentionMs` (which may be shorter than the pending cover it replaces) and
 *   never changes again (SEP-2848 §Retention);
 * - a terminal task never changes again: every transition is a no-op once `phase` is `terminal`
 *   (SEP-2848 §Lifecycle);
 * - `failed` only before the execution claim; after it a failure completes outcome-unknown
 *   (SEP-2848 §Completion);
 * - the claim and the cancel are a compare-and-set: each is synchronous, checks the other, and
 *   the first one wins (SEP-2848 §Cancellation);
 * - generations: each submission is a new generation with its own idempotency key; only the
 *   current, unconsumed generation's callback is accepted, and a delivery id is accepted once
 *   (SEP-2848 §Completion, request; §Security, callback authenticity).
 *
 * Deliberately does not: schedule activities or timers, draw randomness (the caller passes the
 * idempotency key and the random draw), or read the clock other than through `now` (in the
 * workflow: workflow time).
 */
import { deniedResult, outcomeUnknownResult, type CounterProposalResult } from './results.js';
import { justificationRequest, readJustification, refusedInput } from './justification.js';
import { REFUSAL, refusal } from './refusals.js';
import {
  META,
  type AccessRequestHint,
  type ApprovalMaterial,
  type ApprovalWorkflowConfig,
  type ApprovalWorkflowInput,
  type BackendCallback,
  type BackendHandle,
  type BackendStatus,
  type CounterProposal,
  type CancelOutcome,
  type DenialReason,
  type StoredCallToolResult,
  type SubmissionBody,
  type TaskSnapshot,
} from './types.js';

/** How many recent callback delivery ids are remembered to refuse replays. */
const ACCEPTED_CALLBACKS_KEPT = 256;

/** One submission to the approval backend. */
export interface Generation {
  /** 1-based. */
  generation: number;
  /** Sent with every attempt of this submission (uuid4 from workflow randomness). */
  idempotencyKey: string;
  body: SubmissionBody;
  /** Workflow time of the submission-intent, ms since the epoch. */
  submittedAtMs: number;
  /** Set once the backend accepted the submission. */
  handle?: BackendHandle;
  /** True once a re-evaluation asked for a further request: its callbacks no longer act. */
  consumed: boolean;
}

/** A generation the backend accepted: its handle is set. */
export type SubmittedGeneration = Generation & { handle: BackendHandle };

/**
 * The state of one approval task. `now` is the clock in ms since the epoch (workflow time in the
 * workflow; a fake in tests). Methods never throw, except the validators, which throw the typed
 * refusals of `refusals.ts`.
 */
export class ApprovalState {
  /** The task as `tasks/get` sees it; the same object for the whole run (the query returns it). */
  readonly snapshot: TaskSnapshot;
  private readonly generations: Generation[] = [];
  private readonly acceptedCallbacks: string[] = [];
  private readonly createdAtMs: number;
  private readonly cfg: ApprovalWorkflowConfig;
  private callbackPending = false;
  /** The accepted justification sent with the next submission (MRTR input, or a `tasks/update` answer). */
  private justification: string | undefined;
  /** A `tasks/update` answer not yet taken by the waiting loop. */
  private pendingInput: string | undefined;
  /** A `tasks/update` that declined or cancelled the outstanding form, not yet taken by the waiting loop. */
  private refusedInput: 'decline' | 'cancel' | undefined;
  /** The `inputResponses` key of the outstanding input request, while `input_required`. */
  private inputKey: string | undefined;
  /** True when the run started from an in-band confirmation (`confirmedInBand`). */
  private confirmed = false;
  /**
   * Called after every transition (each one stamps `lastUpdatedAt`), synchronously, with the state
   * already changed: the workflow publishes search attributes and metrics from it. Not called by
   * the constructor.
   */
  onTransition: (() => void) | undefined;
  /** The reason of the terminal denial, once denied. */
  private denialReason: DenialReason | undefined;

  constructor(
    private readonly input: ApprovalWorkflowInput,
    private readonly workflowId: string,
    private readonly now: () => number = () => Date.now(),
  ) {
    this.cfg = input.config;
    this.createdAtMs = now();
    this.justification = input.submissionInput?.justification;
    this.snapshot = {
      status: 'working',
      phase: 'submitting',
      ownerKey: input.ownerKey,
      policyReason: input.accessRequest.reason,
      createdAt: iso(this.createdAtMs),
      lastUpdatedAt: iso(this.createdAtMs),
      ttlMs: null,
      pollIntervalMs: this.cfg.clientPollIntervalMs,
      generation: 0,
      claimed: false,
    };
  }

  /** True once the task reached a terminal status; nothing changes after that. */
  isTerminal(): boolean {
    return this.snapshot.phase === 'terminal';
  }

  /** The latest generation, if any was recorded. */
  current(): Generation | undefined {
    return this.generations[this.generations.length - 1];
  }

  /** The approver group of the latest submission; before the first, the one the policy named at creation. */
  approverGroup(): string {
    return this.current()?.body.approverGroup ?? this.input.accessRequest.approverGroup;
  }

  /** True once the first submission's backend handle is in state, or the task already ended (`taskCreated`). */
  isCreated(): boolean {
    return this.current()?.handle !== undefined || this.isTerminal() || this.confirmed;
  }

  /**
   * The requester confirmed in band before the task (`input.confirmation`): the task exists without
   * a backend request, and retention covers the confirmation's validity `untilMs`.
   */
  confirmedInBand(untilMs: number): void {
    this.confirmed = true;
    this.coverUntil(untilMs);
  }

  /**
   * Grow `ttlMs` so createdAt + ttlMs covers `deadlineMs` + resultRetention; never shrinks it
   * (SEP-2848 §Retention). No-op once terminal (terminalization set the final `ttlMs`).
   */
  coverUntil(deadlineMs: number): void {
    if (this.isTerminal()) return;
    const needed = deadlineMs - this.createdAtMs + this.cfg.resultRetentionMs;
    if (this.snapshot.ttlMs === null || needed > this.snapshot.ttlMs) this.snapshot.ttlMs = needed;
  }

  /** Stamp `lastUpdatedAt` with the current time. */
  touch(): void {
    this.snapshot.lastUpdatedAt = iso(this.now());
    this.onTransition?.();
  }

  /** Move a working task to `phase`; no-op once terminal. */
  setPhase(phase: TaskSnapshot['phase']): void {
    if (this.isTerminal()) return;
    this.snapshot.phase = phase;
    this.touch();
  }

  /** Complete with `result`; its disposition is copied from its `_meta`. No-op once terminal. */
  complete(result: StoredCallToolResult): void {
    this.finish({ status: 'completed', result, disposition: result._meta[META.disposition] as TaskSnapshot['disposition'] });
  }

  /** Complete as a terminal denial (denied-not-executed) for `reason`, stating `counterProposal` when the approver made one. */
  deny(reason: DenialReason, counterProposal?: CounterProposalResult): void {
    if (!this.isTerminal()) this.denialReason = reason;
    const requested = this.input.binding.arguments;
    this.complete(deniedResult(reason, counterProposal === undefined ? undefined : { proposal: counterProposal, requested }));
  }

  /**
   * The backend's counter-proposal as the client gets it: for this call's tool only (another is
   * ignored), with every argument hidden from approvers (`toolInfo.sensitive`, whose top-level field
   * the backend holds only as a digest and never lets an approver narrow) restored from the call
   * binding, so the client can make the narrower call as it is.
   */
  private clientProposal(p: CounterProposal | undefined): CounterProposalResult | undefined {
    const { binding } = this.input;
    if (p === undefined || p.tool !== binding.tool) return undefined;
    const args: Record<string, unknown> = { ...p.arguments };
    for (const pointer of this.input.toolInfo?.sensitive ?? []) {
      const top = (pointer.split('/')[1] ?? '').replace(/~1/g, '/').replace(/~0/g, '~');
      if (Object.hasOwn(binding.arguments, top)) args[top] = binding.arguments[top];
    }
    return { tool: p.tool, arguments: args, expiresAt: p.expiresAt };
  }

  /** Which window ended the task, when it ended as a request-expired or approval-expired denial (for metrics). */
  expiryKind(): 'request' | 'approval' | undefined {
    return this.denialReason === 'request-expired' ? 'request' : this.denialReason === 'approval-expired' ? 'approval' : undefined;
  }

  /**
   * `failed` with JSON-RPC error -32603 and `message`, before the claim; after the claim the task
   * completes outcome-unknown instead, never `failed` (SEP-2848 §Completion).
   */
  fail(message: string): void {
    if (this.snapshot.claimed) return this.complete(outcomeUnknownResult());
    this.finish({ status: 'failed', error: { code: -32603, message } });
  }

  /**
   * `tasks/cancel`'s half of the compare-and-set against the claim: cancels a working, unclaimed
   * task and says what won (SEP-2848 §Cancellation).
   */
  cancel(): CancelOutcome {
    if (this.isTerminal()) return 'already-terminal';
    if (this.snapshot.claimed) return 'already-claimed';
    this.finish({ status: 'cancelled' });
    return 'cancelled';
  }

  /**
   * The backend's final answer for a generation (anything but `approved` and `pending`) as a
   * terminal state: denied and expired are denials, cancelled cancels, failed fails.
   */
  settle(status: Exclude<BackendStatus, { state: 'approved' } | { state: 'pending' }>): void {
    // a counter-proposal only new activity results carry: recorded runs replay as before, no patch needed
    if (status.state === 'denied') this.deny('backend-denied', this.clientProposal(status.counterProposal));
    // a reason only new activity results carry: recorded runs replay as before, no patch needed
    else if (status.state === 'expired') this.deny(status.reason === 'unfollowed' ? 'request-unfollowed' : 'request-expired');
    else if (status.state === 'cancelled') this.finish({ status: 'cancelled' });
    else if (status.state === 'failed') this.fail('The approval backend reported a failure.');
  }

  /**
   * The claim's half of the compare-and-set: true when the tool may run now. False when the task
   * is terminal (a cancel won), or `approvalDeadlineMs` has passed (then a terminal approval-expired
   * denial). On true the claim is irrevocable: `claimed`, phase `executing`, retention extended
   * through the execution deadline (a long-running tool's own, `input.execution`) (SEP-2848
   * §Completion, §Retention).
   */
  claim(approvalDeadlineMs: number): boolean {
    if (this.isTerminal()) return false;
    if (this.now() >= approvalDeadlineMs) {
      this.deny('approval-expired');
      return false;
    }
    this.snapshot.claimed = true; // the irrevocable enforcement point
    this.setPhase('executing');
    this.coverUntil(this.now() + (this.input.execution?.timeoutMs ?? this.cfg.executionTimeoutMs));
    return true;
  }

  // --- callbacks (hints only) ---

  /** `backendCallback` validator: throws a `replayedCallback` or `staleCallback` refusal. */
  validateCallback(cb: BackendCallback): void {
    if (this.acceptedCallbacks.includes(cb.callbackId)) throw refusal(REFUSAL.replayedCallback);
    const g = this.current();
    // the backend can decide (and call back) before the submit activity's result is in history
    if (!this.isTerminal() && g && !g.consumed && !g.handle && cb.generation === g.generation) throw refusal(REFUSAL.earlyCallback);
    if (this.isTerminal()) throw refusal(REFUSAL.staleCallback, 'terminal');
    if (!g || !g.handle) throw refusal(REFUSAL.staleCallback, 'no-submission');
    if (g.consumed) throw refusal(REFUSAL.staleCallback, 'consumed');
    if (cb.generation !== g.generation) throw refusal(REFUSAL.staleCallback, 'other-generation');
    if (cb.requestId !== g.handle.requestId) throw refusal(REFUSAL.staleCallback, 'other-request');
  }

  /** `backendCallback` handler: remember the delivery id (bounded) and wake the status poll. */
  acceptCallback(cb: BackendCallback): 'accepted' {
    this.acceptedCallbacks.push(cb.callbackId);
    if (this.acceptedCallbacks.length > ACCEPTED_CALLBACKS_KEPT) this.acceptedCallbacks.shift();
    this.callbackPending = true;
    return 'accepted';
  }

  /** True while an accepted callback has not been acted on. */
  hasPendingCallback(): boolean {
    return this.callbackPending;
  }

  /** The status poll is acting on the pending callback (if any). */
  clearPendingCallback(): void {
    this.callbackPending = false;
  }

  // --- submission input (SEP-2848 §Collecting submission input) ---

  /** True when a submission for `hint` needs a justification nobody gave yet (only MRTR input counts, and only for the first). */
  needsJustification(hint: AccessRequestHint): boolean {
    return hint.requiresJustification === true && !(this.generations.length === 0 && this.justification);
  }

  /** The generation number the next submission will have (1 for the first). */
  nextGeneration(): number {
    return this.generations.length + 1;
  }

  /**
   * Enter `input_required` with the justification form for `hint` under `key` (unique for the
   * task's lifetime: `inTaskJustificationKey`); returns the window to wait, ms (the request TTL
   * capped by `maxRequestWindowMs`), which retention now covers.
   */
  openInputRequest(hint: AccessRequestHint, key: string): number {
    this.pendingInput = undefined;
    this.refusedInput = undefined;
    this.inputKey = key;
    this.snapshot.status = 'input_required';
    this.snapshot.inputRequests = { [key]: justificationRequest() };
    this.snapshot.policyReason = hint.reason;
    this.touch();
    const window = Math.min(hint.requestTtlMs, this.cfg.maxRequestWindowMs);
    this.coverUntil(this.now() + window);
    return window;
  }

  /** True once `tasks/update` delivered an answer: a justification, a decline or a cancel. */
  hasInput(): boolean {
    return this.pendingInput !== undefined || this.refusedInput !== undefined;
  }

  /**
   * Leave `input_required` after the wait: true when answered (the answer becomes the justification
   * of the next submission); false when the task went terminal meanwhile, the window passed
   * unanswered (then a terminal request-expired denial), or the answer declined or cancelled the
   * form (then a terminal input-declined denial: nothing further was submitted, the tool did not
   * run; MCP elicitation: a decline or cancel is an answer, not a missing one).
   */
  closeInputRequest(answered: boolean): boolean {
    if (this.isTerminal()) return false;
    delete this.snapshot.inputRequests;
    this.inputKey = undefined;
    this.snapshot.status = 'working';
    this.touch();
    if (!answered) {
      this.deny('request-expired');
      return false;
    }
    if (this.refusedInput !== undefined) {
      this.deny('input-declined');
      return false;
    }
    this.justification = this.pendingInput;
    return true;
  }

  /**
   * `provideInput` validator: throws `noInputRequested` (the task is not waiting for input, or this
   * round was already answered), `unknownInputKey` (a key that is not outstanding: an earlier
   * round's, or one never asked), or `invalidInput` (the outstanding key is missing, or neither a
   * decline, a cancel, nor an accepted justification of the allowed length).
   */
  validateInput(responses: Record<string, unknown>): void {
    const key = this.inputKey;
    if (this.snapshot.status !== 'input_required' || key === undefined || this.hasInput()) throw refusal(REFUSAL.noInputRequested);
    if (Object.keys(responses).some((k) => k !== key)) throw refusal(REFUSAL.unknownInputKey);
    if (refusedInput(responses, key) === undefined && readJustification(responses, key) === undefined) throw refusal(REFUSAL.invalidInput);
  }

  /** `provideInput` handler: keep the answer (a justification, or the decline / cancel) for the waiting loop. */
  acceptInput(responses: Record<string, unknown>): 'accepted' {
    const key = this.inputKey;
    if (key === undefined) return 'accepted'; // not waiting for input: the validator refused this already
    this.refusedInput = refusedInput(responses, key);
    if (this.refusedInput === undefined) this.pendingInput = readJustification(responses, key);
    return 'accepted';
  }

  // --- generations ---

  /**
   * Record the submission-intent of the next generation for `hint` under `idempotencyKey`, before
   * the backend is contacted (SEP-2848 §Crash-consistent creation): the body's request window is
   * the request TTL capped by `maxRequestWindowMs`, which retention now covers; the phase becomes
   * `submitting` (first) or `resubmitting`.
   */
  recordSubmission(hint: AccessRequestHint, idempotencyKey: string): Generation {
    const { binding } = this.input;
    const now = this.now();
    const n = this.generations.length + 1;
    const window = Math.min(hint.requestTtlMs, this.cfg.maxRequestWindowMs);
    const g: Generation = {
      generation: n,
      idempotencyKey,
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
        ...(this.cfg.callbackBaseUrl ? { callbackUrl: `${this.cfg.callbackBaseUrl}/${this.workflowId}/${n}` } : {}),
        ...(this.justification ? { justification: this.justification } : {}),
        ...(this.input.toolInfo ? { toolInfo: this.input.toolInfo } : {}),
        ...(this.input.client ? { client: this.input.client } : {}),
        // only the activity input carries it: no command changes, recorded runs replay unpatched
        ...(hint.narrowable ? { narrowable: hint.narrowable } : {}),
      },
    };
    this.generations.push(g);
    this.snapshot.generation = n;
    this.snapshot.policyReason = hint.reason;
    this.coverUntil(now + window);
    this.setPhase(n === 1 ? 'submitting' : 'resubmitting');
    return g;
  }

  /**
   * Start waiting for generation `g`'s decision (its handle must be set): returns its request
   * deadline, ms (the backend's `expiresAt`, capped at submission + `maxRequestWindowMs`), which
   * retention now covers; phase `awaiting-approval`.
   */
  awaitingDecision(g: SubmittedGeneration): number {
    const deadline = Math.min(Date.parse(g.handle.expiresAt), g.submittedAtMs + this.cfg.maxRequestWindowMs);
    this.coverUntil(deadline);
    this.setPhase('awaiting-approval');
    return deadline;
  }

  /**
   * A `pending` status for `g` may move its request deadline later (never earlier, never past
   * submission + `maxRequestWindowMs`): returns the deadline to wait for, extending retention when
   * it moved.
   */
  extendDecisionDeadline(g: Generation, deadlineMs: number, expiresAt: string): number {
    const extended = Math.min(Date.parse(expiresAt), g.submittedAtMs + this.cfg.maxRequestWindowMs);
    if (extended <= deadlineMs) return deadlineMs;
    this.coverUntil(extended);
    this.touch();
    return extended;
  }

  /**
   * After a grant: the deadline of re-evaluation and claim, ms (the approval's `approvedUntil`,
   * capped at now + `maxRequestWindowMs`), which retention now covers.
   */
  approvalDeadline(approval: ApprovalMaterial): number {
    const deadline = Math.min(Date.parse(approval.approvedUntil), this.now() + this.cfg.maxRequestWindowMs);
    this.coverUntil(deadline);
    return deadline;
  }

  /**
   * The wait before re-evaluation attempt `attempt + 1` after a `retry`, ms: the PDP's
   * `retryAfterMs` when given; else exponential from `retryBaseMs`, capped at `retryMaxMs`, times a
   * jitter in [0.5, 1). `random` is called only when there is no hint (workflow randomness).
   */
  retryDelayMs(attempt: number, retryAfterMs: number | undefined, random: () => number): number {
    const backoff = Math.min(this.cfg.retryMaxMs, this.cfg.retryBaseMs * 2 ** attempt);
    return retryAfterMs ?? Math.round(backoff * (0.5 + random() * 0.5));
  }

  /**
   * A re-evaluation of `g`'s grant asked for a further request: `g` is consumed (its late callbacks
   * can no longer act). Returns false when the chain is at `maxGenerations` (then a terminal
   * request-chain-exhausted denial), true when another submission may follow.
   */
  consumeForNextRequest(g: Generation): boolean {
    g.consumed = true; // before any new submission: a late callback for g can no longer act
    if (this.generations.length >= this.cfg.maxGenerations) {
      this.deny('request-chain-exhausted');
      return false;
    }
    return true;
  }

  /** After the loop: the live backend request a winning cancel should also cancel, if any. */
  backendRequestToCancel(): BackendHandle | undefined {
    const last = this.current();
    return this.snapshot.status === 'cancelled' && last?.handle && !last.consumed ? last.handle : undefined;
  }

  /**
   * The one way into a terminal state: applies `patch`, phase `terminal`, and restarts retention at
   * terminalization: ttlMs = now − createdAt + resultRetention, recomputed rather than maxed, since
   * the pending window no longer applies; the front expires the task at exactly createdAt + ttlMs
   * (SEP-2848 §Retention). No-op once terminal.
   */
  private finish(patch: Pick<TaskSnapshot, 'status'> & Partial<TaskSnapshot>): void {
    if (this.isTerminal()) return; // a terminal task never changes again
    Object.assign(this.snapshot, patch, { phase: 'terminal' });
    this.touch();
    this.snapshot.ttlMs = this.now() - this.createdAtMs + this.cfg.resultRetentionMs;
  }
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
