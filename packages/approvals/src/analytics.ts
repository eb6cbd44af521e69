/**
 * Approval analytics (docs/APPROVERS.md §Approval analytics, docs/PRODUCTION.md §Approval
 * analytics): how long decisions take, what piles up, how often requests are approved, expire or
 * are escalated, and how often approvers approve without reading — computed from the approval
 * service's own records (`store/analytics-store.ts`), never from Temporal.
 *
 * Two readers: `/metrics` ({@link approvalMetricsSnapshot}: totals since the store began, so the
 * counters only grow and the histogram's buckets aggregate in PromQL) and the inbox's analytics
 * page for approvers' leads ({@link analyticsReport}: one window, exact p50/p90).
 *
 * Labels are bounded: a tool or approver group gets its own label value only when the
 * configuration names it — tools in the rules file (`analytics.tools` and every rule's `tool`),
 * groups of the configured approvers and of the rules — at most {@link MAX_LABEL_VALUES} of each;
 * everything else is {@link OTHER_LABEL}. Channels are the closed set {@link CHANNEL_LABELS}.
 * No label carries a person, a request id or an argument.
 *
 * The rules file's `analytics` option says who may see the page (`leads` by approver id,
 * `leadGroups` by approver group; absent: nobody), the "approved without reading" threshold
 * (`quickApprovalSeconds`, default 10: a person's approval within that many seconds of first
 * opening the request's page), the extra tools to label, and the page's default window.
 * Deliberately does not: rank or name individual approvers.
 */
import { z } from 'zod';
import type { ApprovalRules } from './deciders/approval-rules.js';
import type { AnalyticsStore } from './store/analytics-store.js';

/** Most distinct tool (and group) label values; the rest are {@link OTHER_LABEL}. */
export const MAX_LABEL_VALUES = 50;
/** The label value of every tool or group the configuration does not name, and of an unknown channel. */
export const OTHER_LABEL = 'other';
/**
 * The `channel` label values: the decision's channel (`api` is the CLI and the HTTP API), or what
 * approved a request at submission (`counter-proposal`, `grant`), else {@link OTHER_LABEL}.
 */
export const CHANNEL_LABELS = ['inbox', 'slack', 'email', 'api', 'agent', 'risk-engine', 'itsm', 'counter-proposal', 'grant'] as const;
/** Upper bounds of the time-to-decision histogram, seconds. */
export const DECISION_BUCKETS_SECONDS = [10, 30, 60, 300, 900, 3600, 4 * 3600, 8 * 3600, 86_400, 3 * 86_400, 7 * 86_400] as const;
/** Pending age buckets: the `age` label values and their upper bounds (ms); the last is unbounded. */
export const PENDING_AGE_BUCKETS = [
  { label: 'under_1h', upToMs: 3_600_000 },
  { label: '1h_to_1d', upToMs: 86_400_000 },
  { label: '1d_to_3d', upToMs: 3 * 86_400_000 },
  { label: '3d_to_7d', upToMs: 7 * 86_400_000 },
  { label: 'over_7d', upToMs: Number.POSITIVE_INFINITY },
] as const;
/** The final statuses counted (the `outcome` label). */
export const OUTCOMES = ['approved', 'denied', 'expired', 'cancelled', 'failed'] as const;
/** How a person's approval relates to their opening the request page (the `reading` label, `AnalyticsStore.readings`). */
export const READINGS = ['quick', 'read', 'unopened'] as const;

