// Scope: the Slack channel of the approval service against a local stand-in for the Slack Web API
// (a real HTTP server recording calls): the Block Kit message a new request posts, and the real
// interaction receiver driven with correctly signed, wrongly signed, stale and unmapped-user
// payloads; the same rules as the inbox (four-eyes, one vote per person, quorum) with via=slack;
// and a decision from another channel updating the Slack message.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { signedInteraction, startSlackStandIn, type SlackCall, type SlackStandIn } from '../support/slack-stand-in.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
const SIGNING_SECRET = 'slack-signing-secret-for-tests';
const BOT_TOKEN = 'xoxb-test-token';
const CHANNEL = 'C0TREASURY';
let now = T0;
/** Every log line the service wrote in the current test. */
const logLines: string[] = [];
let slack: SlackStandIn;
let svc: ApprovalService;

beforeAll(async () => {
  slack = await startSlackStandIn();
});
afterAll(async () => {
  await slack?.close();
});
beforeEach(() => {
  now = T0;
  logLines.length = 0;
  slack.calls.length = 0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: 'http://approvals.test',
    logger: pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          logLines.push(chunk.toString());
          cb();
        },
      }),
    ),
    now: () => now,
    rules: {
      quorum: [
        { id: 'two-for-large', group: 'treasury', tool: 'wire_transfer', when: [{ field: 'arguments.amount', gt: 100_000 }], approvals: 2 },
      ],
      risk: [],
      riskIntervalMs: 30_000,
    },
    slack: {
      botToken: BOT_TOKEN,
      signingSecret: SIGNING_SECRET,
      apiUrl: slack.url,
      channels: { treasury: CHANNEL, ops: 'C0OPS' },
      users: { U0BOB: 'bob', U0CAROL: 'carol', U0ALICE: 'alice' },
    },
  });
});
afterEach(async () => {
  await svc.drainCallbacks();
  svc.close();
});

let keyCounter = 0;
async function submit(args: Record<string, unknown>, sub = 'alice'): Promise<string> {
  keyCounter += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `k-${keyCounter}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'Transfers over 25,000 need treasury approval.',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'c'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  await svc.drainCallbacks();
  return id;
}

function press(
  user: string,
  action: 'countersign.approve' | 'countersign.deny',
  requestId: string,
  opts: { secret?: string; nowMs?: number; signature?: string } = {},
): Promise<Response> {
  const i = signedInteraction({ signingSecret: opts.secret ?? SIGNING_SECRET, user, action, requestId, nowMs: opts.nowMs ?? now });
  if (opts.signature !== undefined) i.headers['x-slack-signature'] = opts.signature;
  return Promise.resolve(svc.app.request('/slack/interactions', { method: 'POST', headers: i.headers, body: i.body }));
}

const calls = (method: string): SlackCall[] => slack.calls.filter((c) => c.method === method);
const textOf = (call: SlackCall): string => JSON.stringify(call.args['blocks']);
type Button = { type: string; action_id: string; value?: string; url?: string };
const buttonsOf = (call: SlackCall): Button[] =>
  (call.args['blocks'] as Array<{ type: string; elements?: Button[] }>)
    .filter((b) => b.type === 'actions')
    .flatMap((b) => b.elements ?? []);

describe('Slack message for a new request', () => {
  it('a new request is posted to the group channel with the bot token, its summary, and buttons carrying only the request id', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'invoice 7' });
    const [post] = calls('chat.postMessage');
    expect(post?.token).toBe(BOT_TOKEN);
    expect(post?.args['channel']).toBe(CHANNEL);
    expect(textOf(post!)).toContain('50,000.00 → acct-991');
    expect(textOf(post!)).toContain('requested by alice (the client did not name itself) · tool wire_transfer · group treasury');
    expect(textOf(post!)).toContain('0 of 1 approvals');
    const buttons = buttonsOf(post!);
    expect(buttons.filter((b) => b.value !== undefined).map((b) => [b.action_id, b.value])).toEqual([
      ['countersign.approve', id],
      ['countersign.deny', id],
    ]);
    expect(buttons.find((b) => b.action_id === 'countersign.open')?.url).toBe(`http://approvals.test/approver/requests/${id}`);
  });
});

