// Scope: delegation and batch decisions through the approver inbox's HTTP surface in-process
// (app.request, injected clock): a delegation made on the delegations page, the delegate's queue
// and request page "for" the delegator, a forged on_behalf_of refused; a batch post deciding each
// request on its own with a per-request result.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
let svc: ApprovalService;

beforeEach(() => {
  now = T0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'dave', secret: 'dave-pw', groups: ['payroll'] },
    ],
    publicBaseUrl: ORIGIN,
    logger: pino({ level: 'silent' }),
    now: () => now,
  });
});
afterEach(() => svc.close());

async function submit(sub: string, memo: string): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': memo, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount: 50_000, to: 'acct-1', memo } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(now + 24 * HOUR).toISOString(),
      binding_digest: 'b'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const post = (path: string, cookie: string, fields: Array<[string, string]>) =>
  svc.app.request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, Cookie: cookie },
    body: new URLSearchParams(fields).toString(),
  });

async function signIn(id: string): Promise<{ cookie: string; csrf: string }> {
  const res = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN },
    body: new URLSearchParams({ id, password: `${id}-pw` }).toString(),
  });
  const cookie = (res.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  const html = await page('/approver', cookie);
  return { cookie, csrf: /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '' };
}

async function page(path: string, cookie: string): Promise<string> {
  const res = await svc.app.request(path, { headers: { Cookie: cookie } });
  expect(res.status).toBe(200);
  return res.text();
}

describe('delegation in the inbox', () => {
  it('a delegation made on the page lets a colleague outside the group see the request and decide it for the delegator, under their own name', async () => {
    const alice = await signIn('alice');
    const made = await post('/approver/delegations', alice.cookie, [
      ['csrf', alice.csrf],
      ['to', 'dave'],
      ['until', new Date(T0 + 48 * HOUR).toISOString()],
    ]);
    expect(made.headers.get('Location')).toBe('/approver/delegations?flash=delegated');
    expect(await page('/approver/delegations', alice.cookie)).toMatch(/data-testid="delegations-given"[\s\S]*dave/);

    const id = await submit('zoe', 'for-alice');
    const dave = await signIn('dave');
    expect(await page('/approver', dave.cookie)).toContain('memo=for-alice');
    const request = await page(`/approver/requests/${id}`, dave.cookie);
    expect(request).toContain('Your decision for alice');
    expect(request).toContain('name="on_behalf_of" value="alice"');

    const forged = await post(`/approver/requests/${id}/decision`, dave.cookie, [
      ['csrf', dave.csrf],
      ['decision', 'approve'],
      ['on_behalf_of', 'bob'],
    ]);
    expect(forged.headers.get('Location')).toContain('flash=forbidden');
    expect((await svc.store.get(id))?.status).toBe('pending');

    const decided = await post(`/approver/requests/${id}/decision`, dave.cookie, [
      ['csrf', dave.csrf],
      ['decision', 'approve'],
      ['on_behalf_of', 'alice'],
    ]);
    expect(decided.headers.get('Location')).toContain('flash=approved');
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'dave', onBehalfOf: 'alice', via: 'inbox' });
    expect(await page(`/approver/requests/${id}`, dave.cookie)).toContain('dave for alice');
  });

  it('after the delegation ends the colleague no longer sees the request', async () => {
    const alice = await signIn('alice');
    await post('/approver/delegations', alice.cookie, [
      ['csrf', alice.csrf],
      ['to', 'dave'],
      ['until', new Date(T0 + HOUR).toISOString()],
    ]);
    const id = await submit('zoe', 'ended');
    now = T0 + HOUR;
    const dave = await signIn('dave');
    expect(await page('/approver', dave.cookie)).not.toContain('memo=ended');
    expect((await svc.app.request(`/approver/requests/${id}`, { headers: { Cookie: dave.cookie } })).status).toBe(404);
  });
});

describe('batch decisions in the inbox', () => {
  it('the preflight offers only what the approver may decide; the post decides each on its own, and one that fails does not stop the others', async () => {
    const a = await submit('zoe', 'b-1');
    const own = await submit('bob', 'b-own');
    const b = await submit('zoe', 'b-2');
    const bob = await signIn('bob');
    const preflight = await page(`/approver/batch?ids=${a}&ids=${own}&ids=${b}`, bob.cookie);
    expect(preflight).toContain('Decide 2 of 3 selected requests');
    expect(preflight.match(/name="ids"/g)).toHaveLength(2);

    // a hand-made post may still name the own request: it is refused on its own
    const res = await post('/approver/batch', bob.cookie, [
      ['csrf', bob.csrf],
      ['ids', a],
      ['ids', own],
      ['ids', b],
      ['decision', 'deny'],
      ['comment', 'duplicate payments'],
    ]);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('Batch decision: 2 done, 1 not decided');
    expect((await svc.store.get(a))?.status).toBe('denied');
    expect((await svc.store.get(b))?.status).toBe('denied');
    expect((await svc.store.get(own))?.status).toBe('pending');
    for (const id of [a, b]) {
      expect((await svc.store.auditTrail(id)).filter((e) => e.event === 'denied')).toEqual([
        expect.objectContaining({ actor: 'bob', via: 'inbox', comment: 'duplicate payments' }),
      ]);
    }
  });

  it('a batch post without the session token decides nothing', async () => {
    const a = await submit('zoe', 'b-3');
    const bob = await signIn('bob');
    const res = await post('/approver/batch', bob.cookie, [
      ['csrf', 'wrong'],
      ['ids', a],
      ['decision', 'approve'],
    ]);
    expect(res.status).toBe(403);
    expect((await svc.store.get(a))?.status).toBe('pending');
  });

  it('a batch post that repeats the comment is a 400 page naming the field, and decides nothing', async () => {
    const a = await submit('zoe', 'b-4');
    const b = await submit('zoe', 'b-5');
    const bob = await signIn('bob');
    const res = await post('/approver/batch', bob.cookie, [
      ['csrf', bob.csrf],
      ['ids', a],
      ['ids', b],
      ['decision', 'deny'],
      ['comment', 'first'],
      ['comment', 'second'],
    ]);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('&quot;comment&quot; more than once');
    for (const id of [a, b]) {
      expect((await svc.store.get(id))?.status).toBe('pending');
      expect((await svc.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
    }
  });

  it('a batch post that repeats the decision is a 400 page, and decides nothing', async () => {
    const a = await submit('zoe', 'b-6');
    const bob = await signIn('bob');
    const res = await post('/approver/batch', bob.cookie, [
      ['csrf', bob.csrf],
      ['ids', a],
      ['decision', 'deny'],
      ['decision', 'approve'],
    ]);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('&quot;decision&quot; more than once');
    expect((await svc.store.get(a))?.status).toBe('pending');
  });
});
