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

const APPROVE = 'v0.1-approve.history.json';
const DENY = 'v0.1-deny.history.json';

describe('Temporal Cloud actions counted from a recorded approval history', () => {
  it('an approved-and-executed run counts start, update, the limiter release, its one timer, four activities and two attribute upserts; task-record writes are free', () => {
    // v0.1-approve: events 1 (started), 11 (taskCreated accepted), 46 (release sent), 17 (the
    // first wait's timer), 6/24/30/37 (submit, the poll's one attempt, policy, tool), 5 + 44
    // (attribute upserts). The five WorkflowPropertiesModified (task record) are not billed.
    const c = count(raw(APPROVE));
    expect(c).toEqual({
      workflowStarted: 1,
      update: 1,
      signalReceived: 0,
      signalSent: 1,
      timer: 1,
      activity: 4,
      localActivity: 0,
      searchAttributeUpsert: 2,
      childWorkflow: 0,
      optionsUpdated: 0,
    });
    expect(totalActions(c)).toBe(10);
  });

  it('a run started with a reservation its own reserve created sends the limiter one signal (release) and no claim', () => {
    // recorded with `limiter.joined: false`
    expect(count(raw(APPROVE)).signalSent).toBe(1);
  });

  it('a denied run costs fewer actions than an approved one: no policy re-check, no tool', () => {
    const approved = count(raw(APPROVE));
    const denied = count(raw(DENY));
    expect(denied.activity).toBe(2); // submit, the poll
    expect(approved.activity - denied.activity).toBe(2); // evaluatePolicy, executeTool
    expect(totalActions(denied)).toBe(totalActions(approved) - 2);
  });

  it('an activity retried counts one action per attempt, taken from the attempt of its started event (the fallback poll: one per poll)', () => {
    const h = raw(APPROVE);
    const started = h.events.find((e) => e.eventId === '25')!; // fetchApprovalStatus (the poll) started
    (started.activityTaskStartedEventAttributes as { attempt: number }).attempt = 3;
    expect(count(h).activity).toBe(6);
  });

  it('an upsert that sets only TemporalChangeVersion is not counted, one with any other attribute is', () => {
    const h = raw(APPROVE);
    const before = count(h).searchAttributeUpsert;
    const upsert = h.events.find((e) => e.eventId === '5')!;
    const fields = (
      upsert.upsertWorkflowSearchAttributesEventAttributes as { searchAttributes: { indexedFields: Record<string, unknown> } }
    ).searchAttributes.indexedFields;
    const any = Object.values(fields)[0];
    for (const k of Object.keys(fields)) delete fields[k];
    fields.TemporalChangeVersion = any;
    expect(count(h).searchAttributeUpsert).toBe(before - 1);
  });

  it('local-activity markers recorded in one workflow task count as one action; in two tasks, two', () => {
    const h = raw(APPROVE);
    const marker = (id: string, wftc: string): RawEvent => ({
      eventId: id,
      eventType: 'EVENT_TYPE_MARKER_RECORDED',
      markerRecordedEventAttributes: { markerName: 'core_local_activity', workflowTaskCompletedEventId: wftc },
    });
    const base = count(h).localActivity;
    h.events.push(marker('100', '23'), marker('101', '23'));
    expect(count(h).localActivity).toBe(base + 1);
    h.events.push(marker('102', '29'));
    expect(count(h).localActivity).toBe(base + 2);
  });

  it('the limiter signals name the workflow whose history holds their receipt', () => {
    const h = raw(APPROVE);
    const target = (
      h.events.find((e) => e.eventId === '46')!.signalExternalWorkflowExecutionInitiatedEventAttributes as {
        workflowExecution: { workflowId: string };
      }
    ).workflowExecution.workflowId;
    expect(signalledWorkflowIds(historyFromJSON(h))).toEqual([target]);
  });
});
