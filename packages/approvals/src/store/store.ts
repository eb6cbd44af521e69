/**
 * SQLite persistence for the reference Access Request Service (better-sqlite3, WAL), behind an
 * asynchronous interface ({@link ApprovalStore}: every method returns a promise, so another
 * database can serve it; the synchronous SQLite code is wrapped by `async.ts`).
 *
 * Eleven tables (and the notification channels' two, see `ChannelStore`): `grants` and `grant_uses`
 * (an approver's bounded permits and each request they approved, `grants-store.ts`), `narrowing_permits` (an
 * approver's counter-proposals, each a single-use permit for one narrower call, see `NarrowingPermit`), `callback_outbox`
 * (status-change callbacks to deliver, written in the transaction of the change; see
 * `CallbackOutboxStore`), `request_principals` (see below), `access_requests` (one row per request,
 * with its idempotency key, the SHA-256 of the canonical body, the number of distinct approvals it
 * needs, and when it was reminded and escalated, and to whom), `approval_votes` (one row per person
 * who approved a request, primary key (request, person): a person counts once whatever the channel;
 * `cast_by` names a delegate voting for that person), `inbox_sessions` (server-side inbox sessions,
 * see `packages/approvals/src/inbox/session.ts`), `delegations` (who decides for whom until when), passkeys
 * (see `PasskeyStore`) and `audit_events` (append-only: submitted, endorsed (a partial approval),
 * approved, denied, expired, cancelled, notified, reminded, escalated, narrowed, permit-used, granted, grant-used — who, for whom, through which
 * channel, which rule, when, comment).
 * `request_principals` holds each request's lower-cased requester names (sub and `act` chain).
 * The schema is created on open and older files are migrated (`PRAGMA user_version` 0 → 8); the break-glass tables are
 * `break-glass-store.ts`'s, `request_opens` is `analytics-store.ts`'s, `grants` and `grant_uses` are `grants-store.ts`'s.
 * State changes are compare-and-set from `pending` inside one transaction with their audit row,
 * so two racing deciders (or a decision racing expiry or cancel) cannot both win, and the vote
 * that completes a quorum is the one that approves. Every read-check-write is one method (one
 * transaction); callers never rely on two calls running without another request's in between.
 * Deliberately does not: decide business rules (see `request-lifecycle.ts`), purge old rows
 * (retention of the stored arguments is the operator's job), or encrypt at rest.
 */
import Database from 'better-sqlite3';
import { AccessRequestBodySchema, type AccessRequestBody, type RequestStatus, type WireApproval } from '@countersign/arap';
import { AUDIT_EVENT_KINDS, createSchema, requesterNames } from './store-schema.js';
import { createFollowerStore, type FollowerStore } from './followers-store.js';
import { createBreakGlassStore, type BreakGlassStore, type BreakGlassUse } from './break-glass-store.js';
import { asyncOf, type Sync } from './async.js';
import { createAnalyticsStore, type AnalyticsStore } from './analytics-store.js';
import { createGrantStore, type Grant, type GrantStore, type GrantUse } from './grants-store.js';

export { AUDIT_EVENT_KINDS };

/** One of {@link AUDIT_EVENT_KINDS}. */
export type AuditEventKind = (typeof AUDIT_EVENT_KINDS)[number];

/**
 * Channel a decision came through: `inbox` (web page), `api` (HTTP Basic approver API or the
 * CLI), `agent` (supervising agent credential), `risk-engine`, `itsm` (signed inbound decision),
 * `slack` (a button of the Slack message, `packages/approvals/src/notify/slack-interactions.ts`), `email`
 * (the decision page of an emailed link, `packages/approvals/src/notify/email-link-routes.tsx`),
 * `system` (expiry), `client` (the MCP server's cancel or submit).
 */
export type DecisionChannel = 'inbox' | 'api' | 'agent' | 'risk-engine' | 'itsm' | 'slack' | 'email' | 'system' | 'client';

/** One stored access request. Times are ms since the Unix epoch. */
export interface AccessRequestRecord {
  id: string;
  idempotencyKey: string;
  /** Hex SHA-256 of the JCS-canonical validated body (idempotent-replay comparison). */
  bodyHash: string;
  /** The validated submission body (contains the tool arguments: sensitive). */
  body: AccessRequestBody;
  status: RequestStatus;
  createdAtMs: number;
  expiresAtMs: number;
  /** When the request left `pending`; null while pending. */
  resolvedAtMs: number | null;
  /** Approver id for approved/denied, `client` for cancelled, `system` for expired; null while pending. */
  resolvedBy: string | null;
  /** Approval material, only when approved. */
  approval: WireApproval | null;
  /** Distinct approvals needed before the request is approved (1 unless a quorum rule matched). */
  requiredApprovals: number;
  /** Id of the quorum rule that set `requiredApprovals`, or null. */
  quorumRule: string | null;
  /**
   * Why that quorum rule applies, in the approver's words (its `reason` or the built-in four-eyes
   * sentence, `quorumReason` in `../deciders/approval-rules.ts`), fixed at submission; null without
   * a quorum rule, and for requests stored before schema version 4 (absent on inserts: null).
   */
  quorumReason: string | null;
  /** When the group was reminded (ms since epoch), or null: never. */
  remindedAtMs: number | null;
  /** When the request was escalated (ms since epoch), or null: never. */
  escalatedAtMs: number | null;
  /** Who may also decide since the escalation: a fallback group and/or one approver; null before. */
  escalation: { group: string | null; approver: string | null } | null;
  /** Id of the step-up rule that makes approving need a passkey, or null (absent on inserts: null). */
  stepUpRule: string | null;
  /** Why approving needs a passkey (`stepUpReason` in `../deciders/approval-rules.ts`), fixed at submission, or null (absent on inserts: null). */
  stepUpReason: string | null;
}

/**
 * Proof that a person confirmed an approval with a user-verified WebAuthn assertion over a
 * single-use challenge issued for this request, which begins with its binding digest
 * (`packages/approvals/src/inbox/passkeys.ts`). Proofs recorded before those challenges lack
 * `binding_digest` and `request_id` (their challenge was the digest itself).
 */
export interface StepUpProof {
  method: 'webauthn';
  /** Base64url credential id of the passkey used. */
  credential_id: string;
  user_verified: true;
  /** The challenge the assertion signed: `<binding digest>.<nonce>`. */
  challenge: string;
  /** The binding digest of the approved request (the challenge's first part). */
  binding_digest?: string;
  /** The request the challenge was issued for. */
  request_id?: string;
  /** Step-up rule that required it. */
  rule: string;
  /** ISO 8601. */
  verified_at: string;
}

/** A registered passkey of an approver (WebAuthn credential). */
export interface PasskeyRecord {
  /** Base64url credential id. */
  id: string;
  approver: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  createdAtMs: number;
}

/**
 * One person's approval of a request (partial until the quorum is met). `approver` is the quorum
 * identity (the person: `bob` whether through the inbox, the API or ITSM; `agent:<id>`);
 * `actor` the audit identity (`itsm:bob`), default `approver`. `atMs` ms since epoch.
 */
export interface ApprovalVote {
  approver: string;
  actor?: string;
  via: DecisionChannel;
  comment: string | null;
  atMs: number;
  /** The delegate who cast this vote for `approver` (see {@link Delegation}); absent or null: `approver` in person. */
  castBy?: string | null;
  /** The passkey confirmation of this approval, when its request required one. */
  stepUp?: StepUpProof | null;
}

/** One audit row. `at` in ms since epoch. */
export interface AuditEvent {
  seq: number;
  requestId: string;
  event: AuditEventKind;
  actor: string;
  comment: string | null;
  atMs: number;
  /** Channel, or null on rows written before channels were recorded. */
  via: DecisionChannel | null;
  /** Id of the risk or quorum rule that decided, or null. */
  rule: string | null;
  /** The delegator a delegate (`actor`) decided for, or null. */
  onBehalfOf: string | null;
}

/** A compare-and-set from `pending` and the audit row that records it. */
export interface Transition {
  to: Exclude<RequestStatus, 'pending' | 'failed'>;
  atMs: number;
  actor: string;
  comment?: string;
  approval?: WireApproval;
  via?: DecisionChannel;
  rule?: string;
  /** The delegator `actor` decides for (a delegate's decision). */
  onBehalfOf?: string;
}

/** Outcome of {@link ApprovalStore.approve}. */
export type ApproveResult =
  | { kind: 'approved'; record: AccessRequestRecord }
  | { kind: 'endorsed'; record: AccessRequestRecord }
  | { kind: 'already-approved-by'; record: AccessRequestRecord }
  | { kind: 'not-pending' };

