// Scope: the approval service's deciders in-process (app.request, injected clock): M-of-N quorum
// over the API, supervising-agent scope, the risk engine's scheduled pass and rules-file reloads,
// and migrating a store file written before quorums existed.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SignJWT } from 'jose';
import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_APPROVAL_RULES, parseApprovalRules } from '../src/deciders/approval-rules.js';
import { ITSM_DECISION_ISSUER } from '../src/deciders/itsm-webhook.js';
import { createApprovalService, type ApprovalService, type ApprovalServiceOptions } from '../src/service.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
let svc: ApprovalService | undefined;
const callbacks: string[] = [];

function makeService(extra: Partial<ApprovalServiceOptions> = {}): ApprovalService {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
      { id: 'dave', secret: 'dave-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: 'https://approvals.example.test',
    logger: pino({ level: 'silent' }),
    now: () => now,
    fetch: (async (_url: string | URL | Request, init?: RequestInit) => {
      callbacks.push(String(init?.body));
      return new Response(null, { status: 204 });
    }) as typeof fetch,
    ...extra,
  });
  return svc;
}
afterEach(() => {
  svc?.close();
  svc = undefined;
  now = T0;
  callbacks.length = 0;
});

/** A logger whose JSON lines land in `lines`. */
function capturingLogger(lines: string[]): Logger {
  return pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  );
}

