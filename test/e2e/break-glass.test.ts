// Scope: break-glass (issue 27 §5, docs/APPROVERS.md §Break-glass) end to end on a real Temporal
// dev server and the whole stack over real HTTP, with the Slack stand-in and a real SMTP server:
// alice, a treasury approver in the break-glass role, requests a $50,000 transfer and approves it
// herself with `countersign approvals approve <id> --break-glass "<reason>"` (a real process); the
// transfer runs once; the audit trail and the evidence receipt say break-glass; bob and carol, whom
// it skipped, get a Slack mention and an e-mail; it is listed under `approvals reviews` until bob
// reviews it (alice may not). Without a reason 400, outside the role 403, the third session in a day
// 429 (CLI exit 9).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { startSlackStandIn, type SlackStandIn } from '../support/slack-stand-in.js';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';
import {
  approvalsCli,
  basic,
  clientFor,
  exportReceipts as exportReceiptsOf,
  pendingFor,
  startTestStack,
  testConfig,
  waitForTerminal,
  withBreakGlassRequester,
  type WireTask,
} from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const REASON = 'Payroll file rejected by the bank; approvers offline until Monday';

let slack: SlackStandIn;
let smtp: SmtpSink;
let stack: Stack;
let config: Config;

beforeAll(async () => {
  slack = await startSlackStandIn();
  smtp = await startSmtpSink();
  config = testConfig({
    COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-e2e',
    COUNTERSIGN_SLACK_SIGNING_SECRET: 'e2e-slack-signing-secret',
    COUNTERSIGN_SLACK_API_URL: slack.url,
    COUNTERSIGN_SLACK_CHANNELS: { treasury: 'C0TREASURY' },
    COUNTERSIGN_SLACK_USERS: { U0BOB: 'bob', U0CAROL: 'carol' },
    COUNTERSIGN_SMTP_URL: smtp.url,
    COUNTERSIGN_EMAIL_ADDRESSES: { bob: 'bob@example.test', carol: 'carol@example.test' },
  });
  // alice requests and approves: an approver who is also a requester, in the break-glass role
  withBreakGlassRequester(config);
  stack = await startTestStack(config);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
  await smtp?.close();
});