describe('Slack interaction receiver', () => {
  it('a correctly signed Approve from a mapped user approves as that approver with via=slack, and the message is updated without buttons', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const res = await press('U0BOB', 'countersign.approve', id);
    expect(res.status).toBe(200);
    expect((await svc.store.get(id))?.status).toBe('approved');
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'bob', via: 'slack' });
    await svc.drainCallbacks();
    const [update] = calls('chat.update');
    const posted = calls('chat.postMessage')[0]!;
    expect(posted.answer['ts']).toMatch(/^\d+\.\d+$/);
    expect(update?.args).toMatchObject({ channel: CHANNEL, ts: posted.answer['ts'] });
    expect(textOf(update!)).toContain('*Approved* by bob (via slack)');
    expect(buttonsOf(update!)).toEqual([]);
  });

  it('a Deny press denies the request', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    expect((await press('U0CAROL', 'countersign.deny', id)).status).toBe(200);
    expect(await svc.store.get(id)).toMatchObject({ status: 'denied', resolvedBy: 'carol' });
  });

  it('a payload signed with another secret is refused with 401 problem+json and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const res = await press('U0BOB', 'countersign.approve', id, { secret: 'not-the-signing-secret' });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(((await res.json()) as { detail: string }).detail).toContain('does not match');
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(await svc.store.votes(id)).toEqual([]);
  });

  it('a payload whose body was changed after signing is refused', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const other = await submit({ to: 'acct-992', amount: 60_000 });
    const signedForOther = signedInteraction({
      signingSecret: SIGNING_SECRET,
      user: 'U0BOB',
      action: 'countersign.deny',
      requestId: other,
      nowMs: now,
    });
    const forged = signedInteraction({
      signingSecret: SIGNING_SECRET,
      user: 'U0BOB',
      action: 'countersign.approve',
      requestId: id,
      nowMs: now,
    });
    const res = await svc.app.request('/slack/interactions', {
      method: 'POST',
      headers: { ...forged.headers, 'x-slack-signature': signedForOther.headers['x-slack-signature']! },
      body: forged.body,
    });
    expect(res.status).toBe(401);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a correctly signed payload older than five minutes is refused as stale and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const res = await press('U0BOB', 'countersign.approve', id, { nowMs: now - 6 * 60_000 });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { detail: string }).detail).toContain('more than 5 minutes');
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a payload without signature headers is refused', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const i = signedInteraction({ signingSecret: SIGNING_SECRET, user: 'U0BOB', action: 'countersign.approve', requestId: id, nowMs: now });
    const res = await svc.app.request('/slack/interactions', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: i.body,
    });
    expect(res.status).toBe(401);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a signed payload that is not a block_actions interaction is a 400 problem', async () => {
    const ts = String(Math.floor(now / 1000));
    const body = new URLSearchParams({ payload: JSON.stringify({ type: 'view_submission', user: { id: 'U0BOB' } }) }).toString();
    const { slackSignature } = await import('@countersign/approvals');
    const res = await svc.app.request('/slack/interactions', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': slackSignature(SIGNING_SECRET, ts, body),
      },
      body,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('an unmapped Slack user is answered with an ephemeral message and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const res = await press('U0STRANGER', 'countersign.approve', id);
    expect(res.status).toBe(200);
    await svc.drainCallbacks();
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(await svc.store.votes(id)).toEqual([]);
    const [answer] = calls('chat.postEphemeral');
    expect(answer?.args).toMatchObject({ channel: CHANNEL, user: 'U0STRANGER' });
    expect(String(answer?.args['text'])).toContain('not linked to a Countersign approver');
    expect(calls('chat.update')).toEqual([]);
  });

  it('the requester pressing Approve on their own request is refused (four-eyes) with an ephemeral answer', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 }, 'alice');
    expect((await press('U0ALICE', 'countersign.approve', id)).status).toBe(200);
    await svc.drainCallbacks();
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(String(calls('chat.postEphemeral')[0]?.args['text'])).toContain('cannot decide their own access request');
  });

  it('on a two-approval request a Slack approval counts once per person: the message shows 1 of 2, the same person again through the API is refused, another approver completes it', async () => {
    const id = await submit({ to: 'acct-991', amount: 250_000 });
    expect((await press('U0BOB', 'countersign.approve', id)).status).toBe(200);
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(await svc.store.votes(id)).toMatchObject([{ approver: 'bob', via: 'slack' }]);
    await svc.drainCallbacks();
    expect(textOf(calls('chat.update')[0]!)).toContain('1 of 2 approvals (bob)');

    // bob again, by Slack and by the API: still one vote
    expect((await press('U0BOB', 'countersign.approve', id)).status).toBe(200);
    await svc.drainCallbacks();
    expect(String(calls('chat.postEphemeral')[0]?.args['text'])).toContain('already approved');
    const api = (who: string, pw: string) =>
      svc.app.request(`/access/v1/requests/${id}/decision`, {
        method: 'POST',
        headers: { Authorization: `Basic ${Buffer.from(`${who}:${pw}`).toString('base64')}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
    expect((await api('bob', 'bob-pw')).status).toBe(403);
    expect(await svc.store.votes(id)).toHaveLength(1);

    // carol through the API completes the quorum; the Slack message shows the outcome
    expect((await api('carol', 'carol-pw')).status).toBe(200);
    expect((await svc.store.get(id))?.status).toBe('approved');
    await svc.drainCallbacks();
    const last = calls('chat.update').at(-1)!;
    expect(textOf(last)).toContain('*Approved* by carol (via api)');
    expect(buttonsOf(last)).toEqual([]);
  });

  it("a partial approval in another channel updates the Slack message's progress, keeping the buttons", async () => {
    const id = await submit({ to: 'acct-991', amount: 250_000 });
    const res = await svc.app.request(`/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from('carol:carol-pw').toString('base64')}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(res.status).toBe(200);
    await svc.drainCallbacks();
    const update = calls('chat.update')[0]!;
    expect(textOf(update)).toContain('1 of 2 approvals (carol)');
    expect(buttonsOf(update).map((b) => b.action_id)).toEqual(['countersign.approve', 'countersign.deny', 'countersign.open']);
  });

  it('a press on a request decided elsewhere decides nothing and says so', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    expect((await press('U0CAROL', 'countersign.deny', id)).status).toBe(200);
    expect((await press('U0BOB', 'countersign.approve', id)).status).toBe(200);
    await svc.drainCallbacks();
    expect(await svc.store.get(id)).toMatchObject({ status: 'denied', resolvedBy: 'carol' });
    expect(String(calls('chat.postEphemeral')[0]?.args['text'])).toContain('already denied');
  });

  it('an expired request updates its Slack message', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    now = T0 + 2 * HOUR;
    await svc.sweep();
    await svc.drainCallbacks();
    expect(textOf(calls('chat.update')[0]!)).toContain('*Expired*');
    expect((await svc.store.get(id))?.status).toBe('expired');
  });
});

