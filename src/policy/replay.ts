/**
 * Policy replay: the calls actually made, evaluated under the live policy set and under a
 * candidate, and what would change, per tool and principal (`countersign policy replay`,
 * docs/PRODUCTION.md §Trying a policy change; why the calls come from the workflow histories:
 * docs/DESIGN.md §Policy replay and shadow mode).
 *
 * A decision is reduced to its {@link Outcome}; a requestable one also keeps its approver group,
 * so a change of group alone (`requestable → requestable`, treasury → ops) is a change too.
 * Nothing here reads arguments back out: the report names calls by their workflow id (keyed) and
 * time, never their arguments, nor the unkeyed binding digest (low-entropy arguments can be
 * recovered from it, see `src/mcp/gate.ts`).
 */
import type { Principal } from '../auth/principal.js';
import { visible } from '@countersign/http/visible';
import type { Decision, PolicyDecisionPoint } from './pdp.js';

/**
 * What a decision means for the caller: `allowed` (runs), `in-band` (the requester's own
 * confirmation), `requestable` (an approver decides, out of band), `denied` (not requestable,
 * evaluation errors included).
 */
export type Outcome = 'allowed' | 'in-band' | 'requestable' | 'denied';

/** Every {@link Outcome}, in order of increasing friction. */
export const OUTCOMES: readonly Outcome[] = ['allowed', 'in-band', 'requestable', 'denied'];

/** One call as recorded (`replay-source.ts`). */
export interface RecordedCall {
  /** Where it is recorded: the approval workflow id (its task). */
  ref: string;
  /** When it was made, ISO 8601. */
  at: string;
  tool: string;
  principal: Principal;
  /** The complete arguments, as the gate evaluated them. Never reported. */
  arguments: Record<string, unknown>;
}

/** One side of a comparison. */
export interface OutcomeDetail {
  outcome: Outcome;
  /** For `requestable`: the approver group. */
  approverGroup?: string;
  /** The determining policies (Cedar `@id`s). */
  policyIds: string[];
}

/** The {@link OutcomeDetail} of a PDP decision. */
export function outcomeOf(d: Decision): OutcomeDetail {
  if (d.decision === 'allow') return { outcome: 'allowed', policyIds: d.policyIds };
  if (d.nextAction === 'request' && d.accessRequest) {
    if (d.accessRequest.approvalMode === 'in-band') return { outcome: 'in-band', policyIds: d.policyIds };
    return { outcome: 'requestable', approverGroup: d.accessRequest.approverGroup, policyIds: d.policyIds };
  }
  return { outcome: 'denied', policyIds: d.policyIds };
}

/** An example call of a row: which call, and the policies on each side. */
export interface ReplayExample {
  ref: string;
  at: string;
  live: OutcomeDetail;
  candidate: OutcomeDetail;
}

/** The calls of one tool and principal whose outcome changes the same way. */
export interface ReplayChange {
  tool: string;
  /** `<iss>|<sub>`, as Cedar sees the principal. */
  principal: string;
  from: Outcome;
  to: Outcome;
  /** How many calls. */
  count: number;
  /** The first few (`examplesPerChange`), oldest first. */
  examples: ReplayExample[];
}

/** What a replay found. */
export interface ReplayReport {
  /** Calls evaluated. */
  calls: number;
  /** Calls whose outcome (or approver group) differs under the candidate. */
  changed: number;
  /** By tool, principal, from and to (sorted so); only changed calls. */
  changes: ReplayChange[];
  /** Every call's transition (`allowed→requestable`, also unchanged ones like `requestable→requestable`), by count. */
  transitions: Record<string, number>;
}

/** `from→to`, the spelling of a transition in reports and in `--fail-on`. */
export function transitionName(from: Outcome, to: Outcome): string {
  return `${from}→${to}`;
}

function sameDetail(a: OutcomeDetail, b: OutcomeDetail): boolean {
  return a.outcome === b.outcome && a.approverGroup === b.approverGroup;
}

/**
 * Evaluate every call under `live` and `candidate` (initial decisions: no approval in the context)
 * and report the differences. `examplesPerChange` (default 3) bounds the examples of each change.
 */
