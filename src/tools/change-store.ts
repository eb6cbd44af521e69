/**
 * The change register of `submit_change` (seed 004's change gate, docs/CHANGE-GATE.md): a SQLite
 * file recording, per `change_id`, who owns it (the digest of caller and body) and the one
 * execution claimed under it, with its steps and its outcome.
 *
 * Ownership by `change_id` (docs/CHANGE-GATE.md §Idempotency): `lookup(changeId, digest)` only
 * reads; `own(changeId, digest, taskId?)` records the digest (of caller and body,
 * `changeBodyDigest`) when a call proceeds (its task was created, or it is about to run inline),
 * answering `same` for the same digest and `conflict` for another one. A call that is refused,
 * denied or only asked for input never owns the id.
 *
 * One execution per `change_id`: `begin(executionId, changeId, taskId)` claims the change's one
 * execution in one immediate transaction before any step runs; a second execution id for the same
 * change gets `{claimed: false, run}` (the run that holds the claim) and must not run. The run's
 * outcome is recorded by `complete` (the result) or `fail` (the tool failed); a claim with neither
 * is a run still going or one interrupted (crash, lost worker), whose outcome is unknown: it is
 * never run again.
 *
 * Fencing (`Tool.resolveExecution`): `settle(executionId)` answers from the execution's row: a
 * completed run with its result; no row, fenced in the same transaction (a late `begin` then
 * refuses with `ChangeStoreError('fenced')`); a run begun and not completed, `unknown` (steps may
 * have been applied).
 *
 * Deliberately does not: apply any real change, delete rows (but for `disown` of an ownership
 * nothing came of), or hold anything but digests, step counts and results (the body itself lives
 * in the workflow's encrypted input).
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ToolResult } from './tool.js';

/** Local error: `fenced`, the execution id was settled as not executed; `conflict`, it ran for another change. */
export class ChangeStoreError extends Error {
  constructor(
    readonly code: 'fenced' | 'conflict',
    message: string,
  ) {
    super(message);
    this.name = 'ChangeStoreError';
  }
}

/** What `settle` proves about one execution id. */
export type ChangeSettlement = { state: 'executed'; result: ToolResult } | { state: 'fenced' } | { state: 'unknown' };

/**
 * The one execution claimed under a `change_id`: `outcome` is `executed` (with the tool's
 * `result`), `failed` (the tool threw; part of the change may be applied) or `none` (claimed, no
 * outcome recorded: still running, or interrupted and unknown). Times are ISO 8601.
 */
export interface ChangeRun {
  executionId: string;
  /** The MCP task the run belongs to; null for an inline run. */
  taskId: string | null;
  startedAt: string;
  stepsDone: number;
  outcome: 'executed' | 'failed' | 'none';
  result?: ToolResult;
}

/**
 * What the register knows of a `change_id` for one caller and body: `free` (nobody owns it),
 * `conflict` (another caller or body owns it), or `owned` by this one, with the task that owns it
 * (null for inline calls) and the run claimed under it, if any.
 */
export type ChangeLookup = { state: 'free' } | { state: 'conflict' } | { state: 'owned'; taskId: string | null; run?: ChangeRun };

/** Answer of `begin`: the claim (with the steps already applied, 0 for a new run), or the run that holds it. */
export type ChangeClaim = { claimed: true; stepsDone: number } | { claimed: false; run: ChangeRun };

