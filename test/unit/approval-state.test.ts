// Scope: the approval workflow's state and synchronous transitions (workflows/approval-state.ts),
// without Temporal: retention (ttlMs), terminal-never-changes, failed only before the claim, the
// claim-vs-cancel compare-and-set, generations and callbacks, submission input, retry backoff.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { ApprovalState, type SubmittedGeneration } from '../../workflows/approval-state.js';
import { REFUSAL, REFUSAL_TEXT, refusalWhy } from '../../workflows/refusals.js';
import { inTaskJustificationKey } from '../../workflows/wire.js';
import type { AccessRequestHint, ApprovalWorkflowInput } from '../../workflows/types.js';
import { DAY, HOUR, workflowTestConfig } from '../support/workflow-env.js';

const T0 = Date.parse('2026-06-02T10:00:00.000Z');
const RETENTION = DAY;
const WORKFLOW_ID = 'approval-0123456789abcdef0123456789abcdef';

const hint: AccessRequestHint = {
  approverGroup: 'treasury',
  requestTtlMs: 7 * DAY,
  reason: 'Transfers over $25,000 require treasury approval.',
  policyId: 'p',
};
const justifiedHint: AccessRequestHint = {
  approverGroup: 'risk',
  requestTtlMs: DAY,
  reason: 'A risk approval is required.',
  policyId: 'p2',
  requiresJustification: true,
};
const answer = (text: string, key = 'justification-2') => ({ [key]: { action: 'accept', content: { justification: text } } });

/** A state on a fake clock starting at T0; `clock.ms` moves time. */
function fixture(over: Partial<ApprovalWorkflowInput> = {}, config: Parameters<typeof workflowTestConfig>[0] = {}) {
  const clock = { ms: T0 };
  const binding = createCallBinding({
    tool: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50000 },
    principal: { iss: 'https://issuer.test', sub: 'alice' },
    toolDescriptorDigest: 'd1',
  });
  const input: ApprovalWorkflowInput = {
    binding,
    ownerKey: 'owner',
    accessRequest: hint,
    config: workflowTestConfig({ resultRetentionMs: RETENTION, ...config }),
    ...over,
  };
  const state = new ApprovalState(input, WORKFLOW_ID, () => clock.ms);
  return { state, clock, snap: state.snapshot };
}

/** Record a submission and give it the backend's handle, as the workflow does after the submit activity. */
function submitted(state: ApprovalState, h: AccessRequestHint = hint, key = `key-${state.snapshot.generation + 1}`): SubmittedGeneration {
  const g = state.recordSubmission(h, key);
  g.handle = { requestId: `req-${g.generation}`, statusUrl: `http://backend/req-${g.generation}`, expiresAt: g.body.expiresAt };
  return g as SubmittedGeneration;
}

/** The refusal a validator threw: asserts class, type and sentence. */
function refusalOf(validate: () => void): string {
  try {
    validate();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    const f = err as ApplicationFailure;
    expect(f.nonRetryable).toBe(true);
    expect(f.message).toBe(REFUSAL_TEXT[f.type as keyof typeof REFUSAL_TEXT]);
    return f.type ?? '';
  }
  throw new Error('the validator accepted');
}

