/**
 * The issuing log of receipts: `<data>/receipts.db` (SQLite, better-sqlite3), or a PostgreSQL
 * database when `COUNTERSIGN_RECEIPTS_DATABASE_URL` names one (`receipt-log-postgres.ts`; for
 * instances that share no disk). One row per task, in issue order; each new receipt takes the next
 * `seq` and names the previous row's digest as `prev`, inside one transaction, so processes issuing
 * at the same time still build one chain.
 *
 * Deliberately does not: store tool arguments (the receipt holds only the binding digest), or
 * ever rewrite or delete a row (a chain with a hole could not be told from a tampered one).
 */
import Database from 'better-sqlite3';
import type { FlattenedJWS } from 'jose';
import { receiptDigest, RECEIPT_VERSION, signReceipt, type ReceiptEvidence, type ReceiptPayload } from '@countersign/receipts';
import type { ReceiptSigningKey } from './signing-key.js';

/** One stored receipt. */
export interface StoredReceipt {
  seq: number;
  taskId: string;
  workflowId: string;
  runId: string;
  /** When the task reached its terminal state, ms since the epoch. */
  terminalAtMs: number;
  /** The flattened JWS, as exported. */
  jws: FlattenedJWS;
}

/** The log. Every method rejects with the database's error when it cannot be reached. */
export interface ReceiptLog {
  /** True when a receipt for `taskId` was issued already. */
  has(taskId: string): Promise<boolean>;
  /**
   * Issue the receipt for `evidence` (its task's first): `seq` = last + 1, `prev` = digest of the
   * last receipt (null for the first), `issuedAt` = `now`; signed with `key`. Returns the stored
   * receipt, or the existing one when the task already has a receipt (issuing is idempotent).
   */
  issue(evidence: ReceiptEvidence, key: ReceiptSigningKey, now?: Date): Promise<StoredReceipt>;
  /** The latest terminal time among issued receipts, ms since the epoch; null when empty. */
  latestTerminalAtMs(): Promise<number | null>;
  /**
   * Receipts from the first whose task ended at or after `sinceMs` to the end of the log, in `seq`
   * order: a contiguous piece of the chain (so it verifies), which may hold a few receipts of
   * earlier tasks issued after that one.
   */
  since(sinceMs: number): Promise<StoredReceipt[]>;
  close(): Promise<void>;
}

/** A row of `receipts`, as both stores hold it (PostgreSQL returns BIGINT columns as strings). */
export interface ReceiptRow {
  seq: number | string;
  task_id: string;
  workflow_id: string;
  run_id: string;
  terminal_at_ms: number | string;
  jws_json: string;
  digest: string;
}
type Row = ReceiptRow;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS receipts (
  seq            INTEGER PRIMARY KEY,
  task_id        TEXT NOT NULL UNIQUE,
  workflow_id    TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  terminal_at_ms INTEGER NOT NULL,
  issued_at_ms   INTEGER NOT NULL,
  digest         TEXT NOT NULL,
  jws_json       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_terminal ON receipts (terminal_at_ms);
`;

/** The stored receipt of a row. */
export function toStored(r: ReceiptRow): StoredReceipt {
  return {
    seq: Number(r.seq),
    taskId: r.task_id,
    workflowId: r.workflow_id,
    runId: r.run_id,
    terminalAtMs: Number(r.terminal_at_ms),
    jws: JSON.parse(r.jws_json) as FlattenedJWS,
  };
}

/**
 * The payload of the receipt that follows `tail` (the log's last row, or undefined when empty):
 * `seq` = tail + 1, `prev` = the tail's digest (null for the first), `issuedAt` = `now` (ISO 8601).
 */
export function nextPayload(tail: { seq: number; digest: string } | undefined, evidence: ReceiptEvidence, now: Date): ReceiptPayload {
  return { version: RECEIPT_VERSION, seq: (tail?.seq ?? 0) + 1, prev: tail?.digest ?? null, issuedAt: now.toISOString(), ...evidence };
}

/** The columns an issued receipt is inserted with, in `receipts`' column order. */
export function receiptColumns(
  payload: ReceiptPayload,
  jws: FlattenedJWS,
  now: Date,
): [number, string, string, string, number, number, string, string] {
  const task = payload.task;
  return [
    payload.seq,
    task.taskId,
    task.workflowId,
    task.runId,
    Date.parse(task.terminalAt),
    now.getTime(),
    receiptDigest(payload),
    JSON.stringify(jws),
  ];
}

/** Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`) rather than a file. */
export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/**
 * Open (creating its table) the log at `location`: a PostgreSQL connection URL
 * (`postgresql://user@host:port/db`, `receipt-log-postgres.ts`) or a SQLite file path. Rejects
 * with the driver's error when the file cannot be opened or the database cannot be reached.
 */
export async function openReceiptLog(location: string): Promise<ReceiptLog> {
  if (isPostgresUrl(location)) return (await import('./receipt-log-postgres.js')).openPostgresReceiptLog(location);
  return openSqliteReceiptLog(location);
}

/** The SQLite log at `dbPath` (WAL, so several processes on one host can share the file). Throws the driver's error when the file cannot be opened. */
function openSqliteReceiptLog(dbPath: string): ReceiptLog {
  const db = new Database(dbPath);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(SCHEMA);
  const byTask = db.prepare('SELECT * FROM receipts WHERE task_id = ?');
  const last = db.prepare('SELECT seq, digest FROM receipts ORDER BY seq DESC LIMIT 1');
  const insert = db.prepare(
    'INSERT INTO receipts (seq, task_id, workflow_id, run_id, terminal_at_ms, issued_at_ms, digest, jws_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  return {
    has: async (taskId) => byTask.get(taskId) !== undefined,
    async issue(evidence, key, now = new Date()) {
      // Signing is asynchronous and a better-sqlite3 transaction is not: place, sign, then insert
      // under an immediate transaction that re-checks the place; a lost race (another issuer took
      // the seq) retries with the new tail.
      for (;;) {
        const existing = byTask.get(evidence.task.taskId) as Row | undefined;
        if (existing) return toStored(existing);
        const payload = nextPayload(last.get() as { seq: number; digest: string } | undefined, evidence, now);
        const jws = await signReceipt(payload, key);
        const placed = db
          .transaction(() => {
            const current = last.get() as { seq: number } | undefined;
            if ((current?.seq ?? 0) !== payload.seq - 1 || byTask.get(evidence.task.taskId) !== undefined) return false;
            insert.run(...receiptColumns(payload, jws, now));
            return true;
          })
          .immediate();
        if (placed) return toStored(byTask.get(evidence.task.taskId) as Row);
      }
    },
    async latestTerminalAtMs() {
      const r = db.prepare('SELECT MAX(terminal_at_ms) AS m FROM receipts').get() as { m: number | null };
      return r.m;
    },
    async since(sinceMs) {
      const first = db.prepare('SELECT MIN(seq) AS s FROM receipts WHERE terminal_at_ms >= ?').get(sinceMs) as { s: number | null };
      if (first.s === null) return [];
      return (db.prepare('SELECT * FROM receipts WHERE seq >= ? ORDER BY seq').all(first.s) as Row[]).map(toStored);
    },
    close: async () => void db.close(),
  };
}
