// Scope: run the fault matrix (points × trials) on one harness cluster, reusing its Temporal
// server, approval service and MCP server across trials; summarize per point.
import { cpus, totalmem } from 'node:os';
import { Cluster, type ClusterOptions } from './cluster.js';
import { Driver, POINTS, runTrial, type PointId, type TrialResult } from './trials.js';

/** A trial taking longer than this is recorded as a violation instead of hanging the matrix. */
export const TRIAL_TIMEOUT_MS = 300_000;

/** Per-point totals of a matrix run. */
export interface PointSummary {
  point: PointId;
  issue: number;
  what: string;
  expect: string;
  trials: number;
  tasks: number;
  /** disposition (or status when not completed) → tasks */
  outcomes: Record<string, number>;
  maxLedgerRows: number;
  maxInvocations: number;
  maxBackendPerGeneration: number;
  lost: number;
  violations: number;
  unexpected: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
}

/** A whole run. */
export interface MatrixRun {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: string;
  summaries: PointSummary[];
  results: TrialResult[];
}

/** Describe this machine in one line (CPU model × count, memory, Node, platform). */
export function machineLine(): string {
  const c = cpus();
  return `${c.length} × ${c[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${process.platform}/${process.arch}`;
}

/** Run `trials` trials of each of `points` in order; `onTrial` sees each result as it lands. */
export async function runMatrix(opts: {
  points: PointId[];
  trials: number;
  command: string;
  cluster?: ClusterOptions;
  onTrial?: (r: TrialResult) => void;
}): Promise<MatrixRun> {
  const startedAt = new Date().toISOString();
  const cluster = new Cluster(opts.cluster);
  const results: TrialResult[] = [];
  try {
    await cluster.start();
    const driver = await Driver.create(cluster);
    for (const point of opts.points) {
      for (let i = 1; i <= opts.trials; i++) {
        let r: TrialResult;
        const t0 = Date.now();
        let timer: NodeJS.Timeout | undefined;
        try {
          const timeout = new Promise<never>(
            (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${TRIAL_TIMEOUT_MS / 1000} s`)), TRIAL_TIMEOUT_MS)),
          );
          r = await Promise.race([runTrial(driver, point, i), timeout]);
        } catch (err) {
          r = {
            point,
            trial: i,
            tasks: [],
            violations: [`trial aborted: ${(err as Error).message.split('\n')[0]}`],
            unexpected: [],
            notes: [],
            ms: Date.now() - t0,
          };
          // bring every role back for the next trial
          for (const role of ['temporal', 'approvals', 'issuer', 'mcp', 'worker'] as const)
            if (!cluster.alive(role)) await cluster.startRole(role).catch(() => undefined);
        } finally {
          clearTimeout(timer);
        }
        results.push(r);
        opts.onTrial?.(r);
      }
    }
  } finally {
    await cluster.stop();
  }
  return {
    startedAt,
    finishedAt: new Date().toISOString(),
    command: opts.command,
    machine: machineLine(),
    summaries: summarize(results),
    results,
  };
}

/** Totals per point, in matrix order. */
export function summarize(results: TrialResult[]): PointSummary[] {
  return POINTS.filter((p) => results.some((r) => r.point === p.id)).map((p) => {
    const rs = results.filter((r) => r.point === p.id);
    const tasks = rs.flatMap((r) => r.tasks);
    const outcomes: Record<string, number> = {};
    for (const t of tasks) {
      const k = t.lost ? 'lost' : t.status === 'completed' ? t.disposition : t.status;
      outcomes[k] = (outcomes[k] ?? 0) + 1;
    }
    return {
      point: p.id,
      issue: p.issue,
      what: p.what,
      expect: p.expect,
      trials: rs.length,
      tasks: tasks.length,
      outcomes,
      maxLedgerRows: Math.max(0, ...tasks.map((t) => t.ledgerRows)),
      maxInvocations: Math.max(0, ...tasks.map((t) => t.invocations ?? 0)),
      maxBackendPerGeneration: Math.max(0, ...tasks.flatMap((t) => Object.values(t.backendPerGeneration))),
      lost: tasks.filter((t) => t.lost).length,
      violations: rs.reduce((n, r) => n + r.violations.length, 0),
      unexpected: rs.reduce((n, r) => n + r.unexpected.length, 0),
      meanMs: Math.round(rs.reduce((n, r) => n + r.ms, 0) / Math.max(1, rs.length)),
      minMs: Math.min(...rs.map((r) => r.ms)),
      maxMs: Math.max(...rs.map((r) => r.ms)),
    };
  });
}