describe('reminders and escalations through the notification port', () => {
  it("a reminder posts again to the group channel and an escalation to the escalation group's channel; the decision then updates every message", async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const record = (await svc.store.get(id))!;
    await svc.notify({ kind: 'reminded', request: record, group: 'treasury' });
    await svc.notify({ kind: 'escalated', request: record, group: 'ops' });
    const posts = calls('chat.postMessage');
    expect(posts.map((p) => [p.args['channel'], String(p.args['text']).split(':')[0]])).toEqual([
      [CHANNEL, 'Approval needed'],
      [CHANNEL, 'Reminder'],
      ['C0OPS', 'Escalated'],
    ]);
    expect((await press('U0BOB', 'countersign.approve', id)).status).toBe(200);
    await svc.drainCallbacks();
    expect(calls('chat.update').map((u) => [u.args['channel'], u.args['ts']])).toEqual(
      posts.map((p) => [p.args['channel'], p.answer['ts']]),
    );
  });

  it('a reminder for a request that is no longer pending posts nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const before = (await svc.store.get(id))!;
    await press('U0CAROL', 'countersign.deny', id);
    await svc.notify({ kind: 'reminded', request: before, group: 'treasury' });
    expect(calls('chat.postMessage')).toHaveLength(1);
  });
});

describe('Slack message after a cancel', () => {
  it('a request the client cancels shows as cancelled by the requester, naming no decider, without buttons', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const res = await svc.app.request(`/access/v1/requests/${id}/cancel`, {
      method: 'POST',
      headers: { Authorization: 'Bearer client-token' },
    });
    expect(res.status).toBe(200);
    await svc.drainCallbacks();
    const update = calls('chat.update')[0]!;
    expect(textOf(update)).toContain('*Cancelled by the requester*\\n');
    expect(textOf(update)).not.toContain('(via');
    expect(buttonsOf(update)).toEqual([]);
  });
});

describe('Slack channel logs', () => {
  it('log lines name requests, Slack users and outcomes, but never the bot token, the signing secret or tool arguments', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'private-memo-5' });
    await press('U0STRANGER', 'countersign.approve', id);
    await press('U0BOB', 'countersign.approve', id, { secret: 'wrong' });
    await press('U0BOB', 'countersign.approve', id);
    await svc.drainCallbacks();
    const all = logLines.join('');
    expect(all).toContain(id);
    expect(all).toContain('Slack decision');
    for (const hidden of [BOT_TOKEN, SIGNING_SECRET, 'private-memo-5', 'acct-991']) expect(all).not.toContain(hidden);
  });
});