async function submit(
  s: ApprovalService,
  args: Record<string, unknown>,
  key: string,
  sub = 'erin',
  act?: Array<{ sub: string }>,
): Promise<string> {
  const res = await s.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub, ...(act !== undefined ? { act } : {}) },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
      callback_url: 'https://mcp.example.test/callbacks/arap',
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const basic = (id: string) => `Basic ${Buffer.from(`${id}:${id}-pw`).toString('base64')}`;
async function decide(
  s: ApprovalService,
  id: string,
  authorization: string,
  decision: 'approve' | 'deny',
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await s.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: authorization },
    body: JSON.stringify({ decision }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('M-of-N over the API', () => {
  it('a request needing two approvals stays pending after the first, refuses the same approver twice, and is approved by the second distinct approver', async () => {
    const s = makeService();
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    const first = await decide(s, id, basic('alice'), 'approve');
    expect(first).toMatchObject({ status: 200, body: { status: 'pending', required_approvals: 2, approvals: ['alice'] } });
    await s.drainCallbacks();
    expect(callbacks).toEqual([]); // a partial approval changes no status, so no callback
    const twice = await decide(s, id, basic('alice'), 'approve');
    expect(twice).toMatchObject({
      status: 403,
      body: { detail: 'This approver already approved the request; another approver must complete it.' },
    });
    const status = await s.app.request(`/access/v1/requests/${id}`, { headers: { Authorization: 'Bearer client-token' } });
    expect(await status.json()).toMatchObject({ status: 'pending' });
    const second = await decide(s, id, basic('carol'), 'approve');
    expect(second.body).toMatchObject({
      status: 'approved',
      approvals: ['alice', 'carol'],
      result: { approval: { approvers: ['alice', 'carol'] } },
    });
    expect((await s.store.auditTrail(id)).map((e) => [e.event, e.actor])).toEqual([
      ['submitted', 'erin'],
      ['endorsed', 'alice'],
      ['approved', 'carol'],
    ]);
  });

  it('one denial denies a request that had a partial approval', async () => {
    const s = makeService();
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    await decide(s, id, basic('alice'), 'approve');
    expect((await decide(s, id, basic('dave'), 'deny')).body).toMatchObject({ status: 'denied' });
  });

  it('an approver who endorsed a request may still deny it, and that denial ends it; only a second approval from them is refused', async () => {
    const s = makeService();
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    expect((await decide(s, id, basic('alice'), 'approve')).body).toMatchObject({ status: 'pending', approvals: ['alice'] });
    expect((await decide(s, id, basic('alice'), 'approve')).status).toBe(403);
    expect(await decide(s, id, basic('alice'), 'deny')).toMatchObject({ status: 200, body: { status: 'denied' } });
    expect((await decide(s, id, basic('carol'), 'approve')).status).toBe(409);
    expect((await s.store.auditTrail(id)).map((e) => [e.event, e.actor])).toEqual([
      ['submitted', 'erin'],
      ['endorsed', 'alice'],
      ['denied', 'alice'],
    ]);
  });

  it('the pending list hides requests the caller already approved and shows approvals so far', async () => {
    const s = makeService();
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    await decide(s, id, basic('alice'), 'approve');
    const list = async (who: string) =>
      (
        (await (await s.app.request('/access/v1/approvals/pending', { headers: { Authorization: basic(who) } })).json()) as {
          items: Array<Record<string, unknown>>;
        }
      ).items;
    expect(await list('alice')).toEqual([]);
    expect(await list('carol')).toMatchObject([{ id, approvals: ['alice'], required_approvals: 2 }]);
  });
});

describe('supervising agent scope', () => {
  it('an agent scoped to another tool sees nothing and may not decide; one allowed only to deny cannot approve', async () => {
    const s = makeService({
      agents: [
        { id: 'elsewhere', secret: 'agent-a', tools: ['other_tool'] },
        { id: 'denier', secret: 'agent-b', tools: ['wire_transfer'], decisions: ['deny'] },
      ],
    });
    const id = await submit(s, { amount: 50_000, to: 'acct-1' }, 'k');
    const seen = await s.app.request('/access/v1/approvals/pending', { headers: { Authorization: 'Bearer agent-a' } });
    expect(await seen.json()).toEqual({ items: [], total: 0, next_cursor: null });
    expect(await decide(s, id, 'Bearer agent-a', 'approve')).toMatchObject({
      status: 403,
      body: { detail: "This credential may not decide requests for this request's tool." },
    });
    expect(await decide(s, id, 'Bearer agent-b', 'approve')).toMatchObject({
      status: 403,
      body: { detail: 'This credential may not make this decision.' },
    });
    expect(await decide(s, id, 'Bearer agent-b', 'deny')).toMatchObject({ status: 200, body: { status: 'denied' } });
    expect((await s.store.auditTrail(id)).at(-1)).toMatchObject({ actor: 'agent:denier', via: 'agent' });
  });
});

describe('risk engine schedule', () => {
  it('a rule on pendingMs decides on the first scheduled pass after it holds, not before', async () => {
    const s = makeService({
      rules: {
        quorum: [],
        riskIntervalMs: 60_000,
        risk: [
          {
            id: 'stale-small',
            when: [
              { field: 'pendingMs', gte: 600_000 },
              { field: 'arguments.amount', lt: 60_000 },
            ],
            decision: 'approve',
          },
        ],
      },
    });
    const id = await submit(s, { amount: 50_000, to: 'acct-1' }, 'k');
    await s.sweep();
    expect((await s.store.get(id))?.status).toBe('pending');
    now = T0 + 600_000;
    await s.sweep();
    expect(await s.store.get(id)).toMatchObject({ status: 'approved', resolvedBy: 'risk-engine' });
    expect((await s.store.auditTrail(id)).at(-1)).toMatchObject({
      event: 'approved',
      via: 'risk-engine',
      rule: 'stale-small',
      comment: 'risk rule stale-small',
    });
  });

  it('an invalid edit of the rules file is logged and the previous rules stay in force', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rules-')), 'approval-rules.json');
    writeFileSync(
      file,
      JSON.stringify({
        riskIntervalMs: 1000,
        risk: [{ id: 'deny-acct-9', when: [{ field: 'arguments.to', eq: 'acct-9' }], decision: 'deny' }],
      }),
    );
    const s = makeService({ rulesFile: file });
    writeFileSync(file, '{"risk": [ broken');
    now = T0 + 5000;
    await s.sweep();
    expect(s.rules().risk.map((r) => r.id)).toEqual(['deny-acct-9']);
    const id = await submit(s, { amount: 50_000, to: 'acct-9' }, 'k');
    expect((await s.store.get(id))?.status).toBe('denied');
  });

  it('an invalid rules file stops start-up with the problem named', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rules-')), 'approval-rules.json');
    writeFileSync(file, JSON.stringify({ quorum: [{ id: 'q', group: 'treasury', approvals: 'two' }] }));
    expect(() => makeService({ rulesFile: file })).toThrow(/approval-rules.json is invalid:\n {2}quorum\.0\.approvals/);
  });
});

