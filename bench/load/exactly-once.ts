// Scope: the load run's exactly-once check (SEP-2848 §Completion: an approved call runs at most
// once; the load run also asks that it ran at all). Reads the tool's own records in
// `<data>/ledger.db` (`src/tools/ledger.ts`: one `ledger` row per executed transfer, one
// `invocations` row each time the tool was entered) and compares them with what the driver approved.
import Database from 'better-sqlite3';
import { join } from 'node:path';

/**
 * A gated call of the run: its memo (unique per call), whether the driver approved it, and whether
 * its task was still unfinished when the driver stopped following it (approved calls only).
 */
export interface GatedCall {
  memo: string;
  approved: boolean;
  unfinished?: boolean;
}

/** One ledger row, as the check needs it. */
export interface LedgerRow {
  memo: string | null;
  executionId: string;
}

/** What the tool recorded: ledger rows and the number of tool entries per execution id. */
export interface ToolRecords {
  rows: LedgerRow[];
  invocationsByExecution: Map<string, number>;
}

/**
 * The check's answer. `ok` (safety): nothing executed more than once, nothing unapproved executed,
 * and no approved task finished without executing. `notFinished` (liveness) is reported apart: an
 * approved task still working when the driver stopped following it has not executed *yet*.
 */
export interface ExactlyOnceResult {
  ok: boolean;
  approved: number;
  executedOnce: number;
  /** Approved, finished, no ledger row (memos). */
  notExecuted: string[];
  /** Approved, no ledger row, task still unfinished when the driver stopped following it (memos). */
  notFinished: string[];
  /** Approved, more than one ledger row or tool entry (memos). */
  executedMoreThanOnce: string[];
  /** Not approved by the driver, yet executed (memos). */
  executedWithoutApproval: string[];
}

/** Compare the gated calls with the tool's records. Pure. */
export function checkExactlyOnce(calls: GatedCall[], records: ToolRecords): ExactlyOnceResult {
  const rowsByMemo = new Map<string, LedgerRow[]>();
  for (const r of records.rows) if (r.memo !== null) rowsByMemo.set(r.memo, [...(rowsByMemo.get(r.memo) ?? []), r]);
  const out: ExactlyOnceResult = {
    ok: true,
    approved: 0,
    executedOnce: 0,
    notExecuted: [],
    notFinished: [],
    executedMoreThanOnce: [],
    executedWithoutApproval: [],
  };
  for (const call of calls) {
    const rows = rowsByMemo.get(call.memo) ?? [];
    if (!call.approved) {
      if (rows.length > 0) out.executedWithoutApproval.push(call.memo);
      continue;
    }
    out.approved++;
    const entries = rows.reduce((n, r) => n + (records.invocationsByExecution.get(r.executionId) ?? 0), 0);
    if (rows.length === 0) (call.unfinished ? out.notFinished : out.notExecuted).push(call.memo);
    else if (rows.length > 1 || entries > 1) out.executedMoreThanOnce.push(call.memo);
    else out.executedOnce++;
  }
  out.ok = out.notExecuted.length === 0 && out.executedMoreThanOnce.length === 0 && out.executedWithoutApproval.length === 0;
  return out;
}

/** Read the tool's records from `<dataDir>/ledger.db` (read-only). */
export function readToolRecords(dataDir: string): ToolRecords {
  const db = new Database(join(dataDir, 'ledger.db'), { readonly: true, fileMustExist: true });
  try {
    const rows = (db.prepare('SELECT memo, execution_id FROM ledger').all() as Array<{ memo: string | null; execution_id: string }>).map(
      (r) => ({
        memo: r.memo,
        executionId: r.execution_id,
      }),
    );
    const inv = db.prepare('SELECT execution_id, COUNT(*) AS n FROM invocations GROUP BY execution_id').all() as Array<{
      execution_id: string;
      n: number;
    }>;
    return { rows, invocationsByExecution: new Map(inv.map((r) => [r.execution_id, r.n])) };
  } finally {
    db.close();
  }
}

/** Memos among `memos` for which the approval service holds a request (`<dataDir>/approvals.db`, read-only). */
export function memosWithApprovalRequest(dataDir: string, memos: string[]): string[] {
  if (memos.length === 0) return [];
  const db = new Database(join(dataDir, 'approvals.db'), { readonly: true, fileMustExist: true });
  try {
    const q = db.prepare('SELECT 1 FROM access_requests WHERE instr(body_json, ?) > 0 LIMIT 1');
    return memos.filter((m) => q.get(JSON.stringify(m)) !== undefined);
  } finally {
    db.close();
  }
}
