// Scope: grants in the reference Access Request Service in-process (app.request, injected clock,
// real SQLite files): a grant's uses are counted once each even by two service processes on one
// file, a grant made from a pending request approves it, a quorum or step-up rule keeps a request
// out of any grant, a version-7 store file migrates to 8 keeping its rows, and the ITSM webhook hears of a
// request a grant or a counter-proposal's permit approved at submission. Four-eyes, lookup and standing: a grant never approves a call
// its creator made through an agent, is found by id however many newer grants exist, yields to a risk
// engine's denial, and stops when its creator leaves its group. A reason of only invisible characters is no reason.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApprovalService, type ApprovalService } from '../src/service.js';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { AUDIT_EVENT_KINDS, STORE_SCHEMA_VERSION } from '../src/store/store-schema.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
const open: ApprovalService[] = [];
const bearer = { Authorization: 'Bearer client-token' };
const basic = (id: string) => ({ Authorization: `Basic ${Buffer.from(`${id}:${id}-pw`).toString('base64')}` });

function service(
  dbPath: string,
  rules: Record<string, unknown> = {},
  extra: Partial<Parameters<typeof createApprovalService>[0]> = {},
): ApprovalService {
  const s = createApprovalService({
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
    ],
    ...extra,
    dbPath,
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    publicBaseUrl: 'https://approvals.example.test',
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: parseApprovalRules(JSON.stringify({ grants: { approvers: ['alice'] }, unfollowed: { action: 'off' }, ...rules })),
  });
  open.push(s);
  return s;
}
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  now = T0;
});

let keys = 0;
async function submit(
  svc: ApprovalService,
  args: Record<string, unknown>,
  sub = 'carol',
  act?: Array<{ sub: string }>,
  iss = 'https://idp.example.test',
): Promise<{ id: string; status: string }> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, ...bearer },
    body: JSON.stringify({
      subject: { iss, sub, ...(act === undefined ? {} : { act }) },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'Transfers over $25,000 require treasury approval.',
      expires_at: new Date(now + HOUR).toISOString(),
      binding_digest: 'a'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; status: string };
}

/** POST a grant as alice; a body with neither constraints nor from_request says any_arguments. */
async function createGrant(svc: ApprovalService, body: Record<string, unknown>): Promise<Response> {
  const open = body['constraints'] === undefined && body['from_request'] === undefined ? { any_arguments: true } : {};
  return svc.app.request('/access/v1/grants', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...basic('alice') },
    body: JSON.stringify({ reason: 'supplier run', ...open, ...body }),
  });
}

/** A service (in memory) whose ITSM webhook is on for treasury; `hooks` collects the decoded notifications. */
function itsmService(): { svc: ApprovalService; hooks: Array<Record<string, unknown>> } {
  const hooks: Array<Record<string, unknown>> = [];
  const svc = service(
    ':memory:',
    { itsm: { webhookUrl: 'https://itsm.example.test/hook', groups: ['treasury'], includeArguments: false } },
    {
      itsmSecret: 'itsm-secret-for-tests-0123456789abcdef',
      fetch: (async (url: string | URL | Request, init?: RequestInit) => {
        if (String(url) === 'https://itsm.example.test/hook') hooks.push(decodeJwt(String(init?.body)));
        return new Response(null, { status: 204 });
      }) as typeof fetch,
    },
  );
  return { svc, hooks };
}

/** The grant events version 8 added: a version-7 file's audit CHECK list lacks them. */
const V7_EVENTS = AUDIT_EVENT_KINDS.filter((e) => e !== 'granted' && e !== 'grant-used');

/** Turn the store file `file` (closed) back into a version-7 file: no grant tables, the version-7 audit CHECK list, every audit row kept. */
function toVersion7(file: string): void {
  const db = new Database(file);
  db.exec(`DROP TABLE grant_uses; DROP TABLE grants; ALTER TABLE audit_events RENAME TO old_audit;
CREATE TABLE audit_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL REFERENCES access_requests (id),
  event TEXT NOT NULL CHECK (event IN (${V7_EVENTS.map((e) => `'${e}'`).join(', ')})),
  actor TEXT NOT NULL, comment TEXT, at_ms INTEGER NOT NULL, via TEXT, rule TEXT, on_behalf_of TEXT);
INSERT INTO audit_events SELECT * FROM old_audit; DROP TABLE old_audit;
PRAGMA user_version = 7;`);
  db.close();
}

