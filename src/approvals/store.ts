/**
 * SQLite persistence for the reference Access Request Service (better-sqlite3, WAL).
 *
 * Two tables: `access_requests` (one row per request, with its idempotency key and the SHA-256
 * of the canonical body beside it) and `audit_events` (append-only: submitted, approved, denied,
 * expired, cancelled — who, when, comment). The schema is created on open. State changes are
 * compare-and-set from `pending` inside one transaction with their audit row, so two racing
 * deciders (or a decision racing expiry or cancel) cannot both win.
 * Deliberately does not: decide business rules (see `request-lifecycle.ts`), purge old rows
 * (retention of the stored arguments is the operator's job), or encrypt at rest.
 */
import Database from 'better-sqlite3';
import { AccessRequestBodySchema, REQUEST_STATUSES, type AccessRequestBody, type RequestStatus, type WireApproval } from './arap-wire.js';

/** Audit event kinds (one per status change, plus `submitted`). */
export type AuditEventKind = 'submitted' | 'approved' | 'denied' | 'expired' | 'cancelled';

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
}

/** One audit row. `at` in ms since epoch. */
export interface AuditEvent {
  seq: number;
  requestId: string;
  event: AuditEventKind;
  actor: string;
  comment: string | null;
  atMs: number;
}

/** A compare-and-set from `pending` and the audit row that records it. */
export interface Transition {
  to: Exclude<RequestStatus, 'pending' | 'failed'>;
  atMs: number;
  actor: string;
  comment?: string;
  approval?: WireApproval;
}

/** The store's API. All methods are synchronous (better-sqlite3). */
export interface ApprovalStore {
  /** Insert a new pending request and its `submitted` audit row. Throws on a duplicate id or key. */
  insert(record: Omit<AccessRequestRecord, 'status' | 'resolvedAtMs' | 'resolvedBy' | 'approval'>, actor: string): AccessRequestRecord;
  get(id: string): AccessRequestRecord | undefined;
  getByIdempotencyKey(key: string): AccessRequestRecord | undefined;
  /** Move `id` from `pending` to `t.to`; returns the updated record, or undefined if it was not pending. */
  transitionFromPending(id: string, t: Transition): AccessRequestRecord | undefined;
  /** Ids of pending requests with `expires_at_ms <= nowMs`. */
  listDuePending(nowMs: number): string[];
  /** Pending requests for any of `groups`, oldest first (at most `limit`, default 200). */
  listPendingForGroups(groups: readonly string[], limit?: number): AccessRequestRecord[];
  /** Resolved requests for any of `groups`, most recently resolved first (at most `limit`, default 10). */
  listRecentlyResolvedForGroups(groups: readonly string[], limit?: number): AccessRequestRecord[];
  /** Audit trail of one request, oldest first. */
  auditTrail(id: string): AuditEvent[];
  close(): void;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS access_requests (
  id              TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  body_hash       TEXT NOT NULL,
  body_json       TEXT NOT NULL,
  tool            TEXT NOT NULL,
  requester_sub   TEXT NOT NULL,
  approver_group  TEXT NOT NULL,
  status          TEXT NOT NULL CHECK (status IN (${REQUEST_STATUSES.map((s) => `'${s}'`).join(', ')})),
  created_at_ms   INTEGER NOT NULL,
  expires_at_ms   INTEGER NOT NULL,
  resolved_at_ms  INTEGER,
  resolved_by     TEXT,
  approval_json   TEXT
);
CREATE INDEX IF NOT EXISTS access_requests_pending ON access_requests (status, expires_at_ms);
CREATE INDEX IF NOT EXISTS access_requests_group ON access_requests (approver_group, status);
CREATE TABLE IF NOT EXISTS audit_events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id TEXT NOT NULL REFERENCES access_requests (id),
  event      TEXT NOT NULL CHECK (event IN ('submitted', 'approved', 'denied', 'expired', 'cancelled')),
  actor      TEXT NOT NULL,
  comment    TEXT,
  at_ms      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_events_request ON audit_events (request_id, seq);
`;

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
}

interface AuditRow {
  seq: number;
  request_id: string;
  event: AuditEventKind;
  actor: string;
  comment: string | null;
  at_ms: number;
}

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
  };
}

function groupPlaceholders(groups: readonly string[]): string {
  return groups.map(() => '?').join(', ');
}

/**
 * Open (creating if needed) the store at `dbPath` (a file path or `':memory:'`), in WAL mode
 * with foreign keys on and a 5 s busy timeout. Throws if the file cannot be opened.
 */
export function openApprovalStore(dbPath: string): ApprovalStore {
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);

  const insertRequest = db.prepare(
    `INSERT INTO access_requests (id, idempotency_key, body_hash, body_json, tool, requester_sub, approver_group, status, created_at_ms, expires_at_ms)
     VALUES (@id, @idempotency_key, @body_hash, @body_json, @tool, @requester_sub, @approver_group, 'pending', @created_at_ms, @expires_at_ms)`,
  );
  const insertAudit = db.prepare(
    'INSERT INTO audit_events (request_id, event, actor, comment, at_ms) VALUES (?, ?, ?, ?, ?)',
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

  const insertTx = db.transaction((record: Parameters<ApprovalStore['insert']>[0], actor: string) => {
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
    });
    insertAudit.run(record.id, 'submitted', actor, null, record.createdAtMs);
  });

  const transitionTx = db.transaction((id: string, t: Transition): boolean => {
    const approvalJson = t.approval === undefined ? null : JSON.stringify(t.approval);
    const changed = updateFromPending.run(t.to, t.atMs, t.actor, approvalJson, id).changes;
    if (changed !== 1) return false;
    insertAudit.run(id, t.to, t.actor, t.comment ?? null, t.atMs);
    return true;
  });

  const get = (id: string): AccessRequestRecord | undefined => {
    const row = selectById.get(id);
    return row === undefined ? undefined : fromRow(row);
  };

  return {
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
    listDuePending(nowMs) {
      return selectDue.all(nowMs).map((r) => r.id);
    },
    listPendingForGroups(groups, limit = 200) {
      if (groups.length === 0) return [];
      const rows = db
        .prepare<unknown[], RequestRow>(
          `SELECT * FROM access_requests WHERE status = 'pending' AND approver_group IN (${groupPlaceholders(groups)})
           ORDER BY created_at_ms, id LIMIT ?`,
        )
        .all(...groups, limit);
      return rows.map(fromRow);
    },
    listRecentlyResolvedForGroups(groups, limit = 10) {
      if (groups.length === 0) return [];
      const rows = db
        .prepare<unknown[], RequestRow>(
          `SELECT * FROM access_requests WHERE status <> 'pending' AND approver_group IN (${groupPlaceholders(groups)})
           ORDER BY resolved_at_ms DESC, id LIMIT ?`,
        )
        .all(...groups, limit);
      return rows.map(fromRow);
    },
    auditTrail(id) {
      return selectAudit.all(id).map((r) => ({
        seq: r.seq,
        requestId: r.request_id,
        event: r.event,
        actor: r.actor,
        comment: r.comment,
        atMs: r.at_ms,
      }));
    },
    close() {
      if (db.open) db.close();
    },
  };
}
