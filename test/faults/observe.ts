// Scope: what the fault harness counts after a trial, read straight from the SQLite files the
// roles write (read-only connections): backend requests per task and generation (approval
// service store), ledger rows per task and tool invocations per task (the wire_transfer ledger and
// its invocation audit trail), and calls the recording upstream received (its `calls.log`).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/** Backend submissions of one task: rows per generation (`/<workflowId>/<n>` in the callback URL) and distinct idempotency keys. */
export interface BackendCount {
  /** generation → stored requests; each must be exactly 1. */
  perGeneration: Record<number, number>;
  rows: number;
  distinctKeys: number;
}

/** Count the approval service's stored requests that belong to `workflowId`. */
export function backendRequestsOf(dataDir: string, workflowId: string): BackendCount {
  const db = new Database(join(dataDir, 'approvals.db'), { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const rows = db.prepare('SELECT idempotency_key AS k, body_json AS b FROM access_requests').all() as Array<{ k: string; b: string }>;
    const perGeneration: Record<number, number> = {};
    const keys = new Set<string>();
    for (const r of rows) {
      const body = JSON.parse(r.b) as { callback_url?: string };
      const m = body.callback_url ? new RegExp(`/${workflowId}/(\\d+)$`).exec(body.callback_url) : null;
      if (!m) continue;
      const g = Number(m[1]);
      perGeneration[g] = (perGeneration[g] ?? 0) + 1;
      keys.add(r.k);
    }
    return { perGeneration, rows: Object.values(perGeneration).reduce((a, b) => a + b, 0), distinctKeys: keys.size };
  } finally {
    db.close();
  }
}

/** Tool invocations under `taskId` from the ledger's append-only audit trail (`invocations`; 0 without a ledger). */
export function invocationsOf(dataDir: string, taskId: string): number {
  const file = join(dataDir, 'ledger.db');
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true });
  try {
    db.pragma('busy_timeout = 5000');
    return (db.prepare('SELECT COUNT(*) AS n FROM invocations WHERE task_id = ?').get(taskId) as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Ledger rows written under `taskId` (0 when the ledger does not exist yet). */
export function ledgerRowsOf(dataDir: string, taskId: string): number {
  const file = join(dataDir, 'ledger.db');
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true });
  try {
    db.pragma('busy_timeout = 5000');
    return (db.prepare('SELECT COUNT(*) AS n FROM ledger WHERE task_id = ?').get(taskId) as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Calls with `label` the recording upstream received: lines of `<upstreamDir>/calls.log` (0 before any call). */
export function upstreamCallsOf(upstreamDir: string, label: string): number {
  const file = join(upstreamDir, 'calls.log');
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l === label).length;
}
