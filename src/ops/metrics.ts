/**
 * Countersign's application metrics, named the Prometheus way (prom-client): one registry per role
 * process (per embedded stack), served at `/metrics` by `src/ops/ops-routes.ts` together with the
 * Temporal SDK's runtime metrics. No label ever carries a principal, an owner key, a task id or an
 * argument: labels are closed sets (a disposition, a status, a limit, a refusal kind).
 *
 * | metric | type | labels | where it is counted |
 * |---|---|---|---|
 * | `countersign_open_approval_tasks` | gauge | — | MCP front: a visibility count of running approval workflows, at scrape time |
 * | `countersign_approval_decision_seconds` | histogram | `outcome` | worker: submission → the backend's decision (approved, denied, expired, cancelled, failed) |
 * | `countersign_approval_tasks_terminal_total` | counter | `status`, `disposition` | worker: a task reached a terminal status (`disposition` is `none` unless completed) |
 * | `countersign_approval_expiries_total` | counter | `kind` | worker: a terminal denial because a window passed: `request`, `approval` |
 * | `countersign_submissions_refused_total` | counter | `limit` | MCP front: a new approval refused by a per-principal limit |
 * | `countersign_callback_refusals_total` | counter | `reason` | MCP front: a backend callback refused (`unauthorized`, `not-pending`, `malformed`, `too-large`) |
 * | `countersign_task_reads_total` | counter | `source` | MCP front: a task read for `tasks/get`, `approval_status` or a subscription, by where it was answered: `feed` (this instance's watch, no call), `record` (the run's memo, one describe), `query` (the workflow query: a worker, one Temporal Cloud action), `closed` (a closed run's result) |
 * | `countersign_subscription_streams` | gauge | — | MCP front: open `subscriptions/listen` streams, at scrape time |
 * | `countersign_break_glass_reviews` | gauge | `state` | approval service: break-glass approvals not yet reviewed (`unreviewed`) and of those past their review time (`overdue`), at scrape time |
 * | `countersign_policy_shadow_evaluations_total` | counter | — | MCP front: a call's decision evaluated under the shadow policy set too (`COUNTERSIGN_SHADOW_POLICY_DIR`, `src/policy/shadow.ts`) |
 * | `countersign_policy_shadow_skipped_total` | counter | — | MCP front: a call not shadowed because the shadow set already had its maximum of evaluations waiting (1,000; a PDP slower than the traffic) |
 * | `countersign_policy_shadow_disagreements_total` | counter | `live`, `shadow` | MCP front: the shadow set's outcome differs from the live one (each label one of `allowed`, `in-band`, `requestable`, `denied`; a change of approver group alone counts with both labels equal) |
 * | `countersign_call_records_total` | counter | `result` | MCP front: call records of calls that open no task (`COUNTERSIGN_CALL_RECORD_DIR`, `src/policy/call-records.ts`): `written`, `skipped` (over the size limit), `failed` |
 * | `countersign_workflow_task_holds_total` | counter | `action` | worker: what the workflow-task watchdog did about a run whose workflow task this worker took first and left unanswered (`src/temporal/workflow-task-watchdog.ts`): `replaced` the worker, left a `shared` hold to the queue's other workers, found it `unresolved` after a replacement |
 * | `countersign_callback_outbox` | gauge | `state` | approval service: its status-change callbacks by `state` (`pending`, `delivered`, `refused`, `gave-up`), at scrape time |
 * | `countersign_approvals_decision_seconds` | histogram | `tool`, `group`, `channel` | approval service: submission → approval or denial of every decided request in its store, at scrape time |
 * | `countersign_approvals_resolved_total` | counter | `tool`, `group`, `outcome` | approval service: requests by final status (`approved`, `denied`, `expired`, `cancelled`, `failed`), at scrape time |
 * | `countersign_approvals_escalations_total` | counter | `group` | approval service: requests escalated to a fallback, at scrape time |
 * | `countersign_approvals_person_approvals_total` | counter | `tool`, `group`, `reading` | approval service: people's approvals by whether they opened the request's page first (`quick`: approved within the threshold of opening, `read`, `unopened`), at scrape time |
 * | `countersign_approvals_pending` | gauge | `group`, `age` | approval service: pending requests by age (`under_1h`, `1h_to_1d`, `1d_to_3d`, `3d_to_7d`, `over_7d`), at scrape time |
 *
 * The `countersign_approvals_*` series are read from the approval service's store at scrape time
 * (`packages/approvals/src/analytics.ts`): `tool` and `group` take only the values its configuration
 * names (at most 50 each, the rest `other`), `channel` a closed set; the counters are totals since
 * the store began.
 *
 * The worker's counts come from workflow code through a sink (`workflows/metrics-sink.ts`), which the
 * SDK does not call during replay, so a restarted worker does not count a task twice.
 *
 * Deliberately does not: push anywhere, or keep per-task state.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { DECISION_BUCKETS_SECONDS, type ApprovalMetricsSnapshot } from '@countersign/approvals';

/** The registry and instruments of one process. */
export interface AppMetrics {
  registry: Registry;
  decisionSeconds: Histogram<'outcome'>;
  terminal: Counter<'status' | 'disposition'>;
  expiries: Counter<'kind'>;
  submissionsRefused: Counter<'limit'>;
  callbackRefusals: Counter<'reason'>;
  taskReads: Counter<'source'>;
  /** Call records of calls that open no task, by `result` (`src/policy/call-records.ts`). */
  callRecords: Counter<'result'>;
  /** Calls evaluated under the shadow policy set (`src/policy/shadow.ts`). */
  shadowEvaluations: Counter;
  /** Calls not shadowed because the shadow set's evaluations in flight were at their bound (`src/policy/shadow.ts`). */
  shadowSkipped: Counter;
  /** The workflow-task watchdog's actions on held runs, by `action` (`HoldAction`, src/temporal/workflow-task-watchdog.ts). */
  workflowTaskHolds: Counter<'action'>;
  /** Shadow evaluations whose outcome differs from the live decision, by both outcomes. */
  shadowDisagreements: Counter<'live' | 'shadow'>;
  /** Sets how `countersign_subscription_streams` is read at scrape time (the MCP front's open streams). */
  setSubscriptionStreamsSource(read: () => number): void;
  /** Sets how `countersign_open_approval_tasks` is read at scrape time (the MCP front's visibility count). */
  setOpenTasksSource(read: () => Promise<number>): void;
  /** Sets how `countersign_callback_outbox` is read at scrape time: rows per state (the approval service's outbox). */
  setCallbackOutboxSource(read: () => Promise<Record<string, number>>): void;
  /** Sets how `countersign_break_glass_reviews` is read at scrape time: unreviewed and overdue break-glass approvals. */
  setBreakGlassReviewsSource(read: () => Promise<{ unreviewed: number; overdue: number }>): void;
  /** Sets how the `countersign_approvals_*` series are read at scrape time: the approval service's analytics of its store. */
  setApprovalAnalyticsSource(read: () => Promise<ApprovalMetricsSnapshot>): void;
}