/** The change register. */
export interface ChangeStore {
  /** Read what is recorded for `changeId` against `bodyDigest`; changes nothing. */
  lookup(changeId: string, bodyDigest: string): ChangeLookup;
  /**
   * Own `changeId` for `bodyDigest` (first owner wins): `new`, `same` (already this digest's; a
   * given `taskId` then replaces the recorded one) or `conflict` (another digest owns it).
   */
  own(changeId: string, bodyDigest: string, taskId?: string): 'new' | 'same' | 'conflict';
  /**
   * Remove `bodyDigest`'s ownership of `changeId` when it has no task and no claimed execution
   * (the call that took it came to nothing); otherwise change nothing.
   */
  disown(changeId: string, bodyDigest: string): void;
  /**
   * Claim the one execution of `changeId` for `executionId`, or continue it (the same execution
   * id again). Throws `ChangeStoreError('fenced')` when the id was settled as not executed,
   * `('conflict')` when it ran for another change.
   */
  begin(executionId: string, changeId: string, taskId: string | undefined): ChangeClaim;
  /** Record that step `step` of `executionId` was applied. */
  stepApplied(executionId: string, step: number): void;
  /** Record the final result of `executionId`. */
  complete(executionId: string, result: ToolResult): void;
  /** Record that `executionId` failed (the tool threw after its claim). */
  fail(executionId: string): void;
  /** See the module header. */
  settle(executionId: string): ChangeSettlement;
  /** Executions begun for `changeId` (tests count them: at most one per task). */
  executionsOf(changeId: string): number;
  close(): void;
}

interface RunRow {
  execution_id: string;
  change_id: string;
  task_id: string | null;
  steps_done: number;
  result_json: string | null;
  failed_at: string | null;
  started_at: string;
}

function runOfRow(row: RunRow): ChangeRun {
  return {
    executionId: row.execution_id,
    taskId: row.task_id,
    startedAt: row.started_at,
    stepsDone: row.steps_done,
    outcome: row.result_json !== null ? 'executed' : row.failed_at !== null ? 'failed' : 'none',
    ...(row.result_json !== null ? { result: JSON.parse(row.result_json) as ToolResult } : {}),
  };
}

/** Add `column` to `table` when a register written by an older version lacks it. */
function addColumn(db: Database.Database, table: string, column: string, type: string): void {
  const has = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).some((c) => c.name === column);
  if (!has) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
}