/**
 * Thrown by {@link ApprovalStore.insert} and {@link ApprovalStore.insertWithPermit} when a request
 * with the new one's idempotency key exists (checked in the insert's transaction; nothing written):
 * `existing` is that request.
 */
export class IdempotencyKeyTaken extends Error {
  constructor(readonly existing: AccessRequestRecord) {
    super(`idempotency key already used by request ${existing.id}`);
    this.name = 'IdempotencyKeyTaken';
  }
}

/**
 * Builds a request's approval material inside the store's transaction that approves it, from the
 * approvers (oldest first), the votes recorded on the request (oldest first; for a vote, itself
 * included) and, for an approval by a grant, the grant and its use. Must not call the store.
 */
export type MakeApproval = (approvers: string[], votes: ApprovalVote[], grant?: { grant: Grant; use: GrantUse }) => WireApproval;

/** The break-glass half of {@link ApprovalStore.approveByBreakGlass}. Times ms since epoch. */
export interface BreakGlassApproval {
  /** Why glass is broken (the session's reason for a new session, the use's, and the audit comment). */
  reason: string;
  /** How long a new session lasts. */
  windowMs: number;
  /** At most this many sessions opened by one person in `dayMs`. */
  maxPerDay: number;
  dayMs: number;
  /** The id of a session opened by this approval. */
  newSessionId: string;
  /** When the review of the use is overdue. */
  reviewDueMs: number;
  /** Approver ids who could have decided the request and were skipped. */
  skipped: string[];
}

/** Outcome of {@link ApprovalStore.approveByBreakGlass}. */
export type BreakGlassApproveResult =
  | { kind: 'approved'; record: AccessRequestRecord; use: BreakGlassUse }
  /** `maxPerDay` sessions were opened in the last day; one more may open at `retryAtMs`. */
  | { kind: 'limit'; retryAtMs: number }
  | { kind: 'already-approved-by' }
  | { kind: 'not-pending' };

/**
 * An approver's counter-proposal, recorded as a permit (`narrowing_permits`): the request it
 * narrowed (`requestId`, which ended denied), the narrower call (`tool`, complete `arguments` as the
 * service holds them) and its `bindingDigest` (`permitDigest` in `../narrowing-permits.ts`, the
 * hidden fields named; a record, not the lookup key: `permitMatches` decides which request uses it), the
 * requester and approver group it is for, who proposed it through which channel, and its single
 * use: unused until `usedAtMs`, then naming the request it approved. Times ms since epoch.
 */
export interface NarrowingPermit {
  id: string;
  requestId: string;
  bindingDigest: string;
  tool: string;
  arguments: Record<string, unknown>;
  requesterSub: string;
  approverGroup: string;
  /** The approver who proposed the narrower call (their person id). */
  proposedBy: string;
  via: DecisionChannel;
  createdAtMs: number;
  expiresAtMs: number;
  usedAtMs: number | null;
  usedByRequest: string | null;
}

/** Most usable permits of one tool, requester and group {@link ApprovalStore.insertWithPermit} compares a new request with. */
export const PERMIT_CANDIDATES = 100;

/**
 * What a new request must match to be approved at submission by a standing permit
 * ({@link ApprovalStore.insertWithPermit}), at `atMs` (ms since epoch): a counter-proposal for
 * `tool`, `requesterSub` and `approverGroup` for which `matches` is true (given the permit and the
 * body of the request it was proposed on; `permitMatches` in `../narrowing-permits.ts`);
 * `grantFits` says whether a grant's constraints (and anything else the caller checks) admit the
 * request — absent: no grant is tried.
 */
export interface StandingMatch {
  tool: string;
  requesterSub: string;
  approverGroup: string;
  atMs: number;
  matches: (permit: NarrowingPermit, proposedOn: AccessRequestBody) => boolean;
  grantFits?: (grant: Grant) => boolean;
}

/** Filters of the list queries; each absent field matches everything. */
export interface RequestFilter {
  /** Requests of these groups, or escalated to one of them (or to `escalatedTo`). */
  groups?: readonly string[];
  /** With `groups`: also requests escalated to this approver id. */
  escalatedTo?: string;
  tools?: readonly string[];
  tool?: string;
  /** One approver group (within `groups`, when both are given). */
  group?: string;
  requester?: string;
  /**
   * Leave out requests whose requester (`subject.sub`) or any actor in its `act` chain has one of
   * these names, compared lower-cased as `String.prototype.toLowerCase` does (four-eyes, as
   * `principalNames` in `src/auth/principal-keys.ts`; table `request_principals`).
   */
  excludeNames?: readonly string[];
  /** Leave out requests this person already approved, in their own right (`approval_votes.approver`) or as a delegate (`cast_by`); compared case-insensitively. */
  excludeApprovedBy?: string;
}

/** A position in the pending order (oldest first): `created_at_ms`, ties broken by `id`. */
export interface PendingKey {
  /** ms since the Unix epoch. */
  createdAtMs: number;
  id: string;
}

/** Which page of {@link ApprovalStore.pagePending}: at most `limit` rows after `after` or before `before` (keyset, never an offset). */
export interface PendingPageRequest {
  limit: number;
  after?: PendingKey;
  before?: PendingKey;
}

/** One page of pending requests, oldest first. */
export interface PendingPage {
  records: AccessRequestRecord[];
  /** Pending requests matching the filter, on every page. */
  total: number;
  /** Whether rows exist after the last record of this page. */
  hasAfter: boolean;
  /** Whether rows exist before the first record of this page. */
  hasBefore: boolean;
}

/** One status-change callback to deliver (`callback_outbox`). Times in ms since epoch. */
export interface CallbackOutboxRow {
  seq: number;
  requestId: string;
  url: string;
  /** The receiver: `url`'s scheme, host and port (the unit of per-receiver concurrency). */
  origin: string;
  status: RequestStatus;
  generation: number;
  /** `refused`: the receiver answered a 4xx that no retry can change (e.g. 409, already had it). */
  state: 'pending' | 'delivered' | 'refused' | 'gave-up';
  /** Attempts made so far. */
  attempts: number;
  /** When the row is next due (while pending; an attempt in flight pushes it past its timeout). */
  nextAttemptAtMs: number;
  createdAtMs: number;
  finishedAtMs: number | null;
  /** Why the last attempt failed (`HTTP 503`, `TimeoutError`…), or null. */
  lastFailure: string | null;
}

/**
 * The callback outbox. A row is written in the transaction of every status change of a request
 * with a `callback_url` (so it survives a crash right after the change); the dispatcher in
 * `../api/callbacks.ts` delivers it.
 */
export interface CallbackOutboxStore {
  /** Pending rows due at `nowMs` whose receiver origin is not in `skipOrigins`, oldest due first, at most `limit`. */
  due(nowMs: number, limit: number, skipOrigins?: readonly string[]): Promise<CallbackOutboxRow[]>;
  /** The earliest `nextAttemptAtMs` of a pending row whose origin is not in `skipOrigins`, or null when there is none. */
  nextDueAtMs(skipOrigins?: readonly string[]): Promise<number | null>;
  /**
   * Claim the row for an attempt: when it is still pending and due at `nowMs` (compare-and-set), it
   * is not due again before `untilMs` (a crash mid-attempt retries after it); false (nothing
   * written) when it was not, e.g. another dispatcher claimed it first.
   */
  lease(seq: number, nowMs: number, untilMs: number): Promise<boolean>;
  /** The row was delivered after `attempts` attempts (compare-and-set on `pending`, as the three below). */
  delivered(seq: number, attempts: number, atMs: number): Promise<void>;
  retryAt(seq: number, attempts: number, nextAtMs: number, failure: string): Promise<void>;
  gaveUp(seq: number, attempts: number, atMs: number, failure: string): Promise<void>;
  refused(seq: number, attempts: number, atMs: number, failure: string): Promise<void>;
  /** Every row of a request, oldest first (tests, operators). */
  forRequest(requestId: string): Promise<CallbackOutboxRow[]>;
  /** Rows per state (absent: none), for `countersign_callback_outbox`. */
  counts(): Promise<Partial<Record<CallbackOutboxRow['state'], number>>>;
}

/**
 * The store's API. Every method returns a promise, so that an implementation over a network
 * database serves the same interface; `openApprovalStore` is the SQLite one (better-sqlite3, each
 * operation one transaction, wrapped by `async.ts`). Each `await` is a point where another
 * request's operations may run: a read-check-write that must be atomic is one method here (a
 * compare-and-set or one transaction), never a sequence of calls. There is no generic transaction.
 */
