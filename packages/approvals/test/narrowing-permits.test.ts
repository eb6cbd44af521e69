// Scope: counter-proposals that narrow, in the reference Access Request Service in-process (app.request, injected clock):
// the narrow decision's checks and effect, the permit a proposal records, and the permit's single use at submission.
import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StatusBodySchema } from '@countersign/arap';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const BASE = 'https://approvals.example.test';
const CLIENT_TOKEN = 'client-token-for-tests';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
const MINUTE = 60_000;

let now = T0;
let svc: ApprovalService;

const bearer = { Authorization: `Bearer ${CLIENT_TOKEN}` };
const basic = (id: string) => ({ Authorization: `Basic ${Buffer.from(`${id}:${id}-pw`).toString('base64')}` });

function body(args: Record<string, unknown>, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    subject: { iss: 'https://idp.example.test', sub: 'carol' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 'wire_transfer' },
    context: { arguments: args, narrowable: { amount: 'max' } },
    approver_group: 'treasury',
    reason: 'Transfers over $25,000 require treasury approval.',
    expires_at: new Date(now + HOUR).toISOString(),
    binding_digest: 'a'.repeat(64),
    generation: 1,
    ...over,
  };
}

let keys = 0;
async function submit(b: Record<string, unknown>): Promise<{ id: string; status: string }> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, ...bearer },
    body: JSON.stringify(b),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; status: string };
}

