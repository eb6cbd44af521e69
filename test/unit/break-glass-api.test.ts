// Scope: break-glass in the approval service over its HTTP API (in-process Hono app, SQLite in
// memory, a real SMTP server for the skipped approvers' notices): the rules file's breakGlass option
// validated at load; a requester in the role approves their own request with a reason, settling a
// quorum alone but never a step-up rule; the approval material, the decision record and the audit
// trail say break-glass; the 400 / 403 / 429 refusals; sessions reused, ended and limited per day;
// the review queue and its review by someone else.
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, parseApprovalRules, type ApprovalRules, type ApprovalService } from '@countersign/approvals';
import { startSmtpSink, type SmtpSink } from '../support/smtp-sink.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
let now = T0;
let smtp: SmtpSink;
let svc: ApprovalService;

const RULES: ApprovalRules = parseApprovalRules(
  JSON.stringify({
    quorum: [
      { id: 'four-eyes', group: 'treasury', tool: 'wire_transfer', when: [{ field: 'arguments.amount', gt: 100_000 }], approvals: 2 },
    ],
    stepUp: [{ id: 'passkey-huge', group: 'treasury', when: [{ field: 'arguments.amount', gt: 1_000_000 }] }],
    breakGlass: { approvers: ['alice'], reviewerGroups: ['audit'] },
    unfollowed: { action: 'off' },
  }),
);

beforeAll(async () => {
  smtp = await startSmtpSink();
});
afterAll(async () => {
  await smtp?.close();
});
beforeEach(() => {
  now = T0;
  smtp.messages.length = 0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
      { id: 'erin', secret: 'erin-pw', groups: ['audit'] },
      { id: 'dave', secret: 'dave-pw', groups: ['ops'] },
    ],
    publicBaseUrl: 'http://approvals.test',
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: RULES,
    email: {
      smtpUrl: smtp.url,
      from: 'Countersign <approvals@example.test>',
      addresses: { alice: 'alice@example.test', bob: 'bob@example.test', carol: 'carol@example.test', dave: 'dave@example.test' },
      linkKey: 'email-link-key-for-tests-0123456789abcdefghij',
    },
  });
});
afterEach(async () => {
  await svc.drainCallbacks();
  svc.close();
});