describe('ApprovalState: retention (SEP-2848 §Retention)', () => {
  it('starts working, in submitting, generation 0, unclaimed, with ttlMs null and createdAt from the clock', () => {
    const { snap } = fixture();
    expect(snap).toMatchObject({
      status: 'working',
      phase: 'submitting',
      generation: 0,
      claimed: false,
      ttlMs: null,
      createdAt: new Date(T0).toISOString(),
      lastUpdatedAt: new Date(T0).toISOString(),
    });
  });

  it('while working, createdAt + ttlMs covers the request deadline plus resultRetention', () => {
    const { state, clock, snap } = fixture();
    clock.ms += 1000;
    state.recordSubmission(hint, 'k1');
    expect(snap.ttlMs).toBe(1000 + 7 * DAY + RETENTION);
  });

  it('the request window is capped by maxRequestWindowMs, and so is the cover', () => {
    const { state, snap } = fixture({}, { maxRequestWindowMs: DAY });
    const g = state.recordSubmission(hint, 'k1');
    expect(g.body.expiresAt).toBe(new Date(T0 + DAY).toISOString());
    expect(snap.ttlMs).toBe(DAY + RETENTION);
  });

  it('while working, ttlMs only grows: an earlier deadline never shrinks it, a later one extends it', () => {
    const { state, snap } = fixture();
    state.coverUntil(T0 + 5 * DAY);
    state.coverUntil(T0 + DAY);
    expect(snap.ttlMs).toBe(5 * DAY + RETENTION);
    state.coverUntil(T0 + 6 * DAY);
    expect(snap.ttlMs).toBe(6 * DAY + RETENTION);
  });

  it('a pending status with a later expiresAt extends the request deadline and the cover, never past submission + maxRequestWindowMs; an earlier one changes nothing', () => {
    const { state, clock, snap } = fixture({}, { maxRequestWindowMs: 10 * DAY });
    const g = submitted(state);
    const deadline = state.awaitingDecision(g);
    expect(deadline).toBe(T0 + 7 * DAY);
    expect(snap.phase).toBe('awaiting-approval');
    clock.ms += HOUR;
    expect(state.extendDecisionDeadline(g, deadline, new Date(T0 + DAY).toISOString())).toBe(deadline);
    expect(snap.lastUpdatedAt).toBe(new Date(T0).toISOString());
    expect(state.extendDecisionDeadline(g, deadline, new Date(T0 + 8 * DAY).toISOString())).toBe(T0 + 8 * DAY);
    expect(snap.ttlMs).toBe(8 * DAY + RETENTION);
    expect(snap.lastUpdatedAt).toBe(new Date(T0 + HOUR).toISOString());
    expect(state.extendDecisionDeadline(g, T0 + 8 * DAY, new Date(T0 + 30 * DAY).toISOString())).toBe(T0 + 10 * DAY);
  });

  it('after a grant the cover runs to the approval validity, capped at now + maxRequestWindowMs', () => {
    const { state, snap } = fixture({}, { maxRequestWindowMs: 2 * DAY });
    expect(
      state.approvalDeadline({
        id: 'a',
        approvedAt: new Date(T0).toISOString(),
        approvedUntil: new Date(T0 + DAY).toISOString(),
        state: 'approved',
        approvers: [],
      }),
    ).toBe(T0 + DAY);
    expect(snap.ttlMs).toBe(DAY + RETENTION);
    expect(
      state.approvalDeadline({
        id: 'a',
        approvedAt: new Date(T0).toISOString(),
        approvedUntil: new Date(T0 + 9 * DAY).toISOString(),
        state: 'approved',
        approvers: [],
      }),
    ).toBe(T0 + 2 * DAY);
  });

  it('the claim extends the cover through the execution deadline', () => {
    const { state, clock, snap } = fixture({}, { executionTimeoutMs: 60_000 });
    clock.ms += HOUR;
    expect(state.claim(T0 + DAY)).toBe(true);
    expect(snap.ttlMs).toBe(HOUR + 60_000 + RETENTION);
  });

  it('at terminalization ttlMs becomes terminalizedAt - createdAt + resultRetention, recomputed even when shorter than the pending cover', () => {
    const { state, clock, snap } = fixture();
    state.recordSubmission(hint, 'k1');
    expect(snap.ttlMs).toBe(7 * DAY + RETENTION);
    clock.ms += HOUR;
    expect(state.cancel()).toBe('cancelled');
    expect(snap.ttlMs).toBe(HOUR + RETENTION);
    expect(snap.lastUpdatedAt).toBe(new Date(T0 + HOUR).toISOString());
  });

  it('after terminalization ttlMs never changes again', () => {
    const { state, clock, snap } = fixture();
    state.deny('backend-denied');
    const ttl = snap.ttlMs;
    clock.ms += DAY;
    state.coverUntil(T0 + 20 * DAY);
    state.fail('late');
    expect(snap.ttlMs).toBe(ttl);
  });
});

