/**
 * The approval analytics page of the inbox (`GET /approver/analytics`, docs/APPROVERS.md §Approval
 * analytics), for approvers' leads: summary figures, then charts drawn here as inline SVG
 * (server-side, no script, no chart library; colours are SVG attributes, which the inbox's CSP
 * allows) — time to decision p50/p90 per tool, approver group and channel on a logarithmic time
 * axis, pending requests by age, outcomes and approval rate per tool, and how people's approvals
 * relate to their reading the request — each followed by its numbers as a table. Every value is
 * escaped. Deliberately does not: fetch data (the route passes an `AnalyticsReport` in), or name
 * individual approvers.
 */
import type { Child } from 'hono/jsx';
import { OUTCOMES, type AnalyticsReport, type OutcomeRow, type QuantileRow } from '../analytics.js';
import { formatAge, formatTime, visible } from './format.js';

/** The windows the page offers, days. */
export const ANALYTICS_WINDOWS_DAYS = [1, 7, 30, 90] as const;

const COLOURS = {
  p50: '#1f5fbf',
  p90: '#a9c1e8',
  grid: '#e3e7ee',
  text: '#1c2430',
  muted: '#5f6b7a',
  approved: '#1d7a46',
  denied: '#b3261e',
  expired: '#8a94a6',
  cancelled: '#c9d3e3',
  failed: '#6b3fa0',
  pending: '#e85d04',
  quick: '#b3261e',
  read: '#1d7a46',
  unopened: '#8a94a6',
} as const;

const WIDTH = 720;
const LABEL_W = 170;
const VALUE_W = 150;
const ROW_H = 30;

/** Ticks of the time axis, ms. */
const TIME_TICKS: ReadonlyArray<[number, string]> = [
  [1_000, '1s'],
  [10_000, '10s'],
  [60_000, '1m'],
  [600_000, '10m'],
  [3_600_000, '1h'],
  [4 * 3_600_000, '4h'],
  [86_400_000, '1d'],
  [7 * 86_400_000, '7d'],
  [30 * 86_400_000, '30d'],
  [365 * 86_400_000, '1y'],
];