/** One exposition line of a metric read at scrape time. */
interface Sample {
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Register, in `registry`, a metric whose samples `values` computes at scrape time (prom-client's
 * own instruments cannot set a histogram's buckets or a counter's total from outside); no samples
 * when `values` resolves to undefined.
 */
function registerScraped(
  registry: Registry,
  meta: { name: string; help: string; type: 'counter' | 'gauge' | 'histogram' },
  values: () => Promise<Sample[] | undefined>,
): void {
  const metric = {
    ...meta,
    get: async () => ({ ...meta, aggregator: 'sum', values: (await values()) ?? [] }),
    reset: () => undefined,
  };
  registry.registerMetric(metric as unknown as Metric);
}

/** The time-to-decision histogram's exposition lines (`_bucket` with `le`, `_sum`, `_count`) of `snapshot`. */
function decisionSamples(name: string, snapshot: ApprovalMetricsSnapshot): Sample[] {
  return snapshot.decisions.flatMap((d) => [
    ...DECISION_BUCKETS_SECONDS.map((le, i) => ({
      metricName: `${name}_bucket`,
      labels: { ...d.labels, le: String(le) },
      value: d.cumulative[i] ?? 0,
    })),
    { metricName: `${name}_bucket`, labels: { ...d.labels, le: '+Inf' }, value: d.count },
    { metricName: `${name}_sum`, labels: d.labels, value: d.sumSeconds },
    { metricName: `${name}_count`, labels: d.labels, value: d.count },
  ]);
}

/** The `state` values `countersign_callback_outbox` always reports (0 when none). */
const OUTBOX_STATES = ['pending', 'delivered', 'refused', 'gave-up'] as const;

/** A fresh registry with the instruments and Node's default process metrics (`process_*`, `nodejs_*`). */
export function createAppMetrics(): AppMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let openTasks: (() => Promise<number>) | undefined;
  new Gauge({
    name: 'countersign_open_approval_tasks',
    help: 'Approval tasks whose workflow is running (visibility count, read at scrape time).',
    registers: [registry],
    async collect() {
      if (!openTasks) return;
      try {
        this.set(await openTasks());
      } catch {
        // Temporal did not answer: keep the last value; /readyz reports the outage
      }
    },
  });
  let streams: (() => number) | undefined;
  new Gauge({
    name: 'countersign_subscription_streams',
    help: 'Open subscriptions/listen streams of this MCP front (read at scrape time).',
    registers: [registry],
    collect() {
      if (streams) this.set(streams());
    },
  });
  let callbackOutbox: (() => Promise<Record<string, number>>) | undefined;
  new Gauge({
    name: 'countersign_callback_outbox',
    help: "The approval service's status-change callbacks by delivery state (outbox rows, read at scrape time).",
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      if (!callbackOutbox) return;
      try {
        const counts = await callbackOutbox();
        for (const state of OUTBOX_STATES) this.set({ state }, counts[state] ?? 0);
      } catch {
        // the store is closed (shutting down): keep the last values
      }
    },
  });
  let breakGlassReviews: (() => Promise<{ unreviewed: number; overdue: number }>) | undefined;
  new Gauge({
    name: 'countersign_break_glass_reviews',
    help: 'Break-glass approvals awaiting their mandatory review (unreviewed), and those past reviewWithinMs (overdue), read at scrape time.',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      if (!breakGlassReviews) return;
      try {
        const counts = await breakGlassReviews();
        this.set({ state: 'unreviewed' }, counts.unreviewed);
        this.set({ state: 'overdue' }, counts.overdue);
      } catch {
        // the store is closed (shutting down): keep the last values
      }
    },
  });
  let approvalAnalytics: (() => Promise<ApprovalMetricsSnapshot>) | undefined;
  let lastAnalytics: ApprovalMetricsSnapshot | undefined;
  const analytics = async (): Promise<ApprovalMetricsSnapshot | undefined> => {
    if (!approvalAnalytics) return undefined;
    try {
      lastAnalytics = await approvalAnalytics();
    } catch {
      // the store is closed (shutting down): keep the last values
    }
    return lastAnalytics;
  };
  const decisionName = 'countersign_approvals_decision_seconds';
  registerScraped(
    registry,
    {
      name: decisionName,
      help: "Time from an approval request's submission to its approval or denial (approval service store).",
      type: 'histogram',
    },
    async () => {
      const s = await analytics();
      return s && decisionSamples(decisionName, s);
    },
  );
  registerScraped(
    registry,
    { name: 'countersign_approvals_resolved_total', help: 'Approval requests by final status (approval service store).', type: 'counter' },
    async () => (await analytics())?.resolved,
  );
  registerScraped(
    registry,
    {
      name: 'countersign_approvals_escalations_total',
      help: 'Approval requests escalated to a fallback group or approver.',
      type: 'counter',
    },
    async () => (await analytics())?.escalations,
  );
  registerScraped(
    registry,
    {
      name: 'countersign_approvals_person_approvals_total',
      help: "People's approvals by whether they opened the request page first: quick (approved within the threshold of opening), read, unopened.",
      type: 'counter',
    },
    async () => (await analytics())?.approvals,
  );
  registerScraped(
    registry,
    { name: 'countersign_approvals_pending', help: 'Pending approval requests by approver group and age.', type: 'gauge' },
    async () => (await analytics())?.pending,
  );
  return {
    registry,
    decisionSeconds: new Histogram({
      name: 'countersign_approval_decision_seconds',
      help: "Time from an approval request's submission to the backend's decision.",
      labelNames: ['outcome'],
      buckets: [60, 300, 900, 3600, 4 * 3600, 8 * 3600, 86_400, 3 * 86_400, 7 * 86_400, 30 * 86_400],
      registers: [registry],
    }),
    terminal: new Counter({
      name: 'countersign_approval_tasks_terminal_total',
      help: 'Approval tasks that reached a terminal status, by status and disposition.',
      labelNames: ['status', 'disposition'],
      registers: [registry],
    }),
    expiries: new Counter({
      name: 'countersign_approval_expiries_total',
      help: 'Approval tasks denied because a request or approval window passed.',
      labelNames: ['kind'],
      registers: [registry],
    }),
    submissionsRefused: new Counter({
      name: 'countersign_submissions_refused_total',
      help: 'New approval tasks refused by a per-principal submission limit.',
      labelNames: ['limit'],
      registers: [registry],
    }),
    callbackRefusals: new Counter({
      name: 'countersign_callback_refusals_total',
      help: 'Approval-backend callbacks refused by the MCP front.',
      labelNames: ['reason'],
      registers: [registry],
    }),
    taskReads: new Counter({
      name: 'countersign_task_reads_total',
      help: 'Task reads of the MCP front by where they were answered (feed, record, query, closed).',
      labelNames: ['source'],
      registers: [registry],
    }),
    workflowTaskHolds: new Counter({
      name: 'countersign_workflow_task_holds_total',
      help: 'Runs whose workflow task this worker took first and left unanswered, by what the watchdog did: replaced (the worker), shared (left to the other workers of the queue), unresolved (still held after a replacement).',
      labelNames: ['action'],
      registers: [registry],
    }),
    callRecords: new Counter({
      name: 'countersign_call_records_total',
      help: 'Call records of calls that open no task (allowed, denied), by result: written, skipped (over the size limit), failed.',
      labelNames: ['result'],
      registers: [registry],
    }),
    shadowEvaluations: new Counter({
      name: 'countersign_policy_shadow_evaluations_total',
      help: 'tools/call decisions also evaluated under the shadow policy set (never enforced).',
      registers: [registry],
    }),
    shadowSkipped: new Counter({
      name: 'countersign_policy_shadow_skipped_total',
      help: 'tools/call decisions not shadowed because the shadow policy set already had its maximum of evaluations waiting.',
      registers: [registry],
    }),
    shadowDisagreements: new Counter({
      name: 'countersign_policy_shadow_disagreements_total',
      help: 'Shadow policy evaluations whose outcome (allowed, in-band, requestable, denied) differs from the live decision.',
      labelNames: ['live', 'shadow'],
      registers: [registry],
    }),
    setSubscriptionStreamsSource(read) {
      streams = read;
    },
    setOpenTasksSource(read) {
      openTasks = read;
    },
    setCallbackOutboxSource(read) {
      callbackOutbox = read;
    },
    setBreakGlassReviewsSource(read) {
      breakGlassReviews = read;
    },
    setApprovalAnalyticsSource(read) {
      approvalAnalytics = read;
    },
  };
}
