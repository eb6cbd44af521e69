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
import type { AccessRequestBody } from '@countersign/arap';
import type { CallbackDispatcher } from './api/callbacks.js';
import { matchingStepUpRule, requiredApprovals, stepUpReason, unfollowedRuleOf, type ApprovalRules } from './deciders/approval-rules.js';
import { followerSummary, isUnfollowed, type FollowerSummary } from './followers.js';
import { deciderNames, type Decider, type Decision } from './deciders/decider.js';
import { principalNames } from './principal-names.js';
import type {
  AccessRequestRecord,
  ApprovalStore,
  ApprovalVote,
  PendingKey,
  RequestFilter,
  StepUpProof,
  Transition,
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
  | 'unfollowed';

/** Result of {@link RequestLifecycle.decide}. `recorded`: a partial approval, the quorum is not met yet. */
export type DecideOutcome =
  | { kind: 'decided'; record: AccessRequestRecord }
  | { kind: 'recorded'; record: AccessRequestRecord; votes: ApprovalVote[] }
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
  submit(idempotencyKey: string, body: AccessRequestBody): SubmitOutcome;
  /** Read a request; a pending one at or past its deadline is expired first (persisted + callback). */
  read(id: string): AccessRequestRecord | undefined;
  /** Cancel: pending → cancelled; already cancelled → `cancelled` (idempotent); else `not-pending`. */
  cancel(id: string): CancelOutcome;
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
   */
  decide(
    id: string,
    decider: Decider,
    decision: Decision,
    comment?: string,
    rule?: string,
    stepUp?: StepUpProof,
    confirmUnfollowed?: boolean,
  ): DecideOutcome;
  /** Whether `decider` may decide `record` (ignoring its status; `already-approved` included). */
  refusalFor(decider: Decider, record: AccessRequestRecord): DecideRefusal | null;
  /**
   * The store filter of the pending requests `decider` may decide now: the SQL form of
   * {@link RequestLifecycle.refusalFor} returning null (its groups and tools, not a request of any
   * of its names, not one it already approved), for paging and counting in the store.
   */
  decidableFilter(decider: Decider): RequestFilter;
  /** Approvals recorded on a request so far, oldest first. */
  votes(id: string): ApprovalVote[];
  /** Who follows the request's task now, under the rules' `unfollowed` option (`followers.ts`). */
  followers(record: AccessRequestRecord): FollowerSummary;
  /** Call `fn` after each newly created request (risk engine, ITSM notification). `fn` must not throw. */
  onCreated(fn: (record: AccessRequestRecord) => void): void;
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
  sweep(): number;
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
}

