/**
 * The kit's machine-readable report (`--report <file>`), described by the package's
 * `report.schema.json` (JSON Schema 2020-12): per check its id, title, status, reason and the SEP
 * statements it covers; the seven Reference Implementation statements with the scenarios covering
 * each and their status; every SEP statement a check covers, with its status; the vectors'
 * verifier rules applied to every response and their violations; the suite's version,
 * the target URL and the run's start and end (ISO 8601).
 */
import { readFileSync } from 'node:fs';
import { CHECK_TITLES } from './suite.js';
import { referenceStatements, sepStatements, type SepStatement } from './traceability.js';
import type { Judgement } from './judge.js';
import type { CheckStatus, SuiteReport } from './wire.js';

/** A check's status in the report: `not-run` when `--only` left it out. */
export type ReportCheckStatus = CheckStatus | 'not-run';
/**
 * A statement's status, from its checks': `fail` if any failed; `pass` if all passed; `partial` if
 * some passed and the rest were skipped or not run; `skip` if none ran to a verdict but some were
 * skipped; `not-run` if none ran.
 */
export type StatementStatus = 'pass' | 'fail' | 'partial' | 'skip' | 'not-run';

/** The report (`report.schema.json`). */
export interface ConformanceReport {
  /** Report format version; changes when a field changes meaning. */
  reportVersion: 1;
  suite: { name: string; version: string };
  target: { url: string };
  /** ISO 8601. */
  startedAt: string;
  endedAt: string;
  summary: { total: number; passed: number; failed: number; skipped: number; line: string };
  checks: Array<{
    id: string;
    title: string;
    status: CheckStatus;
    /** Why it passed, failed or was skipped, in one line. */
    reason: string;
    durationMs: number;
    /** SEP-2848 normative statements (`S01`…) it covers. */
    statements: string[];
    /** Reference Implementation statements (`RI1`…) it is a scenario of. */
    referenceStatements: string[];
  }>;
  referenceImplementation: Array<{
    id: string;
    text: string;
    status: StatementStatus;
    scenarios: Array<{ id: string; status: ReportCheckStatus }>;
    note?: string;
  }>;
  statements: Array<
    Pick<SepStatement, 'id' | 'section' | 'keyword' | 'paraphrase'> & {
      status: StatementStatus;
      checks: Array<{ id: string; status: ReportCheckStatus }>;
    }
  >;
  /** The static vectors' verifier over every response received: the rules applied (with the check each rests on) and every violation (rule id, JSON path). */
  verifier: Judgement;
}

/** This package's name and version (its package.json). */
export function suiteVersion(): { name: string; version: string } {
  const p = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };
  return { name: p.name, version: p.version };
}

/** Combine checks' statuses into a statement's (see `StatementStatus`). */
export function statementStatus(statuses: readonly ReportCheckStatus[]): StatementStatus {
  if (statuses.includes('fail')) return 'fail';
  if (statuses.length > 0 && statuses.every((s) => s === 'pass')) return 'pass';
  if (statuses.includes('pass')) return 'partial';
  if (statuses.includes('skip')) return 'skip';
  return 'not-run';
}

/** Build the report of a run of `runSuite` against `url`. */
export function buildReport(run: SuiteReport, url: string): ConformanceReport {
  const titles = new Map(CHECK_TITLES);
  const statusOf = (id: string): ReportCheckStatus => run.results.find((r) => r.id === id)?.status ?? 'not-run';
  const sep = sepStatements();
  const ri = referenceStatements();
  const withStatus = (ids: string[]) => ids.map((id) => ({ id, status: statusOf(id) }));
  return {
    reportVersion: 1,
    suite: suiteVersion(),
    target: { url },
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    summary: { total: run.results.length, passed: run.passed, failed: run.failed, skipped: run.skipped, line: run.summary },
    checks: run.results.map((r) => ({
      id: r.id,
      title: titles.get(r.id) ?? r.id,
      status: r.status,
      reason: r.detail,
      durationMs: r.ms,
      statements: sep.filter((s) => s.checks.includes(r.id)).map((s) => s.id),
      referenceStatements: ri.filter((s) => s.checks.includes(r.id)).map((s) => s.id),
    })),
    referenceImplementation: ri.map((s) => {
      const scenarios = withStatus(s.checks);
      return {
        id: s.id,
        text: s.text,
        status: statementStatus(scenarios.map((x) => x.status)),
        scenarios,
        ...(s.note ? { note: s.note } : {}),
      };
    }),
    statements: sep
      .filter((s) => s.checks.length > 0)
      .map((s) => {
        const checks = withStatus(s.checks);
        return {
          id: s.id,
          section: s.section,
          keyword: s.keyword,
          paraphrase: s.paraphrase,
          status: statementStatus(checks.map((c) => c.status)),
          checks,
        };
      }),
    verifier: run.verifier,
  };
}