describe('store migration', () => {
  it('a store file from before quorums keeps its requests and audit rows and accepts the new events', async () => {
    const dbPath = join(mkdtempSync(join(tmpdir(), 'approvals-')), 'approvals.db');
    const old = new Database(dbPath);
    old.exec(`
CREATE TABLE access_requests (id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, body_hash TEXT NOT NULL, body_json TEXT NOT NULL,
  tool TEXT NOT NULL, requester_sub TEXT NOT NULL, approver_group TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled', 'failed')),
  created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, resolved_at_ms INTEGER, resolved_by TEXT, approval_json TEXT);
CREATE TABLE audit_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL REFERENCES access_requests (id),
  event TEXT NOT NULL CHECK (event IN ('submitted', 'approved', 'denied', 'expired', 'cancelled')), actor TEXT NOT NULL, comment TEXT, at_ms INTEGER NOT NULL);`);
    const body = {
      subject: { iss: 'https://idp.example.test', sub: 'erin' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount: 500_000, to: 'acct-1' } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    };
    old
      .prepare(
        "INSERT INTO access_requests VALUES ('ar_old', 'key-old', 'h', ?, 'wire_transfer', 'erin', 'treasury', 'pending', ?, ?, NULL, NULL, NULL)",
      )
      .run(JSON.stringify(body), T0, T0 + HOUR);
    old
      .prepare("INSERT INTO audit_events (request_id, event, actor, comment, at_ms) VALUES ('ar_old', 'submitted', 'erin', NULL, ?)")
      .run(T0);
    old.close();

    const s = makeService({ dbPath });
    expect(await s.store.get('ar_old')).toMatchObject({ status: 'pending', requiredApprovals: 1, quorumRule: null });
    expect(await s.store.auditTrail('ar_old')).toEqual([
      { seq: 1, requestId: 'ar_old', event: 'submitted', actor: 'erin', comment: null, atMs: T0, via: null, rule: null, onBehalfOf: null },
    ]);
    // an open request keeps the single-approval rule it was submitted under
    expect((await decide(s, 'ar_old', basic('alice'), 'approve')).body).toMatchObject({ status: 'approved' });
    const fresh = await submit(s, { amount: 500_000, to: 'acct-2' }, 'k-new');
    expect((await decide(s, fresh, basic('alice'), 'approve')).body).toMatchObject({ status: 'pending' });
    expect((await s.store.auditTrail(fresh)).at(-1)?.event).toBe('endorsed');
  });
});

const ITSM_SECRET = 'itsm-secret-for-tests-0123456789abcdef';
const itsmRules = {
  quorum: DEFAULT_APPROVAL_RULES.quorum,
  risk: [],
  riskIntervalMs: 30_000,
  itsm: { webhookUrl: 'https://itsm.example.test/hook', groups: ['treasury'], includeArguments: true },
};

async function itsmDecides(
  s: ApprovalService,
  requestId: string,
  decision: 'approve' | 'deny',
  decidedBy: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const iat = Math.floor(now / 1000);
  const jws = await new SignJWT({ request_id: requestId, decision, decided_by: decidedBy })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(ITSM_DECISION_ISSUER)
    .setAudience('https://approvals.example.test')
    .setIssuedAt(iat)
    .setExpirationTime(iat + 300)
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(ITSM_SECRET));
  const res = await s.app.request('/access/v1/itsm/decisions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/jwt' },
    body: jws,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A service whose ITSM webhook answers `answers` in turn (then 200), recording each answer in `seen`. */
function serviceWithItsmHook(answers: number[], seen: number[]): ApprovalService {
  return makeService({
    rules: itsmRules,
    itsmSecret: ITSM_SECRET,
    fetch: (async (url: string | URL | Request, init?: RequestInit) => {
      if (String(url) !== itsmRules.itsm.webhookUrl) {
        callbacks.push(String(init?.body));
        return new Response(null, { status: 204 });
      }
      const status = answers[seen.length] ?? 200;
      seen.push(status);
      return new Response(null, { status });
    }) as typeof fetch,
  });
}

/**
 * Move the fake clock on half a second at a time, letting real work (the JWS signing, which runs
 * off the event loop) go on between steps, until `done()` or `realMs` of real time have passed.
 */
async function advanceUntil(done: () => boolean | Promise<boolean>, realMs = 20_000): Promise<void> {
  const until = performance.now() + realMs;
  while (!(await done()) && performance.now() < until) {
    await sleep(5);
    await vi.advanceTimersByTimeAsync(500);
  }
}

describe('ITSM notifications', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a refused ITSM notification is sent again (p-retry, after 1 s and then 5 s): refused twice and then accepted is one notified row', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const seen: number[] = [];
    const s = serviceWithItsmHook([503, 502], seen);
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    await advanceUntil(async () => (await s.store.auditTrail(id)).some((e) => e.event === 'notified'));
    expect(seen).toEqual([503, 502, 200]);
    expect((await s.store.auditTrail(id)).filter((e) => e.event === 'notified')).toMatchObject([{ actor: 'itsm', via: 'itsm' }]);
  });

  it('an ITSM notification refused three times is given up: no fourth attempt, no notified row', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const seen: number[] = [];
    const s = serviceWithItsmHook([500, 500, 500, 500], seen);
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    await advanceUntil(() => seen.length >= 3);
    await advanceUntil(() => seen.length > 3, 1_000); // a fourth attempt would come within this
    expect(seen).toEqual([500, 500, 500]);
    expect((await s.store.auditTrail(id)).filter((e) => e.event === 'notified')).toEqual([]);
  });
});

