// Scope: Temporal Cloud Actions counted from a workflow's event history (the counting rule is in
// docs/PERFORMANCE-ACTIONS.md, read from Temporal Cloud's "Actions" page). Pure functions over the
// history (`temporal.api.history.v1.IHistory`, as `WorkflowHandle.fetchHistory()` returns it and as
// `historyFromJSON` reads a recorded fixture); the bench scenario `bench/scenarios/actions.ts` fetches
// the histories and adds the submission limiter's share.
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;

/**
 * Billable action kinds that an event history shows. Queries, rejected updates and activity
 * heartbeats are billed but leave no event; the scenario counts queries itself.
 */
export interface ActionCounts {
  /** Run started (client start, Update-with-Start that started it, continue-as-new, child). */
  workflowStarted: number;
  /** Updates the workflow accepted (`WorkflowExecutionUpdateAccepted`); Update-with-Start adds one. */
  update: number;
  /** Signals this run received (`WorkflowExecutionSignaled`), from a client or a workflow. */
  signalReceived: number;
  /** Signals this run sent to another workflow (`SignalExternalWorkflowExecutionInitiated`). */
  signalSent: number;
  /** Durable timers started, explicit or implicit (`condition` with a timeout). */
  timer: number;
  /** Activity attempts: each scheduled activity counts its attempts (start plus retries). */
  activity: number;
  /** Workflow tasks that recorded at least one local-activity marker: one action each. */
  localActivity: number;
  /** `UpsertWorkflowSearchAttributes` commands, except those setting only `TemporalChangeVersion`. */
  searchAttributeUpsert: number;
  /** Child workflows: two actions each (the start and the execution). */
  childWorkflow: number;
  /** `WorkflowExecutionOptionsUpdated` events. */
  optionsUpdated: number;
}

/** An all-zero {@link ActionCounts}. */
export const zeroActions = (): ActionCounts => ({
  workflowStarted: 0,
  update: 0,
  signalReceived: 0,
  signalSent: 0,
  timer: 0,
  activity: 0,
  localActivity: 0,
  searchAttributeUpsert: 0,
  childWorkflow: 0,
  optionsUpdated: 0,
});

/** Marker name the TypeScript SDK (Core) gives a local activity's result. */
export const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** Sum of every kind. */
export const totalActions = (c: ActionCounts): number => Object.values(c).reduce((a, b) => a + b, 0);

/** `a + b`, kind by kind. */
export function addActions(a: ActionCounts, b: ActionCounts): ActionCounts {
  const out = zeroActions();
  for (const k of Object.keys(out) as Array<keyof ActionCounts>) out[k] = a[k] + b[k];
  return out;
}

/** `c / n`, kind by kind, rounded to 3 decimals. Throws on n ≤ 0. */
export function divideActions(c: ActionCounts, n: number): ActionCounts {
  if (!(n > 0)) throw new RangeError(`divideActions: n must be positive, got ${n}`);
  const out = zeroActions();
  for (const k of Object.keys(out) as Array<keyof ActionCounts>) out[k] = Math.round((c[k] / n) * 1000) / 1000;
  return out;
}

const toNumber = (v: unknown): number =>
  typeof v === 'number' ? v : v && typeof v === 'object' && 'toNumber' in v ? (v as { toNumber(): number }).toNumber() : Number(v);

/**
 * Count the billable actions one run's history shows, by kind (docs/PERFORMANCE-ACTIONS.md
 * §Counting rule). Activity attempts come from the attempt number of the `ActivityTaskStarted`
 * event (the server records only the last attempt); a scheduled activity never started counts one.
 * Never throws on a well-formed history; events of unknown kinds count nothing.
 */
export function countActions(history: History): ActionCounts {
  const c = zeroActions();
  const attempts = new Map<number, number>(); // activity scheduled event id → attempts seen
  const laTasks = new Set<number>(); // workflow task completed ids with a local-activity marker
  for (const e of history.events ?? []) {
    if (e.workflowExecutionStartedEventAttributes) c.workflowStarted++;
    else if (e.workflowExecutionUpdateAcceptedEventAttributes) c.update++;
    else if (e.workflowExecutionSignaledEventAttributes) c.signalReceived++;
    else if (e.signalExternalWorkflowExecutionInitiatedEventAttributes) c.signalSent++;
    else if (e.timerStartedEventAttributes) c.timer++;
    else if (e.activityTaskScheduledEventAttributes) attempts.set(toNumber(e.eventId), 1);
    else if (e.activityTaskStartedEventAttributes) {
      const a = e.activityTaskStartedEventAttributes;
      attempts.set(toNumber(a.scheduledEventId), Math.max(1, a.attempt ?? 1));
    } else if (e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER) {
      laTasks.add(toNumber(e.markerRecordedEventAttributes.workflowTaskCompletedEventId));
    } else if (e.upsertWorkflowSearchAttributesEventAttributes) {
      const fields = Object.keys(e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ?? {});
      if (fields.some((f) => f !== 'TemporalChangeVersion')) c.searchAttributeUpsert++;
    } else if (e.startChildWorkflowExecutionInitiatedEventAttributes) c.childWorkflow += 2;
    else if (e.workflowExecutionOptionsUpdatedEventAttributes) c.optionsUpdated++;
  }
  for (const n of attempts.values()) c.activity += n;
  c.localActivity = laTasks.size;
  return c;
}

/** Activity types scheduled in a history, in order (regular activities only). */
export function scheduledActivityTypes(history: History): string[] {
  return (history.events ?? []).flatMap((e) =>
    e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name ?? '?'] : [],
  );
}

/** Workflow ids this run signalled (`SignalExternalWorkflowExecutionInitiated`), deduplicated. */
export function signalledWorkflowIds(history: History): string[] {
  const ids = new Set<string>();
  for (const e of history.events ?? []) {
    const id = e.signalExternalWorkflowExecutionInitiatedEventAttributes?.workflowExecution?.workflowId;
    if (id) ids.add(id);
  }
  return [...ids];
}
