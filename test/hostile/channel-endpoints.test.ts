// Scope: property-based hostile input (fast-check) against the notification channels' endpoints of
// the approval service in-process: Slack's interaction receiver (random bodies, content types and
// signature headers; random bodies correctly signed; a signed payload with a duplicate member name) and the emailed decision page (random
// tokens, GET and POST). Never a 5xx, every Slack refusal is problem+json, every link refusal an
// HTML page, and nothing is decided or sent to Slack.
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SLACK_APPROVE_ACTION } from '@countersign/approvals';
import { slackSignature } from '@countersign/approvals';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { startSlackStandIn, type SlackStandIn } from '../support/slack-stand-in.js';

/** Runs per property: enough variety to find a crash class, few enough for 2 shared cores. */
const RUNS = 60;
const SIGNING_SECRET = 'hostile-signing-secret';
let slack: SlackStandIn;
let svc: ApprovalService;
let requestId: string;

beforeAll(async () => {
  slack = await startSlackStandIn();
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [{ id: 'bob', secret: 'bob-pw', groups: ['treasury'] }],
    publicBaseUrl: 'http://localhost',
    logger: pino({ level: 'silent' }),
    slack: { botToken: 'xoxb-h', signingSecret: SIGNING_SECRET, apiUrl: slack.url, channels: { treasury: 'C0T' }, users: { U0BOB: 'bob' } },
    // port 9 (discard): no SMTP server; sending fails and is logged, which is all these properties need
    email: { smtpUrl: 'smtp://127.0.0.1:9', from: 'x@localhost', addresses: { bob: 'bob@localhost' }, linkKey: 'hostile-link-key' },
  });
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'h-1', Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount: 50_000 } },
      approver_group: 'treasury',
      reason: 'r',
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      binding_digest: 'e'.repeat(64),
      generation: 1,
    }),
  });
  requestId = ((await res.json()) as { id: string }).id;
  await svc.drainCallbacks();
});
afterAll(async () => {
  await svc?.drainCallbacks();
  svc?.close();
  await slack?.close();
});

const bodies = fc.oneof(
  fc.string({ maxLength: 1024 }),
  fc.json({ maxDepth: 4 }).map((j) => `payload=${encodeURIComponent(j)}`),
  fc.constantFrom('payload=%7B', 'payload=', 'payload=null', `payload=${encodeURIComponent('{"type":"block_actions","actions":[]}')}`),
);
const contentTypes = fc.option(
  fc.constantFrom('application/x-www-form-urlencoded', 'application/json', 'multipart/form-data', 'text/plain'),
  {
    nil: undefined,
  },
);
const untouched = async () => {
  expect((await svc.store.get(requestId))?.status).toBe('pending');
  expect(await svc.store.votes(requestId)).toEqual([]);
  expect(slack.calls.filter((c) => c.method !== 'chat.postMessage')).toEqual([]);
};

/** POST `body` to the Slack interaction endpoint, signed now with the test signing secret. */
async function signedSlackPost(body: string): Promise<Response> {
  const ts = String(Math.floor(Date.now() / 1000));
  return svc.app.request('/slack/interactions', {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': slackSignature(SIGNING_SECRET, ts, body),
    },
    body,
  });
}

describe('hostile input to the channel endpoints', () => {
  it('random bodies and signature headers to /slack/interactions: 401 problem+json, nothing decided', async () => {
    await fc.assert(
      fc.asyncProperty(
        bodies,
        contentTypes,
        fc.option(fc.string({ maxLength: 80 })),
        fc.option(fc.string({ maxLength: 20 })),
        async (body, type, sig, ts) => {
          const headers: Record<string, string> = {};
          if (type !== undefined) headers['content-type'] = type;
          if (sig !== null) headers['x-slack-signature'] = sig;
          if (ts !== null) headers['x-slack-request-timestamp'] = ts;
          const res = await svc.app.request('/slack/interactions', { method: 'POST', headers, body });
          expect(res.status).toBe(401);
          expect(res.headers.get('content-type')).toContain('application/problem+json');
          await untouched();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('random bodies correctly signed: never a 5xx, a refusal is problem+json, nothing decided', async () => {
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        const res = await signedSlackPost(body);
        expect([200, 400]).toContain(res.status);
        if (res.status === 400) expect(res.headers.get('content-type')).toContain('application/problem+json');
        await untouched();
      }),
      { numRuns: RUNS },
    );
  });

  it('a correctly signed Slack payload with a duplicate member name is 400 problem+json naming its path, and decides nothing', async () => {
    const payload = `{"type":"block_actions","user":{"id":"U0EVE","id":"U0BOB"},"actions":[{"action_id":"${SLACK_APPROVE_ACTION}","value":"${requestId}"}]}`;
    const body = `payload=${encodeURIComponent(payload)}`;
    const res = await signedSlackPost(body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(((await res.json()) as { detail: string }).detail).toContain('duplicate object key at $.user.id');
    await untouched();
  });

  it('random tokens on the email decision page, GET or POST: a 4xx HTML page, nothing decided', async () => {
    const tokens = fc
      .oneof(
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,3000}$/),
        fc.tuple(fc.base64String(), fc.base64String(), fc.base64String()).map((p) => p.join('.').replace(/[+/=]/g, '_') || 'x'),
      )
      // `.` and `..` are dot segments, not tokens: the URL resolves them to another page first
      .filter((t) => t !== '.' && t !== '..');
    await fc.assert(
      fc.asyncProperty(tokens, fc.constantFrom('GET', 'POST'), async (token, method) => {
        const res = await svc.app.request(`/approver/email/${token}`, {
          method,
          ...(method === 'POST'
            ? { headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://localhost' }, body: 'decision=approve' }
            : {}),
        });
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.headers.get('content-type')).toContain('text/html');
        await untouched();
      }),
      { numRuns: RUNS },
    );
  });
});