describe('ApprovalState: a terminal task never changes again (SEP-2848 §Lifecycle)', () => {
  it('after a denial, every transition is a no-op: complete, deny, fail, cancel, settle, setPhase, claim', () => {
    const { state, clock, snap } = fixture();
    submitted(state);
    state.deny('request-expired');
    const before = structuredClone(snap);
    clock.ms += HOUR;
    state.deny('backend-denied');
    state.fail('boom');
    state.settle({ state: 'cancelled' });
    state.setPhase('executing');
    expect(state.cancel()).toBe('already-terminal');
    expect(state.claim(T0 + DAY)).toBe(false);
    expect(snap).toEqual(before);
    expect(snap).toMatchObject({ status: 'completed', phase: 'terminal', disposition: 'denied-not-executed', claimed: false });
  });

  it('an input request that ends after the task went terminal changes nothing', () => {
    const { state, snap } = fixture();
    const g = submitted(state);
    state.consumeForNextRequest(g);
    state.openInputRequest(justifiedHint, inTaskJustificationKey(state.nextGeneration()));
    expect(state.cancel()).toBe('cancelled');
    const before = structuredClone(snap);
    expect(state.closeInputRequest(false)).toBe(false);
    expect(snap).toEqual(before);
  });

  it('the backend statuses settle as denial, expiry denial, cancellation and failure', () => {
    const denied = fixture();
    denied.state.settle({ state: 'denied' });
    expect(denied.snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed' });
    expect(denied.snap.result?.content[0]?.text).toMatch(/was denied/);
    const expired = fixture();
    expired.state.settle({ state: 'expired' });
    expect(expired.snap.result?.content[0]?.text).toMatch(/expired before anyone decided/);
    const cancelled = fixture();
    cancelled.state.settle({ state: 'cancelled' });
    expect(cancelled.snap).toMatchObject({ status: 'cancelled', phase: 'terminal' });
    const failed = fixture();
    failed.state.settle({ state: 'failed', message: 'backend text is never copied' });
    expect(failed.snap).toMatchObject({ status: 'failed', error: { code: -32603, message: 'The approval backend reported a failure.' } });
  });

  it("a denial with a counter-proposal states the narrower call and carries it, hidden fields restored from the binding; another tool's is ignored", () => {
    const reference = 'INV-SECRET-7';
    const binding = createCallBinding({
      tool: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50000, reference },
      principal: { iss: 'https://issuer.test', sub: 'alice' },
      toolDescriptorDigest: 'd1',
    });
    const { state, snap } = fixture({ binding, toolInfo: { sensitive: ['/reference'] } });
    const expiresAt = '2026-03-01T12:15:00.000Z';
    state.settle({
      state: 'denied',
      counterProposal: {
        tool: 'wire_transfer',
        arguments: { to: 'acct-991', amount: 20000, reference: `sha256:${'a'.repeat(64)}` },
        expiresAt,
      },
    });
    expect(snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed' });
    expect(snap.result?.content[0]?.text).toContain(
      'The approver would accept wire_transfer with amount 20000 (requested 50000), until 2026-03-01T12:15:00.000Z',
    );
    expect(snap.result?.structuredContent).toEqual({
      counterProposal: { tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 20000, reference }, expiresAt },
    });
    const other = fixture();
    other.state.settle({ state: 'denied', counterProposal: { tool: 'other_tool', arguments: {}, expiresAt } });
    expect(other.snap.result?.structuredContent).toBeUndefined();
    expect(other.snap.result?.content[0]?.text).not.toContain('would accept');
  });
});

