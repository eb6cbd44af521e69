// Scope: delegation in the approval service over its HTTP API (app.request, injected clock): the
// delegate decides under their own name for the delegator (audit records both), separation of
// duties for both, one vote per person in either role, no chains, expiry and revocation.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
let svc: ApprovalService | undefined;

function makeService(): ApprovalService {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'dave', secret: 'dave-pw', groups: ['payroll'] },
      { id: 'erin', secret: 'erin-pw', groups: ['payroll'] },
    ],
    publicBaseUrl: 'https://approvals.example.test',
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: parseApprovalRules(
      JSON.stringify({
        quorum: [{ id: 'two-for-large', group: 'treasury', when: [{ field: 'arguments.amount', gt: 100_000 }], approvals: 2 }],
      }),
    ),
    fetch: (async () => new Response(null, { status: 204 })) as unknown as typeof fetch,
  });
  return svc;
}
afterEach(() => {
  svc?.close();
  svc = undefined;
  now = T0;
});

const auth = (who: string) => `Basic ${Buffer.from(`${who}:${who}-pw`).toString('base64')}`;

async function submit(s: ApprovalService, key: string, requester: string, amount = 50_000): Promise<string> {
  const res = await s.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: requester },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount, to: 'acct-1' } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(now + 24 * HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function delegate(
  s: ApprovalService,
  from: string,
  to: string,
  untilMs: number,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await s.app.request('/access/v1/delegations', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: auth(from) },
    body: JSON.stringify({ to, until: new Date(untilMs).toISOString() }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function decide(
  s: ApprovalService,
  id: string,
  who: string,
  decision: 'approve' | 'deny',
  onBehalfOf?: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await s.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: auth(who) },
    body: JSON.stringify({
      decision,
      ...(decision === 'deny' ? { comment: 'no' } : {}),
      ...(onBehalfOf ? { on_behalf_of: onBehalfOf } : {}),
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('delegation', () => {
  it('a delegate outside the group approves for the delegator: the request is approved, the audit shows the delegate for the delegator, the approval names the delegator', async () => {
    const s = makeService();
    expect((await delegate(s, 'alice', 'dave', T0 + 48 * HOUR)).status).toBe(201);
    const id = await submit(s, 'k1', 'zoe');
    expect((await decide(s, id, 'dave', 'approve')).status).toBe(403); // not in treasury in his own right
    const r = await decide(s, id, 'dave', 'approve', 'alice');
    expect(r).toMatchObject({ status: 200, body: { status: 'approved', approvals: ['alice'] } });
    expect((await s.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'dave', onBehalfOf: 'alice', via: 'api' });
    expect(await s.store.votes(id)).toEqual([expect.objectContaining({ approver: 'alice', castBy: 'dave' })]);
    expect((await s.store.get(id))?.approval?.approvers).toEqual(['alice']);
  });

  it('a delegated denial records both names', async () => {
    const s = makeService();
    await delegate(s, 'alice', 'dave', T0 + 48 * HOUR);
    const id = await submit(s, 'k2', 'zoe');
    expect((await decide(s, id, 'dave', 'deny', 'alice')).body).toMatchObject({ status: 'denied' });
    expect((await s.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'denied', actor: 'dave', onBehalfOf: 'alice', comment: 'no' });
  });

  it('separation of duties applies to both: neither the delegator nor the delegate may decide their own request', async () => {
    const s = makeService();
    await delegate(s, 'alice', 'dave', T0 + 48 * HOUR);
    const byDelegator = await submit(s, 'k3', 'alice');
    const byDelegate = await submit(s, 'k4', 'dave');
    for (const id of [byDelegator, byDelegate]) {
      const r = await decide(s, id, 'dave', 'approve', 'alice');
      expect(r.status).toBe(403);
      expect(r.body['detail']).toContain('own access request');
      expect((await s.store.get(id))?.status).toBe('pending');
    }
  });

  it('one vote per person in either role: a delegate who approved in their own right cannot approve again for the delegator, nor the delegator after the delegate voted for them', async () => {
    const s = makeService();
    await delegate(s, 'alice', 'bob', T0 + 48 * HOUR);
    const first = await submit(s, 'k5', 'zoe', 500_000);
    expect((await decide(s, first, 'bob', 'approve')).body).toMatchObject({ status: 'pending', approvals: ['bob'] });
    const again = await decide(s, first, 'bob', 'approve', 'alice');
    expect(again.status).toBe(403);
    expect(again.body['detail']).toContain('already approved');

    const second = await submit(s, 'k6', 'zoe', 500_000);
    expect((await decide(s, second, 'bob', 'approve', 'alice')).body).toMatchObject({ status: 'pending', approvals: ['alice'] });
    expect((await decide(s, second, 'bob', 'approve')).status).toBe(403);
    expect((await decide(s, second, 'alice', 'approve')).status).toBe(403);
    expect(await s.store.votes(second)).toHaveLength(1);
  });

  it('a delegation is not chained: alice → dave → erin lets erin decide for dave, never for alice', async () => {
    const s = makeService();
    await delegate(s, 'alice', 'dave', T0 + 48 * HOUR);
    await delegate(s, 'dave', 'erin', T0 + 48 * HOUR);
    const id = await submit(s, 'k7', 'zoe');
    const chained = await decide(s, id, 'erin', 'approve', 'alice');
    expect(chained.status).toBe(403);
    expect(chained.body['detail']).toContain('never chained');
    // for dave she may act, but dave is no treasury member: not-in-group
    expect((await decide(s, id, 'erin', 'approve', 'dave')).status).toBe(403);
    expect((await s.store.get(id))?.status).toBe('pending');
  });

  it('an expired or revoked delegation does nothing', async () => {
    const s = makeService();
    await delegate(s, 'alice', 'dave', T0 + 2 * HOUR);
    const made = await delegate(s, 'bob', 'erin', T0 + 48 * HOUR);
    const id = await submit(s, 'k8', 'zoe');
    const revoke = await s.app.request(`/access/v1/delegations/${String(made.body['id'])}/revoke`, {
      method: 'POST',
      headers: { Authorization: auth('bob') },
    });
    expect(revoke.status).toBe(200);
    expect((await decide(s, id, 'erin', 'approve', 'bob')).status).toBe(403);
    now = T0 + 2 * HOUR;
    expect((await decide(s, id, 'dave', 'approve', 'alice')).status).toBe(403);
    expect((await s.store.get(id))?.status).toBe('pending');
    const list = await s.app.request('/access/v1/delegations', { headers: { Authorization: auth('alice') } });
    expect(await list.json()).toEqual({ given: [], received: [] });
  });

  it('a delegation names another configured approver, ends in the future, within 90 days', async () => {
    const s = makeService();
    const refused = async (from: string, to: string, untilMs: number, detail: string) => {
      const r = await delegate(s, from, to, untilMs);
      expect(r.status).toBe(400);
      expect(r.body['detail']).toContain(detail);
    };
    await refused('alice', 'mallory', T0 + HOUR, 'configured approver');
    await refused('alice', 'ALICE', T0 + HOUR, 'themselves');
    await refused('alice', 'dave', T0 - HOUR, 'in the future');
    await refused('alice', 'dave', T0 + 91 * 24 * HOUR, '90 days');
    const bad = await s.app.request('/access/v1/delegations', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: auth('alice') },
      body: JSON.stringify({ to: 'dave', until: 'next tuesday' }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: string }).detail).toMatch(/^until: /);
    const listed = await s.app.request('/access/v1/delegations', { headers: { Authorization: auth('dave') } });
    expect(await listed.json()).toEqual({ given: [], received: [] });
  });
  // Every store call is awaited, so two decisions at once interleave: both read "bob has not voted"
  // before either writes. The store's vote is the one place that may say so (in its transaction).
  it('a person approving in their own right and for their delegator at the same time is counted once', async () => {
    const s = makeService();
    expect((await delegate(s, 'alice', 'bob', T0 + 48 * HOUR)).status).toBe(201);
    const id = await submit(s, 'k1', 'zoe', 500_000); // needs two approvals

    // both started before either is awaited
    const [forAlice, asBob] = await Promise.all([decide(s, id, 'bob', 'approve', 'alice'), decide(s, id, 'bob', 'approve')]);

    expect([forAlice.status, asBob.status].sort()).toEqual([200, 403]);
    expect((forAlice.status === 403 ? forAlice : asBob).body['detail']).toMatch(/already approved/i);
    expect(await s.store.votes(id)).toHaveLength(1);
    expect((await s.store.get(id))?.status).toBe('pending');
  });
});