/** Create the lifecycle over a store and a callback dispatcher. */
export function createRequestLifecycle(deps: RequestLifecycleDeps): RequestLifecycle {
  const { store, callbacks, now, logger } = deps;
  const createdListeners: Array<(record: AccessRequestRecord) => void> = [];
  const changedListeners: Array<(record: AccessRequestRecord) => void> = [];
  const voteListeners: Array<(record: AccessRequestRecord) => void> = [];

  function changed(record: AccessRequestRecord): AccessRequestRecord {
    logger.info({ requestId: record.id, status: record.status, actor: record.resolvedBy }, 'access request status changed');
    // The store wrote the callback's outbox row with the change; deliver it in the background.
    if (record.body.callback_url !== undefined) callbacks.wake();
    for (const fn of changedListeners) fn(record);
    return record;
  }

  function transition(id: string, t: Transition): AccessRequestRecord | undefined {
    const updated = store.transitionFromPending(id, t);
    return updated === undefined ? undefined : changed(updated);
  }

  function expireIfDue(record: AccessRequestRecord): AccessRequestRecord {
    const at = now();
    if (record.status !== 'pending' || at < record.expiresAtMs) return record;
    return transition(record.id, { to: 'expired', atMs: at, actor: 'system', via: 'system' }) ?? store.get(record.id) ?? record;
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
   * `id` in either role: one vote per person, whether in their own right or for a delegator.
   */
  function alreadyVoted(decider: Decider, id: string): boolean {
    const humans = [decider.person, ...(decider.castBy !== undefined ? [decider.castBy] : [])];
    return store.votes(id).some((v) => humans.some((h) => samePerson(v.approver, h) || (v.castBy != null && samePerson(v.castBy, h))));
  }

  function refusalFor(decider: Decider, record: AccessRequestRecord): DecideRefusal | null {
    const scope = scopeRefusal(decider, record);
    if (scope !== null) return scope;
    if (alreadyVoted(decider, record.id)) return 'already-approved';
    return null;
  }

  /** Whether `decider`'s approval counts towards `record`'s quorum (a member of its group or escalation, or final). */
  function countsTowardsQuorum(decider: Decider, record: AccessRequestRecord): boolean {
    return decider.final === true || record.requiredApprovals <= 1 || (decider.groups !== undefined && isMember(decider, record));
  }

  function followersOf(record: AccessRequestRecord, at: number): FollowerSummary {
    const taskRef = record.body.task_ref;
    const followers = taskRef === undefined ? [] : store.followers.forTask(taskRef);
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
   * `unfollowed`. Reads every pending request, a page at a time; returns how many it closed.
   */
  function closeUnfollowed(at: number): number {
    const rule = unfollowedRuleOf(deps.rules());
    if (rule.action !== 'close') return 0;
    let count = 0;
    let after: PendingKey | undefined;
    for (;;) {
      const page = store.pagePending({}, { limit: 500, ...(after !== undefined ? { after } : {}) });
      for (const r of page.records) {
        const due = followersOf(r, at).unfollowedAtMs;
        if (due === null || at < due + rule.graceMs) continue;
        const closed = transition(r.id, {
          to: 'expired',
          atMs: at,
          actor: 'system',
          via: 'system',
          rule: 'unfollowed',
          comment: UNFOLLOWED_CLOSE_COMMENT,
        });
        if (closed === undefined) continue;
        store.followers.markClosedUnfollowed(r.id, at);
        count += 1;
      }
      const last = page.records[page.records.length - 1];
      if (!page.hasAfter || last === undefined) return count;
      after = { createdAtMs: last.createdAtMs, id: last.id };
    }
  }

  function read(id: string): AccessRequestRecord | undefined {
    const record = store.get(id);
    return record === undefined ? undefined : expireIfDue(record);
  }

  return {
    submit(idempotencyKey, body) {
      const bodyHash = canonicalHash(body);
      const existing = store.getByIdempotencyKey(idempotencyKey);
      if (existing !== undefined) {
        return existing.bodyHash === bodyHash ? { kind: 'replayed', record: expireIfDue(existing) } : { kind: 'conflict' };
      }
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
      const record = store.insert(
        {
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
        },
        body.subject.sub,
      );
      logger.info(
        {
          requestId: record.id,
          tool: body.resource.id,
          approverGroup: body.approver_group,
          generation: body.generation,
          requiredApprovals: quorum.approvals,
        },
        'access request submitted',
      );
      for (const fn of createdListeners) fn(record);
      return { kind: 'created', record: store.get(record.id) ?? record };
    },

    read,

    cancel(id) {
      const current = read(id);
      if (current === undefined) return { kind: 'not-found' };
      if (current.status === 'cancelled') return { kind: 'cancelled', record: current };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      const updated = transition(id, { to: 'cancelled', atMs: now(), actor: 'client', via: 'client' });
      if (updated !== undefined) return { kind: 'cancelled', record: updated };
      const raced = store.get(id) ?? current;
      return raced.status === 'cancelled' ? { kind: 'cancelled', record: raced } : { kind: 'not-pending', record: raced };
    },

    decide(id, decider, decision, comment, rule, stepUp, confirmUnfollowed) {
      const current = read(id);
      if (current === undefined) return { kind: 'not-found' };
      const refusal = scopeRefusal(decider, current);
      if (refusal !== null) return { kind: 'forbidden', reason: refusal };
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
        const updated = transition(id, t);
        if (updated !== undefined) return { kind: 'decided', record: updated };
        return { kind: 'not-pending', record: store.get(id) ?? current };
      }
      if (!countsTowardsQuorum(decider, current)) return { kind: 'forbidden', reason: 'quorum-needs-members' };
      if (
        current.stepUpRule !== null &&
        (stepUp === undefined || stepUp.binding_digest !== current.body.binding_digest || stepUp.request_id !== current.id)
      ) {
        return { kind: 'forbidden', reason: 'step-up-required' };
      }
      const unfollowed = isUnfollowed(followersOf(current, at), at);
      if (unfollowed && confirmUnfollowed !== true) return { kind: 'forbidden', reason: 'unfollowed' };
      if (alreadyVoted(decider, id)) return { kind: 'forbidden', reason: 'already-approved' };
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
      const result = store.approve(id, vote, (approvers) => {
        const proofs = store.votes(id).flatMap((v) => (v.stepUp != null ? [{ approver: v.approver, ...v.stepUp }] : []));
        return {
          id: randomId('apv_'),
          approved_at: new Date(at).toISOString(),
          approved_until: new Date(at + deps.approvalValidityMs).toISOString(),
          state: 'approved',
          approvers,
          ...(proofs.length > 0 ? { step_up: proofs } : {}),
        };
      });
      switch (result.kind) {
        case 'approved':
          return { kind: 'decided', record: changed(result.record) };
        case 'endorsed':
          logger.info(
            { requestId: id, actor: decider.id, votes: store.votes(id).length, required: result.record.requiredApprovals },
            'partial approval recorded',
          );
          for (const fn of voteListeners) fn(result.record);
          return { kind: 'recorded', record: result.record, votes: store.votes(id) };
        case 'already-approved-by':
          return { kind: 'forbidden', reason: 'already-approved' };
        case 'not-pending':
          return { kind: 'not-pending', record: store.get(id) ?? current };
      }
    },

    votes: (id) => store.votes(id),

    followers: (record) => followersOf(record, now()),

    onCreated(fn) {
      createdListeners.push(fn);
    },

    onStatusChanged(fn) {
      changedListeners.push(fn);
    },

    onVoteRecorded(fn) {
      voteListeners.push(fn);
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

    sweep() {
      let count = 0;
      const at = now();
      for (const id of store.listDuePending(at)) {
        if (transition(id, { to: 'expired', atMs: at, actor: 'system', via: 'system' }) !== undefined) count += 1;
      }
      return count + closeUnfollowed(at);
    },
  };
}