describe('ApprovalState: failed only before the execution claim (SEP-2848 §Completion)', () => {
  it('before the claim a failure is `failed` with a -32603 error', () => {
    const { state, snap } = fixture();
    state.fail('The approval backend did not accept the request.');
    expect(snap).toMatchObject({
      status: 'failed',
      phase: 'terminal',
      error: { code: -32603, message: 'The approval backend did not accept the request.' },
    });
    expect(snap.disposition).toBeUndefined();
  });

  it('after the claim a failure completes outcome-unknown, never failed', () => {
    const { state, snap } = fixture();
    expect(state.claim(T0 + DAY)).toBe(true);
    state.fail('anything');
    expect(snap).toMatchObject({ status: 'completed', disposition: 'outcome-unknown', claimed: true });
    expect(snap.error).toBeUndefined();
  });
});

describe('ApprovalState: claim vs cancel compare-and-set (SEP-2848 §Cancellation)', () => {
  it('a cancel before the claim wins: cancelled, and the claim then fails', () => {
    const { state, snap } = fixture();
    expect(state.cancel()).toBe('cancelled');
    expect(state.claim(T0 + DAY)).toBe(false);
    expect(snap).toMatchObject({ status: 'cancelled', claimed: false });
  });

  it('a claim before the cancel wins: the cancel answers already-claimed and changes nothing', () => {
    const { state, snap } = fixture();
    expect(state.claim(T0 + DAY)).toBe(true);
    expect(snap).toMatchObject({ status: 'working', phase: 'executing', claimed: true });
    const before = structuredClone(snap);
    expect(state.cancel()).toBe('already-claimed');
    expect(snap).toEqual(before);
  });

  it('a claim at or past the approval deadline does not claim: terminal approval-expired denial', () => {
    const { state, clock, snap } = fixture();
    clock.ms = T0 + DAY;
    expect(state.claim(T0 + DAY)).toBe(false);
    expect(snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed', claimed: false });
    expect(snap.result?.content[0]?.text).toMatch(/approval expired/);
  });

  it('a winning cancel names the live backend request to cancel; a consumed generation or another end names none', () => {
    const cancelled = fixture();
    const g = submitted(cancelled.state);
    cancelled.state.cancel();
    expect(cancelled.state.backendRequestToCancel()).toBe(g.handle);
    const consumed = fixture();
    consumed.state.consumeForNextRequest(submitted(consumed.state));
    consumed.state.cancel();
    expect(consumed.state.backendRequestToCancel()).toBeUndefined();
    const denied = fixture();
    submitted(denied.state);
    denied.state.deny('backend-denied');
    expect(denied.state.backendRequestToCancel()).toBeUndefined();
  });
});

describe('ApprovalState: generations and callbacks (SEP-2848 §Completion, request; §Security)', () => {
  it('each submission is a new generation under the given key, with the binding, the hint, a window-bound expiresAt and a per-generation callback URL', () => {
    const { state, clock, snap } = fixture({}, { callbackBaseUrl: 'https://mcp.test/callbacks/arap' });
    const g1 = submitted(state, hint, 'k1');
    expect(g1).toMatchObject({ generation: 1, idempotencyKey: 'k1', submittedAtMs: T0, consumed: false });
    expect(g1.body).toMatchObject({
      tool: 'wire_transfer',
      approverGroup: 'treasury',
      generation: 1,
      expiresAt: new Date(T0 + 7 * DAY).toISOString(),
      callbackUrl: `https://mcp.test/callbacks/arap/${WORKFLOW_ID}/1`,
    });
    expect(g1.body.justification).toBeUndefined();
    expect(snap).toMatchObject({ generation: 1, phase: 'submitting' });
    expect(state.consumeForNextRequest(g1)).toBe(true);
    clock.ms += HOUR;
    const g2 = state.recordSubmission({ ...hint, approverGroup: 'risk', reason: 'Risk too.' }, 'k2');
    expect(g2).toMatchObject({ generation: 2, idempotencyKey: 'k2', submittedAtMs: T0 + HOUR });
    expect(g2.body.callbackUrl).toBe(`https://mcp.test/callbacks/arap/${WORKFLOW_ID}/2`);
    expect(snap).toMatchObject({ generation: 2, phase: 'resubmitting', policyReason: 'Risk too.' });
    expect(state.current()).toBe(g2);
  });

  it('without callbackBaseUrl the body has no callback URL', () => {
    const { state } = fixture();
    expect(state.recordSubmission(hint, 'k1').body).not.toHaveProperty('callbackUrl');
  });

  it('the request chain stops at maxGenerations with a terminal request-chain-exhausted denial', () => {
    const { state, snap } = fixture({}, { maxGenerations: 2 });
    expect(state.consumeForNextRequest(submitted(state))).toBe(true);
    expect(state.consumeForNextRequest(submitted(state))).toBe(false);
    expect(snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed' });
    expect(snap.result?.content[0]?.text).toMatch(/request limit was reached/);
  });

  it('taskCreated waits for the first handle, or for a terminal state', () => {
    const withHandle = fixture();
    const g = withHandle.state.recordSubmission(hint, 'k1');
    expect(withHandle.state.isCreated()).toBe(false);
    g.handle = { requestId: 'req-1', statusUrl: 'http://backend/req-1', expiresAt: g.body.expiresAt };
    expect(withHandle.state.isCreated()).toBe(true);
    const failed = fixture();
    failed.state.recordSubmission(hint, 'k1');
    failed.state.fail('The approval backend did not accept the request.');
    expect(failed.state.isCreated()).toBe(true);
  });

  it('a callback for the current generation and request is accepted once and wakes the poll; its replay is refused', () => {
    const { state } = fixture();
    submitted(state);
    const cb = { generation: 1, requestId: 'req-1', callbackId: 'delivery-1' };
    expect(() => state.validateCallback(cb)).not.toThrow();
    expect(state.acceptCallback(cb)).toBe('accepted');
    expect(state.hasPendingCallback()).toBe(true);
    state.clearPendingCallback();
    expect(state.hasPendingCallback()).toBe(false);
    expect(refusalOf(() => state.validateCallback(cb))).toBe(REFUSAL.replayedCallback);
  });

  it('a callback before any submission, for another generation or request, for a consumed generation or a terminal task is refused as stale', () => {
    const { state } = fixture();
    const cb = { generation: 1, requestId: 'req-1', callbackId: 'd' };
    expect(refusalOf(() => state.validateCallback(cb))).toBe(REFUSAL.staleCallback);
    state.recordSubmission(hint, 'k1');
    expect(refusalOf(() => state.validateCallback({ ...cb, generation: 2 }))).toBe(REFUSAL.staleCallback); // not this submission
    const g1 = state.current()!;
    g1.handle = { requestId: 'req-1', statusUrl: 'http://backend/req-1', expiresAt: g1.body.expiresAt };
    expect(refusalOf(() => state.validateCallback({ ...cb, generation: 2 }))).toBe(REFUSAL.staleCallback);
    expect(refusalOf(() => state.validateCallback({ ...cb, requestId: 'req-forged' }))).toBe(REFUSAL.staleCallback);
    state.consumeForNextRequest(g1);
    expect(refusalOf(() => state.validateCallback(cb))).toBe(REFUSAL.staleCallback);
    const g2 = submitted(state);
    expect(() => state.validateCallback({ generation: 2, requestId: g2.handle.requestId, callbackId: 'd2' })).not.toThrow();
    state.deny('backend-denied');
    expect(refusalOf(() => state.validateCallback({ generation: 2, requestId: g2.handle.requestId, callbackId: 'd2' }))).toBe(
      REFUSAL.staleCallback,
    );
  });

  it('a callback for the current generation whose submission is in flight (no handle recorded yet) is refused as early, not stale, and accepted once the handle is recorded', () => {
    const { state } = fixture();
    const cb = { generation: 1, requestId: 'req-1', callbackId: 'early' };
    state.recordSubmission(hint, 'k1');
    expect(refusalOf(() => state.validateCallback(cb))).toBe(REFUSAL.earlyCallback);
    const g1 = state.current()!;
    g1.handle = { requestId: 'req-1', statusUrl: 'http://backend/req-1', expiresAt: g1.body.expiresAt };
    expect(() => state.validateCallback(cb)).not.toThrow();
    state.deny('backend-denied');
    expect(refusalOf(() => state.validateCallback(cb))).toBe(REFUSAL.staleCallback);
  });

  it('a stale refusal names, for the logs, which check the callback failed: no submission, other generation, other request, consumed, terminal', () => {
    const { state } = fixture();
    const why = (validate: () => void): string | undefined => {
      try {
        validate();
      } catch (err) {
        return refusalWhy(err);
      }
      return undefined;
    };
    const cb = { generation: 1, requestId: 'req-1', callbackId: 'w' };
    expect(why(() => state.validateCallback(cb))).toBe('no-submission');
    const g1 = submitted(state);
    expect(why(() => state.validateCallback({ ...cb, generation: 2 }))).toBe('other-generation');
    expect(why(() => state.validateCallback({ ...cb, requestId: 'req-forged' }))).toBe('other-request');
    state.consumeForNextRequest(g1);
    expect(why(() => state.validateCallback({ ...cb, requestId: g1.handle.requestId }))).toBe('consumed');
    state.deny('backend-denied');
    expect(why(() => state.validateCallback(cb))).toBe('terminal');
  });

  it('replay protection remembers the last 256 delivery ids', () => {
    const { state } = fixture();
    submitted(state);
    for (let i = 0; i <= 256; i++) state.acceptCallback({ generation: 1, requestId: 'req-1', callbackId: `d${i}` });
    expect(() => state.validateCallback({ generation: 1, requestId: 'req-1', callbackId: 'd0' })).not.toThrow();
    expect(refusalOf(() => state.validateCallback({ generation: 1, requestId: 'req-1', callbackId: 'd1' }))).toBe(REFUSAL.replayedCallback);
  });
});

describe('ApprovalState: submission input (SEP-2848 §Collecting submission input)', () => {
  it('MRTR input satisfies only the first submission; a chained request needing a justification asks again', () => {
    const { state } = fixture({ submissionInput: { justification: 'Quarter-end supplier payment.' } });
    expect(state.needsJustification(justifiedHint)).toBe(false);
    expect(state.needsJustification(hint)).toBe(false);
    const g1 = submitted(state, justifiedHint);
    expect(g1.body.justification).toBe('Quarter-end supplier payment.');
    state.consumeForNextRequest(g1);
    expect(state.needsJustification(justifiedHint)).toBe(true);
    expect(state.needsJustification(hint)).toBe(false);
    expect(fixture().state.needsJustification(justifiedHint)).toBe(true);
  });

  it('an input request shows the form, covers its window, accepts a valid answer once asked, and the answer goes with the next submission', () => {
    const { state, snap } = fixture();
    const g1 = submitted(state);
    state.consumeForNextRequest(g1);
    expect(refusalOf(() => state.validateInput(answer('Risk asked for the contract id.')))).toBe(REFUSAL.noInputRequested);
    expect(state.openInputRequest(justifiedHint, inTaskJustificationKey(state.nextGeneration()))).toBe(DAY);
    expect(snap).toMatchObject({ status: 'input_required', policyReason: 'A risk approval is required.' });
    expect(Object.keys(snap.inputRequests ?? {})).toEqual(['justification-2']);
    expect(refusalOf(() => state.validateInput(answer('short')))).toBe(REFUSAL.invalidInput);
    expect(refusalOf(() => state.validateInput({ 'justification-2': { action: 'maybe' } }))).toBe(REFUSAL.invalidInput);
    expect(state.hasInput()).toBe(false);
    expect(() => state.validateInput(answer('Risk asked for the contract id.'))).not.toThrow();
    expect(state.acceptInput(answer('Risk asked for the contract id.'))).toBe('accepted');
    expect(state.hasInput()).toBe(true);
    expect(state.closeInputRequest(true)).toBe(true);
    expect(snap.status).toBe('working');
    expect(snap.inputRequests).toBeUndefined();
    expect(state.recordSubmission(justifiedHint, 'k2').body.justification).toBe('Risk asked for the contract id.');
  });

  it('a declined or cancelled input request ends the task as a denial (input-declined): nothing further is submitted and the tool does not run', () => {
    for (const action of ['decline', 'cancel'] as const) {
      const { state, snap } = fixture();
      const g1 = submitted(state);
      state.consumeForNextRequest(g1);
      const key = inTaskJustificationKey(state.nextGeneration());
      state.openInputRequest(justifiedHint, key);
      expect(() => state.validateInput({ [key]: { action } })).not.toThrow();
      state.acceptInput({ [key]: { action } });
      expect(state.hasInput()).toBe(true);
      expect(state.closeInputRequest(true)).toBe(false);
      expect(snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed', claimed: false });
      expect(snap.inputRequests).toBeUndefined();
      expect(snap.result?.content[0]?.text).toMatch(/declined, so no further approval request was submitted/);
    }
  });

  it('input keys are unique for the task: each round has its own key, and an answer naming any other key (an earlier round replayed, or one never asked) is refused', () => {
    const { state, snap } = fixture({ config: workflowTestConfig({ resultRetentionMs: RETENTION, maxGenerations: 5 }) });
    const g1 = submitted(state);
    state.consumeForNextRequest(g1);
    state.openInputRequest(justifiedHint, inTaskJustificationKey(state.nextGeneration()));
    const first = answer('Risk asked for the contract id.', 'justification-2');
    expect(refusalOf(() => state.validateInput(answer('Risk asked for the contract id.', 'justification')))).toBe(REFUSAL.unknownInputKey);
    state.acceptInput(first);
    // one answer per round: a second update before the round is taken changes nothing
    expect(refusalOf(() => state.validateInput(first))).toBe(REFUSAL.noInputRequested);
    expect(state.closeInputRequest(true)).toBe(true);
    const g2 = submitted(state, justifiedHint);
    state.consumeForNextRequest(g2);
    state.openInputRequest(justifiedHint, inTaskJustificationKey(state.nextGeneration()));
    expect(Object.keys(snap.inputRequests ?? {})).toEqual(['justification-3']);
    expect(refusalOf(() => state.validateInput(first))).toBe(REFUSAL.unknownInputKey);
    expect(refusalOf(() => state.validateInput({ ...first, ...answer('Second round reason text.', 'justification-3') }))).toBe(
      REFUSAL.unknownInputKey,
    );
    expect(() => state.validateInput(answer('Second round reason text.', 'justification-3'))).not.toThrow();
  });

  it('an input request whose window passes unanswered ends as a request-expired denial without the form', () => {
    const { state, snap } = fixture();
    state.openInputRequest(justifiedHint, inTaskJustificationKey(state.nextGeneration()));
    expect(state.closeInputRequest(false)).toBe(false);
    expect(snap).toMatchObject({ status: 'completed', disposition: 'denied-not-executed' });
    expect(snap.inputRequests).toBeUndefined();
  });
});

describe('ApprovalState: retry backoff after a grant', () => {
  it("the PDP's retryAfterMs wins and no randomness is drawn", () => {
    const { state } = fixture();
    let draws = 0;
    expect(state.retryDelayMs(3, 1234, () => ++draws)).toBe(1234);
    expect(draws).toBe(0);
  });

  it('otherwise exponential from retryBaseMs, capped at retryMaxMs, with jitter in [0.5, 1)', () => {
    const { state } = fixture({}, { retryBaseMs: 1000, retryMaxMs: 10_000 });
    expect(state.retryDelayMs(0, undefined, () => 0)).toBe(500);
    expect(state.retryDelayMs(2, undefined, () => 0.5)).toBe(3000);
    expect(state.retryDelayMs(10, undefined, () => 0.999)).toBe(Math.round(10_000 * (0.5 + 0.999 * 0.5)));
  });
});
