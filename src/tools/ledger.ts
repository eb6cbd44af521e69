/**
 * The demo ledger: a SQLite table of completed wire transfers, the side effect `wire_transfer`
 * performs. It is what the end-to-end tests count to prove "executed at most once" (SEP-2848
 * §Completion).
 *
 * Idempotency: `execution_id` is UNIQUE. Recording an execution id again writes no row; it returns
 * the existing entry with `duplicate: true` when the transfer details match, and throws
 * `LedgerError('conflict')` when they differ (a reused id for another transfer is a bug upstream).
 *
 * Fencing (`Tool.resolveExecution`): `settle(executionId)` answers whether the execution's row exists and, when
 * it does not, records the id as fenced in the same transaction; `record` refuses a fenced id with
 * `LedgerError('fenced')`. So "not executed" answered once stays true forever.
 *
 * Invocation audit trail (counted by the fault harness, `test/faults/`): `invocations` is append-only; `recordInvocation` writes one
 * row, in its own committed transaction, each time the tool is entered for an execution id —
 * before the effect, so duplicates (a re-invoked execution id, which `ledger` deduplicates) and
 * fenced attempts (refused by `record`) are counted too. It is what proves "invoked at most once
 * per task": the UNIQUE ledger row alone would hide a second run.
 *
 * Deliberately does not: model balances or accounts, move real money, or delete rows.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/** One ledger row. `amountCents` is an integer number of US cents. */
export interface LedgerEntry {
  entryId: number;
  executionId: string;
  taskId?: string;
  to: string;
  amountCents: number;
  memo?: string;
  /** The payee reference (`wire_transfer`'s hidden `reference`), when given. */
  reference?: string;
  /** ISO 8601 UTC. */
  createdAt: string;
}

/** Input of `record`: `amount` in US dollars with at most 2 decimals (stored as cents). */
export interface LedgerRecordInput {
  executionId: string;
  taskId?: string;
  to: string;
  amount: number;
  memo?: string;
  reference?: string;
}

/**
 * Local ledger error. `conflict`: execution id reused for other details; `invalid`: bad amount;
 * `fenced`: the execution id was settled as not executed, so it can never be recorded.
 */
export class LedgerError extends Error {
  constructor(
    readonly code: 'conflict' | 'invalid' | 'fenced',
    message: string,
  ) {
    super(message);
    this.name = 'LedgerError';
  }
}

/** The ledger. All methods are synchronous (better-sqlite3). */
export interface Ledger {
  /**
   * Write one row for `executionId`. Returns `{entryId, duplicate: false}` for a new row and
   * `{entryId, duplicate: true}` (the existing entry, nothing written) when the id was already
   * recorded with the same `to`, amount and memo. Throws `LedgerError('conflict')` when it was
   * recorded with different details, `LedgerError('invalid')` for an amount that is not a positive
   * whole number of cents.
   */
  record(input: LedgerRecordInput): { entryId: number; duplicate: boolean };
  /**
   * Settle an execution id after a lost execution: its row when recorded; otherwise the id is
   * fenced in the same transaction (every later `record` of it throws `LedgerError('fenced')`)
   * and `{fenced: true}` is returned. Idempotent.
   */
  settle(executionId: string): { entry: LedgerEntry } | { fenced: true };
  /**
   * Append one row to the invocation audit trail (`invocations`): the tool was entered for
   * `executionId`. Committed at once, before any effect; never deduplicated, never deleted.
   */
  recordInvocation(input: { executionId: string; taskId?: string }): void;
  /** Invocation audit rows under `taskId` (every entry into the tool, duplicates included). */
  invocationsByTask(taskId: string): number;
  /** Invocation audit rows under `executionId`. */
  invocationsByExecution(executionId: string): number;
  /** Number of rows written under `taskId`. */
  countByTask(taskId: string): number;
  /** Number of rows. */
  count(): number;
  /** The row of `executionId`, if any. */
  findByExecution(executionId: string): LedgerEntry | undefined;
  /** All rows, oldest first. */
  list(): LedgerEntry[];
  /** Close the database. */
  close(): void;
}

interface Row {
  entry_id: number;
  execution_id: string;
  task_id: string | null;
  to_account: string;
  amount_cents: number;
  memo: string | null;
  reference: string | null;
  created_at: string;
}

function toEntry(r: Row): LedgerEntry {
  return {
    entryId: r.entry_id,
    executionId: r.execution_id,
    ...(r.task_id === null ? {} : { taskId: r.task_id }),
    to: r.to_account,
    amountCents: r.amount_cents,
    ...(r.memo === null ? {} : { memo: r.memo }),
    ...(r.reference === null || r.reference === undefined ? {} : { reference: r.reference }),
    createdAt: r.created_at,
  };
}

/** Dollars (≤ 2 decimals) → integer cents; `LedgerError('invalid')` otherwise. */
export function dollarsToCents(amount: number): number {
  const cents = Math.round(amount * 100);
  // cents / 100 and the amount's own literal both round to the double nearest the decimal value.
  if (!Number.isSafeInteger(cents) || cents <= 0 || cents / 100 !== amount) {
    throw new LedgerError('invalid', 'amount must be a positive number of dollars with at most 2 decimals');
  }
  return cents;
}

