// Scope: receipts derived from durable records (src/receipts/task-evidence.ts), on the histories
// recorded before receipts existed (test/workflow/fixtures/): each terminal scenario yields its
// binding digest, policy decisions, approval requests, claim and disposition, read from the
// history alone, and the recomputed binding digest matches the signed one.
import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { jcsSha256 } from '../../src/binding/call-binding.js';
import { EvidenceError, evidenceFromHistory, workflowInputOf, type DecisionRecordSource } from '../../src/receipts/task-evidence.js';

// The corpus was recorded without the payload codec: its payloads are plain JSON.
const plain: PayloadCodec = { encode: async (p: Payload[]) => p, decode: async (p: Payload[]) => p };
const ids = { workflowId: 'approval-corpus', runId: 'run-1' };
const fixture = (name: string) =>
  historyFromJSON(JSON.parse(readFileSync(new URL(`../workflow/fixtures/${name}.history.json`, import.meta.url), 'utf8')));

describe('evidence from a recorded history', () => {
  it.each(['search-attributes-chained-request', 'local-reads-chained-request'])(
    'a chained request (%s): two approved generations, a re-evaluation asking for more then one allowing, the claim and approved-executed; status and re-checks read from activities or local-activity markers alike',
    async (name) => {
      const history = fixture(name);
      const input = await workflowInputOf(history, plain);
      const e = await evidenceFromHistory(ids, history, plain);
      const { tool, principal, resource } = e.callBinding;
      expect(jcsSha256({ tool, arguments: input.binding.arguments, principal, resource })).toBe(e.callBinding.digest);
      expect(JSON.stringify(e)).not.toContain('acct-991');
      expect(e.policyDecisions.map((d) => [d.stage, d.decision, d.outcome, d.policyIds])).toEqual([
        ['initial', 'deny', undefined, [input.accessRequest.policyId]],
        ['re-evaluation', 'deny', 'request', ['p2']],
        ['re-evaluation', 'allow', 'allow', []],
      ]);
      expect(e.approvalRequests.map((r) => [r.generation, r.requestId, r.outcome])).toEqual([
        [1, 'req-1', 'approved'],
        [2, 'req-2', 'approved'],
      ]);
      expect(e.approvalRequests[0]!.decisions).toEqual([{ approver: 'bob', decision: 'approve', channel: null, at: expect.any(String) }]);
      expect(e.approvalRequests[0]!.quorum).toBeNull();
      expect(e.executionClaim).toMatchObject({ claimed: true, executionId: 'corpus.run-1/execution' });
      const claimAt = (e.executionClaim as { at: string }).at;
      // not before the re-evaluation that allowed it (with the local reads both are recorded by the
      // same workflow task completion, so they share its server time)
      expect(Date.parse(claimAt)).toBeGreaterThanOrEqual(Date.parse(e.policyDecisions[2]!.at!));
      expect(e).toMatchObject({
        disposition: 'approved-executed',
        approvalMode: 'out-of-band',
        task: { status: 'completed', taskId: 'corpus.run-1' },
      });
    },
  );

  it('a denial: the request denied, no claim, denied-not-executed; decisions come from the record source when it knows the request', async () => {
    const records: DecisionRecordSource = {
      decisionsOf: async (id) =>
        id === 'req-1'
          ? {
              status: 'denied',
              quorum: { required: 1, rule: null },
              decisions: [{ approver: 'carol', decision: 'deny', channel: 'inbox', at: '2036-12-05T04:00:00.000Z' }],
            }
          : undefined,
      close() {},
    };
    const e = await evidenceFromHistory(ids, fixture('search-attributes-deny'), plain, records);
    expect(e.approvalRequests).toEqual([
      {
        generation: 1,
        requestId: 'req-1',
        outcome: 'denied',
        quorum: { required: 1, rule: null },
        decisions: [{ approver: 'carol', decision: 'deny', channel: 'inbox', at: '2036-12-05T04:00:00.000Z' }],
      },
    ]);
    expect(e.executionClaim).toEqual({ claimed: false });
    expect(e.disposition).toBe('denied-not-executed');
    expect(e.policyDecisions).toHaveLength(1);
  });

  it('a cancelled task has status cancelled, no disposition and no claim', async () => {
    const e = await evidenceFromHistory(ids, fixture('search-attributes-cancel'), plain);
    expect(e.task.status).toBe('cancelled');
    expect(e.disposition).toBeNull();
    expect(e.executionClaim).toEqual({ claimed: false });
  });

  it('an in-band confirmation in the run input is the approval: mode in-band, its policy id, no reason', async () => {
    const history = fixture('search-attributes-approve');
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    const payload = started.input!.payloads![0]!;
    const input = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as Record<string, unknown>;
    input.confirmation = {
      mode: 'in-band',
      confirmedBy: 'requester',
      confirmedAt: '2036-12-05T04:00:00.000Z',
      policyId: 'change-medium-risk',
      reason: 'my own words',
    };
    payload.data = Buffer.from(JSON.stringify(input));
    const e = await evidenceFromHistory(ids, history, plain);
    expect(e.approvalMode).toBe('in-band');
    expect(e.inBandConfirmation).toEqual({
      confirmedBy: 'requester',
      confirmedAt: '2036-12-05T04:00:00.000Z',
      policyId: 'change-medium-risk',
    });
    expect(e.policyDecisions[0]).toEqual({ stage: 'initial', decision: 'deny', requestable: true, policyIds: ['change-medium-risk'] });
    expect(JSON.stringify(e)).not.toContain('my own words');
  });

  it('a history without the completion event gives no receipt', async () => {
    const history = fixture('search-attributes-approve');
    history.events = history.events!.filter((ev) => !ev.workflowExecutionCompletedEventAttributes);
    await expect(evidenceFromHistory(ids, history, plain)).rejects.toThrow(EvidenceError);
  });
});
