/**
 * Delegation between approvers (out of office): an approver names a colleague who may decide for
 * them until a time. The delegate then decides under their own name "for" the delegator: the
 * audit row's actor is the delegate and its `on_behalf_of` the delegator, the vote counts as the
 * delegator's (one per person), and the delegator's groups apply.
 *
 * Separation of duties holds for both: neither may be the requester (four-eyes compares the
 * delegate's and the delegator's names, `request-lifecycle.ts`), and a person votes once in either
 * role (a delegate who approved in their own right cannot approve again for a delegator, nor the
 * other way round). Delegations are direct: if alice delegates to bob and bob to carol, carol may
 * decide for bob but not for alice. An expired or revoked delegation does nothing.
 * Deliberately does not: delegate a single request, or let an operator delegate for someone.
 */
import type { Approver } from './api/http-auth.js';
import type { Decider } from './deciders/decider.js';
import { randomId } from './request-lifecycle.js';
import type { Delegation, ApprovalStore } from './store/store.js';

/** Longest delegation accepted: 90 days in ms. */
export const MAX_DELEGATION_MS = 90 * 24 * 60 * 60 * 1000;

/** Why a delegation was not created (each with a sentence in {@link DELEGATION_REFUSAL_DETAIL}). */
export type DelegationRefusal = 'unknown-delegate' | 'self' | 'until-not-future' | 'too-long';

/** Problem detail for each refusal (no input echoed). */
export const DELEGATION_REFUSAL_DETAIL: Record<DelegationRefusal, string> = {
  'unknown-delegate': 'The delegate must be a configured approver.',
  self: 'An approver cannot delegate to themselves.',
  'until-not-future': 'until must be in the future.',
  'too-long': 'A delegation may last at most 90 days.',
};

/** Result of {@link createDelegation}. */
export type CreateDelegationOutcome = { kind: 'created'; delegation: Delegation } | { kind: 'refused'; reason: DelegationRefusal };

/**
 * Let `delegateId` decide for `delegator` from `nowMs` until `untilMs` (ms since epoch, at most
 * {@link MAX_DELEGATION_MS} ahead). The delegate must be another configured approver (ids compared
 * case-insensitively; stored with the configured spelling).
 */
export async function createDelegation(
  store: ApprovalStore,
  approvers: readonly Approver[],
  delegator: Approver,
  delegateId: string,
  untilMs: number,
  nowMs: number,
): Promise<CreateDelegationOutcome> {
  const delegate = approvers.find((a) => a.id.toLowerCase() === delegateId.trim().toLowerCase());
  if (delegate === undefined) return { kind: 'refused', reason: 'unknown-delegate' };
  if (delegate.id.toLowerCase() === delegator.id.toLowerCase()) return { kind: 'refused', reason: 'self' };
  if (!(untilMs > nowMs)) return { kind: 'refused', reason: 'until-not-future' };
  if (untilMs - nowMs > MAX_DELEGATION_MS) return { kind: 'refused', reason: 'too-long' };
  const delegation = await store.delegations.create({
    id: randomId('dlg_'),
    delegator: delegator.id,
    delegate: delegate.id,
    createdAtMs: nowMs,
    untilMs,
  });
  return { kind: 'created', delegation };
}

/**
 * The decider for `delegate` acting for `delegatorId` through `via`, or null when no active
 * delegation runs directly from that (configured) approver to `delegate` at `nowMs`.
 */
export async function delegatedDecider(
  store: ApprovalStore,
  approvers: readonly Approver[],
  delegate: Approver,
  delegatorId: string,
  via: 'inbox' | 'api',
  nowMs: number,
): Promise<Decider | null> {
  const delegations = await store.delegations.activeTo(delegate.id, nowMs);
  const active = delegations.find((d) => d.delegator.toLowerCase() === delegatorId.toLowerCase());
  if (active === undefined) return null;
  const delegator = approvers.find((a) => a.id === active.delegator);
  if (delegator === undefined) return null;
  return { id: delegate.id, person: delegator.id, castBy: delegate.id, names: [delegate.id], groups: delegator.groups, via };
}