export interface ApprovalStore {
  /**
   * Insert a new pending request and its `submitted` audit row. Throws {@link IdempotencyKeyTaken}
   * on a duplicate idempotency key (nothing written), and on a duplicate id.
   */
  insert(
    record: Omit<
      AccessRequestRecord,
      | 'status'
      | 'resolvedAtMs'
      | 'resolvedBy'
      | 'approval'
      | 'remindedAtMs'
      | 'escalatedAtMs'
      | 'escalation'
      | 'stepUpRule'
      | 'quorumReason'
      | 'stepUpReason'
    > & { stepUpRule?: string | null; quorumReason?: string | null; stepUpReason?: string | null },
    actor: string,
  ): Promise<AccessRequestRecord>;
  /**
   * Record `vote` on a pending request, in one transaction: a second vote by the same person — its
   * `approver` or `castBy` already an approver or delegate of a vote on it, case-insensitively — is
   * `already-approved-by` (nothing written); a vote that brings the count to `requiredApprovals`
   * (or `final`) moves the request to `approved` with `makeApproval(all approvers, oldest first,
   * all votes, this one included)`; any other vote is `endorsed` (audit row `endorsed`).
   */
  approve(id: string, vote: ApprovalVote & { rule?: string; final?: boolean }, makeApproval: MakeApproval): Promise<ApproveResult>;
  /**
   * A break-glass approval (`../break-glass.ts`) of pending request `id` by `vote` (its `approver`
   * the person breaking glass, `actor` their id, `final` and `rule` as the caller sets them), in one
   * transaction: the person's active break-glass session, or a new one (id `glass.newSessionId`,
   * with `glass.reason`, for `glass.windowMs`) unless `glass.maxPerDay` were opened in the
   * `glass.dayMs` before `vote.atMs` (`limit`, nothing written); the vote and the approval as
   * {@link ApprovalStore.approve}; the use (`glass.skipped` approvers, review due
   * `glass.reviewDueMs`); and its `break-glass` audit row (the actor, the reason, the channel, the
   * session id as rule). Any outcome but `approved` writes nothing (a session it opened is rolled back).
   */
  approveByBreakGlass(
    id: string,
    vote: ApprovalVote & { rule?: string; final?: boolean },
    glass: BreakGlassApproval,
    makeApproval: MakeApproval,
  ): Promise<BreakGlassApproveResult>;
  /**
   * Record the review of request `requestId`'s break-glass approval by `reviewer` with `comment`
   * at `atMs` through `via`, and its `break-glass-reviewed` audit row, in one transaction;
   * compare-and-set on "not yet reviewed": false (nothing written) when it was already, or is unknown.
   */
  reviewBreakGlass(requestId: string, reviewer: string, comment: string, atMs: number, via: DecisionChannel): Promise<boolean>;
  /** Approvals recorded so far, oldest first. */
  votes(id: string): Promise<ApprovalVote[]>;
  /** Append an audit row that changes no state (e.g. `notified`). */
  appendAudit(
    id: string,
    event: AuditEventKind,
    actor: string,
    atMs: number,
    extra?: { comment?: string; via?: DecisionChannel; rule?: string; onBehalfOf?: string },
  ): Promise<void>;
  /** Pending requests not yet marked `reminded` (or `escalated`), oldest first: the reminder timers' candidates. */
  listUnmarkedPending(mark: 'reminded' | 'escalated'): Promise<AccessRequestRecord[]>;
  /**
   * Mark a pending request reminded and append its `reminded` audit row (actor `system`, comment
   * naming the group), in one transaction; compare-and-set on "pending and not yet reminded", so it
   * happens at most once. Returns the updated record, or undefined when it was not (any more) due.
   */
  markReminded(id: string, group: string, atMs: number): Promise<AccessRequestRecord | undefined>;
  /**
   * Mark a pending request escalated to `to` (a group and/or an approver) with its `escalated`
   * audit row; at most once, as {@link ApprovalStore.markReminded}.
   */
  markEscalated(id: string, to: { group: string | null; approver: string | null }, atMs: number): Promise<AccessRequestRecord | undefined>;
  /** Delegations between approvers. */
  delegations: DelegationStore;
  /** Approvers' registered passkeys. */
  passkeys: PasskeyStore;
  /** Pending requests matching `filter`, oldest first (at most `limit`, default 200). */
  listPending(filter?: RequestFilter, limit?: number): Promise<AccessRequestRecord[]>;
  /**
   * One keyset page of pending requests matching `filter`, oldest first (`created_at_ms`, then
   * `id`), with the true count. Rows inserted while a caller pages land after every key it has
   * seen (a later `created_at_ms`), so following `after` visits each row present at the start once.
   */
  pagePending(filter: RequestFilter, page: PendingPageRequest): Promise<PendingPage>;
  /** How many pending requests match `filter`. */
  countPending(filter?: RequestFilter): Promise<number>;
  /** Resolved requests matching `filter`, most recently resolved first (at most `limit`, default 50). */
  listResolved(filter?: RequestFilter, limit?: number): Promise<AccessRequestRecord[]>;
  /** Distinct tools and requesters among pending requests of `groups` (for filter menus). */
  pendingFacets(filter?: RequestFilter): Promise<{ tools: string[]; requesters: string[] }>;
  /** A number that grows on every audit row (the inbox polls it to refresh). */
  changeMark(): Promise<number>;
  get(id: string): Promise<AccessRequestRecord | undefined>;
  getByIdempotencyKey(key: string): Promise<AccessRequestRecord | undefined>;
  /**
   * Move `id` from `pending` to `t.to` (compare-and-set on `pending`, with its audit row and
   * callback outbox row); returns the updated record, or undefined if it was not pending.
   */
  transitionFromPending(id: string, t: Transition): Promise<AccessRequestRecord | undefined>;
  /** Ids of pending requests with `expires_at_ms <= nowMs`. */
  listDuePending(nowMs: number): Promise<string[]>;
  /** Audit trail of one request, oldest first. */
  auditTrail(id: string): Promise<AuditEvent[]>;
  /** Server-side inbox sessions, keyed by the SHA-256 of the session id (the cookie never reaches the file). */
  sessions: InboxSessionStore;
  /** What the notification channels remember: Slack messages to update, email links already used. */
  channels: ChannelStore;
  /** Status-change callbacks to deliver. */
  callbacks: CallbackOutboxStore;
  /** Who follows each request's task, as the MCP server reports it (`followers-store.ts`). */
  followers: FollowerStore;
  /** Break-glass sessions, approvals and their reviews (`break-glass-store.ts`). */
  breakGlass: BreakGlassStore;
  /** When approvers opened requests, and the aggregates the analytics are computed from (`analytics-store.ts`). */
  analytics: AnalyticsStore;
  /**
   * Deny pending `id` with transition `t` (to `denied`), append its `narrowed` audit row (`comment`)
   * and record `permit`, in one transaction; undefined (nothing written) when it was not pending.
   */
  narrow(
    id: string,
    t: Transition & { to: 'denied' },
    comment: string,
    permit: Omit<NarrowingPermit, 'usedAtMs' | 'usedByRequest'>,
  ): Promise<AccessRequestRecord | undefined>;
  /**
   * Insert a new request as {@link ApprovalStore.insert} does and, in the same transaction, approve
   * it by a standing permit when one holds at `atMs`: first the oldest unused counter-proposal permit
   * for `tool`, `requesterSub` and `approverGroup`, among the first {@link PERMIT_CANDIDATES} such,
   * for which `matches` is true (a vote by its proposer through its channel, rule
   * `counter-proposal`, a `permit-used` audit row, `makeApproval([proposer], votes)`); else, when
   * `grantFits` is given, the oldest usable grant for the request's principal, tool and
   * `approverGroup` that `grantFits` accepts and whose use this transaction counts
   * (`grants-store.ts` `consume`): a vote by its creator, rule `grant`, a `grant-used` audit row,
   * `makeApproval([creator], votes, {grant, use})` (`votes`: those recorded before the standing
   * permit's). `permit` and `grant` are null (an ordinary pending request) when none matched.
   */
  insertWithPermit(
    record: Parameters<ApprovalStore['insert']>[0],
    actor: string,
    match: StandingMatch,
    makeApproval: MakeApproval,
  ): Promise<{ record: AccessRequestRecord; permit: NarrowingPermit | null; grant: { grant: Grant; use: GrantUse } | null }>;
  /** Grants and their uses (`grants-store.ts`). */
  grants: GrantStore;
  /**
   * Approve the pending request `id` by grant `grantId` at `atMs`, counting one use, in one
   * transaction (as {@link ApprovalStore.insertWithPermit} does for a new request), when `fits` is
   * true of the grant as that transaction reads it; undefined (nothing written) when the request is
   * not pending, the grant is unknown, `fits` is false or the grant holds no more.
   */
  approveByGrant(
    id: string,
    grantId: string,
    atMs: number,
    fits: (grant: Grant) => boolean,
    makeApproval: MakeApproval,
  ): Promise<AccessRequestRecord | undefined>;
  /**
   * Expire pending `id` with transition `t` (the rules' `unfollowed` rule's `close` action) and mark
   * it closed because nobody followed it (`followers-store.ts`), in one transaction; undefined
   * (nothing written) when it was not pending.
   */
  closeUnfollowed(id: string, t: Transition & { to: 'expired' }): Promise<AccessRequestRecord | undefined>;
  /** The permit proposed on request `requestId` (the one narrowed), if any. */
  permitProposedOn(requestId: string): Promise<NarrowingPermit | undefined>;
  /** The permit that approved request `requestId`, if any. */
  permitUsedBy(requestId: string): Promise<NarrowingPermit | undefined>;
  /** Close the store (idempotent); no method may be called after. */
  close(): Promise<void>;
}