const tmpDb = () => join(mkdtempSync(join(tmpdir(), 'grants-store-')), 'approvals.db');

describe('grants in the approval service', () => {
  it('two service processes on one store file count a count-3 grant exactly 3 times between them', async () => {
    const file = tmpDb();
    const one = service(file);
    const two = service(file);
    const g = await createGrant(one, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 3 });
    expect(g.status).toBe(201);
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => submit(i % 2 === 0 ? one : two, { amount: 30_000, n: i })));
    expect(results.filter((r) => r.status === 'approved')).toHaveLength(3);
    expect(results.filter((r) => r.status === 'pending')).toHaveLength(5);
    const id = ((await g.json()) as { id: string }).id;
    expect((await two.store.grants.get(id))?.uses).toBe(3);
    expect((await two.store.grants.uses(id)).map((u) => u.use)).toEqual([1, 2, 3]);
  });

  it('a grant made from a pending request it covers approves that request as its first use, and the request history shows both', async () => {
    const svc = service(':memory:');
    const r = await submit(svc, { amount: 30_000, to: 'acct-991' });
    const res = await createGrant(svc, { from_request: r.id, constraints: { to: { eq: 'acct-991' } }, max_uses: 2 });
    expect(res.status).toBe(201);
    const g = (await res.json()) as { id: string; approved_request: string; principal: string; uses: number };
    expect(g).toMatchObject({ approved_request: r.id, principal: 'carol', uses: 1 });
    const events = (await svc.store.auditTrail(r.id)).map((e) => [e.event, e.actor, e.rule]);
    expect(events).toEqual([
      ['submitted', 'carol', null],
      ['granted', 'alice', 'grant'],
      ['grant-used', 'alice', 'grant'],
      ['approved', 'alice', 'grant'],
    ]);
    expect((await svc.store.get(r.id))?.approval?.grant).toMatchObject({ id: g.id, created_by: 'alice', use: 1, max_uses: 2 });
  });

  it('the ITSM system hears of a request a grant approved at submission, as approved by that grant, and of a pending one as pending; the grant-approved one is not offered to ITSM to decide', async () => {
    const { svc, hooks } = itsmService();
    const res = await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 1 });
    const grant = (await res.json()) as { id: string };
    const granted = await submit(svc, { amount: 30_000, to: 'acct-991' });
    const pending = await submit(svc, { amount: 30_000, to: 'acct-992' });
    expect([granted.status, pending.status]).toEqual(['approved', 'pending']);
    await vi.waitFor(() => expect(hooks).toHaveLength(2));
    const byId = new Map(hooks.map((h) => [(h['request'] as { id: string }).id, h]));
    expect(byId.get(granted.id)).toMatchObject({
      event: 'access_request.created',
      request: { status: 'approved', approved_by: 'grant', grant: { id: grant.id, created_by: 'alice', use: 1, max_uses: 1 } },
    });
    expect(byId.get(pending.id)).toMatchObject({ request: { status: 'pending' } });
    expect((byId.get(pending.id)!['request'] as Record<string, unknown>)['grant']).toBeUndefined();
  });

  it('the ITSM system hears of a request a counter-proposal permit approved at submission, as approved by that permit', async () => {
    const { svc, hooks } = itsmService();
    const post = (args: Record<string, unknown>) =>
      svc.app.request('/access/v1/requests', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, ...bearer },
        body: JSON.stringify({
          subject: { iss: 'https://idp.example.test', sub: 'carol' },
          action: { name: 'tools/call' },
          resource: { type: 'tool', id: 'wire_transfer' },
          context: { arguments: args, narrowable: { amount: 'max' } },
          approver_group: 'treasury',
          reason: 'Transfers over $25,000 require treasury approval.',
          expires_at: new Date(now + HOUR).toISOString(),
          binding_digest: 'a'.repeat(64),
          generation: 1,
        }),
      });
    const first = (await (await post({ amount: 50_000, to: 'acct-991' })).json()) as { id: string };
    const narrowed = await svc.app.request(`/access/v1/requests/${first.id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic('bob') },
      body: JSON.stringify({ decision: 'narrow', proposed_arguments: { amount: 30_000, to: 'acct-991' } }),
    });
    expect(narrowed.status).toBe(200);
    const second = (await (await post({ amount: 30_000, to: 'acct-991' })).json()) as { id: string; status: string };
    expect(second.status).toBe('approved');
    await vi.waitFor(() => expect(hooks.some((h) => (h['request'] as { id: string }).id === second.id)).toBe(true));
    const hook = hooks.find((h) => (h['request'] as { id: string }).id === second.id)!;
    expect(hook).toMatchObject({ event: 'access_request.created', request: { status: 'approved', approved_by: 'counter-proposal' } });
  });

  it('a request a quorum rule applies to is never approved by a grant', async () => {
    const svc = service(':memory:', {
      quorum: [{ id: 'big', group: 'treasury', tool: 'wire_transfer', when: [{ field: 'arguments.amount', gt: 100_000 }], approvals: 2 }],
    });
    expect((await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 5 })).status).toBe(
      201,
    );
    expect((await submit(svc, { amount: 200_000 })).status).toBe('pending');
    expect((await submit(svc, { amount: 50_000 })).status).toBe('approved');
  });

  it('a grant stops at its end time and at its revocation', async () => {
    const svc = service(':memory:');
    const res = await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', duration_ms: HOUR });
    const id = ((await res.json()) as { id: string }).id;
    expect((await submit(svc, { amount: 1 })).status).toBe('approved');
    now = T0 + HOUR;
    expect((await submit(svc, { amount: 1 })).status).toBe('pending');
    now = T0;
    const revoke = await svc.app.request(`/access/v1/grants/${id}/revoke`, { method: 'POST', headers: basic('bob') });
    expect(revoke.status).toBe(403); // bob neither created it nor holds the right
    expect((await svc.app.request(`/access/v1/grants/${id}/revoke`, { method: 'POST', headers: basic('alice') })).status).toBe(200);
    expect((await submit(svc, { amount: 1 })).status).toBe('pending');
  });

  it('a version-7 store file migrates to the current version keeping its rows, and then holds grants', async () => {
    const file = tmpDb();
    const first = service(file);
    first.close();
    toVersion7(file);
    const svc = service(file);
    const check = new Database(file, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    expect(STORE_SCHEMA_VERSION).toBe(9);
    check.close();
    expect(await svc.store.grants.list()).toEqual([]);
  });

  it('a migrated version-7 file records a grant made from one of its requests (the audit CHECK list knows the grant events)', async () => {
    const file = tmpDb();
    const first = service(file);
    const r = await submit(first, { amount: 30_000 });
    first.close();
    toVersion7(file);
    const svc = service(file);
    expect((await svc.store.get(r.id))?.status).toBe('pending');
    const res = await createGrant(svc, { from_request: r.id, max_uses: 1 });
    expect(res.status).toBe(201);
    expect((await svc.store.get(r.id))?.status).toBe('approved');
    expect((await svc.store.auditTrail(r.id)).map((e) => e.event)).toEqual(['submitted', 'granted', 'grant-used', 'approved']);
  });
  it("a grant made from a request covers its requester from that request's issuer only: the same sub from another issuer waits for an approver", async () => {
    const svc = service(':memory:');
    const r = await submit(svc, { amount: 30_000 });
    const res = await createGrant(svc, { from_request: r.id, max_uses: 5, constraints: { amount: { max: 50_000 } } });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { principal_issuer: string }).principal_issuer).toBe('https://idp.example.test');
    expect((await submit(svc, { amount: 1 }, 'carol', undefined, 'https://other-idp.example.test')).status).toBe('pending');
    expect((await submit(svc, { amount: 1 })).status).toBe('approved');
  });

  it('a grant from scratch with principal_issuer covers that issuer only; one without covers the principal from any issuer', async () => {
    const svc = service(':memory:');
    const bound = await createGrant(svc, {
      principal: 'carol',
      principal_issuer: 'https://other-idp.example.test',
      tool: 'wire_transfer',
      approver_group: 'treasury',
      max_uses: 1,
    });
    expect(bound.status).toBe(201);
    expect((await submit(svc, { amount: 1 })).status).toBe('pending');
    expect((await submit(svc, { amount: 1 }, 'carol', undefined, 'https://other-idp.example.test')).status).toBe('approved');
    const open = await createGrant(svc, { principal: 'dave', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 2 });
    expect(((await open.json()) as { principal_issuer: string | null }).principal_issuer).toBeNull();
    expect((await submit(svc, { amount: 1 }, 'dave')).status).toBe('approved');
    expect((await submit(svc, { amount: 1 }, 'dave', undefined, 'https://other-idp.example.test')).status).toBe('approved');
  });

  it("a version-8 file (grants without an issuer) migrates: a grant made from a request takes that request's issuer, one from scratch stays open to any issuer", async () => {
    const file = tmpDb();
    const first = service(file);
    const r = await submit(first, { amount: 30_000 });
    expect((await createGrant(first, { from_request: r.id, max_uses: 3 })).status).toBe(201);
    expect((await createGrant(first, { principal: 'dave', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 1 })).status).toBe(
      201,
    );
    first.close();
    const db = new Database(file);
    db.exec('ALTER TABLE grants DROP COLUMN principal_iss; PRAGMA user_version = 8;');
    db.close();
    const svc = service(file);
    const issuers = Object.fromEntries((await svc.store.grants.list()).map((g) => [g.principal, g.principalIssuer]));
    expect(issuers).toEqual({ carol: 'https://idp.example.test', dave: null });
    expect((await submit(svc, { amount: 30_000 }, 'carol', undefined, 'https://other-idp.example.test')).status).toBe('pending');
  });

  it('a grant never approves a call its creator took part in through an act chain, at submission or made from that request', async () => {
    const svc = service(':memory:');
    const g = await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 5 });
    expect(g.status).toBe(201);
    // carol's call made through alice's agent: alice approving it directly would be refused own-request
    const through = await submit(svc, { amount: 30_000 }, 'carol', [{ sub: 'ALICE' }]);
    expect(through.status).toBe('pending');
    const direct = await svc.app.request(`/access/v1/requests/${through.id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic('alice') },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(direct.status).toBe(403);
    const fromIt = await createGrant(svc, { from_request: through.id, max_uses: 1 });
    expect(fromIt.status).toBe(403);
    expect(((await fromIt.json()) as { detail: string }).detail).toMatch(/act chain names you/);
    expect((await svc.store.get(through.id))?.status).toBe('pending');
    // the same principal's call without alice in its chain is still approved by the grant
    expect((await submit(svc, { amount: 30_000 }, 'carol', [{ sub: 'agent-7' }])).status).toBe('approved');
  });

  it('a grant older than the 200 newest of other groups is still read, listed and revoked by its approver group, and stops approving', async () => {
    const svc = service(':memory:');
    const res = await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 100 });
    const id = ((await res.json()) as { id: string }).id;
    for (let i = 0; i < 201; i++) {
      now += 1;
      await svc.store.grants.create({
        id: `grt_other_${i}`,
        principal: 'erin',
        principalIssuer: null,
        tool: 'deploy',
        approverGroup: 'ops',
        constraints: {},
        maxUses: 1,
        createdBy: 'olga',
        via: 'api',
        reason: 'ops run',
        fromRequest: null,
        createdAtMs: now,
        expiresAtMs: now + HOUR,
      });
    }
    const read = await svc.app.request(`/access/v1/grants/${id}`, { headers: basic('bob') });
    expect(read.status).toBe(200);
    const list = (await (await svc.app.request('/access/v1/grants?state=all', { headers: basic('bob') })).json()) as {
      items: Array<{ id: string }>;
    };
    expect(list.items.map((g) => g.id)).toEqual([id]);
    expect((await svc.app.request(`/access/v1/grants/${id}/revoke`, { method: 'POST', headers: basic('alice') })).status).toBe(200);
    expect((await submit(svc, { amount: 1 })).status).toBe('pending');
  });

  it('a grant never approves a call a risk rule denies: the risk engine denies it, and the grant is not used', async () => {
    const svc = service(':memory:', {
      risk: [{ id: 'sanctioned', tool: 'wire_transfer', when: [{ field: 'arguments.to', eq: 'acct-666' }], decision: 'deny' }],
    });
    const res = await createGrant(svc, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 5 });
    const id = ((await res.json()) as { id: string }).id;
    const r = await submit(svc, { amount: 1, to: 'acct-666' });
    expect((await svc.store.get(r.id))?.status).toBe('denied');
    expect((await svc.store.grants.get(id))?.uses).toBe(0);
    expect((await submit(svc, { amount: 1, to: 'acct-991' })).status).toBe('approved');
  });

  it('a grant stops approving once its creator is no longer in its approver group', async () => {
    const file = tmpDb();
    const first = service(file);
    expect((await createGrant(first, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 5 })).status).toBe(
      201,
    );
    expect((await submit(first, { amount: 1 })).status).toBe('approved');
    first.close();
    // the service restarted with alice moved to another group
    const later = service(
      file,
      {},
      {
        approvers: [
          { id: 'alice', secret: 'alice-pw', groups: ['ops'] },
          { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
        ],
      },
    );
    expect((await submit(later, { amount: 1 })).status).toBe('pending');
  });

  it('a grant reason of only zero-width and other invisible characters is refused by the API with 400 like an empty one, and no grant is made', async () => {
    const svc = service(':memory:');
    const grant = { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 5 };
    for (const reason of ['', '   ', '\u200b\u200c\u200d', '\u2060\ufeff\u00ad\u3164', '\u202e\u2800']) {
      const res = await createGrant(svc, { ...grant, reason });
      expect(res.status, JSON.stringify(reason)).toBe(400);
      expect(res.headers.get('Content-Type')).toContain('application/problem+json');
    }
    expect(await svc.store.grants.list({ groups: ['treasury'] })).toEqual([]);
    expect((await createGrant(svc, { ...grant, reason: 'supplier run' })).status).toBe(201);
  });
  it('a grant made from a request without limits limits each argument to its value there; one from scratch without limits is refused unless it says any_arguments', async () => {
    const svc = service(':memory:');
    const r = await submit(svc, { amount: 30_000, to: 'acct-991' });
    const res = await createGrant(svc, { from_request: r.id, max_uses: 5 });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { constraints: unknown }).constraints).toEqual({ amount: { eq: 30_000 }, to: { eq: 'acct-991' } });
    expect((await submit(svc, { amount: 9_999_999, to: 'acct-666' })).status).toBe('pending');
    expect((await submit(svc, { amount: 30_000, to: 'acct-991' })).status).toBe('approved');
    for (const body of [{ constraints: {} }, { any_arguments: false }, { any_arguments: true, constraints: { to: { eq: 'x' } } }]) {
      const refused = await svc.app.request('/access/v1/grants', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...basic('alice') },
        body: JSON.stringify({
          principal: 'carol',
          tool: 'wire_transfer',
          approver_group: 'treasury',
          max_uses: 5,
          reason: 'run',
          ...body,
        }),
      });
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { detail: string }).detail).toMatch(/any_arguments/);
    }
    expect(await svc.store.grants.list()).toHaveLength(1);
  });

  it('a rules file that lowers maxUses or maxDurationMs shrinks the grants already made', async () => {
    const file = tmpDb();
    const first = service(file);
    const res = await createGrant(first, { principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 100 });
    expect(res.status).toBe(201);
    expect((await submit(first, { amount: 1 })).status).toBe('approved');
    first.close();
    const fewer = service(file, { grants: { approvers: ['alice'], maxUses: 1 } });
    expect((await submit(fewer, { amount: 1 })).status).toBe('pending');
    fewer.close();
    const shorter = service(file, { grants: { approvers: ['alice'], maxDurationMs: 60_000 } });
    now = T0 + 120_000;
    expect((await submit(shorter, { amount: 1 })).status).toBe('pending');
  });
});
