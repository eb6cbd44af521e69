// Scope: where task creation spends its time under load, read from the approval workflows' own
// histories (event times written by the Temporal server; nothing added to the product). For each
// sampled task, from the driver sending `tools/call` to the `taskCreated` update completing:
//   front → started        HTTP, bearer check, policy, the caller's limiter reserve, the start;
//   wait for worker (wf)   workflow task scheduled → started (worker slots, poller, sticky queue);
//   workflow task          started → completed (the worker running workflow code);
//   wait for worker (act)  submit activity scheduled → started;
//   submit (backend)       activity started → completed (the POST to the approval service);
//   submit done → update   activity completed → the update completed (the next workflow task
//                          puts the handle in state, and the update returns).
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { percentile, round } from '../lib/stats.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The stages, in order. */
export const CREATION_STAGES = [
  'front → started',
  'wait for worker (workflow task)',
  'workflow task',
  'wait for worker (submit activity)',
  'submit (approval backend)',
  'submit done → update completed',
] as const;

/** p50 / p99 / max per stage, ms, over `samples` tasks. */
export interface CreationStages {
  samples: number;
  stages: Record<string, { p50Ms: number; p99Ms: number; maxMs: number }>;
}

const ms = (e: HistoryEvent | undefined): number | undefined => {
  const t = e?.eventTime;
  if (!t) return undefined;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
};

/** Stage durations of one history (ms), or null when a stage is missing; `sentAtMs`: wall clock of the call. */
export function stagesOf(events: HistoryEvent[], sentAtMs: number): number[] | null {
  const type = (e: HistoryEvent) => Number(e.eventType);
  const idx = (t: number, from = 0) => events.findIndex((e, i) => i >= from && type(e) === t);
  const started = idx(1);
  const wts = idx(5);
  const wtStart = idx(6, wts);
  const wtDone = idx(7, wtStart);
  const actSched = idx(10);
  const actStart = idx(11, actSched);
  const actDone = idx(12, actStart);
  const updDone = idx(43);
  const at = [started, wts, wtStart, wtDone, actSched, actStart, actDone, updDone].map((i) => (i < 0 ? undefined : ms(events[i])));
  if (at.some((t) => t === undefined)) return null;
  const [s, wSch, wS, wD, aSch, aS, aD, uD] = at as number[];
  return [s! - sentAtMs, wS! - wSch!, wD! - wS!, aS! - aSch!, aD! - aS!, uD! - aD!];
}

/**
 * The event lists of `runs`, in order, fetched over one connection to the Temporal server at
 * `temporalAddress` (closed before returning). Throws what the fetch throws.
 */
async function historiesOf(
  temporalAddress: string,
  namespace: string,
  runs: Array<{ workflowId: string; runId: string }>,
): Promise<HistoryEvent[][]> {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const client = new Client({ connection, namespace });
    const out: HistoryEvent[][] = [];
    for (const r of runs) out.push((await client.workflow.getHandle(r.workflowId, r.runId).fetchHistory()).events ?? []);
    return out;
  } finally {
    await connection.close();
  }
}

/** Fetch the histories of `tasks` (workflow id, run id, when the call was sent) and summarise the stages. */
export async function creationStages(
  temporalAddress: string,
  namespace: string,
  tasks: Array<{ workflowId: string; runId: string; sentAtMs: number }>,
): Promise<CreationStages> {
  const histories = await historiesOf(temporalAddress, namespace, tasks);
  const per: number[][] = CREATION_STAGES.map(() => []);
  let samples = 0;
  tasks.forEach((t, k) => {
    const st = stagesOf(histories[k]!, t.sentAtMs);
    if (!st) return;
    samples++;
    st.forEach((v, i) => per[i]!.push(v));
  });
  return {
    samples,
    stages: Object.fromEntries(
      CREATION_STAGES.map((name, i) => [
        name,
        samples === 0
          ? { p50Ms: Number.NaN, p99Ms: Number.NaN, maxMs: Number.NaN }
          : { p50Ms: round(percentile(per[i]!, 50), 1), p99Ms: round(percentile(per[i]!, 99), 1), maxMs: round(Math.max(...per[i]!), 1) },
      ]),
    ),
  };
}

/** One slow approval: the run's history events after the decision, as offsets from it. */
export interface ApprovalTimeline {
  workflowId: string;
  /** Decision (the driver's POST) → the first `tasks/get` that showed the task finished, ms. */
  finishedAfterMs: number;
  /** Each history event at or after the decision: its type (the proto enum name, shortened) and offset, ms. */
  events: Array<{ type: string; atMs: number }>;
}

/**
 * Timelines of the given approvals, read from their histories (event times written by the
 * Temporal server; the driver's wall clock and the server's are the same machine's): where an
 * approval that took long spent its time (a callback refused, the status poll, a busy worker).
 */
