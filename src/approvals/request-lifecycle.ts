/**
 * Business rules of the reference Access Request Service: submit (idempotent), read (expiring on
 * read), cancel, decide (four-eyes, group membership), sweep. Outcomes are values; the HTTP
 * routes and the approver page map them to responses.
 *
 * Implements the backend half of SEP-2848's approval-backend contract as the AuthZEN ARAP
 * worked example (DESIGN.md §5). Every status change is a compare-and-set from `pending` in the
 * store and then one callback (when the request has a `callback_url`).
 * Deliberately does not: authenticate callers (routes do), run automatic resolvers, or extend
 * deadlines.
 */
import { createHash, randomBytes } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import type { Logger } from 'pino';
import type { AccessRequestBody, WireApproval } from './arap-wire.js';
import type { CallbackDispatcher } from './callbacks.js';
import type { Approver } from './http-auth.js';
import type { AccessRequestRecord, ApprovalStore, Transition } from './store.js';

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
  | { kind: 'cancelled'; record: AccessRequestRecord }
  | { kind: 'not-pending'; record: AccessRequestRecord }
  | { kind: 'not-found' };

/** Why an approver may not decide a request. */
export type DecideRefusal = 'not-in-group' | 'own-request';

/** Result of {@link RequestLifecycle.decide}. */
export type DecideOutcome =
  | { kind: 'decided'; record: AccessRequestRecord }
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
   * Decide as `approver`. Refused when the approver is not in the request's group, or is the
   * requester (`subject.sub`) or any actor in the requester's `act` chain (four-eyes).
   * Approve → `approved` with approval material valid for `approvalValidityMs`; deny → `denied`.
   */
  decide(id: string, approver: Approver, decision: 'approve' | 'deny', comment?: string): DecideOutcome;
  /** Whether `approver` may decide `record` (ignoring its status). */
  refusalFor(approver: Approver, record: AccessRequestRecord): DecideRefusal | null;
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
}

/** Create the lifecycle over a store and a callback dispatcher. */
export function createRequestLifecycle(deps: RequestLifecycleDeps): RequestLifecycle {
  const { store, callbacks, now, logger } = deps;

  function changed(record: AccessRequestRecord): AccessRequestRecord {
    logger.info({ requestId: record.id, status: record.status, actor: record.resolvedBy }, 'access request status changed');
    const url = record.body.callback_url;
    if (url !== undefined) {
      callbacks.notify({ url, requestId: record.id, status: record.status, generation: record.body.generation });
    }
    return record;
  }

  function transition(id: string, t: Transition): AccessRequestRecord | undefined {
    const updated = store.transitionFromPending(id, t);
    return updated === undefined ? undefined : changed(updated);
  }

  function expireIfDue(record: AccessRequestRecord): AccessRequestRecord {
    const at = now();
    if (record.status !== 'pending' || at < record.expiresAtMs) return record;
    return transition(record.id, { to: 'expired', atMs: at, actor: 'system' }) ?? store.get(record.id) ?? record;
  }

  function refusalFor(approver: Approver, record: AccessRequestRecord): DecideRefusal | null {
    if (!approver.groups.includes(record.body.approver_group)) return 'not-in-group';
    const subject = record.body.subject;
    if (approver.id === subject.sub || (subject.act ?? []).some((a) => a.sub === approver.id)) return 'own-request';
    return null;
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
      const record = store.insert(
        { id: randomId('ar_'), idempotencyKey, bodyHash, body, createdAtMs: at, expiresAtMs },
        body.subject.sub,
      );
      logger.info(
        { requestId: record.id, tool: body.resource.id, approverGroup: body.approver_group, generation: body.generation },
        'access request submitted',
      );
      return { kind: 'created', record };
    },

    read,

    cancel(id) {
      const current = read(id);
      if (current === undefined) return { kind: 'not-found' };
      if (current.status === 'cancelled') return { kind: 'cancelled', record: current };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      const updated = transition(id, { to: 'cancelled', atMs: now(), actor: 'client' });
      if (updated !== undefined) return { kind: 'cancelled', record: updated };
      const raced = store.get(id) ?? current;
      return raced.status === 'cancelled' ? { kind: 'cancelled', record: raced } : { kind: 'not-pending', record: raced };
    },

    decide(id, approver, decision, comment) {
      const current = read(id);
      if (current === undefined) return { kind: 'not-found' };
      const refusal = refusalFor(approver, current);
      if (refusal !== null) return { kind: 'forbidden', reason: refusal };
      if (current.status !== 'pending') return { kind: 'not-pending', record: current };
      const at = now();
      const t: Transition =
        decision === 'approve'
          ? {
              to: 'approved',
              atMs: at,
              actor: approver.id,
              approval: {
                id: randomId('apv_'),
                approved_at: new Date(at).toISOString(),
                approved_until: new Date(at + deps.approvalValidityMs).toISOString(),
                state: 'approved',
                approvers: [approver.id],
              } satisfies WireApproval,
            }
          : { to: 'denied', atMs: at, actor: approver.id };
      if (comment !== undefined && comment !== '') t.comment = comment;
      const updated = transition(id, t);
      if (updated !== undefined) return { kind: 'decided', record: updated };
      return { kind: 'not-pending', record: store.get(id) ?? current };
    },

    refusalFor,

    sweep() {
      let count = 0;
      const at = now();
      for (const id of store.listDuePending(at)) {
        if (transition(id, { to: 'expired', atMs: at, actor: 'system' }) !== undefined) count += 1;
      }
      return count;
    },
  };
}