let keyCounter = 0;
async function submit(amount: number, sub = 'alice'): Promise<string> {
  keyCounter += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `bg-${keyCounter}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount } },
      approver_group: 'treasury',
      reason: 'Transfers over 25,000 need treasury approval.',
      expires_at: new Date(now + 2 * HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  await svc.drainCallbacks();
  smtp.messages.length = 0;
  return id;
}

const basic = (id: string) => `Basic ${Buffer.from(`${id}:${id}-pw`).toString('base64')}`;
const api = (path: string, as: string, init: { method?: string; body?: unknown } = {}) =>
  svc.app.request(`/access/v1${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { Authorization: basic(as), ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
const decide = (id: string, as: string, body: Record<string, unknown>) => api(`/requests/${id}/decision`, as, { body });
const status = async (id: string) =>
  (await (await svc.app.request(`/access/v1/requests/${id}`, { headers: { Authorization: 'Bearer client-token' } })).json()) as {
    status: string;
    result?: { approval: Record<string, unknown> };
  };
const typeOf = async (res: Response) => ((await res.json()) as { type: string }).type;

describe('break-glass rules', () => {
  it('a breakGlass option naming nobody, or with an unknown key or a too-short window, fails the load with its path', () => {
    expect(() => parseApprovalRules(JSON.stringify({ breakGlass: {} }))).toThrow(
      /breakGlass: breakGlass needs at least one entry in approvers or groups/,
    );
    expect(() => parseApprovalRules(JSON.stringify({ breakGlass: { groups: ['treasury'], windowMs: 10 } }))).toThrow(
      /breakGlass\.windowMs/,
    );
    expect(() => parseApprovalRules(JSON.stringify({ breakGlass: { groups: ['treasury'], maxPerDy: 3 } }))).toThrow(
      /breakGlass: Unrecognized key/,
    );
    const rules = parseApprovalRules(JSON.stringify({ breakGlass: { groups: ['treasury'] } }));
    expect(rules.breakGlass).toMatchObject({ windowMs: 15 * MIN, maxPerDay: 2, reviewWithinMs: 24 * HOUR });
  });
});

describe('break-glass approval', () => {
  it('a requester in the role approves their own request with a reason: approved alone, marked in the approval, the decision record and the audit trail', async () => {
    const id = await submit(150_000); // a quorum of two
    expect(await typeOf(await decide(id, 'alice', { decision: 'approve' }))).toBe('urn:countersign:problem:forbidden');
    const res = await decide(id, 'alice', { decision: 'approve', break_glass: { reason: 'Payroll run blocked, approvers offline' } });
    expect(res.status).toBe(200);
    const s = await status(id);
    expect(s.status).toBe('approved');
    expect(s.result?.approval['break_glass']).toEqual({
      by: 'alice',
      reason: 'Payroll run blocked, approvers offline',
      at: new Date(T0).toISOString(),
    });
    const audit = await svc.store.auditTrail(id);
    expect(audit.find((e) => e.event === 'approved')).toMatchObject({ actor: 'alice', rule: 'break-glass' });
    expect(audit.find((e) => e.event === 'break-glass')).toMatchObject({
      actor: 'alice',
      comment: 'Payroll run blocked, approvers offline',
      via: 'api',
    });
    const record = (await (
      await svc.app.request(`/access/v1/requests/${id}/decisions`, { headers: { Authorization: 'Bearer client-token' } })
    ).json()) as Record<string, unknown>;
    expect(record['break_glass']).toMatchObject({ by: 'alice' });
  });

  it('the approvers it skipped get an e-mail notice naming who broke glass and why', async () => {
    const id = await submit(50_000);
    await decide(id, 'alice', { decision: 'approve', break_glass: { reason: 'Supplier cut-off at noon' } });
    await svc.drainCallbacks();
    expect(smtp.messages.map((m) => m.to[0]).sort()).toEqual(['bob@example.test', 'carol@example.test']);
    const bob = smtp.messages.find((m) => m.to.includes('bob@example.test'))!;
    expect(bob.subject).toBe('Break-glass: alice approved their own wire_transfer request');
    expect(bob.text).toContain('Their reason: Supplier cut-off at noon');
    expect(bob.text).toContain('http://approvals.test/approver/reviews');
    expect((await svc.store.breakGlass.use(id))?.skipped.sort()).toEqual(['bob', 'carol']);
  });

  it('without a reason is 400, outside the role 403, on a request not your own 400, and a step-up rule still needs the passkey', async () => {
    const own = await submit(50_000);
    const blank = await decide(own, 'alice', { decision: 'approve', break_glass: { reason: '   ' } });
    expect(blank.status).toBe(400);
    expect(await typeOf(blank)).toBe('urn:countersign:problem:break-glass-reason-required');
    const bobs = await submit(50_000, 'bob');
    const notInRole = await decide(bobs, 'bob', { decision: 'approve', break_glass: { reason: 'urgent' } });
    expect(notInRole.status).toBe(403);
    expect(await typeOf(notInRole)).toBe('urn:countersign:problem:not-break-glass');
    expect((await decide(bobs, 'alice', { decision: 'approve', break_glass: { reason: 'urgent' } })).status).toBe(400);
    const huge = await submit(2_000_000);
    const stepUp = await decide(huge, 'alice', { decision: 'approve', break_glass: { reason: 'urgent' } });
    expect(stepUp.status).toBe(403);
    expect(((await stepUp.json()) as { detail: string }).detail).toContain('passkey');
    expect((await status(huge)).status).toBe('pending');
    expect(await svc.store.breakGlass.active('alice', now)).toBeUndefined();
  });

  it('one session covers several approvals within its window; the third session in a day is 429 with Retry-After', async () => {
    const a = await submit(50_000);
    const b = await submit(50_000);
    expect((await decide(a, 'alice', { decision: 'approve', break_glass: { reason: 'outage 1' } })).status).toBe(200);
    now += 5 * MIN;
    expect((await decide(b, 'alice', { decision: 'approve', break_glass: { reason: 'outage 1, second payment' } })).status).toBe(200);
    expect((await svc.store.breakGlass.use(a))?.sessionId).toBe((await svc.store.breakGlass.use(b))?.sessionId);
    now += 15 * MIN; // the first session is over
    const c = await submit(50_000);
    expect((await decide(c, 'alice', { decision: 'approve', break_glass: { reason: 'outage 2' } })).status).toBe(200);
    expect((await api('/break-glass/session', 'alice', { method: 'DELETE' })).status).toBe(200);
    now += MIN;
    const d = await submit(50_000);
    const third = await decide(d, 'alice', { decision: 'approve', break_glass: { reason: 'outage 3' } });
    expect(third.status).toBe(429);
    expect(await typeOf(third)).toBe('urn:countersign:problem:break-glass-limit');
    expect(Number(third.headers.get('Retry-After'))).toBe((24 * HOUR - 21 * MIN) / 1000);
    expect((await status(d)).status).toBe('pending');
  });
});

describe('break-glass review', () => {
  it('a reason or a review comment of characters that show nothing (zero-width spaces, word joiners, invisible separators) is refused like a blank one', async () => {
    const own = await submit(50_000);
    for (const reason of ['\u200b\u200b', '\u2063\u200b\u2060', '\u00ad\u3164']) {
      const res = await decide(own, 'alice', { decision: 'approve', break_glass: { reason } });
      expect(res.status).toBe(400);
      expect(await typeOf(res)).toBe('urn:countersign:problem:break-glass-reason-required');
    }
    expect((await status(own)).status).toBe('pending');
    await decide(own, 'alice', { decision: 'approve', break_glass: { reason: 'Supplier cut-off' } });
    const invisible = await api(`/break-glass/reviews/${own}`, 'erin', { body: { comment: '\u200b' } });
    expect(invisible.status).toBe(400);
    expect((await svc.store.breakGlass.use(own))?.reviewedAtMs).toBeNull();
  });

  it("a request is one's own for break-glass only when its subject is exactly the approver: sub 'Alice' is not alice's", async () => {
    const other = await submit(50_000, 'Alice');
    const res = await decide(other, 'alice', { decision: 'approve', break_glass: { reason: 'urgent' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { detail: string }).detail).toContain('only for approving your own request');
    expect((await status(other)).status).toBe('pending');
    expect(await svc.store.breakGlass.active('alice', now)).toBeUndefined();
  });

  it('is listed as needing review, overdue after reviewWithinMs, and reviewed once by a reviewer who is not the one who broke glass', async () => {
    const id = await submit(50_000);
    await decide(id, 'alice', { decision: 'approve', break_glass: { reason: 'Supplier cut-off' } });
    const listed = (await (await api('/break-glass/reviews', 'erin')).json()) as { items: Array<Record<string, unknown>>; overdue: number };
    expect(listed.items.map((i) => i['request_id'])).toEqual([id]);
    expect(listed.items[0]).toMatchObject({ by: 'alice', reason: 'Supplier cut-off', overdue: false, review: null });
    expect(((await (await api('/break-glass/reviews', 'dave')).json()) as { items: unknown[] }).items).toEqual([]);
    now += 25 * HOUR;
    expect(((await (await api('/break-glass/reviews', 'erin')).json()) as { overdue: number }).overdue).toBe(1);
    expect(await svc.store.breakGlass.counts(now)).toEqual({ unreviewed: 1, overdue: 1 });

    expect((await api(`/break-glass/reviews/${id}`, 'alice', { body: { comment: 'fine' } })).status).toBe(403);
    expect((await api(`/break-glass/reviews/${id}`, 'bob', { body: { comment: 'fine' } })).status).toBe(403); // not a reviewer: reviewerGroups is audit
    expect((await api(`/break-glass/reviews/${id}`, 'erin', { body: { comment: ' ' } })).status).toBe(400);
    const ok = await api(`/break-glass/reviews/${id}`, 'erin', { body: { comment: 'Checked the supplier invoice; legitimate.' } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { review: unknown }).review).toMatchObject({
      by: 'erin',
      comment: 'Checked the supplier invoice; legitimate.',
    });
    expect((await api(`/break-glass/reviews/${id}`, 'erin', { body: { comment: 'again' } })).status).toBe(409);
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'break-glass-reviewed', actor: 'erin' });
    expect(((await (await api('/break-glass/reviews', 'erin')).json()) as { items: unknown[] }).items).toEqual([]);
  });
});