/** The rules file's `analytics` option. */
export const AnalyticsRuleSchema = z
  .object({
    /** Approver ids who may see the analytics page. */
    leads: z.array(z.string().min(1)).optional(),
    /** Approver groups whose members may see it. */
    leadGroups: z.array(z.string().min(1)).optional(),
    /** An approval within this many seconds of the approver first opening the request's page counts as "without reading"; default 10, 1 to 3600. */
    quickApprovalSeconds: z.int().min(1).max(3600).default(10),
    /** Tool names labelled on `/metrics` besides those the rules name (at most {@link MAX_LABEL_VALUES} in all). */
    tools: z.array(z.string().min(1).max(200)).max(MAX_LABEL_VALUES).optional(),
    /** The page's default window, days; default 30, 1 to 365. */
    windowDays: z.int().min(1).max(365).default(30),
    /**
     * Which requests a lead's page covers: `own-groups` (default) those of the approver groups the
     * lead is a member of (their `groups` in secrets.json), `all` every group's. `/metrics` is
     * always whole: it is for operators.
     */
    scope: z.enum(['own-groups', 'all']).default('own-groups'),
  })
  .strict();
/** The validated option. */
export type AnalyticsRule = z.infer<typeof AnalyticsRuleSchema>;

/** Defaults when the rules file has no `analytics`: nobody sees the page, 10 s, a 30-day window. */
export const DEFAULT_ANALYTICS_RULE: AnalyticsRule = AnalyticsRuleSchema.parse({});

/** The `analytics` option in force. */
export const analyticsRuleOf = (rules: ApprovalRules): AnalyticsRule => rules.analytics ?? DEFAULT_ANALYTICS_RULE;

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Whether approver `id` with approver groups `groups` may see the analytics page under `rule` (nobody without `leads`/`leadGroups`). */
export function mayViewAnalytics(rule: AnalyticsRule | undefined, id: string, groups: readonly string[]): boolean {
  if (rule === undefined) return false;
  return (rule.leads ?? []).some((l) => same(l, id)) || (rule.leadGroups ?? []).some((g) => groups.includes(g));
}

/**
 * The approver groups whose requests the page of lead `groups` (their approver groups) covers
 * under `rule`: every group (`'all'`) with `scope: all`, else exactly `groups`.
 */
export function analyticsGroupsOf(rule: AnalyticsRule, groups: readonly string[]): ReadonlySet<string> | 'all' {
  return rule.scope === 'all' ? 'all' : new Set(groups);
}

/** The tool and group values that get their own label; everything else is {@link OTHER_LABEL}. */
export interface AnalyticsLabelSets {
  tools: ReadonlySet<string>;
  groups: ReadonlySet<string>;
}

const capped = (values: Iterable<string>): Set<string> => {
  const out = new Set<string>();
  for (const v of values) {
    if (out.size >= MAX_LABEL_VALUES) break;
    if (v !== '' && v !== OTHER_LABEL) out.add(v);
  }
  return out;
};

/**
 * The label sets of `rules` and the configured approvers' groups: tools of `analytics.tools`, then
 * of the quorum, risk and step-up rules; groups of the approvers, then of the rules (quorum,
 * step-up, escalation and its targets, ITSM, break-glass, `leadGroups`); each capped at
 * {@link MAX_LABEL_VALUES}, in that order.
 */
export function analyticsLabelSets(rules: ApprovalRules, approverGroups: readonly string[]): AnalyticsLabelSets {
  const a = analyticsRuleOf(rules);
  const tools = [
    ...(a.tools ?? []),
    ...[...rules.quorum, ...rules.risk, ...(rules.stepUp ?? [])].flatMap((r) => (r.tool !== undefined ? [r.tool] : [])),
  ];
  const groups = [
    ...approverGroups,
    ...rules.quorum.map((r) => r.group),
    ...(rules.stepUp ?? []).flatMap((r) => (r.group !== undefined ? [r.group] : [])),
    ...(rules.escalation ?? []).flatMap((r) => [r.group, ...(r.escalateTo?.group !== undefined ? [r.escalateTo.group] : [])]),
    ...(rules.itsm?.groups ?? []),
    ...(rules.breakGlass?.groups ?? []),
    ...(rules.breakGlass?.reviewerGroups ?? []),
    ...(a.leadGroups ?? []),
  ];
  return { tools: capped(tools), groups: capped(groups) };
}