/** Open (creating if needed) the register at `path` (`:memory:` for a throw-away one) in WAL mode. */
export function openChangeStore(path: string, options: { now?: () => Date } = {}): ChangeStore {
  const now = options.now ?? (() => new Date());
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`CREATE TABLE IF NOT EXISTS change_requests (
    change_id TEXT PRIMARY KEY,
    body_digest TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    task_id TEXT
  );
  CREATE TABLE IF NOT EXISTS change_runs (
    execution_id TEXT PRIMARY KEY,
    change_id TEXT NOT NULL,
    task_id TEXT,
    steps_done INTEGER NOT NULL,
    result_json TEXT,
    started_at TEXT NOT NULL,
    failed_at TEXT
  );
  CREATE TABLE IF NOT EXISTS fenced_change_runs (
    execution_id TEXT PRIMARY KEY,
    fenced_at TEXT NOT NULL
  )`);
  addColumn(db, 'change_requests', 'task_id', 'TEXT');
  addColumn(db, 'change_runs', 'failed_at', 'TEXT');
  db.exec('CREATE INDEX IF NOT EXISTS change_runs_by_change ON change_runs (change_id)');
  const insertRequest = db.prepare(
    'INSERT INTO change_requests (change_id, body_digest, first_seen_at, task_id) VALUES (?, ?, ?, ?) ON CONFLICT(change_id) DO NOTHING',
  );
  const requestOf = db.prepare('SELECT body_digest, task_id FROM change_requests WHERE change_id = ?');
  const setRequestTask = db.prepare('UPDATE change_requests SET task_id = ? WHERE change_id = ?');
  const deleteIdleRequest = db.prepare(
    'DELETE FROM change_requests WHERE change_id = ? AND body_digest = ? AND task_id IS NULL AND NOT EXISTS (SELECT 1 FROM change_runs WHERE change_runs.change_id = change_requests.change_id)',
  );
  const RUN_COLUMNS = 'execution_id, change_id, task_id, steps_done, result_json, failed_at, started_at';
  const runOf = db.prepare(`SELECT ${RUN_COLUMNS} FROM change_runs WHERE execution_id = ?`);
  // the first claim under a change (a register from before the one-execution rule may hold several)
  const claimOf = db.prepare(`SELECT ${RUN_COLUMNS} FROM change_runs WHERE change_id = ? ORDER BY started_at, rowid LIMIT 1`);
  const setFailed = db.prepare('UPDATE change_runs SET failed_at = ? WHERE execution_id = ? AND result_json IS NULL');
  const insertRun = db.prepare('INSERT INTO change_runs (execution_id, change_id, task_id, steps_done, started_at) VALUES (?, ?, ?, 0, ?)');
  const setSteps = db.prepare('UPDATE change_runs SET steps_done = MAX(steps_done, ?) WHERE execution_id = ?');
  const setResult = db.prepare('UPDATE change_runs SET result_json = ? WHERE execution_id = ?');
  const isFenced = db.prepare('SELECT 1 FROM fenced_change_runs WHERE execution_id = ?');
  const fence = db.prepare('INSERT INTO fenced_change_runs (execution_id, fenced_at) VALUES (?, ?) ON CONFLICT(execution_id) DO NOTHING');
  const countRuns = db.prepare('SELECT COUNT(*) AS n FROM change_runs WHERE change_id = ?');

  const lookup = db.transaction((changeId: string, digest: string): ChangeLookup => {
    const request = requestOf.get(changeId) as { body_digest: string; task_id: string | null } | undefined;
    if (!request) return { state: 'free' };
    if (request.body_digest !== digest) return { state: 'conflict' };
    const run = claimOf.get(changeId) as RunRow | undefined;
    return { state: 'owned', taskId: request.task_id, ...(run ? { run: runOfRow(run) } : {}) };
  });
  const own = db.transaction((changeId: string, digest: string, taskId: string | undefined): 'new' | 'same' | 'conflict' => {
    if (insertRequest.run(changeId, digest, now().toISOString(), taskId ?? null).changes === 1) return 'new';
    if ((requestOf.get(changeId) as { body_digest: string }).body_digest !== digest) return 'conflict';
    if (taskId !== undefined) setRequestTask.run(taskId, changeId);
    return 'same';
  });
  const begin = db.transaction((executionId: string, changeId: string, taskId: string | undefined): ChangeClaim => {
    if (isFenced.get(executionId)) throw new ChangeStoreError('fenced', `execution id ${executionId} was settled as not executed`);
    const row = runOf.get(executionId) as RunRow | undefined;
    if (row) {
      if (row.change_id !== changeId) throw new ChangeStoreError('conflict', `execution id ${executionId} ran for another change`);
      return { claimed: true, stepsDone: row.steps_done };
    }
    const held = claimOf.get(changeId) as RunRow | undefined;
    if (held) return { claimed: false, run: runOfRow(held) };
    insertRun.run(executionId, changeId, taskId ?? null, now().toISOString());
    return { claimed: true, stepsDone: 0 };
  });
  const settle = db.transaction((executionId: string): ChangeSettlement => {
    const row = runOf.get(executionId) as RunRow | undefined;
    if (!row) {
      fence.run(executionId, now().toISOString());
      return { state: 'fenced' };
    }
    return row.result_json === null ? { state: 'unknown' } : { state: 'executed', result: JSON.parse(row.result_json) as ToolResult };
  });

  return {
    lookup: (changeId, digest) => lookup.deferred(changeId, digest),
    own: (changeId, digest, taskId) => own.immediate(changeId, digest, taskId),
    disown: (changeId, digest) => void deleteIdleRequest.run(changeId, digest),
    begin: (executionId, changeId, taskId) => begin.immediate(executionId, changeId, taskId),
    stepApplied: (executionId, step) => void setSteps.run(step, executionId),
    complete: (executionId, result) => void setResult.run(JSON.stringify(result), executionId),
    fail: (executionId) => void setFailed.run(now().toISOString(), executionId),
    settle: (executionId) => settle.immediate(executionId),
    executionsOf: (changeId) => (countRuns.get(changeId) as { n: number }).n,
    close: () => db.close(),
  };
}