const pct = (n: number | null) => (n === null ? '–' : `${Math.round(n * 100)}%`);
const short = (s: string, n = 24) => visible(s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** A chart's frame: an accessible SVG with a title and a description. */
function Svg(props: { testid: string; height: number; title: string; children?: Child }) {
  return (
    <svg
      xmlns="http://www.w3.org/2000/svg"
      class="chart"
      data-testid={props.testid}
      role="img"
      aria-label={props.title}
      viewBox={`0 0 ${WIDTH} ${props.height}`}
      width={WIDTH}
      height={props.height}
      font-family="system-ui, sans-serif"
      font-size="12"
    >
      <title>{props.title}</title>
      {props.children}
    </svg>
  );
}

/**
 * Horizontal p90 (light) and p50 (dark) bars per row on a logarithmic time axis from 1 s to the
 * first tick at or above the largest p90 (at least 1 h).
 */
export function DurationChart(props: { rows: QuantileRow[]; title: string; testid: string }) {
  if (props.rows.length === 0) return <p class="muted">No decisions in this window.</p>;
  const maxMs = Math.max(3_600_000, ...props.rows.map((r) => r.p90Ms));
  const ticks = TIME_TICKS.filter(([ms], i) => ms <= maxMs || (TIME_TICKS[i - 1]?.[0] ?? 0) < maxMs);
  const top = ticks.at(-1)![0];
  const plotW = WIDTH - LABEL_W - VALUE_W;
  const x = (ms: number) => LABEL_W + (plotW * Math.log10(Math.max(1_000, ms) / 1_000)) / Math.log10(top / 1_000);
  const height = 24 + props.rows.length * ROW_H;
  return (
    <Svg testid={props.testid} height={height} title={props.title}>
      {ticks.map(([ms, label]) => (
        <g>
          <line x1={x(ms)} x2={x(ms)} y1={16} y2={height} stroke={COLOURS.grid} />
          <text x={x(ms)} y={12} text-anchor="middle" fill={COLOURS.muted}>
            {label}
          </text>
        </g>
      ))}
      {props.rows.map((r, i) => {
        const y = 22 + i * ROW_H;
        return (
          <g data-row={visible(r.key)} data-p50-ms={String(r.p50Ms)} data-p90-ms={String(r.p90Ms)}>
            <text x={LABEL_W - 8} y={y + 15} text-anchor="end" fill={COLOURS.text}>
              {short(r.key)}
            </text>
            <rect class="bar p90" x={LABEL_W} y={y + 2} width={Math.max(1, x(r.p90Ms) - LABEL_W)} height={18} fill={COLOURS.p90} />
            <rect class="bar p50" x={LABEL_W} y={y + 6} width={Math.max(1, x(r.p50Ms) - LABEL_W)} height={10} fill={COLOURS.p50} />
            <text x={WIDTH - VALUE_W + 8} y={y + 15} fill={COLOURS.muted}>
              p50 {formatAge(r.p50Ms)} · p90 {formatAge(r.p90Ms)} · {r.count}
            </text>
          </g>
        );
      })}
    </Svg>
  );
}

/** Vertical bars: pending requests per age bucket. */
export function PendingChart(props: { pending: AnalyticsReport['pending'] }) {
  const height = 190;
  const max = Math.max(1, ...props.pending.map((p) => p.count));
  const colW = (WIDTH - 40) / props.pending.length;
  const words: Record<string, string> = {
    under_1h: 'under 1 h',
    '1h_to_1d': '1 h – 1 d',
    '1d_to_3d': '1 – 3 d',
    '3d_to_7d': '3 – 7 d',
    over_7d: 'over 7 d',
  };
  return (
    <Svg testid="chart-pending" height={height} title="Pending requests by age">
      <line x1={20} x2={WIDTH - 20} y1={height - 30} y2={height - 30} stroke={COLOURS.grid} />
      {props.pending.map((p, i) => {
        const h = ((height - 60) * p.count) / max;
        const cx = 20 + colW * i + colW / 2;
        return (
          <g data-row={p.age} data-count={String(p.count)}>
            <rect class="bar" x={cx - colW * 0.3} y={height - 30 - h} width={colW * 0.6} height={Math.max(0, h)} fill={COLOURS.pending} />
            <text x={cx} y={height - 34 - h} text-anchor="middle" fill={COLOURS.text}>
              {String(p.count)}
            </text>
            <text x={cx} y={height - 12} text-anchor="middle" fill={COLOURS.muted}>
              {words[p.age] ?? p.age}
            </text>
          </g>
        );
      })}
    </Svg>
  );
}

/** 100 % stacked bars per tool: approved, denied, expired, cancelled, failed, with the approval rate. */
export function OutcomeChart(props: { rows: OutcomeRow[] }) {
  if (props.rows.length === 0) return <p class="muted">No requests ended in this window.</p>;
  const plotW = WIDTH - LABEL_W - VALUE_W;
  const height = 30 + props.rows.length * ROW_H;
  return (
    <Svg testid="chart-outcomes" height={height} title="Outcomes and approval rate per tool">
      {OUTCOMES.map((o, i) => (
        <g>
          <rect x={LABEL_W + i * 95} y={2} width={10} height={10} fill={COLOURS[o]} />
          <text x={LABEL_W + i * 95 + 14} y={11} fill={COLOURS.muted}>
            {o}
          </text>
        </g>
      ))}
      {props.rows.map((r, i) => {
        const y = 24 + i * ROW_H;
        const sum = OUTCOMES.reduce((n, k) => n + r.counts[k], 0);
        let at = LABEL_W;
        return (
          <g data-row={visible(r.key)} data-approval-rate={r.approvalRate === null ? '' : r.approvalRate.toFixed(3)}>
            <text x={LABEL_W - 8} y={y + 15} text-anchor="end" fill={COLOURS.text}>
              {short(r.key)}
            </text>
            {OUTCOMES.map((o) => {
              const w = sum === 0 ? 0 : (plotW * r.counts[o]) / sum;
              const rect = <rect class={`bar ${o}`} x={at} y={y + 2} width={w} height={18} fill={COLOURS[o]} />;
              at += w;
              return rect;
            })}
            <text x={WIDTH - VALUE_W + 8} y={y + 15} fill={COLOURS.muted}>
              {pct(r.approvalRate)} approved · {sum}
            </text>
          </g>
        );
      })}
    </Svg>
  );
}

/** One stacked bar: people's approvals approved within the threshold of opening, after reading longer, or without opening the page. */
export function ReadingChart(props: { readings: AnalyticsReport['readings']; quickSeconds: number }) {
  const total = props.readings.quick + props.readings.read + props.readings.unopened;
  if (total === 0) return <p class="muted">No approvals by people in this window.</p>;
  const parts = [
    { key: 'quick' as const, label: `within ${props.quickSeconds} s of opening` },
    { key: 'read' as const, label: 'read longer first' },
    { key: 'unopened' as const, label: 'page never opened' },
  ];
  const plotW = WIDTH - 40;
  let at = 20;
  return (
    <Svg testid="chart-reading" height={80} title="How people's approvals relate to reading the request">
      {parts.map((p) => {
        const w = (plotW * props.readings[p.key]) / total;
        const rect = (
          <g data-row={p.key} data-count={String(props.readings[p.key])}>
            <rect class={`bar ${p.key}`} x={at} y={8} width={w} height={26} fill={COLOURS[p.key]} />
          </g>
        );
        at += w;
        return rect;
      })}
      {parts.map((p, i) => (
        <g>
          <rect x={20 + i * 230} y={50} width={10} height={10} fill={COLOURS[p.key]} />
          <text x={20 + i * 230 + 14} y={59} fill={COLOURS.muted}>
            {p.label}: {String(props.readings[p.key])} ({pct(props.readings[p.key] / total)})
          </text>
        </g>
      ))}
    </Svg>
  );
}

function QuantileTable(props: { rows: QuantileRow[]; what: string; testid: string }) {
  return (
    <table data-testid={props.testid}>
      <thead>
        <tr>
          <th>{props.what}</th>
          <th>Decisions</th>
          <th>p50</th>
          <th>p90</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r) => (
          <tr>
            <td>{visible(r.key)}</td>
            <td class="num">{String(r.count)}</td>
            <td class="num">{formatAge(r.p50Ms)}</td>
            <td class="num">{formatAge(r.p90Ms)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The whole page body for `report`, with links to the other windows of {@link ANALYTICS_WINDOWS_DAYS}. */
export function AnalyticsView(props: { report: AnalyticsReport }) {
  const r = props.report;
  const t = r.timeToDecision;
  const approvals = r.readings.quick + r.readings.read + r.readings.unopened;
  const escalated = r.escalations.reduce((n, e) => n + e.count, 0);
  const tiles: Array<[string, string, string]> = [
    ['decisions', 'Decisions', String(r.decisions)],
    ['p50', 'Time to decision p50 / p90', `${formatAge(t.all.p50Ms)} / ${formatAge(t.all.p90Ms)}`],
    ['approval-rate', 'Approval rate', pct(r.total.approvalRate)],
    ['expired', 'Expired', String(r.total.counts.expired)],
    ['escalated', 'Escalated', String(escalated)],
    ['quick', `Approved within ${r.quickApprovalSeconds} s of opening`, approvals === 0 ? '–' : pct(r.readings.quick / approvals)],
  ];
  return (
    <div class="analytics">
      <h1>Approval analytics</h1>
      <p class="muted" data-testid="analytics-window">
        The last {r.windowDays === 1 ? 'day' : `${r.windowDays} days`} ({formatTime(r.sinceMs)} to {formatTime(r.atMs)}),{' '}
        {r.groups === 'all'
          ? 'all approver groups'
          : r.groups.length === 0
            ? 'no approver group'
            : `approver group${r.groups.length === 1 ? '' : 's'} ${r.groups.join(', ')}`}
        . Window:{' '}
        {ANALYTICS_WINDOWS_DAYS.map((d) => (
          <>{d === r.windowDays ? <strong>{`${d} d`}</strong> : <a href={`/approver/analytics?days=${d}`}>{`${d} d`}</a>} </>
        ))}
      </p>
      <div class="tiles">
        {tiles.map(([id, label, value]) => (
          <div class="card tile" data-testid={`tile-${id}`}>
            <div class="muted">{label}</div>
            <div class="value">{value}</div>
          </div>
        ))}
      </div>

      <h2>Time to decision</h2>
      <p class="muted">From submission to approval or denial; dark bar p50, light bar p90, logarithmic time axis.</p>
      <section class="card">
        <h3>Per tool</h3>
        <DurationChart rows={t.byTool} title="Time to decision per tool" testid="chart-tool" />
        <h3>Per approver group</h3>
        <DurationChart rows={t.byGroup} title="Time to decision per approver group" testid="chart-group" />
        <h3>Per channel</h3>
        <DurationChart rows={t.byChannel} title="Time to decision per channel" testid="chart-channel" />
        <details>
          <summary>The numbers</summary>
          <QuantileTable rows={t.byTool} what="Tool" testid="table-tool" />
          <QuantileTable rows={t.byGroup} what="Approver group" testid="table-group" />
          <QuantileTable rows={t.byChannel} what="Channel" testid="table-channel" />
        </details>
      </section>

      <h2>Waiting now</h2>
      <section class="card">
        <PendingChart pending={r.pending} />
      </section>

      <h2>Outcomes</h2>
      <p class="muted">Requests that ended in the window; the approval rate is approved ÷ (approved + denied).</p>
      <section class="card">
        <OutcomeChart rows={r.outcomes} />
        <p data-testid="escalations">
          Escalated to a fallback:{' '}
          {r.escalations.length === 0 ? 'none' : r.escalations.map((e) => `${visible(e.key)} ${e.count}`).join(', ')}.
        </p>
      </section>

      <h2>Approved without reading?</h2>
      <p class="muted">
        People's approvals by how long after first opening the request's page they approved. Approvals within {r.quickApprovalSeconds} s may
        not have been read; "page never opened" were given from Slack, an e-mail link or the CLI without opening the page.
      </p>
      <section class="card">
        <ReadingChart readings={r.readings} quickSeconds={r.quickApprovalSeconds} />
      </section>
      <p class="muted">
        Operators find the same figures, as totals since the service began, on <code>/metrics</code>.
      </p>
    </div>
  );
}