/** Open a $50,000 transfer task as `sub`; returns its task id, memo and (once pending) request id. */
async function openTransfer(sub: string): Promise<{ taskId: string; memo: string; requestId: string }> {
  const client = await clientFor(stack, sub);
  const memo = `break-glass ${randomUUID().slice(0, 8)}`;
  const t = await client.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });
  expect(t.status).toBe('working');
  for (let i = 0; i < 200; i++) {
    const found = (await pendingFor(stack, 'carol')).find((r) => r.arguments.memo === memo);
    if (found) return { taskId: t.taskId, memo, requestId: found.id };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request for ${memo}`);
}

/** POST a decision as `approverId` over the API; returns the answer. */
function decideAs(approverId: string, requestId: string, body: Record<string, unknown>): Promise<Response> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  return fetch(`${stack.urls.approvals}/access/v1/requests/${requestId}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const exportReceipts = () => exportReceiptsOf(stack, config);

describe('break-glass end to end', () => {
  it('a requester in the break-glass role approves their own $50,000 transfer with a reason: it runs once, the receipt and audit say break-glass, the skipped approvers are told, and it needs review until bob reviews it', async () => {
    const t = await openTransfer('alice');
    expect((await approvalsCli(stack, 'alice', ['approve', t.requestId])).code).toBe(4); // own request, no break-glass
    const approved = await approvalsCli(stack, 'alice', ['approve', t.requestId, '--break-glass', REASON]);
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toBe(`${t.requestId} is now approved.\n`);
    const alice = await clientFor(stack, 'alice');
    const done = await waitForTerminal(alice, t.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(t.taskId)).toBe(1);

    const audit = await stack.approvals.store.auditTrail(t.requestId);
    expect(audit.find((e) => e.event === 'approved')).toMatchObject({ actor: 'alice', via: 'api', rule: 'break-glass' });
    expect(audit.find((e) => e.event === 'break-glass')).toMatchObject({ actor: 'alice', comment: REASON });

    // the approvers it skipped: a Slack notice mentioning them, and an e-mail each
    const notice = await slack.waitFor((c) => c.method === 'chat.postMessage' && String(c.args['text']).startsWith('Break-glass:'));
    expect(notice.args['channel']).toBe('C0TREASURY');
    const blocks = JSON.stringify(notice.args['blocks']);
    expect(blocks).toContain('<@U0BOB>');
    expect(blocks).toContain('<@U0CAROL>');
    expect(blocks).toContain(REASON.slice(0, 20));
    for (const to of ['bob@example.test', 'carol@example.test']) {
      const mail = await smtp.waitFor((m) => m.to.includes(to) && m.subject.startsWith('Break-glass:'));
      expect(mail.subject).toBe('Break-glass: alice approved their own wire_transfer request');
      expect(mail.text).toContain(`Their reason: ${REASON}`);
    }

    // the receipt of the closed task records the break-glass mark
    const ids = parseTaskId(t.taskId)!;
    await stack.temporal.workflow.getHandle(ids.workflowId, ids.runId).result();
    const receipt = (await exportReceipts()).find((p) => p.task.taskId === t.taskId)!;
    expect(receipt.approvalRequests[0]?.breakGlass).toEqual({ by: 'alice', reason: REASON, at: expect.stringMatching(/Z$/) });
    expect(receipt.approvalRequests[0]?.decisions.map((d) => d.approver)).toEqual(['alice']);

    // needs review: listed for bob, refused to alice, reviewed by bob, then no longer listed
    const listed = await approvalsCli(stack, 'bob', ['reviews']);
    expect(listed.stdout).toContain(t.requestId);
    expect(listed.stdout).toContain(`reason       ${REASON}`);
    expect(listed.stdout).toContain('skipped      bob, carol');
    const own = await approvalsCli(stack, 'alice', ['review', t.requestId, '--comment', 'all good']);
    expect(own.code).toBe(4);
    expect(own.stderr).toContain('someone else must review it');
    const reviewed = await approvalsCli(stack, 'bob', [
      'review',
      t.requestId,
      '--comment',
      'Called the bank; the payroll file was genuine.',
    ]);
    expect(reviewed.stdout).toBe(`Reviewed the break-glass approval of ${t.requestId} by alice.\n`);
    expect((await approvalsCli(stack, 'bob', ['reviews'])).stdout).toBe('No break-glass approvals need your review.\n');
    expect((await stack.approvals.store.auditTrail(t.requestId)).at(-1)).toMatchObject({ event: 'break-glass-reviewed', actor: 'bob' });
  });

  it('without a reason is 400, outside the role 403, and the third break-glass session in a day is 429 (CLI exit 9); the request stays pending', async () => {
    const mine = await openTransfer('alice');
    const blank = await decideAs('alice', mine.requestId, { decision: 'approve', break_glass: { reason: '' } });
    expect(blank.status).toBe(400);
    expect(((await blank.json()) as { type: string }).type).toBe('urn:countersign:problem:break-glass-reason-required');

    const bobs = await openTransfer('bob');
    const notInRole = await decideAs('bob', bobs.requestId, { decision: 'approve', break_glass: { reason: 'urgent' } });
    expect(notInRole.status).toBe(403);
    expect(((await notInRole.json()) as { type: string }).type).toBe('urn:countersign:problem:not-break-glass');

    // the first test opened alice's first session: end it, open a second and end it, then a third is refused
    const end = () =>
      fetch(`${stack.urls.approvals}/access/v1/break-glass/session`, {
        method: 'DELETE',
        headers: { authorization: basic('alice', stack.secrets.approvers.find((a) => a.id === 'alice')!.secret) },
      });
    expect((await end()).status).toBe(200);
    expect((await decideAs('alice', mine.requestId, { decision: 'approve', break_glass: { reason: 'second outage' } })).status).toBe(200);
    expect((await end()).status).toBe(200);
    const third = await openTransfer('alice');
    const limited = await approvalsCli(stack, 'alice', ['approve', third.requestId, '--break-glass', 'third outage']);
    expect(limited.code).toBe(9);
    expect(limited.stderr).toContain('as many break-glass sessions as the rules allow in 24 hours');
    const res = await decideAs('alice', third.requestId, { decision: 'approve', break_glass: { reason: 'third outage' } });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('Retry-After'))).toBeGreaterThan(23 * 3600);
    expect((await pendingFor(stack, 'carol')).some((r) => r.id === third.requestId)).toBe(true);
  });
});
