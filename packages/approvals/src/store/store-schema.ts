/**
 * The approval store's SQLite schema and its migration (see `store.ts` for what the tables hold).
 * Version 2 added `request_principals` (the requester's lower-cased names, for four-eyes in SQL).
 * Version 1 (`PRAGMA user_version`) added the quorum columns, `approval_votes`, and the audit
 * columns `via`/`rule` with the `endorsed` and `notified` events. Version 3 added the reminder and
 * escalation marks of a request, `approval_votes.cast_by` and `audit_events.on_behalf_of`
 * (a delegate's vote for a delegator), `access_requests.step_up_rule`, `approval_votes.step_up_json`
 * and `webauthn_credentials` (passkey step-up), the `delegations` table, and the audit events `reminded`
 * and `escalated` (the audit table is rebuilt for its CHECK list). Version 4 added
 * `access_requests.quorum_reason` and `step_up_reason` (the reasons of the rules that apply, shown to
 * approvers). Version 5 added the break-glass tables (`break_glass_sessions`, `break_glass`, see
`break-glass-store.ts`) and the audit events `break-glass` and `break-glass-reviewed`.
 * Version 6 added `narrowing_permits` (an approver's counter-proposal: a single-use,
 * short-lived permit for exactly the narrower call) and the audit events `narrowed` (on the request
 * the approver narrowed) and `permit-used` (on the new request the permit approved). Version 7 added
 * `request_opens` (when each approver first opened a pending request's page, for the analytics'
 * "approved without reading", `analytics-store.ts`) and the index `access_requests_resolved`. Version 8 added
 * `grants` (an approver's time-boxed, count-bounded permit for a principal's calls of one tool within
 * argument constraints, `../grants.ts`) and `grant_uses` (which request used which grant, its use
 * number unique per grant), and the audit events `granted` (on the request a grant was made from)
 * and `grant-used` (on each request a grant approved). Version 9 added `grants.principal_iss` (the
 * requester's token issuer a grant is bound to; filled on migration from the request a grant was
 * made from, null — any issuer — for one made from scratch). The index `narrowing_permits_usable` (a new
 * request's candidate permits) is created on open in any version's file. Older files are migrated in
 * one transaction, keeping every row; each step is idempotent. `callback_outbox` (status-change
 * callbacks to deliver, `../api/callbacks.ts`) is created on open in any version's file.
 * Deliberately does not: downgrade.
 */
import type Database from 'better-sqlite3';
import { REQUEST_STATUSES } from '@countersign/arap';
import { principalNames } from '../principal-names.js';

/**
 * Audit event kinds: one per status change, plus `submitted`, `endorsed` (a partial approval
 * counted towards a quorum), `notified` (an ITSM notification delivered), `reminded` (the group
 * was reminded after its quiet period) and `escalated` (the request was handed to the fallback
 * group or approver), `break-glass` (an approver approved their own request under the break-glass
 * role, `../break-glass.ts`) and `break-glass-reviewed` (someone else reviewed that approval).
 */