/** A Slack message that announced a request: channel id and message `ts` (Slack's message id). */
export interface SlackMessageRef {
  channel: string;
  ts: string;
}

/** State of the notification channels (`packages/approvals/src/notify/`) in the approval store's file. */
export interface ChannelStore {
  /** Remember a posted Slack message of `requestId` (idempotent). */
  addSlackMessage(requestId: string, ref: SlackMessageRef): Promise<void>;
  /** Every Slack message posted for `requestId`, oldest first. */
  slackMessages(requestId: string): Promise<SlackMessageRef[]>;
  /** Whether the email link `jti` has already decided (a hint for the page: only {@link consumeEmailLink} decides a reuse). */
  emailLinkUsed(jti: string): Promise<boolean>;
  /**
   * Record that the email link `jti` decides (claimed before its decision, released by
   * {@link releaseEmailLink} when that does not happen); false when it was already recorded (a
   * reuse): an insert-if-absent, so of two racing uses exactly one gets true. `atMs` ms since epoch.
   */
  consumeEmailLink(jti: string, requestId: string, approver: string, atMs: number): Promise<boolean>;
  /** Forget the use of email link `jti` recorded by {@link consumeEmailLink} whose decision did not happen (it may decide again). */
  releaseEmailLink(jti: string): Promise<void>;
}

/** One delegation: `delegate` may decide for `delegator` from `createdAtMs` until `untilMs` (ms since epoch). */
export interface Delegation {
  id: string;
  delegator: string;
  delegate: string;
  createdAtMs: number;
  untilMs: number;
  /** When the delegator withdrew it, or null. */
  revokedAtMs: number | null;
}

/** Delegations between approvers. Times ms since epoch; "active" means not revoked and `nowMs < untilMs`. */
export interface DelegationStore {
  /** Insert a new delegation. Throws on `delegator === delegate` (CHECK constraint). */
  create(d: Omit<Delegation, 'revokedAtMs'>): Promise<Delegation>;
  /** Revoke `id` if it belongs to `delegator` and is not yet revoked (compare-and-set); returns whether it did. */
  revoke(id: string, delegator: string, atMs: number): Promise<boolean>;
  /** Active delegations to `delegate` (whom they may decide for), oldest first. */
  activeTo(delegate: string, nowMs: number): Promise<Delegation[]>;
  /** Active delegations from `delegator`, oldest first. */
  activeFrom(delegator: string, nowMs: number): Promise<Delegation[]>;
}

/** Approvers' passkeys. */
export interface PasskeyStore {
  add(p: PasskeyRecord): Promise<void>;
  /** The approver's passkeys, oldest first. */
  forApprover(approver: string): Promise<PasskeyRecord[]>;
  get(id: string): Promise<PasskeyRecord | undefined>;
  /** Store the authenticator's signature counter after a verified assertion. */
  setCounter(id: string, counter: number): Promise<void>;
}

/** Server-side inbox sessions: a session exists until signed out or expired. */
export interface InboxSessionStore {
  create(idHash: string, approver: string, createdAtMs: number, expiresAtMs: number): Promise<void>;
  /** The live session's approver id, or undefined (unknown, signed out, or expired: then deleted). */
  get(idHash: string, nowMs: number): Promise<string | undefined>;
  delete(idHash: string): Promise<void>;
  /** Delete every expired session; returns how many. */
  purgeExpired(nowMs: number): Promise<number>;
}

interface RequestRow {
  id: string;
  idempotency_key: string;
  body_hash: string;
  body_json: string;
  status: RequestStatus;
  created_at_ms: number;
  expires_at_ms: number;
  resolved_at_ms: number | null;
  resolved_by: string | null;
  approval_json: string | null;
  required_approvals: number;
  quorum_rule: string | null;
  reminded_at_ms: number | null;
  escalated_at_ms: number | null;
  escalation_group: string | null;
  escalation_approver: string | null;
  step_up_rule: string | null;
  quorum_reason: string | null;
  step_up_reason: string | null;
}

interface OutboxRowRaw {
  seq: number;
  request_id: string;
  url: string;
  origin: string;
  status: RequestStatus;
  generation: number;
  state: CallbackOutboxRow['state'];
  attempts: number;
  next_attempt_at_ms: number;
  created_at_ms: number;
  finished_at_ms: number | null;
  last_failure: string | null;
}

interface AuditRow {
  seq: number;
  request_id: string;
  event: AuditEventKind;
  actor: string;
  comment: string | null;
  at_ms: number;
  via: DecisionChannel | null;
  rule: string | null;
  on_behalf_of: string | null;
}

interface DelegationRow {
  id: string;
  delegator: string;
  delegate: string;
  created_at_ms: number;
  until_ms: number;
  revoked_at_ms: number | null;
}

const fromDelegationRow = (r: DelegationRow): Delegation => ({
  id: r.id,
  delegator: r.delegator,
  delegate: r.delegate,
  createdAtMs: r.created_at_ms,
  untilMs: r.until_ms,
  revokedAtMs: r.revoked_at_ms,
});

interface PermitRow {
  id: string;
  request_id: string;
  binding_digest: string;
  tool: string;
  arguments_json: string;
  requester_sub: string;
  approver_group: string;
  proposed_by: string;
  via: DecisionChannel;
  created_at_ms: number;
  expires_at_ms: number;
  used_at_ms: number | null;
  used_by_request: string | null;
}

const fromPermitRow = (r: PermitRow): NarrowingPermit => ({
  id: r.id,
  requestId: r.request_id,
  bindingDigest: r.binding_digest,
  tool: r.tool,
  arguments: JSON.parse(r.arguments_json) as Record<string, unknown>,
  requesterSub: r.requester_sub,
  approverGroup: r.approver_group,
  proposedBy: r.proposed_by,
  via: r.via,
  createdAtMs: r.created_at_ms,
  expiresAtMs: r.expires_at_ms,
  usedAtMs: r.used_at_ms,
  usedByRequest: r.used_by_request,
});

function fromRow(row: RequestRow): AccessRequestRecord {
  return {
    id: row.id,
    idempotencyKey: row.idempotency_key,
    bodyHash: row.body_hash,
    body: AccessRequestBodySchema.parse(JSON.parse(row.body_json)),
    status: row.status,
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms,
    resolvedAtMs: row.resolved_at_ms,
    resolvedBy: row.resolved_by,
    approval: row.approval_json === null ? null : (JSON.parse(row.approval_json) as WireApproval),
    requiredApprovals: row.required_approvals,
    quorumRule: row.quorum_rule,
    remindedAtMs: row.reminded_at_ms,
    escalatedAtMs: row.escalated_at_ms,
    escalation: row.escalated_at_ms === null ? null : { group: row.escalation_group, approver: row.escalation_approver },
    stepUpRule: row.step_up_rule,
    quorumReason: row.quorum_reason,
    stepUpReason: row.step_up_reason,
  };
}

/** `url`'s origin (scheme, host, port), or `invalid-url`. */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid-url';
  }
}

