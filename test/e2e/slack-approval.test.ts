// Scope: Slack end to end (real Temporal dev server, real HTTP, a local stand-in for the Slack Web
// API): a gated tool call becomes a task, its request is posted to the treasury channel, a signed
// Approve press from a mapped Slack user resolves it, the tool runs once (tasks/get shows
// approved-executed), and the Slack message is updated with the outcome.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { signedInteraction, startSlackStandIn, type SlackCall, type SlackStandIn } from '../support/slack-stand-in.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const SIGNING_SECRET = 'e2e-slack-signing-secret';

let slack: SlackStandIn;
let stack: Stack;
beforeAll(async () => {
  slack = await startSlackStandIn();
  stack = await startTestStack(
    testConfig({
      COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-e2e',
      COUNTERSIGN_SLACK_SIGNING_SECRET: SIGNING_SECRET,
      COUNTERSIGN_SLACK_API_URL: slack.url,
      COUNTERSIGN_SLACK_CHANNELS: { treasury: 'C0TREASURY' },
      COUNTERSIGN_SLACK_USERS: { U0BOB: 'bob' },
    }),
  );
});
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
});

const blocksText = (c: SlackCall) => JSON.stringify(c.args['blocks'] ?? []);
const approveButtonOf = (c: SlackCall): string => {
  const actions = (c.args['blocks'] as Array<{ type: string; elements?: Array<{ action_id: string; value?: string }> }>).find(
    (b) => b.type === 'actions',
  );
  const value = actions?.elements?.find((e) => e.action_id === 'countersign.approve')?.value;
  if (value === undefined) throw new Error('no approve button');
  return value;
};
const pressOverHttp = (user: string, requestId: string, secret = SIGNING_SECRET) => {
  const i = signedInteraction({ signingSecret: secret, user, action: 'countersign.approve', requestId });
  return fetch(`${stack.urls.approvals}/slack/interactions`, { method: 'POST', headers: i.headers, body: i.body });
};

describe('Slack approval end to end', () => {
  it('a Slack Approve press from a mapped approver resolves the task to approved-executed, and the message shows the outcome', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `slack-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.status).toBe('working');

    const posted = await slack.waitFor((c) => c.method === 'chat.postMessage' && blocksText(c).includes(memo));
    expect(posted.args['channel']).toBe('C0TREASURY');
    const requestId = approveButtonOf(posted);

    // a forged press first: refused, the task still waits
    expect((await pressOverHttp('U0BOB', requestId, 'wrong-secret')).status).toBe(401);
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');

    const res = await pressOverHttp('U0BOB', requestId);
    expect(res.status).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    expect((await stack.approvals.store.auditTrail(requestId)).find((e) => e.event === 'approved')).toMatchObject({
      actor: 'bob',
      via: 'slack',
    });

    const updated = await slack.waitFor((c) => c.method === 'chat.update' && c.args['ts'] === posted.answer['ts']);
    expect(blocksText(updated)).toContain('*Approved* by bob (via slack)');
  });
});
