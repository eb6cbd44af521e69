// Scope: receipts derived from durable records (src/receipts/task-evidence.ts), on the recorded
// histories of the replay corpus (test/workflow/fixtures/v0.1-*): each terminal scenario yields its
// binding digest, policy decisions, approval requests, claim and disposition, read from the
// history alone, and the recomputed binding digest matches the signed one.
import { readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { jcsSha256 } from '../../src/binding/call-binding.js';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { pino } from 'pino';
import {
  approvalServiceRecords,
  EvidenceError,
  evidenceFromHistory,
  workflowInputOf,
  type DecisionRecordSource,
} from '../../src/receipts/task-evidence.js';

// The corpus was recorded without the payload codec: its payloads are plain JSON.
const plain: PayloadCodec = { encode: async (p: Payload[]) => p, decode: async (p: Payload[]) => p };
const ids = { workflowId: 'approval-corpus', runId: 'run-1' };
const fixture = (name: string) =>
  historyFromJSON(JSON.parse(readFileSync(new URL(`../workflow/fixtures/${name}.history.json`, import.meta.url), 'utf8')));

describe('evidence from a recorded history', () => {
  it.each(['v0.1-chained-request'])(
    'a chained request (%s): two approved generations (each found by the fallback poll), a re-evaluation asking for more then one allowing, the claim and approved-executed',
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
      // not before the re-evaluation that allowed it
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
    const e = await evidenceFromHistory(ids, fixture('v0.1-deny'), plain, records);
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
    const e = await evidenceFromHistory(ids, fixture('v0.1-cancel'), plain);
    expect(e.task.status).toBe('cancelled');
    expect(e.disposition).toBeNull();
    expect(e.executionClaim).toEqual({ claimed: false });
  });

  it('an in-band confirmation in the run input is the approval: mode in-band, its policy id, no reason', async () => {
    const history = fixture('v0.1-approve');
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
    const history = fixture('v0.1-approve');
    history.events = history.events!.filter((ev) => !ev.workflowExecutionCompletedEventAttributes);
    await expect(evidenceFromHistory(ids, history, plain)).rejects.toThrow(EvidenceError);
  });
});

describe('decision records read from the approval service over its API (approvalServiceRecords)', () => {
  const T0 = Date.parse('2036-12-05T04:00:00.000Z');
  const service = () =>
    createApprovalService({
      dbPath: ':memory:',
      clientToken: 'client-token',
      callbackSecret: 'callback-secret',
      approvers: [{ id: 'carol', secret: 'carol-pw', groups: ['treasury'] }],
      publicBaseUrl: 'http://approvals.test',
      logger: pino({ level: 'silent' }),
      now: () => T0,
    });
  /** `fetch` into the service's app, as the real one would reach its listener. */
  const into = (svc: ApprovalService) =>
    ((url: string | URL | Request, init?: RequestInit) => svc.app.request(String(url), init)) as typeof fetch;

  it('reads the quorum and each decision of a request, and undefined for one the service does not know', async () => {
    const svc = service();
    try {
      const submitted = await svc.app.request('/access/v1/requests', {
        method: 'POST',
        headers: { authorization: 'Bearer client-token', 'content-type': 'application/json', 'idempotency-key': 'k1' },
        body: JSON.stringify({
          subject: { iss: 'https://issuer.test', sub: 'alice' },
          action: { name: 'tools/call' },
          resource: { type: 'tool', id: 'wire_transfer' },
          context: { arguments: { amount: 50_000 } },
          approver_group: 'treasury',
          reason: 'over the limit',
          expires_at: new Date(T0 + 3_600_000).toISOString(),
          binding_digest: 'a'.repeat(64),
          generation: 1,
        }),
      });
      const { id } = (await submitted.json()) as { id: string };
      await svc.app.request(`/access/v1/requests/${id}/decision`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('carol:carol-pw').toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'deny', comment: 'no' }),
      });
      const records = approvalServiceRecords({ baseUrl: 'http://approvals.test/', clientToken: 'client-token', fetch: into(svc) });
      expect(await records.decisionsOf(id)).toEqual({
        status: 'denied',
        quorum: { required: 1, rule: null },
        decisions: [{ approver: 'carol', decision: 'deny', channel: 'api', at: new Date(T0).toISOString() }],
      });
      expect(await records.decisionsOf('no-such-request')).toBeUndefined();
      const wrongToken = approvalServiceRecords({ baseUrl: 'http://approvals.test', clientToken: 'not-it', fetch: into(svc) });
      await expect(wrongToken.decisionsOf(id)).rejects.toThrow(/HTTP 401/);
    } finally {
      svc.close();
    }
  });

  it('rejects, naming the request, when the service cannot be reached: a receipt is never issued from a partial read', async () => {
    const down = (async () => {
      throw new TypeError('fetch failed');
    }) as typeof fetch;
    await expect(
      approvalServiceRecords({ baseUrl: 'http://approvals.test', clientToken: 't', fetch: down }).decisionsOf('req-1'),
    ).rejects.toThrow(/could not read the decisions of request req-1/);
  });
});