/** SQL `WHERE` fragment and parameters for a filter (column names are fixed, values bound). */
function whereOf(filter: RequestFilter): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  const inList = (column: string, values: readonly string[]) => {
    parts.push(values.length === 0 ? '0' : `${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  if (filter.groups !== undefined) {
    const marks = filter.groups.map(() => '?').join(', ');
    const alternatives = filter.groups.length === 0 ? [] : [`approver_group IN (${marks})`, `escalation_group IN (${marks})`];
    if (filter.escalatedTo !== undefined) alternatives.push('escalation_approver = ?');
    parts.push(alternatives.length === 0 ? '0' : `(${alternatives.join(' OR ')})`);
    params.push(...filter.groups, ...filter.groups, ...(filter.escalatedTo !== undefined ? [filter.escalatedTo] : []));
  }
  if (filter.tools !== undefined) inList('tool', filter.tools);
  if (filter.tool !== undefined) inList('tool', [filter.tool]);
  if (filter.group !== undefined) inList('approver_group', [filter.group]);
  if (filter.requester !== undefined) inList('requester_sub', [filter.requester]);
  if (filter.excludeNames !== undefined && filter.excludeNames.length > 0) {
    parts.push('access_requests.id NOT IN (SELECT request_id FROM request_principals WHERE name IN (SELECT value FROM json_each(?)))');
    params.push(JSON.stringify(filter.excludeNames.map((n) => n.toLowerCase())));
  }
  if (filter.excludeApprovedBy !== undefined) {
    // one vote per person, in their own right or as a delegate (`cast_by`)
    parts.push(
      'NOT EXISTS (SELECT 1 FROM approval_votes AS v WHERE v.request_id = access_requests.id AND (cs_lower(v.approver) = ? OR cs_lower(v.cast_by) = ?))',
    );
    params.push(filter.excludeApprovedBy.toLowerCase(), filter.excludeApprovedBy.toLowerCase());
  }
  return { sql: parts.length === 0 ? '' : ` AND ${parts.join(' AND ')}`, params };
}

/**
 * Open (creating if needed) the store at `dbPath` (a file path or `':memory:'`), in WAL mode
 * with foreign keys on and a 5 s busy timeout; migrates older files. Throws if the file cannot
 * be opened.
 */
export function openApprovalStore(dbPath: string): ApprovalStore {
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  // JavaScript's lower-casing (Unicode), so four-eyes comparisons in SQL equal those in request-lifecycle.ts.
  db.function('cs_lower', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s));
  createSchema(db);
  const followers = createFollowerStore(db);
  const breakGlass = createBreakGlassStore(db);
  const analytics = createAnalyticsStore(db);
  const grants = createGrantStore(db);

  const insertRequest = db.prepare(
    `INSERT INTO access_requests (id, idempotency_key, body_hash, body_json, tool, requester_sub, approver_group, status, created_at_ms, expires_at_ms, required_approvals, quorum_rule, step_up_rule, quorum_reason, step_up_reason)
     VALUES (@id, @idempotency_key, @body_hash, @body_json, @tool, @requester_sub, @approver_group, 'pending', @created_at_ms, @expires_at_ms, @required_approvals, @quorum_rule, @step_up_rule, @quorum_reason, @step_up_reason)`,
  );
  const insertAudit = db.prepare(
    'INSERT INTO audit_events (request_id, event, actor, comment, at_ms, via, rule, on_behalf_of) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const selectById = db.prepare<[string], RequestRow>('SELECT * FROM access_requests WHERE id = ?');
  const selectByKey = db.prepare<[string], RequestRow>('SELECT * FROM access_requests WHERE idempotency_key = ?');
  const updateFromPending = db.prepare(
    `UPDATE access_requests SET status = ?, resolved_at_ms = ?, resolved_by = ?, approval_json = ?
     WHERE id = ? AND status = 'pending'`,
  );
  const selectDue = db.prepare<[number], { id: string }>(
    "SELECT id FROM access_requests WHERE status = 'pending' AND expires_at_ms <= ? ORDER BY expires_at_ms",
  );
  const selectAudit = db.prepare<[string], AuditRow>('SELECT * FROM audit_events WHERE request_id = ? ORDER BY seq');
  const insertVote = db.prepare(
    'INSERT OR IGNORE INTO approval_votes (request_id, approver, via, comment, at_ms, cast_by, step_up_json) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectVotes = db.prepare<
    [string],
    { approver: string; via: DecisionChannel; comment: string | null; at_ms: number; cast_by: string | null; step_up_json: string | null }
  >('SELECT approver, via, comment, at_ms, cast_by, step_up_json FROM approval_votes WHERE request_id = ? ORDER BY at_ms, rowid');
  const insertPasskey = db.prepare(
    'INSERT INTO webauthn_credentials (id, approver, public_key, counter, transports, created_at_ms) VALUES (?, ?, ?, ?, ?, ?)',
  );
  type PasskeyRow = { id: string; approver: string; public_key: Buffer; counter: number; transports: string | null; created_at_ms: number };
  const passkeyOf = (r: PasskeyRow): PasskeyRecord => ({
    id: r.id,
    approver: r.approver,
    publicKey: new Uint8Array(r.public_key),
    counter: r.counter,
    transports: r.transports === null ? [] : (JSON.parse(r.transports) as string[]),
    createdAtMs: r.created_at_ms,
  });
  const selectPasskeys = db.prepare<[string], PasskeyRow>(
    'SELECT * FROM webauthn_credentials WHERE approver = ? ORDER BY created_at_ms, id',
  );
  const selectPasskey = db.prepare<[string], PasskeyRow>('SELECT * FROM webauthn_credentials WHERE id = ?');
  const updatePasskeyCounter = db.prepare('UPDATE webauthn_credentials SET counter = ? WHERE id = ?');
  const passkeys = asyncOf<PasskeyStore>({
    add(p) {
      insertPasskey.run(p.id, p.approver, Buffer.from(p.publicKey), p.counter, JSON.stringify(p.transports), p.createdAtMs);
    },
    forApprover(approver) {
      return selectPasskeys.all(approver).map(passkeyOf);
    },
    get(id) {
      const row = selectPasskey.get(id);
      return row === undefined ? undefined : passkeyOf(row);
    },
    setCounter(id, counter) {
      updatePasskeyCounter.run(counter, id);
    },
  });
  const markRemindedStmt = db.prepare(
    "UPDATE access_requests SET reminded_at_ms = ? WHERE id = ? AND status = 'pending' AND reminded_at_ms IS NULL",
  );
  const markEscalatedStmt = db.prepare(
    "UPDATE access_requests SET escalated_at_ms = ?, escalation_group = ?, escalation_approver = ? WHERE id = ? AND status = 'pending' AND escalated_at_ms IS NULL",
  );
  const insertDelegation = db.prepare('INSERT INTO delegations (id, delegator, delegate, created_at_ms, until_ms) VALUES (?, ?, ?, ?, ?)');
  const revokeDelegation = db.prepare('UPDATE delegations SET revoked_at_ms = ? WHERE id = ? AND delegator = ? AND revoked_at_ms IS NULL');
  const selectDelegationsTo = db.prepare<[string, number], DelegationRow>(
    'SELECT * FROM delegations WHERE delegate = ? AND revoked_at_ms IS NULL AND until_ms > ? ORDER BY created_at_ms, id',
  );
  const selectDelegationsFrom = db.prepare<[string, number], DelegationRow>(
    'SELECT * FROM delegations WHERE delegator = ? AND revoked_at_ms IS NULL AND until_ms > ? ORDER BY created_at_ms, id',
  );
  const selectDelegation = db.prepare<[string], DelegationRow>('SELECT * FROM delegations WHERE id = ?');
  const delegations = asyncOf<DelegationStore>({
    create(d) {
      insertDelegation.run(d.id, d.delegator, d.delegate, d.createdAtMs, d.untilMs);
      const row = selectDelegation.get(d.id);
      if (row === undefined) throw new Error('delegation vanished after insert');
      return fromDelegationRow(row);
    },
    revoke(id, delegator, atMs) {
      return revokeDelegation.run(atMs, id, delegator).changes === 1;
    },
    activeTo(delegate, nowMs) {
      return selectDelegationsTo.all(delegate, nowMs).map(fromDelegationRow);
    },
    activeFrom(delegator, nowMs) {
      return selectDelegationsFrom.all(delegator, nowMs).map(fromDelegationRow);
    },
  });
  const selectMark = db.prepare<[], { mark: number | null }>('SELECT MAX(seq) AS mark FROM audit_events');
  const insertPrincipal = db.prepare('INSERT OR IGNORE INTO request_principals (name, request_id) VALUES (?, ?)');
  const insertOutbox = db.prepare(
    'INSERT INTO callback_outbox (request_id, url, origin, status, generation, next_attempt_at_ms, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const outboxFromRow = (r: OutboxRowRaw): CallbackOutboxRow => ({
    seq: r.seq,
    requestId: r.request_id,
    url: r.url,
    origin: r.origin,
    status: r.status,
    generation: r.generation,
    state: r.state,
    attempts: r.attempts,
    nextAttemptAtMs: r.next_attempt_at_ms,
    createdAtMs: r.created_at_ms,
    finishedAtMs: r.finished_at_ms,
    lastFailure: r.last_failure,
  });
  const selectDueOutbox = db.prepare<[number, string, number], OutboxRowRaw>(
    `SELECT * FROM callback_outbox WHERE state = 'pending' AND next_attempt_at_ms <= ?
       AND origin NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_at_ms, seq LIMIT ?`,
  );
  const selectNextDue = db.prepare<[string], { next: number | null }>(
    "SELECT MIN(next_attempt_at_ms) AS next FROM callback_outbox WHERE state = 'pending' AND origin NOT IN (SELECT value FROM json_each(?))",
  );
  const leaseOutbox = db.prepare<[number, number, number]>(
    "UPDATE callback_outbox SET next_attempt_at_ms = ? WHERE seq = ? AND state = 'pending' AND next_attempt_at_ms <= ?",
  );
  const finishOutbox = db.prepare<[string, number, number, string | null, number]>(
    "UPDATE callback_outbox SET state = ?, attempts = ?, finished_at_ms = ?, last_failure = ? WHERE seq = ? AND state = 'pending'",
  );
  const retryOutbox = db.prepare<[number, number, string, number]>(
    "UPDATE callback_outbox SET attempts = ?, next_attempt_at_ms = ?, last_failure = ? WHERE seq = ? AND state = 'pending'",
  );
  const selectOutboxCounts = db.prepare<[], { state: CallbackOutboxRow['state']; n: number }>(
    'SELECT state, COUNT(*) AS n FROM callback_outbox GROUP BY state',
  );
  const selectOutboxFor = db.prepare<[string], OutboxRowRaw>('SELECT * FROM callback_outbox WHERE request_id = ? ORDER BY seq');
  const callbacks = asyncOf<CallbackOutboxStore>({
    due: (nowMs, limit, skipOrigins = []) => selectDueOutbox.all(nowMs, JSON.stringify(skipOrigins), limit).map(outboxFromRow),
    nextDueAtMs: (skipOrigins = []) => selectNextDue.get(JSON.stringify(skipOrigins))?.next ?? null,
    lease(seq, nowMs, untilMs) {
      return leaseOutbox.run(untilMs, seq, nowMs).changes === 1;
    },
    delivered(seq, attempts, atMs) {
      finishOutbox.run('delivered', attempts, atMs, null, seq);
    },
    retryAt(seq, attempts, nextAtMs, failure) {
      retryOutbox.run(attempts, nextAtMs, failure, seq);
    },
    gaveUp(seq, attempts, atMs, failure) {
      finishOutbox.run('gave-up', attempts, atMs, failure, seq);
    },
    refused(seq, attempts, atMs, failure) {
      finishOutbox.run('refused', attempts, atMs, failure, seq);
    },
    forRequest: (requestId) => selectOutboxFor.all(requestId).map(outboxFromRow),
    counts: () => Object.fromEntries(selectOutboxCounts.all().map((r) => [r.state, r.n])),
  });
  const insertSession = db.prepare('INSERT INTO inbox_sessions (id_hash, approver, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?)');
  const selectSession = db.prepare<[string], { approver: string; expires_at_ms: number }>(
    'SELECT approver, expires_at_ms FROM inbox_sessions WHERE id_hash = ?',
  );
  const deleteSession = db.prepare('DELETE FROM inbox_sessions WHERE id_hash = ?');
  const deleteExpiredSessions = db.prepare('DELETE FROM inbox_sessions WHERE expires_at_ms <= ?');
  const insertSlackMessage = db.prepare('INSERT OR IGNORE INTO slack_messages (request_id, channel, ts) VALUES (?, ?, ?)');
  const selectSlackMessages = db.prepare<[string], SlackMessageRef>(
    'SELECT channel, ts FROM slack_messages WHERE request_id = ? ORDER BY rowid',
  );
  const selectEmailLink = db.prepare<[string], { jti: string }>('SELECT jti FROM email_links_used WHERE jti = ?');
  const deleteEmailLink = db.prepare('DELETE FROM email_links_used WHERE jti = ?');
  const insertEmailLink = db.prepare('INSERT OR IGNORE INTO email_links_used (jti, request_id, approver, used_at_ms) VALUES (?, ?, ?, ?)');
  const channels = asyncOf<ChannelStore>({
    addSlackMessage(requestId, ref) {
      insertSlackMessage.run(requestId, ref.channel, ref.ts);
    },
    slackMessages(requestId) {
      return selectSlackMessages.all(requestId).map((r) => ({ channel: r.channel, ts: r.ts }));
    },
    emailLinkUsed(jti) {
      return selectEmailLink.get(jti) !== undefined;
    },
    consumeEmailLink(jti, requestId, approver, atMs) {
      return insertEmailLink.run(jti, requestId, approver, atMs).changes === 1;
    },
    releaseEmailLink(jti) {
      deleteEmailLink.run(jti);
    },
  });
  const sessions = asyncOf<InboxSessionStore>({
    create(idHash, approver, createdAtMs, expiresAtMs) {
      insertSession.run(idHash, approver, createdAtMs, expiresAtMs);
    },
    get(idHash, nowMs) {
      const row = selectSession.get(idHash);
      if (row === undefined) return undefined;
      if (row.expires_at_ms <= nowMs) {
        deleteSession.run(idHash);
        return undefined;
      }
      return row.approver;
    },
    delete(idHash) {
      deleteSession.run(idHash);
    },
    purgeExpired(nowMs) {
      return deleteExpiredSessions.run(nowMs).changes;
    },
  });

  const insertTx = db.transaction((record: Parameters<ApprovalStore['insert']>[0], actor: string) => {
    const taken = selectByKey.get(record.idempotencyKey);
    if (taken !== undefined) throw new IdempotencyKeyTaken(fromRow(taken));
    insertRequest.run({
      id: record.id,
      idempotency_key: record.idempotencyKey,
      body_hash: record.bodyHash,
      body_json: JSON.stringify(record.body),
      tool: record.body.resource.id,
      requester_sub: record.body.subject.sub,
      approver_group: record.body.approver_group,
      created_at_ms: record.createdAtMs,
      expires_at_ms: record.expiresAtMs,
      required_approvals: record.requiredApprovals,
      quorum_rule: record.quorumRule,
      step_up_rule: record.stepUpRule ?? null,
      quorum_reason: record.quorumReason ?? null,
      step_up_reason: record.stepUpReason ?? null,
    });
    insertAudit.run(record.id, 'submitted', actor, null, record.createdAtMs, 'client', record.quorumRule, null);
    for (const name of requesterNames(JSON.stringify(record.body))) insertPrincipal.run(name, record.id);
  });

  const transitionTx = db.transaction((id: string, t: Transition): boolean => {
    const approvalJson = t.approval === undefined ? null : JSON.stringify(t.approval);
    const changed = updateFromPending.run(t.to, t.atMs, t.actor, approvalJson, id).changes;
    if (changed !== 1) return false;
    insertAudit.run(id, t.to, t.actor, t.comment ?? null, t.atMs, t.via ?? null, t.rule ?? null, t.onBehalfOf ?? null);
    const body = JSON.parse(selectById.get(id)?.body_json ?? '{}') as { callback_url?: string; generation?: number };
    if (body.callback_url !== undefined) {
      insertOutbox.run(id, body.callback_url, originOf(body.callback_url), t.to, body.generation ?? 1, t.atMs, t.atMs);
    }
    return true;
  });

  const get = (id: string): AccessRequestRecord | undefined => {
    const row = selectById.get(id);
    return row === undefined ? undefined : fromRow(row);
  };
  const votes = (id: string): ApprovalVote[] =>
    selectVotes.all(id).map((v) => ({
      approver: v.approver,
      via: v.via,
      comment: v.comment,
      atMs: v.at_ms,
      castBy: v.cast_by,
      stepUp: v.step_up_json === null ? null : (JSON.parse(v.step_up_json) as StepUpProof),
    }));

  const approveTx = db.transaction(
    (id: string, vote: ApprovalVote & { rule?: string; final?: boolean }, makeApproval: MakeApproval): ApproveResult['kind'] => {
      const current = get(id);
      if (current === undefined || current.status !== 'pending') return 'not-pending';
      const castBy = vote.castBy ?? null;
      // one vote per person, in their own right or as a delegate (as `alreadyVoted` in ../request-lifecycle.ts)
      const humans = [vote.approver, ...(castBy !== null ? [castBy] : [])].map((h) => h.toLowerCase());
      const voted = (name: string | null | undefined) => name != null && humans.includes(name.toLowerCase());
      if (votes(id).some((v) => voted(v.approver) || voted(v.castBy))) return 'already-approved-by';
      const stepUpJson = vote.stepUp == null ? null : JSON.stringify(vote.stepUp);
      if (insertVote.run(id, vote.approver, vote.via, vote.comment, vote.atMs, castBy, stepUpJson).changes !== 1)
        return 'already-approved-by';
      const cast = votes(id);
      const approvers = cast.map((v) => v.approver);
      const actor = vote.actor ?? vote.approver;
      const onBehalfOf = castBy === null ? undefined : vote.approver;
      if (vote.final === true || approvers.length >= current.requiredApprovals) {
        const t: Transition = { to: 'approved', atMs: vote.atMs, actor, via: vote.via, approval: makeApproval(approvers, cast) };
        if (vote.comment !== null) t.comment = vote.comment;
        if (vote.rule !== undefined) t.rule = vote.rule;
        if (onBehalfOf !== undefined) t.onBehalfOf = onBehalfOf;
        return transitionTx(id, t) ? 'approved' : 'not-pending';
      }
      insertAudit.run(id, 'endorsed', actor, vote.comment, vote.atMs, vote.via, vote.rule ?? null, onBehalfOf ?? null);
      return 'endorsed';
    },
  );

  const insertPermit = db.prepare(
    `INSERT INTO narrowing_permits (id, request_id, binding_digest, tool, arguments_json, requester_sub, approver_group, proposed_by, via, created_at_ms, expires_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const selectPermitOn = db.prepare<[string], PermitRow>('SELECT * FROM narrowing_permits WHERE request_id = ?');
  const selectPermitUsedBy = db.prepare<[string], PermitRow>('SELECT * FROM narrowing_permits WHERE used_by_request = ?');
  const selectUsablePermits = db.prepare<[string, string, string, number, number], PermitRow & { proposed_on_json: string }>(
    `SELECT p.*, r.body_json AS proposed_on_json FROM narrowing_permits p JOIN access_requests r ON r.id = p.request_id
     WHERE p.tool = ? AND p.requester_sub = ? AND p.approver_group = ? AND p.used_at_ms IS NULL AND p.expires_at_ms > ?
     ORDER BY p.created_at_ms, p.id LIMIT ?`,
  );
  const usePermit = db.prepare<[number, string, string]>(
    'UPDATE narrowing_permits SET used_at_ms = ?, used_by_request = ? WHERE id = ? AND used_at_ms IS NULL',
  );

  const narrowTx = db.transaction(
    (id: string, t: Transition, comment: string, permit: Omit<NarrowingPermit, 'usedAtMs' | 'usedByRequest'>): boolean => {
      if (!transitionTx(id, t)) return false;
      insertAudit.run(id, 'narrowed', t.actor, comment, t.atMs, t.via ?? null, 'counter-proposal', t.onBehalfOf ?? null);
      insertPermit.run(
        permit.id,
        id,
        permit.bindingDigest,
        permit.tool,
        JSON.stringify(permit.arguments),
        permit.requesterSub,
        permit.approverGroup,
        permit.proposedBy,
        permit.via,
        permit.createdAtMs,
        permit.expiresAtMs,
      );
      return true;
    },
  );

  /**
   * Approve the request `id` just inserted pending, by a standing permit (a counter-proposal's or a
   * grant's): the `event` audit row, the vote of `by` through `via` and the approval, all with
   * `comment` and `rule`. Inside the insert's transaction.
   */
  const approveAtInsert = (
    id: string,
    at: { by: string; via: DecisionChannel; atMs: number; comment: string; rule: string; event: 'permit-used' | 'grant-used' },
    approval: WireApproval,
  ): void => {
    insertAudit.run(id, at.event, at.by, at.comment, at.atMs, at.via, at.rule, null);
    insertVote.run(id, at.by, at.via, at.comment, at.atMs, null, null);
    const approved = transitionTx(id, {
      to: 'approved',
      atMs: at.atMs,
      actor: at.by,
      via: at.via,
      comment: at.comment,
      rule: at.rule,
      approval,
    });
    if (!approved) throw new Error('a request inserted pending was not pending');
  };

  const insertWithPermitTx = db.transaction(
    (
      record: Parameters<ApprovalStore['insert']>[0],
      actor: string,
      match: StandingMatch,
      makeApproval: MakeApproval,
    ): { permit: PermitRow | null; grant: { grant: Grant; use: GrantUse } | null } => {
      insertTx(record, actor);
      const candidates = selectUsablePermits.all(match.tool, match.requesterSub, match.approverGroup, match.atMs, PERMIT_CANDIDATES);
      const permit = candidates.find((c) => match.matches(fromPermitRow(c), AccessRequestBodySchema.parse(JSON.parse(c.proposed_on_json))));
      if (permit !== undefined && usePermit.run(match.atMs, record.id, permit.id).changes === 1) {
        const comment = `permitted by the counter-proposal on request ${permit.request_id}`;
        approveAtInsert(
          record.id,
          { by: permit.proposed_by, via: permit.via, atMs: match.atMs, comment, rule: 'counter-proposal', event: 'permit-used' },
          makeApproval([permit.proposed_by], votes(record.id)),
        );
        return { permit, grant: null };
      }
      if (match.grantFits === undefined) return { permit: null, grant: null };
      const body = record.body;
      for (const g of grants.candidates(body.subject.sub, body.resource.id, match.approverGroup, match.atMs)) {
        if (!match.grantFits(g)) continue;
        const used = useGrant(record.id, g, match.atMs, makeApproval);
        if (used !== null) return { permit: null, grant: used };
      }
      return { permit: null, grant: null };
    },
  );

  /** Count a use of grant `g` by pending request `id` and approve it by the grant; null when the grant holds no more (nothing written). */
  const useGrant = (id: string, g: Grant, atMs: number, makeApproval: MakeApproval): { grant: Grant; use: GrantUse } | null => {
    const use = grants.consume(g.id, id, atMs);
    if (use === null) return null;
    const counted = { ...g, uses: use.use };
    const of = g.maxUses === null ? '' : ` of ${g.maxUses}`;
    const comment = `allowed by grant ${g.id} (use ${use.use}${of})`;
    approveAtInsert(
      id,
      { by: g.createdBy, via: g.via, atMs, comment, rule: 'grant', event: 'grant-used' },
      makeApproval([g.createdBy], votes(id), { grant: counted, use }),
    );
    return { grant: counted, use };
  };

  const approveByGrantTx = db.transaction(
    (id: string, grantId: string, atMs: number, fits: (grant: Grant) => boolean, makeApproval: MakeApproval): boolean => {
      if (get(id)?.status !== 'pending') return false;
      const g = grants.get(grantId);
      if (g === undefined || !fits(g)) return false;
      return useGrant(id, g, atMs, makeApproval) !== null;
    },
  );

  const closeUnfollowedTx = db.transaction((id: string, t: Transition): boolean => {
    if (!transitionTx(id, t)) return false;
    followers.markClosedUnfollowed(id, t.atMs);
    return true;
  });

  /** Thrown inside {@link approveByBreakGlassTx} to roll back a session opened for an approval that did not happen. */
  class NotApproved extends Error {
    constructor(readonly kind: 'already-approved-by' | 'not-pending') {
      super('break-glass approval did not happen');
    }
  }
  const approveByBreakGlassTx = db.transaction(
    (
      id: string,
      vote: ApprovalVote & { rule?: string; final?: boolean },
      glass: BreakGlassApproval,
      makeApproval: MakeApproval,
    ): { kind: 'limit'; retryAtMs: number } | { kind: 'approved'; use: BreakGlassUse } => {
      const at = vote.atMs;
      const session = breakGlass.sessionFor(
        vote.approver,
        glass.reason,
        at,
        glass.windowMs,
        glass.maxPerDay,
        glass.dayMs,
        glass.newSessionId,
      );
      if (session.kind === 'limit') return session;
      const kind = approveTx(id, vote, makeApproval);
      if (kind !== 'approved') throw new NotApproved(kind === 'already-approved-by' ? kind : 'not-pending');
      const use: BreakGlassUse = {
        requestId: id,
        sessionId: session.session.id,
        approver: vote.approver,
        reason: glass.reason,
        atMs: at,
        reviewDueMs: glass.reviewDueMs,
        skipped: glass.skipped,
        reviewedBy: null,
        reviewedAtMs: null,
        reviewComment: null,
      };
      breakGlass.recordUse(use);
      insertAudit.run(id, 'break-glass', vote.actor ?? vote.approver, glass.reason, at, vote.via, session.session.id, null);
      return { kind: 'approved', use };
    },
  );

  const reviewBreakGlassTx = db.transaction(
    (requestId: string, reviewer: string, comment: string, atMs: number, via: DecisionChannel): boolean => {
      if (!breakGlass.markReviewed(requestId, reviewer, comment, atMs)) return false;
      insertAudit.run(requestId, 'break-glass-reviewed', reviewer, comment, atMs, via, null, null);
      return true;
    },
  );

  const markTx = db.transaction(
    (id: string, atMs: number, event: 'reminded' | 'escalated', comment: string, apply: () => number): boolean => {
      if (apply() !== 1) return false;
      insertAudit.run(id, event, 'system', comment, atMs, 'system', null, null);
      return true;
    },
  );
  const selectUnmarked = {
    reminded: db.prepare<[], RequestRow>(
      "SELECT * FROM access_requests WHERE status = 'pending' AND reminded_at_ms IS NULL ORDER BY created_at_ms, id",
    ),
    escalated: db.prepare<[], RequestRow>(
      "SELECT * FROM access_requests WHERE status = 'pending' AND escalated_at_ms IS NULL ORDER BY created_at_ms, id",
    ),
  };

  const list = (status: 'pending' | 'resolved', filter: RequestFilter, limit: number): AccessRequestRecord[] => {
    const w = whereOf(filter);
    const order = status === 'pending' ? 'ORDER BY created_at_ms, id' : 'ORDER BY resolved_at_ms DESC, id';
    const cond = status === 'pending' ? "status = 'pending'" : "status <> 'pending'";
    return db
      .prepare<unknown[], RequestRow>(`SELECT * FROM access_requests WHERE ${cond}${w.sql} ${order} LIMIT ?`)
      .all(...w.params, limit)
      .map(fromRow);
  };

  const pagePending = (filter: RequestFilter, page: PendingPageRequest): PendingPage => {
    const w = whereOf(filter);
    const base = `FROM access_requests WHERE status = 'pending'${w.sql}`;
    const total = db.prepare<unknown[], { n: number }>(`SELECT COUNT(*) AS n ${base}`).get(...w.params)?.n ?? 0;
    const limit = Math.max(0, Math.floor(page.limit));
    const key = page.before ?? page.after;
    const backwards = page.before !== undefined;
    const keySql = key === undefined ? '' : backwards ? ' AND (created_at_ms, id) < (?, ?)' : ' AND (created_at_ms, id) > (?, ?)';
    const keyParams = key === undefined ? [] : [key.createdAtMs, key.id];
    const order = backwards ? 'ORDER BY created_at_ms DESC, id DESC' : 'ORDER BY created_at_ms, id';
    const rows = db.prepare<unknown[], RequestRow>(`SELECT * ${base}${keySql} ${order} LIMIT ?`).all(...w.params, ...keyParams, limit + 1);
    const more = rows.length > limit;
    const pageRows = rows.slice(0, limit);
    if (backwards) pageRows.reverse();
    /** Whether a matching pending row lies beyond `k` in direction `op` (the opposite side of the page). */
    const beyond = (op: '<' | '>', k: PendingKey | undefined): boolean =>
      k !== undefined &&
      db.prepare(`SELECT 1 ${base} AND (created_at_ms, id) ${op} (?, ?) LIMIT 1`).get(...w.params, k.createdAtMs, k.id) !== undefined;
    const first = pageRows[0];
    const last = pageRows[pageRows.length - 1];
    const keyOf = (r: RequestRow | undefined): PendingKey | undefined =>
      r === undefined ? undefined : { createdAtMs: r.created_at_ms, id: r.id };
    return {
      records: pageRows.map(fromRow),
      total,
      hasAfter: backwards ? beyond('>', keyOf(last) ?? key) : more,
      hasBefore: backwards ? more : beyond('<', keyOf(first) ?? key),
    };
  };

  const store: Sync<ApprovalStore> = {
    insert(record, actor) {
      insertTx(record, actor);
      const stored = get(record.id);
      if (stored === undefined) throw new Error('access request vanished after insert');
      return stored;
    },
    get,
    getByIdempotencyKey(key) {
      const row = selectByKey.get(key);
      return row === undefined ? undefined : fromRow(row);
    },
    transitionFromPending(id, t) {
      return transitionTx(id, t) ? get(id) : undefined;
    },
    approve(id, vote, makeApproval) {
      const kind = approveTx(id, vote, makeApproval);
      const record = get(id);
      if (kind === 'not-pending' || record === undefined) return { kind: 'not-pending' };
      return { kind, record };
    },
    approveByBreakGlass(id, vote, glass, makeApproval) {
      try {
        const done = approveByBreakGlassTx(id, vote, glass, makeApproval);
        if (done.kind === 'limit') return done;
        const record = get(id);
        return record === undefined ? { kind: 'not-pending' } : { kind: 'approved', record, use: done.use };
      } catch (err) {
        if (err instanceof NotApproved) return { kind: err.kind };
        throw err;
      }
    },
    reviewBreakGlass: (requestId, reviewer, comment, atMs, via) => reviewBreakGlassTx(requestId, reviewer, comment, atMs, via),
    votes,
    appendAudit(id, event, actor, atMs, extra = {}) {
      insertAudit.run(id, event, actor, extra.comment ?? null, atMs, extra.via ?? null, extra.rule ?? null, extra.onBehalfOf ?? null);
    },
    listUnmarkedPending(mark) {
      return selectUnmarked[mark].all().map(fromRow);
    },
    markReminded(id, group, atMs) {
      return markTx(id, atMs, 'reminded', `group ${group}`, () => markRemindedStmt.run(atMs, id).changes) ? get(id) : undefined;
    },
    markEscalated(id, to, atMs) {
      const names = [...(to.group !== null ? [`group ${to.group}`] : []), ...(to.approver !== null ? [`approver ${to.approver}`] : [])];
      return markTx(
        id,
        atMs,
        'escalated',
        `to ${names.join(' and ')}`,
        () => markEscalatedStmt.run(atMs, to.group, to.approver, id).changes,
      )
        ? get(id)
        : undefined;
    },
    delegations,
    passkeys,
    listDuePending(nowMs) {
      return selectDue.all(nowMs).map((r) => r.id);
    },
    listPending(filter = {}, limit = 200) {
      return list('pending', filter, limit);
    },
    pagePending,
    countPending(filter = {}) {
      const w = whereOf(filter);
      return (
        db.prepare<unknown[], { n: number }>(`SELECT COUNT(*) AS n FROM access_requests WHERE status = 'pending'${w.sql}`).get(...w.params)
          ?.n ?? 0
      );
    },
    listResolved(filter = {}, limit = 50) {
      return list('resolved', filter, limit);
    },
    pendingFacets(filter = {}) {
      const w = whereOf(filter);
      const rows = db
        .prepare<unknown[], { tool: string; requester_sub: string }>(
          `SELECT DISTINCT tool, requester_sub FROM access_requests WHERE status = 'pending'${w.sql}`,
        )
        .all(...w.params);
      return {
        tools: [...new Set(rows.map((r) => r.tool))].sort(),
        requesters: [...new Set(rows.map((r) => r.requester_sub))].sort(),
      };
    },
    changeMark() {
      return selectMark.get()?.mark ?? 0;
    },
    auditTrail(id) {
      return selectAudit.all(id).map((r) => ({
        seq: r.seq,
        requestId: r.request_id,
        event: r.event,
        actor: r.actor,
        comment: r.comment,
        atMs: r.at_ms,
        via: r.via,
        rule: r.rule,
        onBehalfOf: r.on_behalf_of,
      }));
    },
    sessions,
    channels,
    callbacks,
    followers: asyncOf<FollowerStore>(followers),
    breakGlass: asyncOf<BreakGlassStore>(breakGlass),
    analytics: asyncOf<AnalyticsStore>(analytics),
    grants: asyncOf<GrantStore>(grants),
    narrow(id, t, comment, permit) {
      return narrowTx(id, t, comment, permit) ? get(id) : undefined;
    },
    approveByGrant(id, grantId, atMs, fits, makeApproval) {
      return approveByGrantTx(id, grantId, atMs, fits, makeApproval) ? get(id) : undefined;
    },
    closeUnfollowed(id, t) {
      return closeUnfollowedTx(id, t) ? get(id) : undefined;
    },
    insertWithPermit(record, actor, match, makeApproval) {
      const outcome = insertWithPermitTx(record, actor, match, makeApproval);
      const stored = get(record.id);
      if (stored === undefined) throw new Error('access request vanished after insert');
      const used = outcome.permit === null ? undefined : selectPermitUsedBy.get(record.id);
      return { record: stored, permit: used === undefined ? null : fromPermitRow(used), grant: outcome.grant };
    },
    permitProposedOn(requestId) {
      const row = selectPermitOn.get(requestId);
      return row === undefined ? undefined : fromPermitRow(row);
    },
    permitUsedBy(requestId) {
      const row = selectPermitUsedBy.get(requestId);
      return row === undefined ? undefined : fromPermitRow(row);
    },
    close() {
      if (db.open) db.close();
    },
  };
  return asyncOf<ApprovalStore>(store);
}