describe('one person, one vote, across channels (H1)', () => {
  it('carol approving on the API and then an ITSM decision with decided_by "carol" (any case) is one approver: the ITSM vote is refused and the request stays pending', async () => {
    const s = makeService({ rules: itsmRules, itsmSecret: ITSM_SECRET });
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    expect((await decide(s, id, basic('carol'), 'approve')).body).toMatchObject({ status: 'pending', approvals: ['carol'] });
    for (const name of ['carol', 'Carol']) {
      const again = await itsmDecides(s, id, 'approve', name);
      expect(again).toMatchObject({
        status: 403,
        body: { detail: 'This approver already approved the request; another approver must complete it.' },
      });
    }
    expect((await s.store.get(id))?.status).toBe('pending');
    expect((await s.store.votes(id)).map((v) => v.approver)).toEqual(['carol']);
  });

  it('ITSM alone cannot meet a two-approver quorum with names that are not configured approvers: decided_by "x" then "y" are refused and nothing is recorded', async () => {
    const s = makeService({ rules: itsmRules, itsmSecret: ITSM_SECRET });
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    for (const name of ['x', 'y']) {
      expect(await itsmDecides(s, id, 'approve', name)).toMatchObject({
        status: 403,
        body: { detail: "decided_by does not name a configured approver of this request's approver group." },
      });
    }
    expect((await s.store.get(id))?.status).toBe('pending');
    expect(await s.store.votes(id)).toEqual([]);
  });

  it('an ITSM decision naming a configured group member counts as that person: dave via ITSM and carol via the API approve a two-approver request as [dave, carol]', async () => {
    const s = makeService({ rules: itsmRules, itsmSecret: ITSM_SECRET });
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    expect(await itsmDecides(s, id, 'approve', 'dave')).toMatchObject({ status: 200, body: { status: 'pending', approvals: ['dave'] } });
    expect((await decide(s, id, basic('carol'), 'approve')).body).toMatchObject({ status: 'approved', approvals: ['dave', 'carol'] });
    expect((await s.store.auditTrail(id)).filter((e) => e.event !== 'notified').map((e) => [e.event, e.actor, e.via])).toEqual([
      ['submitted', 'erin', 'client'],
      ['endorsed', 'itsm:dave', 'itsm'],
      ['approved', 'carol', 'api'],
    ]);
  });
});

describe('only group members count towards a quorum (M1)', () => {
  const agents = [{ id: 'supervisor', secret: 'agent-secret', tools: ['wire_transfer'] }];

  it('a supervising agent outside the group cannot count towards a two-approver quorum: its approve is a 403 problem and records nothing; it may still deny', async () => {
    const s = makeService({ agents });
    const id = await submit(s, { amount: 150_000, to: 'acct-1' }, 'k');
    const res = await decide(s, id, 'Bearer agent-secret', 'approve');
    expect(res).toMatchObject({ status: 403, body: { type: 'urn:countersign:problem:forbidden' } });
    expect(String(res.body['detail'])).toContain('not a member');
    expect(await s.store.votes(id)).toEqual([]);
    await decide(s, id, basic('alice'), 'approve');
    expect((await decide(s, id, 'Bearer agent-secret', 'approve')).status).toBe(403);
    expect((await s.store.get(id))?.status).toBe('pending');
    expect((await decide(s, id, 'Bearer agent-secret', 'deny')).body).toMatchObject({ status: 'denied' });
  });

  it('where one approval suffices, the supervising agent approves alone', async () => {
    const s = makeService({ agents });
    const id = await submit(s, { amount: 50_000, to: 'acct-1' }, 'k');
    expect(await decide(s, id, 'Bearer agent-secret', 'approve')).toMatchObject({
      status: 200,
      body: { status: 'approved', approvals: ['agent:supervisor'] },
    });
  });
});