/** `value` as a label of `set`: itself when the set has it, else {@link OTHER_LABEL}. */
const labelIn = (set: ReadonlySet<string>, value: string): string => (set.has(value) ? value : OTHER_LABEL);

/** A decision channel as a `channel` label value ({@link CHANNEL_LABELS}, else {@link OTHER_LABEL}). */
export function channelLabel(via: string | null): string {
  return via !== null && (CHANNEL_LABELS as readonly string[]).includes(via) ? via : OTHER_LABEL;
}

/** One sample: its label values (closed sets) and value. */
export interface LabelledValue<L extends string> {
  labels: Record<L, string>;
  value: number;
}

/** One series of the time-to-decision histogram: cumulative counts per bound of {@link DECISION_BUCKETS_SECONDS}, the count and sum (s). */
export interface DecisionSeries {
  labels: Record<'tool' | 'group' | 'channel', string>;
  cumulative: number[];
  count: number;
  sumSeconds: number;
}

/**
 * What `/metrics` shows of the approval service's records, totals since the store began (all
 * bounded by {@link AnalyticsLabelSets}); `src/ops/metrics.ts` renders it. Pending ages are at the
 * snapshot's time.
 */
export interface ApprovalMetricsSnapshot {
  /** `countersign_approvals_decision_seconds`: approved and denied requests, submission → decision. */
  decisions: DecisionSeries[];
  /** `countersign_approvals_resolved_total`: requests by final status. */
  resolved: Array<LabelledValue<'tool' | 'group' | 'outcome'>>;
  /** `countersign_approvals_escalations_total`: requests escalated, by group. */
  escalations: Array<LabelledValue<'group'>>;
  /** `countersign_approvals_person_approvals_total`: people's approvals by {@link READINGS}. */
  approvals: Array<LabelledValue<'tool' | 'group' | 'reading'>>;
  /** `countersign_approvals_pending`: pending requests by group and age ({@link PENDING_AGE_BUCKETS}); every known group and `other` reported, 0 when none. */
  pending: Array<LabelledValue<'group' | 'age'>>;
}

/** Sum `rows` into samples keyed by their (capped) labels. */
function sumBy<L extends string>(rows: Iterable<{ labels: Record<L, string>; value: number }>): Array<LabelledValue<L>> {
  const out = new Map<string, LabelledValue<L>>();
  for (const r of rows) {
    const key = JSON.stringify(r.labels);
    const have = out.get(key);
    if (have === undefined) out.set(key, { labels: r.labels, value: r.value });
    else have.value += r.value;
  }
  return [...out.values()];
}

const AGE_BOUNDS_MS = PENDING_AGE_BUCKETS.slice(0, -1).map((b) => b.upToMs);

/** The {@link ApprovalMetricsSnapshot} of `store` at `atMs`, labels capped by `labels`, "quick" meaning within `quickMs`. */
export async function approvalMetricsSnapshot(
  store: AnalyticsStore,
  labels: AnalyticsLabelSets,
  quickMs: number,
  atMs: number,
): Promise<ApprovalMetricsSnapshot> {
  const all = -1;
  const decisions = new Map<string, DecisionSeries>();
  for (const r of await store.decisionBuckets(
    DECISION_BUCKETS_SECONDS.map((s) => s * 1000),
    all,
  )) {
    const l = { tool: labelIn(labels.tools, r.tool), group: labelIn(labels.groups, r.group), channel: channelLabel(r.via) };
    const key = JSON.stringify(l);
    const have = decisions.get(key);
    if (have === undefined) decisions.set(key, { labels: l, cumulative: [...r.le], count: r.count, sumSeconds: r.sumMs / 1000 });
    else {
      r.le.forEach((n, i) => (have.cumulative[i]! += n));
      have.count += r.count;
      have.sumSeconds += r.sumMs / 1000;
    }
  }
  const tool = (t: string) => labelIn(labels.tools, t);
  const group = (g: string) => labelIn(labels.groups, g);
  const pendingRows = await store.pendingAges(atMs, AGE_BOUNDS_MS);
  const resolved = await store.resolved(all);
  const escalations = await store.escalations(all);
  const readings = await store.readings(quickMs, all);
  const pending = [...labels.groups, OTHER_LABEL].flatMap((g) =>
    PENDING_AGE_BUCKETS.map((b, i) => ({
      labels: { group: g, age: b.label },
      value: pendingRows.filter((r) => group(r.group) === g && r.ageIndex === i).reduce((n, r) => n + r.count, 0),
    })),
  );
  return {
    decisions: [...decisions.values()],
    resolved: sumBy(resolved.map((r) => ({ labels: { tool: tool(r.tool), group: group(r.group), outcome: r.status }, value: r.count }))),
    escalations: sumBy(escalations.map((r) => ({ labels: { group: group(r.group) }, value: r.count }))),
    approvals: sumBy(readings.map((r) => ({ labels: { tool: tool(r.tool), group: group(r.group), reading: r.reading }, value: r.count }))),
    pending,
  };
}

