// Scope: the Temporal Cloud action counting rule of bench/lib/actions.ts (docs/PERFORMANCE-ACTIONS.md
// §Counting rule), applied to approval histories recorded by test/workflow/fixtures/.
import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { describe, expect, it } from 'vitest';
import { countActions, signalledWorkflowIds, totalActions } from '../../bench/lib/actions.js';

const FIXTURES = new URL('../workflow/fixtures/', import.meta.url);
type RawEvent = Record<string, unknown> & { eventId: string; eventType: string };
const raw = (name: string) => JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as { events: RawEvent[] };
const count = (json: unknown) => countActions(historyFromJSON(json));

describe('Temporal Cloud actions counted from a recorded approval history', () => {
  it('an approved-and-executed run (pre-local-activity shape) counts start, update, both limiter signals, its timer, four activities and two attribute upserts', () => {
    // search-attributes-approve: events 1 (started), 15 (taskCreated accepted), 7 + 47 (claim,
    // release sent), 22 (status-poll timer), 11/28/34/40 (submit, status, policy, tool; attempt 1
    // each), 10 + 46 (attribute upserts). Events 6 and 9 upsert only TemporalChangeVersion (the
    // patch markers' own attribute), which Temporal Cloud does not bill.
    const c = count(raw('search-attributes-approve.history.json'));
    expect(c).toEqual({
      workflowStarted: 1,
      update: 1,
      signalReceived: 0,
      signalSent: 2,
      timer: 1,
      activity: 4,
      localActivity: 0,
      searchAttributeUpsert: 2,
      childWorkflow: 0,
      optionsUpdated: 0,
    });
    expect(totalActions(c)).toBe(11);
  });

  it('with the reads as local activities (local-reads shape), the status fetch and policy re-check recorded in one workflow task cost one action, not two', () => {
    // local-reads-approve: events 30 and 31 are the two local-activity markers, both of workflow
    // task 26; the regular activities left are 11 (submit) and 32 (tool).
    const before = count(raw('search-attributes-approve.history.json'));
    const after = count(raw('local-reads-approve.history.json'));
    expect(after.activity).toBe(2);
    expect(after.localActivity).toBe(1);
    expect(after.activity + after.localActivity).toBe(before.activity + before.localActivity - 1);
  });

  it('a run started with a reservation its own reserve created sends the limiter one signal (release), not two', () => {
    // local-reads-approve was recorded with `limiter.joined: false`: no claim (limiter-claim-when-joined)
    expect(count(raw('search-attributes-approve.history.json')).signalSent).toBe(2);
    expect(count(raw('local-reads-approve.history.json')).signalSent).toBe(1);
  });

  it('a denied run costs fewer actions than an approved one: no policy re-check, no tool', () => {
    const approved = count(raw('search-attributes-approve.history.json'));
    const denied = count(raw('search-attributes-deny.history.json'));
    expect(denied.activity).toBe(2); // submit, status
    expect(approved.activity - denied.activity).toBe(2); // evaluatePolicy, executeTool
    expect(totalActions(denied)).toBe(totalActions(approved) - 2);
  });

  it('an activity retried counts one action per attempt, taken from the attempt of its started event', () => {
    const h = raw('search-attributes-approve.history.json');
    const started = h.events.find((e) => e.eventId === '29')!; // fetchApprovalStatus started
    (started.activityTaskStartedEventAttributes as { attempt: number }).attempt = 3;
    expect(count(h).activity).toBe(6);
  });

  it('an upsert that sets only TemporalChangeVersion is not counted, one with any other attribute is', () => {
    const h = raw('search-attributes-approve.history.json');
    const before = count(h).searchAttributeUpsert;
    const versionOnly = h.events.find((e) => e.eventId === '6')!;
    const fields = (
      versionOnly.upsertWorkflowSearchAttributesEventAttributes as { searchAttributes: { indexedFields: Record<string, unknown> } }
    ).searchAttributes.indexedFields;
    fields.CountersignStatus = fields.TemporalChangeVersion;
    expect(count(h).searchAttributeUpsert).toBe(before + 1);
  });

  it('local-activity markers recorded in one workflow task count as one action; in two tasks, two', () => {
    const h = raw('search-attributes-approve.history.json');
    const marker = (id: string, wftc: string): RawEvent => ({
      eventId: id,
      eventType: 'EVENT_TYPE_MARKER_RECORDED',
      markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: wftc },
    });
    const base = count(h).localActivity;
    h.events.push(marker('100', '27'), marker('101', '27'));
    expect(count(h).localActivity).toBe(base + 1);
    h.events.push(marker('102', '33'));
    expect(count(h).localActivity).toBe(base + 2);
  });

  it('the limiter signals name the workflow whose history holds their receipt', () => {
    const h = raw('search-attributes-approve.history.json');
    const target = (
      h.events.find((e) => e.eventId === '7')!.signalExternalWorkflowExecutionInitiatedEventAttributes as {
        workflowExecution: { workflowId: string };
      }
    ).workflowExecution.workflowId;
    expect(signalledWorkflowIds(historyFromJSON(h))).toEqual([target]);
  });
});
