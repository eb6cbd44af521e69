/**
 * The issuing log of receipts: `<data>/receipts.db` (SQLite, better-sqlite3). One row per task,
 * in issue order; each new receipt takes the next `seq` and names the previous row's digest as
 * `prev`, inside one transaction, so processes issuing at the same time still build one chain.
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

/** The log. */
export interface ReceiptLog {
  /** True when a receipt for `taskId` was issued already. */
  has(taskId: string): boolean;
  /**
   * Issue the receipt for `evidence` (its task's first): `seq` = last + 1, `prev` = digest of the
   * last receipt (null for the first), `issuedAt` = `now`; signed with `key`. Returns the stored
   * receipt, or the existing one when the task already has a receipt (issuing is idempotent).
   */
  issue(evidence: ReceiptEvidence, key: ReceiptSigningKey, now?: Date): Promise<StoredReceipt>;
  /** The latest terminal time among issued receipts, ms since the epoch; null when empty. */
  latestTerminalAtMs(): number | null;
  /**
   * Receipts from the first whose task ended at or after `sinceMs` to the end of the log, in `seq`
   * order: a contiguous piece of the chain (so it verifies), which may hold a few receipts of
   * earlier tasks issued after that one.
   */
  since(sinceMs: number): StoredReceipt[];
  close(): void;
}

interface Row {
  seq: number;
  task_id: string;
  workflow_id: string;
  run_id: string;
  terminal_at_ms: number;
  jws_json: string;
  digest: string;
}

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

function toStored(r: Row): StoredReceipt {
  return {
    seq: r.seq,
    taskId: r.task_id,
    workflowId: r.workflow_id,
    runId: r.run_id,
    terminalAtMs: r.terminal_at_ms,
    jws: JSON.parse(r.jws_json) as FlattenedJWS,
  };
}

/** Open (creating) the log at `dbPath`. Throws the driver's error when the file cannot be opened. */
export function openReceiptLog(dbPath: string): ReceiptLog {
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
    has: (taskId) => byTask.get(taskId) !== undefined,
    async issue(evidence, key, now = new Date()) {
      // Signing is asynchronous and a better-sqlite3 transaction is not: place, sign, then insert
      // under an immediate transaction that re-checks the place; a lost race (another issuer took
      // the seq) retries with the new tail.
      for (;;) {
        const existing = byTask.get(evidence.task.taskId) as Row | undefined;
        if (existing) return toStored(existing);
        const tail = last.get() as { seq: number; digest: string } | undefined;
        const payload: ReceiptPayload = {
          version: RECEIPT_VERSION,
          seq: (tail?.seq ?? 0) + 1,
          prev: tail?.digest ?? null,
          issuedAt: now.toISOString(),
          ...evidence,
        };
        const jws = await signReceipt(payload, key);
        const placed = db
          .transaction(() => {
            const current = last.get() as { seq: number } | undefined;
            if ((current?.seq ?? 0) !== payload.seq - 1 || byTask.get(evidence.task.taskId) !== undefined) return false;
            insert.run(
              payload.seq,
              evidence.task.taskId,
              evidence.task.workflowId,
              evidence.task.runId,
              Date.parse(evidence.task.terminalAt),
              now.getTime(),
              receiptDigest(payload),
              JSON.stringify(jws),
            );
            return true;
          })
          .immediate();
        if (placed) return toStored(byTask.get(evidence.task.taskId) as Row);
      }
    },
    latestTerminalAtMs() {
      const r = db.prepare('SELECT MAX(terminal_at_ms) AS m FROM receipts').get() as { m: number | null };
      return r.m;
    },
    since(sinceMs) {
      const first = db.prepare('SELECT MIN(seq) AS s FROM receipts WHERE terminal_at_ms >= ?').get(sinceMs) as { s: number | null };
      if (first.s === null) return [];
      return (db.prepare('SELECT * FROM receipts WHERE seq >= ? ORDER BY seq').all(first.s) as Row[]).map(toStored);
    },
    close: () => db.close(),
  };
}