function decision(id: string, who: string, payload: Record<string, unknown>): Promise<Response> {
  return Promise.resolve(
    svc.app.request(`/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic(who) },
      body: JSON.stringify(payload),
    }),
  );
}

const narrow = (id: string, who: string, proposed: Record<string, unknown>) =>
  decision(id, who, { decision: 'narrow', proposed_arguments: proposed });

async function status(id: string) {
  const res = await svc.app.request(`/access/v1/requests/${id}`, { headers: bearer });
  return StatusBodySchema.parse(await res.json());
}

async function detail(id: string, who = 'alice'): Promise<Record<string, unknown>> {
  return (await (await svc.app.request(`/access/v1/approvals/${id}`, { headers: basic(who) })).json()) as Record<string, unknown>;
}

const transfer = { amount: 50_000, to: 'acct-991' };

beforeEach(() => {
  now = T0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: 'callback-secret-for-tests',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['ops'] },
      { id: 'dave', secret: 'dave-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: BASE,
    logger: pino({ level: 'silent' }),
    now: () => now,
  });
});

afterEach(() => svc.close());

describe('a counter-proposal', () => {
  it('denies the request with the narrower call as its counter_proposal, valid 15 minutes, and audits it narrowed', async () => {
    const { id } = await submit(body(transfer));
    const res = await narrow(id, 'alice', { amount: 20_000, to: 'acct-991' });
    expect(res.status).toBe(200);
    const s = await status(id);
    expect(s.status).toBe('denied');
    expect(s.counter_proposal).toEqual({
      tool: 'wire_transfer',
      arguments: { amount: 20_000, to: 'acct-991' },
      expires_at: new Date(T0 + 15 * MINUTE).toISOString(),
    });
    const d = await detail(id);
    expect(d['counter_proposal']).toMatchObject({ proposed_by: 'alice', used_by_request: null });
    const events = (d['audit'] as Array<{ event: string; actor: string; rule: string | null }>).map((e) => [e.event, e.actor, e.rule]);
    expect(events).toEqual([
      ['submitted', 'carol', null],
      ['denied', 'alice', 'counter-proposal'],
      ['narrowed', 'alice', 'counter-proposal'],
    ]);
  });

  it('that widens the amount is a 400 naming the field and why, never the value, and changes nothing', async () => {
    const { id } = await submit(body(transfer));
    const res = await narrow(id, 'alice', { amount: 60_000, to: 'acct-991' });
    expect(res.status).toBe(400);
    const p = (await res.json()) as { type: string; detail: string };
    expect(p.type).toBe('urn:countersign:problem:invalid-narrowing');
    expect(p.detail).toContain('"amount" may only be lowered');
    expect(p.detail).not.toContain('60000');
    expect((await status(id)).status).toBe('pending');
  });

  it('that changes a field the policy does not mark narrowable is a 400 naming it', async () => {
    const { id } = await submit(body(transfer));
    const p = (await (await narrow(id, 'alice', { amount: 20_000, to: 'acct-123' })).json()) as { detail: string };
    expect(p.detail).toContain('"to" is not narrowable');
  });

  it('on a request no policy marks narrowable is a 409, and on a decided one a 409', async () => {
    const plain = await submit(body(transfer, { context: { arguments: transfer } }));
    const res = await narrow(plain.id, 'alice', { amount: 20_000, to: 'acct-991' });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { type: string }).type).toBe('urn:countersign:problem:not-narrowable');
    const { id } = await submit(body(transfer));
    expect((await decision(id, 'alice', { decision: 'deny' })).status).toBe(200);
    const again = await narrow(id, 'alice', { amount: 20_000, to: 'acct-991' });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { type: string }).type).toBe('urn:countersign:problem:not-pending');
  });

  it('of a field hidden from approvers is a 400: the service holds only its digest', async () => {
    const masked = `sha256:${'b'.repeat(64)}`;
    const { id } = await submit(
      body(
        { amount: 50_000, to: masked },
        { context: { arguments: { amount: 50_000, to: masked }, redacted: ['/to'], narrowable: { to: 'subpath' } } },
      ),
    );
    const p = (await (await narrow(id, 'alice', { amount: 50_000, to: `${masked}/x` })).json()) as { detail: string };
    expect(p.detail).toContain('"to" is hidden from approvers');
  });

  it('by an approver outside the group is refused 403, and proposed_arguments only goes with narrow', async () => {
    const { id } = await submit(body(transfer));
    expect((await narrow(id, 'bob', { amount: 20_000, to: 'acct-991' })).status).toBe(403);
    expect((await decision(id, 'alice', { decision: 'approve', proposed_arguments: transfer })).status).toBe(400);
    expect((await decision(id, 'alice', { decision: 'narrow' })).status).toBe(400);
    expect((await status(id)).status).toBe('pending');
  });
});

describe("a counter-proposal's permit", () => {
  it('approves the narrower call by the same principal at submission, once, naming the proposer', async () => {
    const { id } = await submit(body(transfer));
    await narrow(id, 'alice', { amount: 20_000, to: 'acct-991' });
    now += 5 * MINUTE;
    const narrower = await submit(body({ amount: 20_000, to: 'acct-991' }));
    expect(narrower.status).toBe('approved');
    const s = await status(narrower.id);
    expect(s.result?.approval.approvers).toEqual(['alice']);
    const d = await detail(narrower.id);
    expect(d['permitted_by']).toEqual({ request_id: id, approver: 'alice' });
    expect((d['audit'] as Array<{ event: string }>).map((e) => e.event)).toEqual(['submitted', 'permit-used', 'approved']);
    expect(((await detail(id))['counter_proposal'] as { used_by_request: string }).used_by_request).toBe(narrower.id);

    const second = await submit(body({ amount: 20_000, to: 'acct-991' }));
    expect(second.status).toBe('pending');
  });

  it('does nothing once expired, for another principal, or for other arguments', async () => {
    const { id } = await submit(body(transfer));
    await narrow(id, 'alice', { amount: 20_000, to: 'acct-991' });
    expect(
      (await submit(body({ amount: 20_000, to: 'acct-991' }, { subject: { iss: 'https://idp.example.test', sub: 'erin' } }))).status,
    ).toBe('pending');
    expect((await submit(body({ amount: 19_000, to: 'acct-991' }))).status).toBe('pending');
    now += 15 * MINUTE;
    expect((await submit(body({ amount: 20_000, to: 'acct-991' }))).status).toBe('pending');
  });

  it('never bypasses a quorum rule that applies to the new request: it stays pending and the permit unused', async () => {
    const big = { amount: 150_000, to: 'acct-991' };
    const { id } = await submit(body(big));
    await narrow(id, 'alice', { amount: 120_000, to: 'acct-991' });
    const narrower = await submit(body({ amount: 120_000, to: 'acct-991' }));
    expect(narrower.status).toBe('pending');
    expect(((await detail(id))['counter_proposal'] as { used_by_request: string | null }).used_by_request).toBeNull();
  });
});

describe("a counter-proposal's permit on a call with a hidden field", () => {
  // how the gate masks a value (packages/arap/src/redaction.ts): sha256 of its JCS form (a string's JCS is its JSON)
  const digestOf = (value: string) => `sha256:${createHash('sha256').update(JSON.stringify(value), 'utf8').digest('hex')}`;
  const key = 'REALKEY-7f3a';
  const hiddenKey = (args: Record<string, unknown>) => ({
    context: { arguments: args, redacted: ['/api_key'], narrowable: { amount: 'max' } },
  });
  const visibleKey = (args: Record<string, unknown>) => ({ context: { arguments: args, narrowable: { amount: 'max' } } });

  async function narrowHidden(): Promise<string> {
    const args = { amount: 50_000, to: 'acct-991', api_key: digestOf(key) };
    const { id } = await submit(body(args, hiddenKey(args)));
    expect((await narrow(id, 'alice', { ...args, amount: 20_000 })).status).toBe(200);
    return id;
  }

  it('is not consumed by a call whose field is the literal digest string, shown rather than hidden: that call is an ordinary pending request', async () => {
    const id = await narrowHidden();
    const forged = { amount: 20_000, to: 'acct-991', api_key: digestOf(key) };
    expect((await submit(body(forged, visibleKey(forged)))).status).toBe('pending');
    expect(((await detail(id))['counter_proposal'] as { used_by_request: string | null }).used_by_request).toBeNull();
  });

  it('approves the narrowed call with the same real value, whether its rule hides the field too or shows it', async () => {
    await narrowHidden();
    const hidden = { amount: 20_000, to: 'acct-991', api_key: digestOf(key) };
    expect((await submit(body(hidden, hiddenKey(hidden)))).status).toBe('approved');
    const id = await narrowHidden();
    const shown = { amount: 20_000, to: 'acct-991', api_key: key };
    const honest = await submit(body(shown, visibleKey(shown)));
    expect(honest.status).toBe('approved');
    expect(((await detail(id))['counter_proposal'] as { used_by_request: string }).used_by_request).toBe(honest.id);
  });

  it('is not consumed by the narrowed call with another real value in the field, shown or hidden', async () => {
    await narrowHidden();
    const shown = { amount: 20_000, to: 'acct-991', api_key: 'OTHERKEY' };
    expect((await submit(body(shown, visibleKey(shown)))).status).toBe('pending');
    const hidden = { amount: 20_000, to: 'acct-991', api_key: digestOf('OTHERKEY') };
    expect((await submit(body(hidden, hiddenKey(hidden)))).status).toBe('pending');
  });

  it('proposed on a call that showed the field, approves the narrowed call whose rule hides it only when its digest is of the same value', async () => {
    const args = { amount: 50_000, to: 'acct-991', api_key: key };
    const { id } = await submit(body(args, visibleKey(args)));
    await narrow(id, 'alice', { ...args, amount: 20_000 });
    const other = { amount: 20_000, to: 'acct-991', api_key: digestOf('OTHERKEY') };
    expect((await submit(body(other, hiddenKey(other)))).status).toBe('pending');
    const same = { amount: 20_000, to: 'acct-991', api_key: digestOf(key) };
    expect((await submit(body(same, hiddenKey(same)))).status).toBe('approved');
  });

  it('is not consumed by a call hiding the field at another depth, whose real value the service cannot compare', async () => {
    const card = { number: '4111111111111111', exp: '12/29' };
    const args = { amount: 50_000, to: 'acct-991', card: { number: digestOf(card.number), exp: card.exp } };
    const { id } = await submit(body(args, { context: { arguments: args, redacted: ['/card/number'], narrowable: { amount: 'max' } } }));
    await narrow(id, 'alice', { ...args, amount: 20_000 });
    const whole = `sha256:${createHash('sha256').update('{"exp":"12/29","number":"4111111111111111"}', 'utf8').digest('hex')}`;
    const narrower = { amount: 20_000, to: 'acct-991', card: whole };
    expect(
      (await submit(body(narrower, { context: { arguments: narrower, redacted: ['/card'], narrowable: { amount: 'max' } } }))).status,
    ).toBe('pending');
  });
});
