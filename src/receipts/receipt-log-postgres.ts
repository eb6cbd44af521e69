/**
 * The issuing log of receipts in PostgreSQL (`COUNTERSIGN_RECEIPTS_DATABASE_URL`), for MCP
 * instances that share no data folder: the same `receipts` table and chain as the SQLite log
 * (`receipt-log.ts`). Issuing runs in one transaction holding a transaction-level advisory lock,
 * so issuers on any number of hosts take `seq` one at a time and a task never gets two receipts;
 * the lock is released by COMMIT, ROLLBACK or the connection's end (a killed issuer holds nothing).
 */
import pg from 'pg';
import { signReceipt } from '@countersign/receipts';
import { nextPayload, receiptColumns, toStored, type ReceiptLog, type ReceiptRow } from './receipt-log.js';

/** The advisory-lock key that serializes issuing (any 64-bit constant no other part of Countersign uses). */
export const RECEIPT_ISSUE_LOCK = '7266357237720413185';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS receipts (
  seq            BIGINT PRIMARY KEY,
  task_id        TEXT NOT NULL UNIQUE,
  workflow_id    TEXT NOT NULL,
  run_id         TEXT NOT NULL,
  terminal_at_ms BIGINT NOT NULL,
  issued_at_ms   BIGINT NOT NULL,
  digest         TEXT NOT NULL,
  jws_json       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_terminal ON receipts (terminal_at_ms);
`;

/**
 * Open the log in the database at `url` (`postgresql://user:password@host:port/database`),
 * creating its table when missing (under the issue lock, so instances starting together do not
 * race on CREATE). A pool of at most 4 connections. Rejects with the driver's error when the
 * database cannot be reached or refuses the credentials; the URL (which may hold a password) is
 * never part of a message this module writes.
 */
export async function openPostgresReceiptLog(url: string): Promise<ReceiptLog> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // an idle connection's error (the server restarted) must not crash the process: the pool drops it
  pool.on('error', () => undefined);
  const inTransaction = async <T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock($1)', [RECEIPT_ISSUE_LOCK]);
      const out = await fn(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  };
  try {
    await inTransaction((c) => c.query(SCHEMA));
  } catch (err) {
    await pool.end();
    throw err;
  }
  const byTask = async (q: pg.Pool | pg.PoolClient, taskId: string) =>
    (await q.query<ReceiptRow>('SELECT * FROM receipts WHERE task_id = $1', [taskId])).rows[0];
  return {
    has: async (taskId) => (await byTask(pool, taskId)) !== undefined,
    issue: (evidence, key, now = new Date()) =>
      inTransaction(async (c) => {
        const existing = await byTask(c, evidence.task.taskId);
        if (existing) return toStored(existing);
        const tail = (await c.query<{ seq: string; digest: string }>('SELECT seq, digest FROM receipts ORDER BY seq DESC LIMIT 1')).rows[0];
        const payload = nextPayload(tail && { seq: Number(tail.seq), digest: tail.digest }, evidence, now);
        const jws = await signReceipt(payload, key);
        const inserted = await c.query<ReceiptRow>(
          'INSERT INTO receipts (seq, task_id, workflow_id, run_id, terminal_at_ms, issued_at_ms, digest, jws_json) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *',
          receiptColumns(payload, jws, now),
        );
        return toStored(inserted.rows[0]!);
      }),
    async latestTerminalAtMs() {
      const m = (await pool.query<{ m: string | null }>('SELECT MAX(terminal_at_ms) AS m FROM receipts')).rows[0]?.m;
      return m === null || m === undefined ? null : Number(m);
    },
    async since(sinceMs) {
      const rows = await pool.query<ReceiptRow>(
        'SELECT * FROM receipts WHERE seq >= (SELECT MIN(seq) FROM receipts WHERE terminal_at_ms >= $1) ORDER BY seq',
        [sinceMs],
      );
      return rows.rows.map(toStored);
    },
    close: () => pool.end(),
  };
}