export async function replayCalls(
  calls: Iterable<RecordedCall> | AsyncIterable<RecordedCall>,
  live: PolicyDecisionPoint,
  candidate: PolicyDecisionPoint,
  options: { examplesPerChange?: number } = {},
): Promise<ReplayReport> {
  const perChange = options.examplesPerChange ?? 3;
  const changes = new Map<string, ReplayChange>();
  const transitions: Record<string, number> = {};
  let count = 0;
  let changed = 0;
  for await (const call of calls) {
    count++;
    const request = {
      subject: call.principal,
      action: { name: 'tools/call' as const },
      resource: { type: 'tool' as const, id: call.tool },
      context: { arguments: call.arguments },
    };
    const [before, after] = await Promise.all([live.evaluate(request), candidate.evaluate(request)]);
    const from = outcomeOf(before);
    const to = outcomeOf(after);
    const name = transitionName(from.outcome, to.outcome);
    transitions[name] = (transitions[name] ?? 0) + 1;
    if (sameDetail(from, to)) continue;
    changed++;
    const principal = `${call.principal.iss}|${call.principal.sub}`;
    const key = JSON.stringify([call.tool, principal, from.outcome, to.outcome]);
    let change = changes.get(key);
    if (!change) {
      change = { tool: call.tool, principal, from: from.outcome, to: to.outcome, count: 0, examples: [] };
      changes.set(key, change);
    }
    change.count++;
    change.examples.push({ ref: call.ref, at: call.at, live: from, candidate: to });
  }
  const sorted = [...changes.values()].sort(
    (a, b) =>
      a.tool.localeCompare(b.tool) ||
      a.principal.localeCompare(b.principal) ||
      OUTCOMES.indexOf(a.from) - OUTCOMES.indexOf(b.from) ||
      OUTCOMES.indexOf(a.to) - OUTCOMES.indexOf(b.to),
  );
  for (const c of sorted) {
    c.examples.sort((a, b) => a.at.localeCompare(b.at));
    c.examples = c.examples.slice(0, perChange);
  }
  return { calls: count, changed, changes: sorted, transitions };
}

/** A transition pattern of `--fail-on`: each side an {@link Outcome} or `*`. */
export interface TransitionPattern {
  from: Outcome | '*';
  to: Outcome | '*';
}

/**
 * Parse `from→to` (also `from->to`), each side an outcome or `*`, e.g. `requestable→denied`,
 * `*→denied`. Throws an Error naming the accepted outcomes otherwise.
 */
export function parseTransitionPattern(text: string): TransitionPattern {
  const parts = text.split(/→|->/);
  const ok = (s: string | undefined): s is Outcome | '*' => s === '*' || OUTCOMES.includes(s as Outcome);
  const [from, to] = parts.map((p) => p.trim());
  if (parts.length !== 2 || !ok(from) || !ok(to))
    throw new Error(`--fail-on ${JSON.stringify(text)}: expected from→to (or from->to), each one of ${OUTCOMES.join(', ')} or *`);
  return { from, to };
}

/** The team's limits: at most `maxChanges` changed calls; no changed call matching a `failOn` pattern. */
export interface ReplayThreshold {
  maxChanges?: number;
  failOn?: TransitionPattern[];
}

/** Why `report` crosses `threshold`, one sentence each; empty when it does not. */
export function thresholdBreaches(report: ReplayReport, threshold: ReplayThreshold): string[] {
  const out: string[] = [];
  if (threshold.maxChanges !== undefined && report.changed > threshold.maxChanges)
    out.push(`${report.changed} call(s) change, more than --max-changes ${threshold.maxChanges}`);
  for (const p of threshold.failOn ?? []) {
    const hits = report.changes.filter((c) => (p.from === '*' || c.from === p.from) && (p.to === '*' || c.to === p.to));
    const n = hits.reduce((sum, c) => sum + c.count, 0);
    if (n > 0) out.push(`${n} call(s) change ${transitionName(p.from as Outcome, p.to as Outcome)} (--fail-on)`);
  }
  return out;
}

/**
 * `text` safe to write to a terminal: controls, bidi and invisible characters written as visible
 * `\u{…}` escapes (`\u{1b}[2J`, `\u{202e}`; `@countersign/http/visible`). The table prints recorded
 * data (tools, principals, approver groups, policy ids, call references and times) only through this.
 */
export function printable(text: string): string {
  return visible(text);
}

function side(d: OutcomeDetail): string {
  const outcome = d.approverGroup ? `${d.outcome} (${d.approverGroup})` : d.outcome;
  return `${printable(outcome)} [${d.policyIds.map(printable).join(', ')}]`;
}

/**
 * The report as a readable table: one line per change, its examples indented below it, then the
 * totals. Every recorded value is {@link printable} (escaped), so a tool or principal name holding
 * terminal escapes or bidi overrides cannot drive or reorder the operator's terminal.
 */
export function formatReplayTable(report: ReplayReport): string {
  const lines: string[] = [];
  if (report.changes.length > 0) {
    const rows = report.changes.map((c) => [printable(c.tool), printable(c.principal), transitionName(c.from, c.to), String(c.count)]);
    const head = ['TOOL', 'PRINCIPAL', 'CHANGE', 'CALLS'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const fmt = (r: string[]) =>
      r
        .map((v, i) => (i === r.length - 1 ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd();
    lines.push(fmt(head));
    report.changes.forEach((c, i) => {
      lines.push(fmt(rows[i]!));
      for (const e of c.examples) lines.push(`    e.g. ${printable(e.at)} ${printable(e.ref)}: ${side(e.live)} → ${side(e.candidate)}`);
    });
    lines.push('');
  }
  lines.push(`${report.calls} call(s) replayed, ${report.changed} would change, ${report.calls - report.changed} unchanged.`);
  return `${lines.join('\n')}\n`;
}
