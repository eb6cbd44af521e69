// Scope: grants in the reference Access Request Service in-process (app.request, injected clock,
// real SQLite files): a grant's uses are counted once each even by two service processes on one
// file, a grant made from a pending request approves it, a quorum or step-up rule keeps a request
// out of any grant, a version-7 store file migrates to 8 keeping its rows, and the ITSM webhook hears of a
// request a grant approved at submission.
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
    ...extra,
    dbPath,
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
    ],
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
async function submit(svc: ApprovalService, args: Record<string, unknown>, sub = 'carol'): Promise<{ id: string; status: string }> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, ...bearer },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
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

async function createGrant(svc: ApprovalService, body: Record<string, unknown>): Promise<Response> {
  return svc.app.request('/access/v1/grants', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...basic('alice') },
    body: JSON.stringify({ reason: 'supplier run', ...body }),
  });
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
    expect(two.store.grants.get(id)?.uses).toBe(3);
    expect(two.store.grants.uses(id).map((u) => u.use)).toEqual([1, 2, 3]);
  });

  it('a grant made from a pending request it covers approves that request as its first use, and the request history shows both', async () => {
    const svc = service(':memory:');
    const r = await submit(svc, { amount: 30_000, to: 'acct-991' });
    const res = await createGrant(svc, { from_request: r.id, constraints: { to: { eq: 'acct-991' } }, max_uses: 2 });
    expect(res.status).toBe(201);
    const g = (await res.json()) as { id: string; approved_request: string; principal: string; uses: number };
    expect(g).toMatchObject({ approved_request: r.id, principal: 'carol', uses: 1 });
    const events = svc.store.auditTrail(r.id).map((e) => [e.event, e.actor, e.rule]);
    expect(events).toEqual([
      ['submitted', 'carol', null],
      ['granted', 'alice', 'grant'],
      ['grant-used', 'alice', 'grant'],
      ['approved', 'alice', 'grant'],
    ]);
    expect(svc.store.get(r.id)?.approval?.grant).toMatchObject({ id: g.id, created_by: 'alice', use: 1, max_uses: 2 });
  });

  it('the ITSM system hears of a request a grant approved at submission, as approved by that grant, and of a pending one as pending; the grant-approved one is not offered to ITSM to decide', async () => {
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

  it('a version-7 store file migrates to the current version keeping its rows, and then holds grants', () => {
    const file = tmpDb();
    const first = service(file);
    first.close();
    toVersion7(file);
    const svc = service(file);
    const check = new Database(file, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    expect(STORE_SCHEMA_VERSION).toBe(8);
    check.close();
    expect(svc.store.grants.list()).toEqual([]);
  });

  it('a migrated version-7 file records a grant made from one of its requests (the audit CHECK list knows the grant events)', async () => {
    const file = tmpDb();
    const first = service(file);
    const r = await submit(first, { amount: 30_000 });
    first.close();
    toVersion7(file);
    const svc = service(file);
    expect(svc.store.get(r.id)?.status).toBe('pending');
    const res = await createGrant(svc, { from_request: r.id, max_uses: 1 });
    expect(res.status).toBe(201);
    expect(svc.store.get(r.id)?.status).toBe('approved');
    expect(svc.store.auditTrail(r.id).map((e) => e.event)).toEqual(['submitted', 'granted', 'grant-used', 'approved']);
  });
});
