/**
 * Business rules of the reference Access Request Service: submit (idempotent; fixes the quorum
 * from the operator's rules), read (expiring on read), cancel, decide (four-eyes, group and tool
 * scope, M-of-N distinct approvers: a partial approval is recorded and visible, and the request
 * is approved only by the vote that meets the quorum; one denial denies; once escalated
 * (`reminders.ts`) the escalation group or approver counts as a member; a delegate votes as the
 * delegator (`delegation.ts`), and one person votes once in either role; a step-up rule needs a
 * passkey proof to approve, `inbox/passkeys.ts`), sweep. Outcomes are values; the HTTP routes and
 * the inbox map them to responses.
 *
 * Implements the backend half of SEP-2848's approval-backend contract as the AuthZEN ARAP
 * worked example (`src/backends/approval-backend.ts`). Every status change is a compare-and-set from `pending` in the
 * store, which writes the callback to the outbox in the same transaction (when the request has a
 * `callback_url`); the dispatcher (`api/callbacks.ts`) delivers it after the caller has its answer.
 * Deliberately does not: authenticate callers (routes do), run the risk engine or webhooks
 * (they subscribe with `onCreated`), or extend deadlines.
 */
import { createHash, randomBytes } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import type { Logger } from 'pino';
import type { AccessRequestBody, WireApproval } from '@countersign/arap';
import type { CallbackDispatcher } from './api/callbacks.js';
import {
  firstMatchingRiskRule,
  matchingStepUpRule,
  requiredApprovals,
  stepUpReason,
  unfollowedRuleOf,
  type ApprovalRules,
} from './deciders/approval-rules.js';
import { followerSummary, isUnfollowed, type FollowerSummary } from './followers.js';
import {
  BREAK_GLASS_DAY_MS,
  holdsBreakGlassRole,
  isOwnSubject,
  mayReviewBreakGlass,
  saysSomething,
  type BreakGlassClaim,
} from './break-glass.js';
import type { Approver } from './api/http-auth.js';
import type { BreakGlassUse } from './store/break-glass-store.js';
import { deciderNames, personDecider, type Decider, type Decision } from './deciders/decider.js';
import {
  checkProposal,
  COUNTER_PROPOSAL_RULE,
  DEFAULT_PERMIT_TTL_MS,
  narrowedComment,
  permitDigest,
  permitMatches,
  type ProposalRefusal,
} from './narrowing-permits.js';
import { principalNames } from './principal-names.js';
import { grantCovers, grantUseWire, holdsGrantRight } from './grants.js';
import type { Grant } from './store/grants-store.js';
import {
  IdempotencyKeyTaken,
  type AccessRequestRecord,
  type ApprovalStore,
  type ApprovalVote,
  type NarrowingPermit,
  type PendingKey,
  type RequestFilter,
  type StepUpProof,
  type Transition,
} from './store/store.js';

/** Rule id the audit trail records on an approval confirmed although nobody followed the request. */
export const UNFOLLOWED_CONFIRMED_RULE = 'unfollowed-confirmed';
/** Audit comment of a request the `close` action expired. */
export const UNFOLLOWED_CLOSE_COMMENT = "Closed: no client followed the task for the unfollowed rule's period.";

// `canonicalize` is CommonJS with an ESM-style `export default` typing; under NodeNext the default
// import is the function at runtime, but TypeScript types it as the module object.
const canonicalize: (input: unknown) => string | undefined =
  typeof canonicalizeModule === 'function'
    ? (canonicalizeModule as (input: unknown) => string | undefined)
    : (canonicalizeModule as unknown as { default: (input: unknown) => string | undefined }).default;