/**
 * Open (creating if needed, with its parent folder) the ledger at `path` (`:memory:` for a
 * throw-away one) in WAL mode. `now` supplies `created_at` (default: the system clock).
 */
export function openLedger(path: string, options: { now?: () => Date } = {}): Ledger {
  const now = options.now ?? (() => new Date());
  if (path !== ':memory:' && !path.startsWith('file:')) mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`CREATE TABLE IF NOT EXISTS ledger (
    entry_id INTEGER PRIMARY KEY,
    execution_id TEXT UNIQUE NOT NULL,
    task_id TEXT,
    to_account TEXT NOT NULL,
    amount_cents INTEGER NOT NULL,
    memo TEXT,
    created_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS fenced_executions (
    execution_id TEXT PRIMARY KEY,
    fenced_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS invocations (
    invocation_id INTEGER PRIMARY KEY,
    execution_id TEXT NOT NULL,
    task_id TEXT,
    invoked_at TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS invocations_by_task ON invocations (task_id);
  CREATE INDEX IF NOT EXISTS invocations_by_execution ON invocations (execution_id)`);
  // a ledger made before `reference` existed gets the column (null in its old rows)
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('ledger') as Array<{ name: string }>;
  if (!columns.some((c) => c.name === 'reference')) db.exec('ALTER TABLE ledger ADD COLUMN reference TEXT');
  const insert = db.prepare(
    `INSERT INTO ledger (execution_id, task_id, to_account, amount_cents, memo, reference, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(execution_id) DO NOTHING`,
  );
  const byExecution = db.prepare('SELECT * FROM ledger WHERE execution_id = ?');
  const isFenced = db.prepare('SELECT 1 FROM fenced_executions WHERE execution_id = ?');
  const fence = db.prepare('INSERT INTO fenced_executions (execution_id, fenced_at) VALUES (?, ?) ON CONFLICT(execution_id) DO NOTHING');
  const invocation = db.prepare('INSERT INTO invocations (execution_id, task_id, invoked_at) VALUES (?, ?, ?)');
  const invocationsTask = db.prepare('SELECT COUNT(*) AS n FROM invocations WHERE task_id = ?');
  const invocationsExecution = db.prepare('SELECT COUNT(*) AS n FROM invocations WHERE execution_id = ?');
  const countTask = db.prepare('SELECT COUNT(*) AS n FROM ledger WHERE task_id = ?');
  const countAll = db.prepare('SELECT COUNT(*) AS n FROM ledger');
  const all = db.prepare('SELECT * FROM ledger ORDER BY entry_id');

  const record = db.transaction((input: LedgerRecordInput): { entryId: number; duplicate: boolean } => {
    const cents = dollarsToCents(input.amount);
    if (isFenced.get(input.executionId)) throw new LedgerError('fenced', `execution id ${input.executionId} was settled as not executed`);
    const info = insert.run(
      input.executionId,
      input.taskId ?? null,
      input.to,
      cents,
      input.memo ?? null,
      input.reference ?? null,
      now().toISOString(),
    );
    if (info.changes === 1) return { entryId: Number(info.lastInsertRowid), duplicate: false };
    const existing = byExecution.get(input.executionId) as Row;
    if (
      existing.to_account !== input.to ||
      existing.amount_cents !== cents ||
      existing.memo !== (input.memo ?? null) ||
      existing.reference !== (input.reference ?? null)
    ) {
      throw new LedgerError('conflict', `execution id ${input.executionId} was already recorded for another transfer`);
    }
    return { entryId: existing.entry_id, duplicate: true };
  });

  const settle = db.transaction((executionId: string): { entry: LedgerEntry } | { fenced: true } => {
    const row = byExecution.get(executionId) as Row | undefined;
    if (row) return { entry: toEntry(row) };
    fence.run(executionId, now().toISOString());
    return { fenced: true };
  });

  return {
    // IMMEDIATE: take the write lock first (waiting up to busy_timeout); a deferred transaction
    // that reads first could not upgrade to a writer under contention and would fail at once.
    record: (input) => record.immediate(input),
    settle: (executionId) => settle.immediate(executionId),
    // a single INSERT in autocommit mode: its own transaction, committed (WAL) before it returns
    recordInvocation: (input) => void invocation.run(input.executionId, input.taskId ?? null, now().toISOString()),
    invocationsByTask: (taskId) => (invocationsTask.get(taskId) as { n: number }).n,
    invocationsByExecution: (executionId) => (invocationsExecution.get(executionId) as { n: number }).n,
    countByTask: (taskId) => (countTask.get(taskId) as { n: number }).n,
    count: () => (countAll.get() as { n: number }).n,
    findByExecution: (executionId) => {
      const row = byExecution.get(executionId) as Row | undefined;
      return row ? toEntry(row) : undefined;
    },
    list: () => (all.all() as Row[]).map(toEntry),
    close: () => db.close(),
  };
}
