/**
 * Issuing receipts: every approval workflow run that closed with a task result gets one receipt in
 * the issuing log (`receipt-log.ts`), in the order the runs closed. Run by `countersign receipts
 * export` before it writes (and safe to run from several places: the log's transaction keeps one
 * chain, and a task never gets two receipts).
 *
 * Where the evidence comes from, and why here rather than in the workflow: see docs/APPROVERS.md
 * §Evidence receipts.
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { taskIdFor } from '../../workflows/task-id.js';
import type { ReceiptLog } from './receipt-log.js';
import type { ReceiptSigningKey } from './signing-key.js';
import { EvidenceError, evidenceFromHistory, type DecisionRecordSource } from './task-evidence.js';

/** How far before the log's latest terminal time the visibility query starts, ms: runs that closed close together may become visible out of order. */
export const ISSUE_OVERLAP_MS = 10 * 60_000;

/** What one issuing pass did. */
export interface IssueReport {
  /** Receipts newly issued. */
  issued: number;
  /** Closed runs skipped because their history holds no task result (terminated runs), with the reason. */
  skipped: Array<{ workflowId: string; runId: string; reason: string }>;
}

/**
 * Issue receipts for every closed approval workflow run not yet in `log`: runs whose close time is
 * at or after the log's latest terminal time minus {@link ISSUE_OVERLAP_MS} (all closed runs when
 * the log is empty), oldest first; histories are decoded with `codec`; decisions are read from
 * `records` when given. Throws Temporal's error when the server cannot be reached.
 */
export async function issuePendingReceipts(deps: {
  temporal: Client;
  codec: PayloadCodec;
  log: ReceiptLog;
  key: ReceiptSigningKey;
  records?: DecisionRecordSource;
}): Promise<IssueReport> {
  const latest = await deps.log.latestTerminalAtMs();
  let query = "WorkflowType = 'approvalWorkflow' AND ExecutionStatus != 'Running'";
  if (latest !== null) query += ` AND CloseTime >= '${new Date(latest - ISSUE_OVERLAP_MS).toISOString()}'`;
  const closed: Array<{ workflowId: string; runId: string; closeMs: number }> = [];
  for await (const w of deps.temporal.workflow.list({ query })) {
    if (await deps.log.has(taskIdFor(w.workflowId, w.runId))) continue;
    closed.push({ workflowId: w.workflowId, runId: w.runId, closeMs: w.closeTime?.getTime() ?? 0 });
  }
  closed.sort((a, b) => a.closeMs - b.closeMs || a.workflowId.localeCompare(b.workflowId));
  const report: IssueReport = { issued: 0, skipped: [] };
  for (const run of closed) {
    const history = await deps.temporal.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
    let evidence;
    try {
      evidence = await evidenceFromHistory(run, history, deps.codec, deps.records);
    } catch (err) {
      if (!(err instanceof EvidenceError)) throw err;
      report.skipped.push({ ...run, reason: err.message });
      continue;
    }
    await deps.log.issue(evidence, deps.key);
    report.issued++;
  }
  return report;
}