/** Hex SHA-256 of the JCS (RFC 8785) canonical JSON of `value`. */
export function canonicalHash(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error('value has no canonical JSON form');
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** New unguessable id: `prefix` + 128 random bits, base64url. */
export function randomId(prefix: string): string {
  return `${prefix}${randomBytes(16).toString('base64url')}`;
}

/** Result of {@link RequestLifecycle.submit}. */
export type SubmitOutcome =
  | { kind: 'created'; record: AccessRequestRecord }
  | { kind: 'replayed'; record: AccessRequestRecord }
  | { kind: 'conflict' }
  | { kind: 'deadline-passed' };

/** Result of {@link RequestLifecycle.cancel}. */
export type CancelOutcome =
  { kind: 'cancelled'; record: AccessRequestRecord } | { kind: 'not-pending'; record: AccessRequestRecord } | { kind: 'not-found' };

/** Why a decider may not decide a request. */
export type DecideRefusal =
  | 'not-in-group'
  | 'own-request'
  | 'tool-out-of-scope'
  | 'decision-not-allowed'
  | 'already-approved'
  /** An approval by a decider outside the request's group on a request needing more than one approval. */
  | 'quorum-needs-members'
  /** An ITSM decision whose `decided_by` is not a configured approver of the request's group. */
  | 'unknown-person'
  /** A decision "for" someone without an active delegation from them to this approver. */
  | 'no-delegation'
  /** An approval without the passkey confirmation a step-up rule requires (`inbox/passkeys.ts`). */
  | 'step-up-required'
  /** An approval of a request nobody follows, without `confirmUnfollowed` (the rules' `unfollowed` option, `followers.ts`). */
  | 'unfollowed'
  /** A break-glass approval without a reason (`break-glass.ts`). */
  | 'break-glass-reason-required'
  /** A break-glass approval by someone outside the break-glass role (or by a delegate, an agent, a deny). */
  | 'not-break-glass'
  /** A break-glass approval that would open more sessions in a day than `maxPerDay` allows. */
  | 'break-glass-limit'
  /** A break-glass claim on a request that is not the approver's own (it needs none: decide it normally). */
  | 'break-glass-not-own';

/** Rule id the audit trail records on a break-glass approval (`break-glass.ts`). */
export const BREAK_GLASS_RULE = 'break-glass';

/** What a decision carries besides its decider and verdict ({@link RequestLifecycle.decide}). */
export interface DecideOptions {
  /** The approver's comment (audit trail, status body); an empty string counts as none. */
  comment?: string;
  /** The rule that decided, for the audit (a risk rule's id). */
  rule?: string;
  /** A verified passkey assertion over the request's binding digest (`inbox/passkeys.ts`), for a step-up rule. */
  stepUp?: StepUpProof;
  /** The approver confirmed approving a request nobody follows (the rules' `unfollowed` option). */
  confirmUnfollowed?: boolean;
  /** A break-glass claim with its reason (`break-glass.ts`). */
  breakGlass?: BreakGlassClaim;
}

/** Result of {@link RequestLifecycle.decide}. `recorded`: a partial approval, the quorum is not met yet. */
export type DecideOutcome =
  | { kind: 'decided'; record: AccessRequestRecord }
  | { kind: 'recorded'; record: AccessRequestRecord; votes: ApprovalVote[] }
  /** `retryAtMs` (ms since epoch) only with `break-glass-limit`: when one more session may open. */
  | { kind: 'forbidden'; reason: DecideRefusal; retryAtMs?: number }
  | { kind: 'not-pending'; record: AccessRequestRecord }
  | { kind: 'not-found' };

/** Result of {@link RequestLifecycle.reviewBreakGlass}. */
export type ReviewOutcome =
  | { kind: 'reviewed'; use: BreakGlassUse }
  | { kind: 'not-found' }
  | { kind: 'already-reviewed'; use: BreakGlassUse }
  | { kind: 'comment-required' }
  /** The reviewer broke glass on it themselves, or is not a reviewer of it (`mayReviewBreakGlass`). */
  | { kind: 'forbidden'; reason: 'own-break-glass' | 'not-reviewer' };
/**
 * Result of {@link RequestLifecycle.narrow}: `narrowed` (the request is denied, `permit` recorded),
 * `invalid` (the proposal is not a narrowing the request allows: the field and why), `not-narrowable`
 * (the request has no `context.narrowable`), or as {@link DecideOutcome}.
 */
export type NarrowOutcome =
  | { kind: 'narrowed'; record: AccessRequestRecord; permit: NarrowingPermit }
  | ({ kind: 'invalid' } & ProposalRefusal)
  | { kind: 'not-narrowable'; record: AccessRequestRecord }
  | { kind: 'forbidden'; reason: DecideRefusal }
  | { kind: 'not-pending'; record: AccessRequestRecord }
  | { kind: 'not-found' };

/** The lifecycle API. */
export interface RequestLifecycle {
  /**
   * Submit under `idempotencyKey`. Same key + equal canonical body → `replayed` (same request,
   * current status); same key + different body → `conflict`; a new request whose `expires_at` is
   * not in the future → `deadline-passed`; else `created` (pending).
   */
  submit(idempotencyKey: string, body: AccessRequestBody): Promise<SubmitOutcome>;
  /** Read a request; a pending one at or past its deadline is expired first (persisted + callback). */
  read(id: string): Promise<AccessRequestRecord | undefined>;
  /** Cancel: pending → cancelled; already cancelled → `cancelled` (idempotent); else `not-pending`. */
  cancel(id: string): Promise<CancelOutcome>;
  /**
   * Decide as `decider`. Refused (`forbidden`) when the decider is outside the request's group or
   * tool scope, may not make this decision, is the requester (`subject.sub`) or any actor in the
   * requester's `act` chain (four-eyes: every name of the decider, case-insensitively), or the
   * same person already approved this request (through any channel). An approval by a decider
   * that is not a member of the request's group (a supervising agent) on a request needing more
   * than one approval is refused (`quorum-needs-members`): only members count towards a quorum.
   * Deny → `denied`. Approve → `recorded` while fewer than `requiredApprovals` distinct people approved, then
   * `approved` with approval material (all approvers, valid for `approvalValidityMs`); a `final`
   * decider (risk engine) approves at once. `rule` names the risk rule that decided, for the audit.
   * A request with a step-up rule is approved only with `stepUp`, a verified passkey assertion over
   * its binding digest (else `step-up-required`; denying never needs it); the proof is stored with the vote.
   * An approval of a request nobody follows (`followers.ts`; the rules' `unfollowed` action
   * `confirm` or `close`) needs `confirmUnfollowed` (else `unfollowed`); the vote then records the
   * rule `unfollowed-confirmed` in the audit trail. Denying never needs it.
   * With `breakGlass` (`break-glass.ts`), a person in the rules' break-glass role approves their
   * own request: the reason is mandatory (`break-glass-reason-required`); outside the role, as a
   * delegate or not a person `not-break-glass`; on a request that is not their own
   * `break-glass-not-own`; it uses their active session or opens one (`break-glass-limit` with
   * `retryAtMs` past `maxPerDay` a day). It never skips a step-up rule or the unfollowed
   * confirmation, and settles the quorum alone: the approval material carries `break_glass`, the
   * audit trail an `approved` row of rule `break-glass` and a `break-glass` row with the reason,
   * the store the use with the approvers it skipped and its review due time, in one transaction.
   */
  decide(id: string, decider: Decider, decision: Decision, options?: DecideOptions): Promise<DecideOutcome>;
  /**
   * Mark the break-glass approval of request `id` reviewed by approver `reviewer` with `comment`
   * (mandatory, trimmed): never by the one who broke glass, only by a reviewer the rules name
   * (`mayReviewBreakGlass`); audit row `break-glass-reviewed`. At most once.
   */
  reviewBreakGlass(id: string, reviewer: Approver, comment: string, via: 'inbox' | 'api'): Promise<ReviewOutcome>;
  /** Call `fn` after each break-glass approval (the channels notify the skipped approvers). `fn` must not throw. */
  onBreakGlass(fn: (record: AccessRequestRecord, use: BreakGlassUse) => void): void;
  /**
   * A counter-proposal (docs/APPROVERS.md §Narrowing a request): `decider` — one who may approve
   * this request (group, tool scope, four-eyes, allowed to approve, counted towards its quorum) —
   * proposes `proposed`, the complete arguments of a narrower call. Checked against the request's
   * `context.narrowable` (`narrowing-permits.ts` `checkProposal`); then, in one transaction, the
   * request is denied (audit `denied` and `narrowed`, rule `counter-proposal`) and a permit for
   * exactly that call by the same principal is recorded, single use, valid `permitTtlMs`. Checks in
   * order: not-found, forbidden, not-pending, not-narrowable, invalid.
   */
  narrow(id: string, decider: Decider, proposed: Record<string, unknown>, comment?: string): Promise<NarrowOutcome>;
  /**
   * Approve pending request `id` by `grant` (its creator's vote, rule `grant`, one use counted,
   * `grants.ts`), when the request meets it and no quorum or step-up rule applies — the grant as
   * it stands in the store when its use is counted, in the same transaction; returns the approved
   * record, or null (left as it was).
   */
  applyGrant(id: string, grant: Grant): Promise<AccessRequestRecord | null>;
  /** Whether `decider` may decide `record` (ignoring its status; `already-approved` included). */
  refusalFor(decider: Decider, record: AccessRequestRecord): Promise<DecideRefusal | null>;
  /**
   * The store filter of the pending requests `decider` may decide now: the SQL form of
   * {@link RequestLifecycle.refusalFor} returning null (its groups and tools, not a request of any
   * of its names, not one it already approved), for paging and counting in the store.
   */
  decidableFilter(decider: Decider): RequestFilter;
  /** Approvals recorded on a request so far, oldest first. */
  votes(id: string): Promise<ApprovalVote[]>;
  /** Who follows the request's task now, under the rules' `unfollowed` option (`followers.ts`). */
  followers(record: AccessRequestRecord): Promise<FollowerSummary>;
  /**
   * Call `fn` after each newly created request (risk engine, ITSM notification), and wait for it
   * before answering the submission (so a risk engine's decision is in the answer). `fn` must not
   * throw (nor reject).
   */
  onCreated(fn: (record: AccessRequestRecord) => void | Promise<void>): void;
  /**
   * Call `fn` after each request a counter-proposal's permit or a grant approved as it was
   * submitted (`record.status` is `approved`, `record.approval` names the grant or the permit's
   * rule): such a request never fires {@link onCreated}, since nobody is asked to decide it, but the
   * systems that keep a record of every request (the ITSM bridge) must still learn of it. `fn` must
   * not throw.
   */
  onApprovedAtSubmission(fn: (record: AccessRequestRecord) => void): void;
  /**
   * Call `fn` after each change from `pending` to a terminal status (approved, denied, expired,
   * cancelled), whatever the channel that caused it (the notification channels update their
   * messages). `fn` must not throw.
   */
  onStatusChanged(fn: (record: AccessRequestRecord) => void): void;
  /**
   * Call `fn` after each partial approval (a vote recorded while the request stays pending for its
   * quorum), whatever the channel (the notification channels show the progress). `fn` must not throw.
   */
  onVoteRecorded(fn: (record: AccessRequestRecord) => void): void;
  /** Expire every pending request at or past its deadline; returns how many were expired. */
  sweep(): Promise<number>;
}

/** Dependencies of {@link createRequestLifecycle}. */
export interface RequestLifecycleDeps {
  store: ApprovalStore;
  callbacks: CallbackDispatcher;
  /** Clock, ms since epoch. */
  now: () => number;
  /** How long an approval stays valid after it is granted, ms. */
  approvalValidityMs: number;
  logger: Logger;
  /** Current operator rules (quorum); read at each submission. */
  rules: () => ApprovalRules;
  /** The configured approvers (who a break-glass approval skipped; whether a grant's creator still holds it); default none. */
  approvers?: readonly Approver[];
  /** How long a counter-proposal's permit stays usable, ms; default {@link DEFAULT_PERMIT_TTL_MS}. */
  permitTtlMs?: number;
}

/** Create the lifecycle over a store and a callback dispatcher. */
export function createRequestLifecycle(deps: RequestLifecycleDeps): RequestLifecycle {
  const { store, callbacks, now, logger } = deps;
  const createdListeners: Array<(record: AccessRequestRecord) => void | Promise<void>> = [];
  const approvedAtSubmissionListeners: Array<(record: AccessRequestRecord) => void> = [];
  const changedListeners: Array<(record: AccessRequestRecord) => void> = [];
  const voteListeners: Array<(record: AccessRequestRecord) => void> = [];
  const breakGlassListeners: Array<(record: AccessRequestRecord, use: BreakGlassUse) => void> = [];

  function changed(record: AccessRequestRecord): AccessRequestRecord {
    logger.info({ requestId: record.id, status: record.status, actor: record.resolvedBy }, 'access request status changed');
    // The store wrote the callback's outbox row with the change; deliver it in the background.
    if (record.body.callback_url !== undefined) callbacks.wake();
    for (const fn of changedListeners) fn(record);
    return record;
  }

  async function transition(id: string, t: Transition): Promise<AccessRequestRecord | undefined> {
    const updated = await store.transitionFromPending(id, t);
    return updated === undefined ? undefined : changed(updated);
  }

  async function expireIfDue(record: AccessRequestRecord): Promise<AccessRequestRecord> {
    const at = now();
    if (record.status !== 'pending' || at < record.expiresAtMs) return record;
    return (
      (await transition(record.id, { to: 'expired', atMs: at, actor: 'system', via: 'system' })) ?? (await store.get(record.id)) ?? record
    );
  }

  function scopeRefusal(decider: Decider, record: AccessRequestRecord): DecideRefusal | null {
    if (decider.groups !== undefined && !isMember(decider, record)) return 'not-in-group';
    if (decider.tools !== undefined && !decider.tools.includes(record.body.resource.id)) return 'tool-out-of-scope';
    const subject = record.body.subject;
    const requesters = principalNames(subject);
    if (deciderNames(decider).some((n) => requesters.has(n))) return 'own-request';
    return null;
  }

  const samePerson = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

  /**
   * Whether `grant` still fits the current rules: its count and age within the rules' `maxUses` and
   * `maxDurationMs` (a rules file that lowers them shrinks the grants already made), and its creator
   * could still create it: a configured approver, a member of its approver group, holding the grant
   * right (a grant approves in its creator's name, so it stops when they leave the group or lose the
   * right; not checked without `deps.approvers`).
   */
  function grantStillHolds(grant: Grant): boolean {
    const rule = deps.rules().grants;
    if (rule === undefined || grant.uses >= rule.maxUses || now() >= grant.createdAtMs + rule.maxDurationMs) return false;
    if (deps.approvers === undefined) return true;
    const creator = deps.approvers.find((a) => samePerson(a.id, grant.createdBy));
    return (
      creator !== undefined &&
      creator.groups.includes(grant.approverGroup) &&
      holdsGrantRight(deps.rules().grants, creator.id, creator.groups)
    );
  }

  /** Whether the first risk rule matching `facts` denies: a grant or a permit never overrides a risk engine's denial. */
  const riskDenies = (facts: Parameters<typeof firstMatchingRiskRule>[1]): boolean =>
    firstMatchingRiskRule(deps.rules(), facts)?.decision === 'deny';

  /**
   * Whether `decider` is a member of the request's group, or — once the request was escalated — of
   * the escalation group, or is the escalation approver (the delegator's membership for a delegate).
   */
  function isMember(decider: Decider, record: AccessRequestRecord): boolean {
    const groups = decider.groups ?? [];
    if (groups.includes(record.body.approver_group)) return true;
    const e = record.escalation;
    if (e === null) return false;
    return (e.group !== null && groups.includes(e.group)) || (e.approver !== null && samePerson(e.approver, decider.person));
  }

  /**
   * Whether a person behind `decider` (itself, or the delegate casting for it) already approved
   * `id` in either role: one vote per person, whether in their own right or for a delegator. (A
   * refusal to show early; `store.approve` checks the same in the transaction that records the vote.)
   */
  async function alreadyVoted(decider: Decider, id: string): Promise<boolean> {
    const humans = [decider.person, ...(decider.castBy !== undefined ? [decider.castBy] : [])];
    const votes = await store.votes(id);
    return votes.some((v) => humans.some((h) => samePerson(v.approver, h) || (v.castBy != null && samePerson(v.castBy, h))));
  }

  async function refusalFor(decider: Decider, record: AccessRequestRecord): Promise<DecideRefusal | null> {
    const scope = scopeRefusal(decider, record);
    if (scope !== null) return scope;
    if (await alreadyVoted(decider, record.id)) return 'already-approved';
    return null;
  }

  /** Whether `decider`'s approval counts towards `record`'s quorum (a member of its group or escalation, or final). */
  function countsTowardsQuorum(decider: Decider, record: AccessRequestRecord): boolean {
    return decider.final === true || record.requiredApprovals <= 1 || (decider.groups !== undefined && isMember(decider, record));
  }

  /**
   * Why `decider` may not break glass on `record` (`scope`: its ordinary refusal), or null: a
   * reason is given, it is a person's approval of their own request in their own right, and they
   * hold the role.
   */
  function breakGlassRefusal(
    decider: Decider,
    record: AccessRequestRecord,
    decision: Decision,
    claim: BreakGlassClaim,
    scope: DecideRefusal | null,
  ): DecideRefusal | null {
    if (!saysSomething(claim.reason)) return 'break-glass-reason-required';
    if (decision !== 'approve' || decider.castBy !== undefined || (decider.via !== 'inbox' && decider.via !== 'api'))
      return 'not-break-glass';
    if (scope === null) return 'break-glass-not-own';
    if (scope !== 'own-request') return scope;
    if (!isOwnSubject(record.body.subject, decider.person, decider.names)) return 'break-glass-not-own';
    if (!holdsBreakGlassRole(deps.rules().breakGlass, decider.person, decider.groups ?? [])) return 'not-break-glass';
    return null;
  }

  /** The configured approvers other than `by` who could have decided `record` (a break-glass approval skipped them). */
  async function skippedBy(by: string, record: AccessRequestRecord): Promise<string[]> {
    const skipped: string[] = [];
    for (const a of deps.approvers ?? []) {
      if (!samePerson(a.id, by) && (await refusalFor(personDecider(a, 'api'), record)) === null) skipped.push(a.id);
    }
    return skipped;
  }

  async function followersOf(record: AccessRequestRecord, at: number): Promise<FollowerSummary> {
    const taskRef = record.body.task_ref;
    const followers = taskRef === undefined ? [] : await store.followers.forTask(taskRef);
    return followerSummary(
      { createdAtMs: record.createdAtMs, hasTaskRef: taskRef !== undefined },
      followers,
      at,
      unfollowedRuleOf(deps.rules()),
    );
  }

  /**
   * The rules' `close` action: every pending request unfollowed for `graceMs` expires, marked
   * closed unfollowed (its status body says `status_reason: "unfollowed"`) with an audit row of rule
   * `unfollowed`, each in one transaction (`store.closeUnfollowed`). Reads every pending request,
   * a page at a time; returns how many it closed.
   */
  async function closeUnfollowed(at: number): Promise<number> {
    const rule = unfollowedRuleOf(deps.rules());
    if (rule.action !== 'close') return 0;
    let count = 0;
    let after: PendingKey | undefined;
    for (;;) {
      const page = await store.pagePending({}, { limit: 500, ...(after !== undefined ? { after } : {}) });
      for (const r of page.records) {
        const due = (await followersOf(r, at)).unfollowedAtMs;
        if (due === null || at < due + rule.graceMs) continue;
        const closed = await store.closeUnfollowed(r.id, {
          to: 'expired',
          atMs: at,
          actor: 'system',
          via: 'system',
          rule: 'unfollowed',
          comment: UNFOLLOWED_CLOSE_COMMENT,
        });
        if (closed === undefined) continue;
        changed(closed);
        count += 1;
      }
      const last = page.records[page.records.length - 1];
      if (!page.hasAfter || last === undefined) return count;
      after = { createdAtMs: last.createdAtMs, id: last.id };
    }
  }

  /** The approval material at `at` for `approvers` (the step-up proofs of `votes` included), with `extra`. */
  function approvalOf(at: number, approvers: string[], votes: ApprovalVote[], extra: Partial<WireApproval> = {}): WireApproval {
    const proofs = votes.flatMap((v) => (v.stepUp != null ? [{ approver: v.approver, ...v.stepUp }] : []));
    return {
      id: randomId('apv_'),
      approved_at: new Date(at).toISOString(),
      approved_until: new Date(at + deps.approvalValidityMs).toISOString(),
      state: 'approved',
      approvers,
      ...(proofs.length > 0 ? { step_up: proofs } : {}),
      ...extra,
    };
  }

  /**
   * The break-glass half of `decide` once every ordinary check passed: in one transaction, the
   * approver's session (used or opened, within `maxPerDay`), the final vote (rule `break-glass`),
   * the use with the skipped approvers and its review due time, and the `break-glass` audit row.
   */
  async function decideBreakGlass(
    current: AccessRequestRecord,
    decider: Decider,
    vote: ApprovalVote & { rule?: string; final?: boolean },
    reason: string,
  ): Promise<DecideOutcome> {
    const rule = deps.rules().breakGlass;
    if (rule === undefined) return { kind: 'forbidden', reason: 'not-break-glass' };
    const at = vote.atMs;
    const skipped = await skippedBy(decider.person, current);
    const result = await store.approveByBreakGlass(
      current.id,
      { ...vote, rule: BREAK_GLASS_RULE, final: true },
      {
        reason,
        windowMs: rule.windowMs,
        maxPerDay: rule.maxPerDay,
        dayMs: BREAK_GLASS_DAY_MS,
        newSessionId: randomId('bgs_'),
        reviewDueMs: at + rule.reviewWithinMs,
        skipped,
      },
      (approvers, votes) =>
        approvalOf(at, approvers, votes, { break_glass: { by: decider.person, reason, at: new Date(at).toISOString() } }),
    );
    switch (result.kind) {
      case 'limit':
        return { kind: 'forbidden', reason: 'break-glass-limit', retryAtMs: result.retryAtMs };
      case 'already-approved-by':
        return { kind: 'forbidden', reason: 'already-approved' };
      case 'not-pending':
        return { kind: 'not-pending', record: (await store.get(current.id)) ?? current };
    }
    logger.warn({ requestId: current.id, actor: decider.id, skipped: skipped.length }, 'break-glass approval');
    changed(result.record);
    for (const fn of breakGlassListeners) fn(result.record, result.use);
    return { kind: 'decided', record: result.record };
  }

  /** A request approved as it was submitted (permit or grant): announced to the `onApprovedAtSubmission` listeners. */
  function approvedAtSubmission(record: AccessRequestRecord): AccessRequestRecord {
    for (const fn of approvedAtSubmissionListeners) fn(record);
    return record;
  }

  /** A newly created pending request: logged, announced to the `onCreated` listeners. */
  async function created(record: AccessRequestRecord, requiredApprovals: number): Promise<SubmitOutcome> {
    const body = record.body;
    logger.info(
      { requestId: record.id, tool: body.resource.id, approverGroup: body.approver_group, generation: body.generation, requiredApprovals },
      'access request submitted',
    );
    // one after the other, each finished before the answer (the risk engine decides here)
    for (const fn of createdListeners) await fn(record);
    return { kind: 'created', record: (await store.get(record.id)) ?? record };
  }

  async function read(id: string): Promise<AccessRequestRecord | undefined> {
    const record = await store.get(id);
    return record === undefined ? undefined : expireIfDue(record);
  }

  /** The answer to a submission under the key of `existing`: the same body replays it, another conflicts. */
  async function replayOf(existing: AccessRequestRecord, bodyHash: string): Promise<SubmitOutcome> {
    return existing.bodyHash === bodyHash ? { kind: 'replayed', record: await expireIfDue(existing) } : { kind: 'conflict' };
  }

  /** A new request under `idempotencyKey` (the key unused when read): pending, or approved at once by a standing permit. */
  async function insertNew(idempotencyKey: string, body: AccessRequestBody, bodyHash: string): Promise<SubmitOutcome> {
    const at = now();
    const expiresAtMs = Date.parse(body.expires_at);
    if (!(expiresAtMs > at)) return { kind: 'deadline-passed' };
    const facts = {
      tool: body.resource.id,
      requester: body.subject.sub,
      group: body.approver_group,
      generation: body.generation,
      pendingMs: 0,
      arguments: body.context.arguments,
    };
    const quorum = requiredApprovals(deps.rules(), facts);
    const stepUp = matchingStepUpRule(deps.rules(), facts);
    const row = {
      id: randomId('ar_'),
      idempotencyKey,
      bodyHash,
      body,
      createdAtMs: at,
      expiresAtMs,
      requiredApprovals: quorum.approvals,
      quorumRule: quorum.ruleId,
      quorumReason: quorum.reason,
      stepUpRule: stepUp?.id ?? null,
      stepUpReason: stepUp === null ? null : stepUpReason(stepUp),
    };
    // A counter-proposal's permit or a grant (`grants.ts`) approves the call at once, its use
    // counted in the insert's transaction, unless a quorum or step-up rule applies to it, or a
    // risk rule would deny it: then it is an ordinary request (and the risk engine denies it).
    if (quorum.approvals <= 1 && stepUp === null && !riskDenies(facts)) {
      const permitted = await store.insertWithPermit(
        row,
        body.subject.sub,
        {
          tool: body.resource.id,
          requesterSub: body.subject.sub,
          approverGroup: body.approver_group,
          atMs: at,
          matches: (permit, proposedOn) => permitMatches(permit.arguments, proposedOn, body),
          grantFits: (g) => grantCovers(g, { body }) && grantStillHolds(g),
        },
        (approvers, votes, grant) =>
          approvalOf(at, approvers, votes, grant === undefined ? {} : { grant: grantUseWire(grant.grant, grant.use) }),
      );
      if (permitted.permit !== null) {
        logger.info(
          { requestId: permitted.record.id, tool: body.resource.id, proposedOn: permitted.permit.requestId },
          'access request approved by a counter-proposal',
        );
        return { kind: 'created', record: approvedAtSubmission(changed(permitted.record)) };
      }
      if (permitted.grant !== null) {
        logger.info(
          { requestId: permitted.record.id, tool: body.resource.id, grant: permitted.grant.grant.id, use: permitted.grant.use.use },
          'access request approved by a grant',
        );
        return { kind: 'created', record: approvedAtSubmission(changed(permitted.record)) };
      }
      return created(permitted.record, quorum.approvals);
    }
    return created(await store.insert(row, body.subject.sub), quorum.approvals);
  }

  return {
    async submit(idempotencyKey, body) {
      const bodyHash = canonicalHash(body);
      const existing = await store.getByIdempotencyKey(idempotencyKey);
      if (existing !== undefined) return replayOf(existing, bodyHash);
      try {
        return await insertNew(idempotencyKey, body, bodyHash);
      } catch (err) {
        // a submission under the same key inserted between the read above and this insert
        if (err instanceof IdempotencyKeyTaken) return replayOf(err.existing, bodyHash);
        throw err;
      }
    },

    read,

    async applyGrant(id, grant) {
      const current = await read(id);
      if (current === undefined || current.status !== 'pending') return null;
      if (current.requiredApprovals > 1 || current.stepUpRule !== null || !grantCovers(grant, current) || !grantStillHolds(grant))
        return null;
      const b = current.body;
      const facts = {
        tool: b.resource.id,
        requester: b.subject.sub,
        group: b.approver_group,
        generation: b.generation,
        pendingMs: now() - current.createdAtMs,
        arguments: b.context.arguments,
      };
      if (riskDenies(facts)) return null;
      const at = now();
      // checked again on the grant as the transaction that counts its use reads it (uses, revocation)
      const fits = (g: Grant) => grantCovers(g, current) && grantStillHolds(g);
      const approved = await store.approveByGrant(id, grant.id, at, fits, (approvers, votes, g) =>
        approvalOf(at, approvers, votes, g === undefined ? {} : { grant: grantUseWire(g.grant, g.use) }),
      );
      if (approved === undefined) return null;
      logger.info({ requestId: id, grant: grant.id }, 'access request approved by a grant');
      return changed(approved);
    },

    async narrow(id, decider, proposed, comment) {
      const current = await read(id);
      if (current === undefined) return { kind: 'not-found' };
      const refusal = scopeRefusal(decider, current);
      if (refusal !== null) return { kind: 'forbidden', reason: refusal };
      if (decider.decisions !== undefined && !decider.decisions.includes('approve'))
        return { kind: 'forbidden', reason: 'decision-not-allowed' };
      if (!countsTowardsQuorum(decider, current)) return { kind: 'forbidden', reason: 'quorum-needs-members' };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      if (current.body.context.narrowable === undefined) return { kind: 'not-narrowable', record: current };
      const check = checkProposal(current.body, proposed);
      if (!check.ok) return { kind: 'invalid', field: check.field, message: check.message };
      const at = now();
      const expiresAtMs = at + (deps.permitTtlMs ?? DEFAULT_PERMIT_TTL_MS);
      const note = comment !== undefined && comment !== '' ? comment : undefined;
      const t: Transition & { to: 'denied' } = { to: 'denied', atMs: at, actor: decider.id, via: decider.via, rule: COUNTER_PROPOSAL_RULE };
      if (note !== undefined) t.comment = note;
      if (decider.castBy !== undefined) t.onBehalfOf = decider.person;
      const tool = current.body.resource.id;
      const permit = {
        id: randomId('prm_'),
        requestId: id,
        bindingDigest: permitDigest(tool, proposed, current.body.subject, current.body.context.redacted ?? []),
        tool,
        arguments: proposed,
        requesterSub: current.body.subject.sub,
        approverGroup: current.body.approver_group,
        proposedBy: decider.person,
        via: decider.via,
        createdAtMs: at,
        expiresAtMs,
      };
      const updated = await store.narrow(id, t, narrowedComment(check.changed, expiresAtMs, note), permit);
      if (updated === undefined) return { kind: 'not-pending', record: (await store.get(id)) ?? current };
      logger.info({ requestId: id, actor: decider.id, fields: check.changed }, 'access request narrowed by a counter-proposal');
      return { kind: 'narrowed', record: changed(updated), permit: { ...permit, usedAtMs: null, usedByRequest: null } };
    },

    async cancel(id) {
      const current = await read(id);
      if (current === undefined) return { kind: 'not-found' };
      if (current.status === 'cancelled') return { kind: 'cancelled', record: current };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      const updated = await transition(id, { to: 'cancelled', atMs: now(), actor: 'client', via: 'client' });
      if (updated !== undefined) return { kind: 'cancelled', record: updated };
      const raced = (await store.get(id)) ?? current;
      return raced.status === 'cancelled' ? { kind: 'cancelled', record: raced } : { kind: 'not-pending', record: raced };
    },

    async decide(id, decider, decision, options = {}) {
      const { comment, rule, stepUp, confirmUnfollowed, breakGlass } = options;
      const current = await read(id);
      if (current === undefined) return { kind: 'not-found' };
      const refusal = scopeRefusal(decider, current);
      if (breakGlass !== undefined) {
        const glass = breakGlassRefusal(decider, current, decision, breakGlass, refusal);
        if (glass !== null) return { kind: 'forbidden', reason: glass };
      } else if (refusal !== null) return { kind: 'forbidden', reason: refusal };
      if (decider.decisions !== undefined && !decider.decisions.includes(decision))
        return { kind: 'forbidden', reason: 'decision-not-allowed' };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      const at = now();
      const note = comment !== undefined && comment !== '' ? comment : undefined;
      if (decision === 'deny') {
        const t: Transition = { to: 'denied', atMs: at, actor: decider.id, via: decider.via };
        if (note !== undefined) t.comment = note;
        if (decider.castBy !== undefined) t.onBehalfOf = decider.person;
        if (rule !== undefined) t.rule = rule;
        const updated = await transition(id, t);
        if (updated !== undefined) return { kind: 'decided', record: updated };
        return { kind: 'not-pending', record: (await store.get(id)) ?? current };
      }
      if (!countsTowardsQuorum(decider, current)) return { kind: 'forbidden', reason: 'quorum-needs-members' };
      if (
        current.stepUpRule !== null &&
        (stepUp === undefined || stepUp.binding_digest !== current.body.binding_digest || stepUp.request_id !== current.id)
      ) {
        return { kind: 'forbidden', reason: 'step-up-required' };
      }
      const unfollowed = isUnfollowed(await followersOf(current, at), at);
      if (unfollowed && confirmUnfollowed !== true) return { kind: 'forbidden', reason: 'unfollowed' };
      if (await alreadyVoted(decider, id)) return { kind: 'forbidden', reason: 'already-approved' };
      const vote: ApprovalVote & { rule?: string; final?: boolean } = {
        approver: decider.person,
        actor: decider.id,
        via: decider.via,
        comment: note ?? null,
        atMs: at,
        castBy: decider.castBy ?? null,
        stepUp: current.stepUpRule !== null && stepUp !== undefined ? stepUp : null,
      };
      if (rule !== undefined) vote.rule = rule;
      if (decider.final === true) vote.final = true;
      if (vote.stepUp !== null && vote.stepUp !== undefined && vote.rule === undefined) vote.rule = vote.stepUp.rule;
      if (unfollowed && vote.rule === undefined) vote.rule = UNFOLLOWED_CONFIRMED_RULE;
      if (breakGlass !== undefined) return decideBreakGlass(current, decider, vote, breakGlass.reason.trim());
      const result = await store.approve(id, vote, (approvers, votes) => approvalOf(at, approvers, votes));
      switch (result.kind) {
        case 'approved':
          return { kind: 'decided', record: changed(result.record) };
        case 'endorsed': {
          const votes = await store.votes(id);
          logger.info(
            { requestId: id, actor: decider.id, votes: votes.length, required: result.record.requiredApprovals },
            'partial approval recorded',
          );
          for (const fn of voteListeners) fn(result.record);
          return { kind: 'recorded', record: result.record, votes };
        }
        case 'already-approved-by':
          return { kind: 'forbidden', reason: 'already-approved' };
        case 'not-pending':
          return { kind: 'not-pending', record: (await store.get(id)) ?? current };
      }
    },

    votes: (id) => store.votes(id),

    followers: (record) => followersOf(record, now()),

    onCreated(fn) {
      createdListeners.push(fn);
    },

    onApprovedAtSubmission(fn) {
      approvedAtSubmissionListeners.push(fn);
    },

    onStatusChanged(fn) {
      changedListeners.push(fn);
    },

    onVoteRecorded(fn) {
      voteListeners.push(fn);
    },

    onBreakGlass(fn) {
      breakGlassListeners.push(fn);
    },

    async reviewBreakGlass(id, reviewer, comment, via) {
      const use = await store.breakGlass.use(id);
      const record = await store.get(id);
      if (use === undefined || record === undefined) return { kind: 'not-found' };
      const text = comment.trim();
      if (!saysSomething(text)) return { kind: 'comment-required' };
      const requesters = principalNames(record.body.subject);
      if (samePerson(reviewer.id, use.approver) || requesters.has(reviewer.id.toLowerCase()))
        return { kind: 'forbidden', reason: 'own-break-glass' };
      if (!mayReviewBreakGlass(deps.rules().breakGlass, reviewer.id, reviewer.groups, use.approver, record.body.approver_group))
        return { kind: 'forbidden', reason: 'not-reviewer' };
      if (use.reviewedAtMs !== null) return { kind: 'already-reviewed', use };
      const at = now();
      const done = await store.reviewBreakGlass(id, reviewer.id, text, at, via);
      const after = (await store.breakGlass.use(id)) ?? use;
      if (!done) return { kind: 'already-reviewed', use: after };
      logger.info({ requestId: id, reviewer: reviewer.id }, 'break-glass approval reviewed');
      return { kind: 'reviewed', use: after };
    },

    refusalFor,

    decidableFilter(decider) {
      return {
        // its groups, the escalation of a request to one of them, or to this person (isMember)
        ...(decider.groups !== undefined ? { groups: decider.groups, escalatedTo: decider.person } : {}),
        ...(decider.tools !== undefined ? { tools: decider.tools } : {}),
        excludeNames: deciderNames(decider),
        excludeApprovedBy: decider.person,
      };
    },

    async sweep() {
      let count = 0;
      const at = now();
      for (const id of await store.listDuePending(at)) {
        if ((await transition(id, { to: 'expired', atMs: at, actor: 'system', via: 'system' })) !== undefined) count += 1;
      }
      return count + (await closeUnfollowed(at));
    },
  };
}