describe('four-eyes in one namespace (L1)', () => {
  it('agent:supervisor may not decide a request whose act chain names "supervisor"', async () => {
    const s = makeService({ agents: [{ id: 'supervisor', secret: 'agent-secret', tools: ['wire_transfer'] }] });
    const id = await submit(s, { amount: 50_000, to: 'acct-1' }, 'k', 'erin', [{ sub: 'supervisor' }]);
    expect(await decide(s, id, 'Bearer agent-secret', 'approve')).toMatchObject({
      status: 403,
      body: { detail: 'A requester cannot decide their own access request.' },
    });
    expect((await s.store.get(id))?.status).toBe('pending');
  });

  it('an ITSM decision with decided_by "Alice" may not decide alice\'s request, nor alice on the API a request from "ALICE"', async () => {
    const s = makeService({ rules: itsmRules, itsmSecret: ITSM_SECRET });
    const id = await submit(s, { amount: 50_000, to: 'acct-1' }, 'k', 'alice');
    expect(await itsmDecides(s, id, 'approve', 'Alice')).toMatchObject({
      status: 403,
      body: { detail: 'A requester cannot decide their own access request.' },
    });
    const upper = await submit(s, { amount: 50_000, to: 'acct-2' }, 'k2', 'ALICE');
    expect((await decide(s, upper, basic('alice'), 'approve')).status).toBe(403);
    expect((await s.store.get(id))?.status).toBe('pending');
    expect((await s.store.get(upper))?.status).toBe('pending');
  });
});

describe('API credential back-off (L2)', () => {
  it('after 5 failed Basic credentials for one approver id within a minute, the API answers 429 with Retry-After even for the right password, and logs the failures without the password', async () => {
    const lines: string[] = [];
    const s = makeService({ logger: capturingLogger(lines) });
    const wrong = `Basic ${Buffer.from('alice:wrong-guess').toString('base64')}`;
    for (let i = 0; i < 5; i += 1) {
      expect((await s.app.request('/access/v1/approvals/pending', { headers: { Authorization: wrong } })).status).toBe(401);
    }
    const blocked = await s.app.request('/access/v1/approvals/pending', { headers: { Authorization: basic('alice') } });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('Retry-After'))).toBeGreaterThan(0);
    expect((await s.app.request('/access/v1/approvals/pending', { headers: { Authorization: basic('carol') } })).status).toBe(200);
    expect(lines.filter((l) => l.includes('approver sign-in failed') && l.includes('"approver":"alice"'))).toHaveLength(5);
    expect(lines.join('')).not.toContain('wrong-guess');
  });
});

describe('rules file (L4, L5, logging)', () => {
  it('first start writes the default rules file where the banner points, and it loads back as the defaults', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rules-')), 'data', 'approval-rules.json');
    const s = makeService({ rulesFile: file });
    expect(existsSync(file)).toBe(true);
    expect(parseApprovalRules(readFileSync(file, 'utf8'))).toEqual(DEFAULT_APPROVAL_RULES);
    expect(s.rules()).toEqual(DEFAULT_APPROVAL_RULES);
  });

  it('an approve risk rule that can match requests a quorum rule covers is warned about at load, naming both rules; one bounded below the threshold is not', () => {
    const lines: string[] = [];
    const quorum = DEFAULT_APPROVAL_RULES.quorum;
    makeService({
      logger: capturingLogger(lines),
      rules: parseApprovalRules(
        JSON.stringify({
          quorum,
          risk: [
            {
              id: 'known-destination',
              tool: 'wire_transfer',
              when: [{ field: 'arguments.to', in: ['acct-payroll'] }],
              decision: 'approve',
            },
            { id: 'small', tool: 'wire_transfer', when: [{ field: 'arguments.amount', lt: 30_000 }], decision: 'approve' },
            { id: 'deny-new', when: [{ field: 'arguments.to', eq: 'acct-new' }], decision: 'deny' },
          ],
        }),
      ),
    });
    const warnings = lines.filter((l) => l.includes('bypasses the quorum'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"riskRule":"known-destination"');
    expect(warnings[0]).toContain('"quorumRule":"four-eyes-large-transfers"');
  });

  it('an invalid edit of the rules file is logged once per change, not on every risk pass', async () => {
    const lines: string[] = [];
    const file = join(mkdtempSync(join(tmpdir(), 'rules-')), 'approval-rules.json');
    writeFileSync(file, JSON.stringify({ riskIntervalMs: 1000 }));
    const s = makeService({ rulesFile: file, logger: capturingLogger(lines) });
    writeFileSync(file, '{"risk": [ broken');
    for (let i = 1; i <= 3; i += 1) {
      now = T0 + i * 5000;
      await s.sweep();
    }
    const invalid = () => lines.filter((l) => l.includes('approval rules file is invalid')).length;
    expect(invalid()).toBe(1);
    writeFileSync(file, '{"risk": [ still broken');
    now = T0 + 30_000;
    await s.sweep();
    expect(invalid()).toBe(2);
  });
});
