/**
 * Who follows an approval task, as the MCP server reports it (`POST /access/v1/tasks/:task_ref/followers`,
 * `src/mcp/follower-reports.ts`): one row per task and client name in `task_followers` — when the
 * client was last reported reading the task or holding a subscription to it, and when last as
 * subscribed — and the requests closed because nobody followed them (`unfollowed_closures`, the
 * `unfollowed` rule's `close` action, `../followers.ts`). A request names its task in its body's
 * `task_ref`; an expression index finds the requests of a task. Tables and index are created on
 * every open (`CREATE … IF NOT EXISTS`), without a schema version: older files gain them empty.
 *
 * Deliberately does not: keep a history of reads (only the latest per client), or more than
 * {@link MAX_CLIENTS_PER_TASK} client names per task (a further name is folded into the
 * unnamed row), so a client changing its name each read cannot grow the file.
 */
import type Database from 'better-sqlite3';
import type { Sync } from './async.js';

/** Distinct client names kept per task; reports naming another are stored under the unnamed row. */
export const MAX_CLIENTS_PER_TASK = 8;

const FOLLOWERS_SCHEMA = `
CREATE TABLE IF NOT EXISTS task_followers (
  task_ref         TEXT NOT NULL,
  client_name      TEXT NOT NULL,
  client_version   TEXT,
  last_seen_at_ms  INTEGER NOT NULL,
  subscribed_at_ms INTEGER,
  PRIMARY KEY (task_ref, client_name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS access_requests_task_ref ON access_requests (json_extract(body_json, '$.task_ref'));
CREATE TABLE IF NOT EXISTS unfollowed_closures (
  request_id TEXT PRIMARY KEY REFERENCES access_requests (id),
  at_ms      INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** One client following one task. Times are ms since the epoch. */
export interface FollowerRecord {
  /** `clientInfo.name` as reported; `''` when the client named none. */
  clientName: string;
  clientVersion: string | null;
  /** The latest report of a read or of a held subscription. */
  lastSeenAtMs: number;
  /** The latest report of a held subscription; null: never reported subscribed. */
  subscribedAtMs: number | null;
}

/** One follower report, as the route validated it. */
export interface FollowerReport {
  subscribed: boolean;
  clientName?: string;
  clientVersion?: string;
}

/** The followers' part of the approval store. Every method returns a promise (`async.ts`). */
export interface FollowerStore {
  /** Record `report` for task `taskRef` at `atMs`; false (nothing written) when no request names that task. */
  report(taskRef: string, report: FollowerReport, atMs: number): Promise<boolean>;
  /** The followers of task `taskRef`, most recently seen first. */
  forTask(taskRef: string): Promise<FollowerRecord[]>;
  /** Mark request `requestId` closed because nobody followed it (idempotent). */
  markClosedUnfollowed(requestId: string, atMs: number): Promise<void>;
  /** Whether request `requestId` was closed because nobody followed it. */
  closedUnfollowed(requestId: string): Promise<boolean>;
}

type FollowerRow = { client_name: string; client_version: string | null; last_seen_at_ms: number; subscribed_at_ms: number | null };

/** Create the tables (module header) in `db` and the store over them, synchronous (`store.ts` wraps it). */
export function createFollowerStore(db: Database.Database): Sync<FollowerStore> {
  db.exec(FOLLOWERS_SCHEMA);
  const hasRequest = db.prepare<[string], { one: number }>(
    "SELECT 1 AS one FROM access_requests WHERE json_extract(body_json, '$.task_ref') = ? LIMIT 1",
  );
  const names = db.prepare<[string], { client_name: string }>('SELECT client_name FROM task_followers WHERE task_ref = ?');
  const upsert = db.prepare(
    `INSERT INTO task_followers (task_ref, client_name, client_version, last_seen_at_ms, subscribed_at_ms)
     VALUES (@task_ref, @client_name, @client_version, @at_ms, @subscribed_at_ms)
     ON CONFLICT (task_ref, client_name) DO UPDATE SET
       client_version = excluded.client_version,
       last_seen_at_ms = MAX(last_seen_at_ms, excluded.last_seen_at_ms),
       subscribed_at_ms = COALESCE(MAX(excluded.subscribed_at_ms, COALESCE(subscribed_at_ms, 0)), subscribed_at_ms)`,
  );
  const select = db.prepare<[string], FollowerRow>(
    'SELECT client_name, client_version, last_seen_at_ms, subscribed_at_ms FROM task_followers WHERE task_ref = ? ORDER BY last_seen_at_ms DESC, client_name',
  );
  const insertClosure = db.prepare('INSERT OR IGNORE INTO unfollowed_closures (request_id, at_ms) VALUES (?, ?)');
  const selectClosure = db.prepare<[string], { one: number }>('SELECT 1 AS one FROM unfollowed_closures WHERE request_id = ?');

  const report = db.transaction((taskRef: string, r: FollowerReport, atMs: number): boolean => {
    if (hasRequest.get(taskRef) === undefined) return false;
    let name = r.clientName ?? '';
    if (name !== '') {
      const known = names.all(taskRef).map((n) => n.client_name);
      if (!known.includes(name) && known.filter((n) => n !== '').length >= MAX_CLIENTS_PER_TASK) name = '';
    }
    upsert.run({
      task_ref: taskRef,
      client_name: name,
      client_version: name === '' ? null : (r.clientVersion ?? null),
      at_ms: atMs,
      subscribed_at_ms: r.subscribed ? atMs : null,
    });
    return true;
  });

  return {
    report: (taskRef, r, atMs) => report(taskRef, r, atMs),
    forTask: (taskRef) =>
      select.all(taskRef).map((row) => ({
        clientName: row.client_name,
        clientVersion: row.client_version,
        lastSeenAtMs: row.last_seen_at_ms,
        subscribedAtMs: row.subscribed_at_ms,
      })),
    markClosedUnfollowed(requestId, atMs) {
      insertClosure.run(requestId, atMs);
    },
    closedUnfollowed: (requestId) => selectClosure.get(requestId) !== undefined,
  };
}