export async function approvalTimelines(
  temporalAddress: string,
  namespace: string,
  approvals: Array<{ workflowId: string; runId: string; decidedAtMs: number; finishedAfterMs: number }>,
): Promise<ApprovalTimeline[]> {
  const histories = await historiesOf(temporalAddress, namespace, approvals);
  return approvals.map((a, k) => ({
    workflowId: a.workflowId,
    finishedAfterMs: round(a.finishedAfterMs, 1),
    events: histories[k]!.map((e) => ({ e, at: ms(e) }))
      .filter((x): x is { e: HistoryEvent; at: number } => x.at !== undefined && x.at >= a.decidedAtMs - 1000)
      .map(({ e, at }) => ({ type: eventTypeName(e), atMs: at - a.decidedAtMs })),
  }));
}

/** A history event's type, e.g. `ActivityTaskScheduled:fetchApprovalStatus`, `WorkflowExecutionUpdateAccepted:backendCallback`. */
function eventTypeName(e: HistoryEvent): string {
  const key = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]);
  const base = key ? key.replace(/EventAttributes$/, '') : String(e.eventType);
  const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
  const update =
    e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ??
    e.workflowExecutionUpdateAdmittedEventAttributes?.request?.input?.name;
  const detail = activity ?? update;
  return detail ? `${base}:${detail}` : base;
}

/** Why a run is stuck: its last failed or timed-out workflow task, its pending workflow task, its last events. */
export interface StuckRun {
  workflowId: string;
  lastWorkflowTaskFailure: { cause: string; message: string } | null;
  /** `WorkflowTaskTimedOut` events in the history (the first timeout of a streak; later attempts are not written). */
  workflowTaskTimeouts: number;
  /** From describe: the workflow task the server waits on (state, attempt), if any. */
  pendingWorkflowTask: { state: string; attempt: number; scheduledAgoS: number | null; startedAgoS: number | null } | null;
  events: number;
  /** The last 12 events, e.g. `WorkflowTaskTimedOut +12030` (ms after the first of the twelve). */
  tail: string[];
}

const PENDING_WFT_STATES: Record<number, string> = { 1: 'scheduled', 2: 'started' };

/**
 * For each run: its last `WorkflowTaskFailed` event, its `WorkflowTaskTimedOut` count, the pending
 * workflow task from describe (a run whose workflow task keeps failing or timing out answers no
 * query: FAILED_PRECONDITION), and the tail of its history.
 */
export async function stuckRuns(
  temporalAddress: string,
  namespace: string,
  runs: Array<{ workflowId: string; runId: string }>,
): Promise<StuckRun[]> {
  const histories = await historiesOf(temporalAddress, namespace, runs);
  const pending = await pendingWorkflowTasks(temporalAddress, namespace, runs);
  return runs.map((r, k) => {
    const events = histories[k]!;
    const failed = events.filter((e) => e.workflowTaskFailedEventAttributes).at(-1)?.workflowTaskFailedEventAttributes;
    const last = events.slice(-12);
    const t0 = ms(last[0]) ?? 0;
    return {
      workflowId: r.workflowId,
      events: events.length,
      lastWorkflowTaskFailure: failed
        ? { cause: String(failed.cause ?? ''), message: String(failed.failure?.message ?? '').slice(0, 2000) }
        : null,
      workflowTaskTimeouts: events.filter((e) => e.workflowTaskTimedOutEventAttributes).length,
      pendingWorkflowTask: pending[k] ?? null,
      tail: last.map((e) => `${eventTypeName(e)} +${(ms(e) ?? t0) - t0}`),
    };
  });
}

/** Describe each run and read its pending workflow task (null when none, or when describe failed). */
async function pendingWorkflowTasks(
  temporalAddress: string,
  namespace: string,
  runs: Array<{ workflowId: string; runId: string }>,
): Promise<Array<StuckRun['pendingWorkflowTask']>> {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    const now = Date.now();
    const agoS = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
      t?.seconds == null ? null : round((now - (Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6))) / 1000, 1);
    const out: Array<StuckRun['pendingWorkflowTask']> = [];
    for (const r of runs) {
      try {
        const d = await connection.workflowService.describeWorkflowExecution({
          namespace,
          execution: { workflowId: r.workflowId, runId: r.runId },
        });
        const p = d.pendingWorkflowTask;
        out.push(
          p
            ? {
                state: PENDING_WFT_STATES[Number(p.state)] ?? String(p.state),
                attempt: Number(p.attempt ?? 0),
                scheduledAgoS: agoS(p.scheduledTime),
                startedAgoS: agoS(p.startedTime),
              }
            : null,
        );
      } catch {
        out.push(null);
      }
    }
    return out;
  } finally {
    await connection.close();
  }
}