/** Time to decision of one tool, group or channel in a window: how many decisions, and their p50/p90 (ms, nearest rank). */
export interface QuantileRow {
  key: string;
  count: number;
  p50Ms: number;
  p90Ms: number;
}

/** Final statuses of one tool in a window, and its approval rate (approved / (approved + denied), null without either). */
export interface OutcomeRow {
  key: string;
  counts: Record<(typeof OUTCOMES)[number], number>;
  approvalRate: number | null;
}

/** What the analytics page shows for one window (`sinceMs` … `atMs`), every figure from the store. */
export interface AnalyticsReport {
  atMs: number;
  sinceMs: number;
  windowDays: number;
  quickApprovalSeconds: number;
  /** The approver groups the report covers (sorted), or `'all'`. */
  groups: string[] | 'all';
  /** Decisions in the window (approved + denied); the figures below are of at most {@link REPORT_DECISION_LIMIT} newest. */
  decisions: number;
  timeToDecision: { byTool: QuantileRow[]; byGroup: QuantileRow[]; byChannel: QuantileRow[]; all: QuantileRow };
  /** Pending now, by {@link PENDING_AGE_BUCKETS} (the report's groups). */
  pending: Array<{ age: string; count: number }>;
  outcomes: OutcomeRow[];
  total: OutcomeRow;
  escalations: Array<{ key: string; count: number }>;
  /** People's approvals in the window by {@link READINGS}. */
  readings: Record<(typeof READINGS)[number], number>;
}

/** Most decisions one report reads (newest first). */
export const REPORT_DECISION_LIMIT = 100_000;
/** Most rows one table or chart of the page shows; the rest are summed into {@link OTHER_LABEL}. */
export const REPORT_ROWS = 12;

