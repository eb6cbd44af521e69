/**
 * The change register of `submit_change` (seed 004's change gate, docs/CHANGE-GATE.md): a SQLite
 * file recording, per `change_id`, the digest of the body first seen under it, and per execution
 * id, the steps applied and the final result.
 *
 * Idempotency by `change_id`: `admit(changeId, digest)` records the digest (of caller and body,
 * `changeBodyDigest`) at first sight (in the gate, before policy) and answers `same` for the same
 * digest and `conflict` for another one, so a second body or caller under one `change_id` is
 * refused before anything is submitted or run.
 *
 * Fencing (`Tool.resolveExecution`): `settle(executionId)` answers from the execution's row: a
 * completed run with its result; no row, fenced in the same transaction (a late `begin` then
 * refuses with `ChangeStoreError('fenced')`); a run begun and not completed, `unknown` (steps may
 * have been applied).
 *
 * Deliberately does not: apply any real change, delete rows, or hold anything but digests, step
 * counts and results (the body itself lives in the workflow's encrypted input).
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

/** The change register. */
export interface ChangeStore {
  /** Record `bodyDigest` for `changeId` at first sight; `same` or `conflict` afterwards. */
  admit(changeId: string, bodyDigest: string): 'new' | 'same' | 'conflict';
  /**
   * Start (or continue) execution `executionId` of `changeId`; returns the steps already applied
   * (0 for a new run). Throws `ChangeStoreError('fenced')` when the id was settled as not executed,
   * `('conflict')` when it ran for another change.
   */
  begin(executionId: string, changeId: string, taskId: string | undefined): number;
  /** Record that step `step` of `executionId` was applied. */
  stepApplied(executionId: string, step: number): void;
  /** Record the final result of `executionId`. */
  complete(executionId: string, result: ToolResult): void;
  /** See the module header. */
  settle(executionId: string): ChangeSettlement;
  /** Executions begun for `changeId` (tests count them: at most one per task). */
  executionsOf(changeId: string): number;
  close(): void;
}

interface RunRow {
  change_id: string;
  steps_done: number;
  result_json: string | null;
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
    first_seen_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS change_runs (
    execution_id TEXT PRIMARY KEY,
    change_id TEXT NOT NULL,
    task_id TEXT,
    steps_done INTEGER NOT NULL,
    result_json TEXT,
    started_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS fenced_change_runs (
    execution_id TEXT PRIMARY KEY,
    fenced_at TEXT NOT NULL
  )`);
  const insertRequest = db.prepare(
    'INSERT INTO change_requests (change_id, body_digest, first_seen_at) VALUES (?, ?, ?) ON CONFLICT(change_id) DO NOTHING',
  );
  const requestDigest = db.prepare('SELECT body_digest FROM change_requests WHERE change_id = ?');
  const runOf = db.prepare('SELECT change_id, steps_done, result_json FROM change_runs WHERE execution_id = ?');
  const insertRun = db.prepare('INSERT INTO change_runs (execution_id, change_id, task_id, steps_done, started_at) VALUES (?, ?, ?, 0, ?)');
  const setSteps = db.prepare('UPDATE change_runs SET steps_done = MAX(steps_done, ?) WHERE execution_id = ?');
  const setResult = db.prepare('UPDATE change_runs SET result_json = ? WHERE execution_id = ?');
  const isFenced = db.prepare('SELECT 1 FROM fenced_change_runs WHERE execution_id = ?');
  const fence = db.prepare('INSERT INTO fenced_change_runs (execution_id, fenced_at) VALUES (?, ?) ON CONFLICT(execution_id) DO NOTHING');
  const countRuns = db.prepare('SELECT COUNT(*) AS n FROM change_runs WHERE change_id = ?');

  const admit = db.transaction((changeId: string, digest: string): 'new' | 'same' | 'conflict' => {
    if (insertRequest.run(changeId, digest, now().toISOString()).changes === 1) return 'new';
    return (requestDigest.get(changeId) as { body_digest: string }).body_digest === digest ? 'same' : 'conflict';
  });
  const begin = db.transaction((executionId: string, changeId: string, taskId: string | undefined): number => {
    if (isFenced.get(executionId)) throw new ChangeStoreError('fenced', `execution id ${executionId} was settled as not executed`);
    const row = runOf.get(executionId) as RunRow | undefined;
    if (row) {
      if (row.change_id !== changeId) throw new ChangeStoreError('conflict', `execution id ${executionId} ran for another change`);
      return row.steps_done;
    }
    insertRun.run(executionId, changeId, taskId ?? null, now().toISOString());
    return 0;
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
    admit: (changeId, digest) => admit.immediate(changeId, digest),
    begin: (executionId, changeId, taskId) => begin.immediate(executionId, changeId, taskId),
    stepApplied: (executionId, step) => void setSteps.run(step, executionId),
    complete: (executionId, result) => void setResult.run(JSON.stringify(result), executionId),
    settle: (executionId) => settle.immediate(executionId),
    executionsOf: (changeId) => (countRuns.get(changeId) as { n: number }).n,
    close: () => db.close(),
  };
}