export const AUDIT_EVENT_KINDS = [
  'submitted',
  'endorsed',
  'approved',
  'denied',
  'expired',
  'cancelled',
  'notified',
  'reminded',
  'escalated',
  'break-glass',
  'break-glass-reviewed',
  'narrowed',
  'permit-used',
  'granted',
  'grant-used',
] as const;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS access_requests (
  id                  TEXT PRIMARY KEY,
  idempotency_key     TEXT NOT NULL UNIQUE,
  body_hash           TEXT NOT NULL,
  body_json           TEXT NOT NULL,
  tool                TEXT NOT NULL,
  requester_sub       TEXT NOT NULL,
  approver_group      TEXT NOT NULL,
  status              TEXT NOT NULL CHECK (status IN (${REQUEST_STATUSES.map((s) => `'${s}'`).join(', ')})),
  created_at_ms       INTEGER NOT NULL,
  expires_at_ms       INTEGER NOT NULL,
  resolved_at_ms      INTEGER,
  resolved_by         TEXT,
  approval_json       TEXT,
  required_approvals  INTEGER NOT NULL DEFAULT 1,
  quorum_rule         TEXT,
  reminded_at_ms      INTEGER,
  escalated_at_ms     INTEGER,
  escalation_group    TEXT,
  escalation_approver TEXT,
  step_up_rule        TEXT,
  quorum_reason       TEXT,
  step_up_reason      TEXT
);
CREATE INDEX IF NOT EXISTS access_requests_pending ON access_requests (status, expires_at_ms);
CREATE INDEX IF NOT EXISTS access_requests_group ON access_requests (approver_group, status);
CREATE INDEX IF NOT EXISTS access_requests_pending_order ON access_requests (status, created_at_ms, id);
CREATE TABLE IF NOT EXISTS approval_votes (
  request_id TEXT NOT NULL REFERENCES access_requests (id),
  approver   TEXT NOT NULL,
  via        TEXT NOT NULL,
  comment    TEXT,
  at_ms      INTEGER NOT NULL,
  cast_by    TEXT,
  step_up_json TEXT,
  PRIMARY KEY (request_id, approver)
);
CREATE TABLE IF NOT EXISTS webauthn_credentials (
  id            TEXT PRIMARY KEY,
  approver      TEXT NOT NULL,
  public_key    BLOB NOT NULL,
  counter       INTEGER NOT NULL,
  transports    TEXT,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webauthn_credentials_approver ON webauthn_credentials (approver);
CREATE TABLE IF NOT EXISTS inbox_sessions (
  id_hash       TEXT PRIMARY KEY,
  approver      TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_sessions_expiry ON inbox_sessions (expires_at_ms);
CREATE TABLE IF NOT EXISTS request_principals (
  name       TEXT NOT NULL,
  request_id TEXT NOT NULL REFERENCES access_requests (id),
  PRIMARY KEY (name, request_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS callback_outbox (
  seq                INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id         TEXT NOT NULL REFERENCES access_requests (id),
  url                TEXT NOT NULL,
  origin             TEXT NOT NULL,
  status             TEXT NOT NULL,
  generation         INTEGER NOT NULL,
  state              TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'refused', 'gave-up')),
  attempts           INTEGER NOT NULL DEFAULT 0,
  next_attempt_at_ms INTEGER NOT NULL,
  created_at_ms      INTEGER NOT NULL,
  finished_at_ms     INTEGER,
  last_failure       TEXT
);
CREATE INDEX IF NOT EXISTS callback_outbox_due ON callback_outbox (state, next_attempt_at_ms);
CREATE TABLE IF NOT EXISTS delegations (
  id            TEXT PRIMARY KEY,
  delegator     TEXT NOT NULL,
  delegate      TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  until_ms      INTEGER NOT NULL,
  revoked_at_ms INTEGER,
  CHECK (delegator <> delegate)
);
CREATE INDEX IF NOT EXISTS delegations_delegate ON delegations (delegate, until_ms);
CREATE TABLE IF NOT EXISTS break_glass_sessions (
  id            TEXT PRIMARY KEY,
  approver      TEXT NOT NULL,
  reason        TEXT NOT NULL,
  opened_at_ms  INTEGER NOT NULL,
  until_ms      INTEGER NOT NULL,
  ended_at_ms   INTEGER
);
CREATE INDEX IF NOT EXISTS break_glass_sessions_approver ON break_glass_sessions (approver, opened_at_ms);
CREATE TABLE IF NOT EXISTS break_glass (
  request_id     TEXT PRIMARY KEY REFERENCES access_requests (id),
  session_id     TEXT NOT NULL REFERENCES break_glass_sessions (id),
  approver       TEXT NOT NULL,
  reason         TEXT NOT NULL,
  at_ms          INTEGER NOT NULL,
  review_due_ms  INTEGER NOT NULL,
  skipped_json   TEXT NOT NULL,
  reviewed_by    TEXT,
  reviewed_at_ms INTEGER,
  review_comment TEXT
);
CREATE INDEX IF NOT EXISTS break_glass_unreviewed ON break_glass (reviewed_at_ms, at_ms);
CREATE TABLE IF NOT EXISTS narrowing_permits (
  id              TEXT PRIMARY KEY,
  request_id      TEXT NOT NULL UNIQUE REFERENCES access_requests (id),
  binding_digest  TEXT NOT NULL,
  tool            TEXT NOT NULL,
  arguments_json  TEXT NOT NULL,
  requester_sub   TEXT NOT NULL,
  approver_group  TEXT NOT NULL,
  proposed_by     TEXT NOT NULL,
  via             TEXT NOT NULL,
  created_at_ms   INTEGER NOT NULL,
  expires_at_ms   INTEGER NOT NULL,
  used_at_ms      INTEGER,
  used_by_request TEXT REFERENCES access_requests (id)
);
CREATE INDEX IF NOT EXISTS narrowing_permits_binding ON narrowing_permits (binding_digest, used_at_ms, expires_at_ms);
CREATE INDEX IF NOT EXISTS narrowing_permits_usable ON narrowing_permits (tool, requester_sub, approver_group, used_at_ms, expires_at_ms);
CREATE INDEX IF NOT EXISTS narrowing_permits_used_by ON narrowing_permits (used_by_request);
CREATE TABLE IF NOT EXISTS request_opens (
  request_id         TEXT NOT NULL REFERENCES access_requests (id),
  approver           TEXT NOT NULL,
  first_opened_at_ms INTEGER NOT NULL,
  last_opened_at_ms  INTEGER NOT NULL,
  opens              INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (request_id, approver)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS access_requests_resolved ON access_requests (resolved_at_ms);
CREATE TABLE IF NOT EXISTS grants (
  id              TEXT PRIMARY KEY,
  principal       TEXT NOT NULL,
  principal_iss   TEXT,
  tool            TEXT NOT NULL,
  approver_group  TEXT NOT NULL,
  constraints_json TEXT NOT NULL,
  max_uses        INTEGER,
  uses            INTEGER NOT NULL DEFAULT 0,
  created_by      TEXT NOT NULL,
  via             TEXT NOT NULL,
  reason          TEXT NOT NULL,
  from_request    TEXT REFERENCES access_requests (id),
  created_at_ms   INTEGER NOT NULL,
  expires_at_ms   INTEGER NOT NULL,
  revoked_at_ms   INTEGER,
  revoked_by      TEXT,
  CHECK (max_uses IS NULL OR uses <= max_uses)
);
CREATE INDEX IF NOT EXISTS grants_match ON grants (principal, tool, approver_group, expires_at_ms);
CREATE TABLE IF NOT EXISTS grant_uses (
  request_id TEXT PRIMARY KEY REFERENCES access_requests (id),
  grant_id   TEXT NOT NULL REFERENCES grants (id),
  use        INTEGER NOT NULL,
  at_ms      INTEGER NOT NULL,
  UNIQUE (grant_id, use)
);
`;

const AUDIT_COLUMNS = ['seq', 'request_id', 'event', 'actor', 'comment', 'at_ms', 'via', 'rule', 'on_behalf_of'] as const;

const AUDIT_TABLE = (name: string): string => `
CREATE TABLE IF NOT EXISTS ${name} (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id   TEXT NOT NULL REFERENCES access_requests (id),
  event        TEXT NOT NULL CHECK (event IN (${AUDIT_EVENT_KINDS.map((k) => `'${k}'`).join(', ')})),
  actor        TEXT NOT NULL,
  comment      TEXT,
  at_ms        INTEGER NOT NULL,
  via          TEXT,
  rule         TEXT,
  on_behalf_of TEXT
);`;

/** Schema version this module writes (`PRAGMA user_version`). */
export const STORE_SCHEMA_VERSION = 9;

/**
 * The lower-cased names of a request's requester: `subject.sub` and every `act` actor's `sub`
 * (`principalNames` in `src/auth/principal-keys.ts`), rows of `request_principals`, which
 * four-eyes filters in SQL read.
 */
export function requesterNames(bodyJson: string): string[] {
  const subject = (JSON.parse(bodyJson) as { subject: { sub: string; act?: Array<{ sub: string }> } }).subject;
  return [...principalNames(subject)];
}

const columnsOf = (db: Database.Database, table: string): string[] =>
  (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name);

/**
 * Bring a file from an older version up to date, keeping every row, in one transaction: missing
 * columns are added (`ALTER TABLE … ADD COLUMN`, each only when absent), and an audit table whose
 * CHECK list lacks the newest event kind is rebuilt, copying every row and column it has (`seq`
 * included, so audit order and the inbox's change mark survive); `request_principals` is filled for
 * existing requests.
 */
function migrate(db: Database.Database): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version >= STORE_SCHEMA_VERSION) return;
  db.transaction(() => {
    const addMissing = (table: string, columns: Array<[string, string]>) => {
      const have = columnsOf(db, table);
      for (const [name, type] of columns) if (!have.includes(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
    };
    addMissing('access_requests', [
      ['required_approvals', 'INTEGER NOT NULL DEFAULT 1'],
      ['quorum_rule', 'TEXT'],
      ['reminded_at_ms', 'INTEGER'],
      ['escalated_at_ms', 'INTEGER'],
      ['escalation_group', 'TEXT'],
      ['escalation_approver', 'TEXT'],
      ['step_up_rule', 'TEXT'],
      ['quorum_reason', 'TEXT'],
      ['step_up_reason', 'TEXT'],
    ]);
    addMissing('approval_votes', [
      ['cast_by', 'TEXT'],
      ['step_up_json', 'TEXT'],
    ]);
    const audit = db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'audit_events'").get() as
      { sql: string } | undefined;
    const newest = AUDIT_EVENT_KINDS[AUDIT_EVENT_KINDS.length - 1];
    if (audit !== undefined && !audit.sql.includes(`'${newest}'`)) {
      const kept = columnsOf(db, 'audit_events').filter((c) => (AUDIT_COLUMNS as readonly string[]).includes(c));
      db.exec('DROP TABLE IF EXISTS audit_events_next');
      db.exec(AUDIT_TABLE('audit_events_next'));
      db.exec(`INSERT INTO audit_events_next (${kept.join(', ')}) SELECT ${kept.join(', ')} FROM audit_events`);
      db.exec('DROP TABLE audit_events');
      db.exec('ALTER TABLE audit_events_next RENAME TO audit_events');
    } else if (audit === undefined) {
      db.exec(AUDIT_TABLE('audit_events'));
    }
    db.exec('CREATE INDEX IF NOT EXISTS audit_events_request ON audit_events (request_id, seq)');
    // version 9: a grant is bound to its requester's issuer; one made from a request takes that request's
    addMissing('grants', [['principal_iss', 'TEXT']]);
    db.exec(`UPDATE grants SET principal_iss = (
               SELECT json_extract(r.body_json, '$.subject.iss') FROM access_requests r
               WHERE r.id = grants.from_request AND json_extract(r.body_json, '$.subject.sub') = grants.principal)
             WHERE principal_iss IS NULL AND from_request IS NOT NULL`);
    const addName = db.prepare('INSERT OR IGNORE INTO request_principals (name, request_id) VALUES (?, ?)');
    const rows = db.prepare('SELECT id, body_json FROM access_requests').all() as Array<{ id: string; body_json: string }>;
    for (const row of rows) for (const name of requesterNames(row.body_json)) addName.run(name, row.id);
    db.pragma(`user_version = ${STORE_SCHEMA_VERSION}`);
  })();
}

/**
 * Tables of the notification channels (`packages/approvals/src/notify/`), created idempotently on every
 * open without a version bump: `slack_messages` (each Slack message announcing a request, so a
 * decision from any channel can update it with `chat.update`) and `email_links_used` (the `jti` of
 * every email decision link that decided, so a link decides at most once).
 */
const CHANNEL_SCHEMA = `
CREATE TABLE IF NOT EXISTS slack_messages (
  request_id TEXT NOT NULL REFERENCES access_requests (id),
  channel    TEXT NOT NULL,
  ts         TEXT NOT NULL,
  PRIMARY KEY (request_id, channel, ts)
);
CREATE TABLE IF NOT EXISTS email_links_used (
  jti        TEXT PRIMARY KEY,
  request_id TEXT NOT NULL REFERENCES access_requests (id),
  approver   TEXT NOT NULL,
  used_at_ms INTEGER NOT NULL
);
`;

/** Create missing tables and migrate an older file to {@link STORE_SCHEMA_VERSION}. */
export function createSchema(db: Database.Database): void {
  db.exec(SCHEMA);
  migrate(db);
  db.exec(CHANNEL_SCHEMA);
}