/** The value at quantile `q` of ascending `sorted` (nearest rank); 0 when empty. */
export function nearestRank(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

function quantileRows(rows: ReadonlyArray<{ key: string; ms: number }>): QuantileRow[] {
  const by = new Map<string, number[]>();
  for (const r of rows) {
    const list = by.get(r.key);
    if (list === undefined) by.set(r.key, [r.ms]);
    else list.push(r.ms);
  }
  const out = [...by.entries()].map(([key, ms]) => {
    const sorted = ms.sort((a, b) => a - b);
    return { key, count: sorted.length, p50Ms: nearestRank(sorted, 0.5), p90Ms: nearestRank(sorted, 0.9) };
  });
  out.sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
  if (out.length <= REPORT_ROWS) return out;
  const keep = new Set(out.slice(0, REPORT_ROWS - 1).map((r) => r.key));
  return [
    ...out.slice(0, REPORT_ROWS - 1),
    ...quantileRows(rows.filter((r) => !keep.has(r.key)).map((r) => ({ key: OTHER_LABEL, ms: r.ms }))),
  ];
}

const emptyCounts = (): OutcomeRow['counts'] => ({ approved: 0, denied: 0, expired: 0, cancelled: 0, failed: 0 });
const rateOf = (c: OutcomeRow['counts']): number | null => (c.approved + c.denied === 0 ? null : c.approved / (c.approved + c.denied));

/**
 * The {@link AnalyticsReport} of `store` for the `windowDays` before `atMs` under `rule`, of the
 * requests of approver `groups` only (default `'all'`; {@link analyticsGroupsOf}): every figure,
 * table and chart leaves the other groups' requests out.
 */
export async function analyticsReport(
  store: AnalyticsStore,
  rule: AnalyticsRule,
  windowDays: number,
  atMs: number,
  groups: ReadonlySet<string> | 'all' = 'all',
): Promise<AnalyticsReport> {
  const sinceMs = atMs - windowDays * 86_400_000;
  const inScope = <R extends { group: string }>(rows: R[]): R[] => (groups === 'all' ? rows : rows.filter((r) => groups.has(r.group)));
  // filtered in the store before its limit: a busy group's decisions never crowd out a small one's
  const decided = await store.decisions(sinceMs, REPORT_DECISION_LIMIT, groups === 'all' ? undefined : [...groups]);
  const pendingRows = inScope(await store.pendingAges(atMs, AGE_BOUNDS_MS));
  const byTool = new Map<string, OutcomeRow['counts']>();
  const total = emptyCounts();
  for (const r of inScope(await store.resolved(sinceMs))) {
    if (!(OUTCOMES as readonly string[]).includes(r.status)) continue;
    const status = r.status as keyof OutcomeRow['counts'];
    const counts = byTool.get(r.tool) ?? emptyCounts();
    counts[status] += r.count;
    total[status] += r.count;
    byTool.set(r.tool, counts);
  }
  const sum = (c: OutcomeRow['counts']) => OUTCOMES.reduce((n, k) => n + c[k], 0);
  const sortedTools = [...byTool.entries()].sort((a, b) => sum(b[1]) - sum(a[1]) || a[0].localeCompare(b[0]));
  const outcomes: OutcomeRow[] = sortedTools
    .slice(0, REPORT_ROWS - 1)
    .map(([key, counts]) => ({ key, counts, approvalRate: rateOf(counts) }));
  if (sortedTools.length > REPORT_ROWS - 1) {
    const rest = emptyCounts();
    for (const [, c] of sortedTools.slice(REPORT_ROWS - 1)) for (const k of OUTCOMES) rest[k] += c[k];
    outcomes.push({ key: OTHER_LABEL, counts: rest, approvalRate: rateOf(rest) });
  }
  const readings = { quick: 0, read: 0, unopened: 0 };
  for (const r of inScope(await store.readings(rule.quickApprovalSeconds * 1000, sinceMs))) readings[r.reading] += r.count;
  const escalations = inScope(await store.escalations(sinceMs));
  return {
    atMs,
    sinceMs,
    windowDays,
    quickApprovalSeconds: rule.quickApprovalSeconds,
    groups: groups === 'all' ? 'all' : [...groups].sort(),
    decisions: decided.length,
    timeToDecision: {
      byTool: quantileRows(decided.map((d) => ({ key: d.tool, ms: d.durationMs }))),
      byGroup: quantileRows(decided.map((d) => ({ key: d.group, ms: d.durationMs }))),
      byChannel: quantileRows(decided.map((d) => ({ key: channelLabel(d.via), ms: d.durationMs }))),
      all: quantileRows(decided.map((d) => ({ key: 'all', ms: d.durationMs })))[0] ?? { key: 'all', count: 0, p50Ms: 0, p90Ms: 0 },
    },
    pending: PENDING_AGE_BUCKETS.map((b, i) => ({
      age: b.label,
      count: pendingRows.filter((r) => r.ageIndex === i).reduce((n, r) => n + r.count, 0),
    })),
    outcomes,
    total: { key: 'all', counts: total, approvalRate: rateOf(total) },
    escalations: escalations.map((r) => ({ key: r.group, count: r.count })).sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)),
    readings,
  };
}
