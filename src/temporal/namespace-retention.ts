/**
 * The namespace's workflow retention against what Countersign needs: a closed approval workflow
 * holds the task's terminal result, so the namespace must keep closed runs at least as long as a
 * terminal task stays retrievable (`COUNTERSIGN_RESULT_RETENTION_MS`, SEP-2848 resultRetention)
 * plus one day of margin. The embedded dev server gets this set at start (`startTemporalRole` in
 * `src/stack-roles.ts`); an external cluster's namespace belongs to its operators, so the worker
 * only checks it at start and warns or refuses per `COUNTERSIGN_NAMESPACE_RETENTION_CHECK`
 * (docs/OPERATIONS.md §Namespace retention).
 *
 * Deliberately does not: change an external namespace (operators own it), or re-check later.
 */
import type { Connection } from '@temporalio/client';
import { tsToMs } from '@temporalio/common';

const DAY_MS = 86_400_000;

/**
 * The retention, ms, a namespace needs for results retained `resultRetentionMs`: whole days,
 * rounded up, plus one day (a terminal task's result must outlive its retention window).
 */
export function requiredRetentionMs(resultRetentionMs: number): number {
  return (Math.ceil(resultRetentionMs / DAY_MS) + 1) * DAY_MS;
}

/** What {@link checkNamespaceRetention} found. Durations in ms; `retentionMs` undefined when the namespace reports none. */
export interface RetentionReport {
  namespace: string;
  retentionMs: number | undefined;
  requiredMs: number;
  /** `retentionMs >= requiredMs`. */
  sufficient: boolean;
}

/**
 * Read `namespace`'s workflow execution retention (`DescribeNamespace`) and compare it with
 * {@link requiredRetentionMs} of `resultRetentionMs`. Rejects with the gRPC error when the
 * namespace does not exist or Temporal does not answer.
 */
export async function checkNamespaceRetention(
  connection: Pick<Connection, 'workflowService'>,
  namespace: string,
  resultRetentionMs: number,
): Promise<RetentionReport> {
  const described = await connection.workflowService.describeNamespace({ namespace });
  const ttl = described.config?.workflowExecutionRetentionTtl;
  const retentionMs = ttl ? tsToMs(ttl) : undefined;
  const requiredMs = requiredRetentionMs(resultRetentionMs);
  return { namespace, retentionMs, requiredMs, sufficient: retentionMs !== undefined && retentionMs >= requiredMs };
}

/** Thrown by {@link enforceNamespaceRetention} in `fail` mode when the retention is too short. */
export class NamespaceRetentionError extends Error {
  constructor(readonly report: RetentionReport) {
    super(retentionProblem(report));
    this.name = 'NamespaceRetentionError';
  }
}

/** The one-line problem statement of an insufficient {@link RetentionReport}, with the command that fixes it. */
export function retentionProblem(report: RetentionReport): string {
  const days = (ms: number) => `${(ms / DAY_MS).toFixed(ms % DAY_MS === 0 ? 0 : 2)} days`;
  const have = report.retentionMs === undefined ? 'no retention' : `retention ${days(report.retentionMs)}`;
  return (
    `namespace ${report.namespace} has ${have}, shorter than the ${days(report.requiredMs)} Countersign needs ` +
    `(COUNTERSIGN_RESULT_RETENTION_MS + 1 day); closed approval workflows would be deleted while their results are still retrievable. ` +
    `Fix: temporal operator namespace update --namespace ${report.namespace} --retention ${report.requiredMs / 3_600_000}h`
  );
}

/**
 * Act on `report` per `mode` (`COUNTERSIGN_NAMESPACE_RETENTION_CHECK`): nothing when sufficient or
 * `off`; `warn` calls `warn` with {@link retentionProblem}; `fail` throws {@link NamespaceRetentionError}.
 */
export function enforceNamespaceRetention(report: RetentionReport, mode: 'warn' | 'fail' | 'off', warn: (message: string) => void): void {
  if (report.sufficient || mode === 'off') return;
  if (mode === 'fail') throw new NamespaceRetentionError(report);
  warn(retentionProblem(report));
}
