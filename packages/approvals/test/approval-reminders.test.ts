// Scope: reminders and escalation of the approval service on an injected clock (timers derived
// from the stored submission time, fired by sweep(), surviving a restart on the same file), the
// escalation group deciding under the same rules, and migrating a version-1 store file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseApprovalRules, type ApprovalRules } from '../src/deciders/approval-rules.js';
import type { ApprovalNotification, ApprovalNotifier } from '../src/notify/notifier.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';
import { STORE_SCHEMA_VERSION } from '../src/store/store-schema.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const MIN = 60_000;
const HOUR = 60 * MIN;
let now = T0;
const open: ApprovalService[] = [];

/**
 * A notifier that keeps the timers' notifications it was given (`reminded`, `escalated`; the
 * service also announces `opened` and `decided` on every notifier, which these tests do not count).
 */
function recordingNotifier(): ApprovalNotifier & { seen: ApprovalNotification[] } {
  const seen: ApprovalNotification[] = [];
  return {
    channel: 'recording',
    seen,
    notify(n) {
      if (n.kind === 'reminded' || n.kind === 'escalated') seen.push(n);
      return Promise.resolve();
    },
  };
}

/** One that always fails: the others must still be told. */
const failingNotifier: ApprovalNotifier = { channel: 'broken', notify: () => Promise.reject(new Error('smtp down')) };

const RULES: ApprovalRules = parseApprovalRules(
  JSON.stringify({
    escalation: [
      { group: 'treasury', remindAfterMs: 30 * MIN, escalateAfterMs: 2 * HOUR, escalateTo: { group: 'treasury-leads' } },
      { group: 'payroll', escalateAfterMs: HOUR, escalateTo: { approver: 'omar' } },
    ],
  }),
);

function makeService(dbPath: string, notifiers: ApprovalNotifier[] = []): ApprovalService {
  const s = createApprovalService({
    dbPath,
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
      { id: 'lena', secret: 'lena-pw', groups: ['treasury-leads'] },
      { id: 'omar', secret: 'omar-pw', groups: ['ops'] },
    ],
    publicBaseUrl: 'https://approvals.example.test',
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: RULES,
    notifiers,
    fetch: (async () => new Response(null, { status: 204 })) as unknown as typeof fetch,
  });
  open.push(s);
  return s;
}
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  now = T0;
});

const tempDb = () => join(mkdtempSync(join(tmpdir(), 'countersign-reminders-')), 'approvals.db');

async function submit(s: ApprovalService, key: string, expiresInMs = 24 * HOUR, group = 'treasury'): Promise<string> {
  const res = await s.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount: 50_000, to: 'acct-1' } },
      approver_group: group,
      reason: 'needs approval',
      expires_at: new Date(now + expiresInMs).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function decide(s: ApprovalService, id: string, who: string, decision: 'approve' | 'deny'): Promise<Response> {
  return s.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from(`${who}:${who}-pw`).toString('base64')}` },
    body: JSON.stringify({ decision, ...(decision === 'deny' ? { comment: 'no' } : {}) }),
  });
}

const events = async (s: ApprovalService, id: string) => (await s.store.auditTrail(id)).map((e) => [e.event, e.actor, e.comment]);

describe('reminders and escalation', () => {
  it('a quiet request reminds its group after the quiet period, then escalates to the fallback group, each once, in the audit trail and to every notifier', async () => {
    const seen = recordingNotifier();
    const s = makeService(':memory:', [failingNotifier, seen]);
    const id = await submit(s, 'k1');

    now = T0 + 29 * MIN;
    await s.sweep();
    expect(await events(s, id)).toEqual([['submitted', 'alice', null]]);

    now = T0 + 30 * MIN;
    await s.sweep();
    expect((await events(s, id)).at(-1)).toEqual(['reminded', 'system', 'group treasury']);
    expect(seen.seen.map((n) => [n.kind, n.group, n.request.id])).toEqual([['reminded', 'treasury', id]]);

    now = T0 + 90 * MIN;
    await s.sweep();
    expect((await s.store.auditTrail(id)).filter((e) => e.event === 'reminded')).toHaveLength(1);

    now = T0 + 2 * HOUR;
    await s.sweep();
    await s.sweep();
    expect((await events(s, id)).slice(1)).toEqual([
      ['reminded', 'system', 'group treasury'],
      ['escalated', 'system', 'to group treasury-leads'],
    ]);
    expect(seen.seen.map((n) => [n.kind, n.group])).toEqual([
      ['reminded', 'treasury'],
      ['escalated', 'treasury-leads'],
    ]);
    expect(await s.store.get(id)).toMatchObject({
      remindedAtMs: T0 + 30 * MIN,
      escalatedAtMs: T0 + 2 * HOUR,
      escalation: { group: 'treasury-leads' },
    });
  });

  it('the escalation group may decide only after the escalation, and then under the same rules', async () => {
    const s = makeService(':memory:');
    const id = await submit(s, 'k2');
    const before = await decide(s, id, 'lena', 'approve');
    expect(before.status).toBe(403);
    expect(((await before.json()) as { detail: string }).detail).toContain('not a member');

    now = T0 + 2 * HOUR;
    await s.sweep();
    const pending = await s.app.request('/access/v1/approvals/pending', {
      headers: { Authorization: `Basic ${Buffer.from('lena:lena-pw').toString('base64')}` },
    });
    expect(((await pending.json()) as { items: Array<{ id: string }> }).items.map((i) => i.id)).toEqual([id]);
    const after = await decide(s, id, 'lena', 'approve');
    expect(after.status).toBe(200);
    expect(await s.store.get(id)).toMatchObject({ status: 'approved', resolvedBy: 'lena' });
    expect((await s.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'lena', via: 'api' });
  });

  it('restart the service: the due reminder still fires once', async () => {
    const dbPath = tempDb();
    const first = makeService(dbPath);
    const id = await submit(first, 'k3');
    first.close();

    now = T0 + 45 * MIN; // due while nothing ran
    const seen = recordingNotifier();
    const second = makeService(dbPath, [seen]);
    await second.sweep();
    await second.sweep();
    second.close();
    const third = makeService(dbPath, [seen]);
    await third.sweep();
    expect((await third.store.auditTrail(id)).filter((e) => e.event === 'reminded')).toHaveLength(1);
    expect(seen.seen.map((n) => n.kind)).toEqual(['reminded']);
  });

  it('a decided, cancelled or expired request is never reminded nor escalated', async () => {
    const seen = recordingNotifier();
    const s = makeService(':memory:', [seen]);
    const approved = await submit(s, 'k4');
    const cancelled = await submit(s, 'k5');
    const expiring = await submit(s, 'k6', 20 * MIN);
    expect((await decide(s, approved, 'bob', 'approve')).status).toBe(200);
    const cancel = await s.app.request(`/access/v1/requests/${cancelled}/cancel`, {
      method: 'POST',
      headers: { Authorization: 'Bearer client-token' },
    });
    expect(cancel.status).toBe(200);

    now = T0 + 3 * HOUR;
    await s.sweep();
    for (const id of [approved, cancelled, expiring]) {
      expect((await s.store.auditTrail(id)).map((e) => e.event)).not.toContain('reminded');
      expect((await s.store.auditTrail(id)).map((e) => e.event)).not.toContain('escalated');
    }
    expect((await s.store.get(expiring))?.status).toBe('expired');
    expect(seen.seen).toEqual([]);
  });

  it('escalation to one approver: that approver may decide once it escalated, not before', async () => {
    const seen = recordingNotifier();
    const s = makeService(':memory:', [seen]);
    const id = await submit(s, 'k8', 24 * HOUR, 'payroll');
    expect((await decide(s, id, 'omar', 'approve')).status).toBe(403);
    now = T0 + HOUR;
    await s.sweep();
    expect((await events(s, id)).at(-1)).toEqual(['escalated', 'system', 'to approver omar']);
    expect(seen.seen.map((n) => [n.kind, n.group, n.request.escalation])).toEqual([
      ['escalated', 'payroll', { group: null, approver: 'omar' }],
    ]);
    expect((await decide(s, id, 'omar', 'approve')).status).toBe(200);
    expect(await s.store.get(id)).toMatchObject({ status: 'approved', resolvedBy: 'omar' });
  });

  it('a group without an escalation rule is left alone', async () => {
    const s = makeService(':memory:');
    const id = await submit(s, 'k7', 24 * HOUR, 'engineering');
    now = T0 + 10 * HOUR;
    await s.sweep();
    expect((await s.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
  });

  it('the rules file refuses an escalation without a target, out of order, or twice for one group', () => {
    const bad = (escalation: unknown) => () => parseApprovalRules(JSON.stringify({ escalation }));
    expect(bad([{ group: 'g', escalateAfterMs: 60_000 }])).toThrow(/escalateAfterMs and escalateTo go together/);
    expect(bad([{ group: 'g', remindAfterMs: 120_000, escalateAfterMs: 60_000, escalateTo: { group: 'h' } }])).toThrow(
      /later than remindAfterMs/,
    );
    expect(bad([{ group: 'g', escalateAfterMs: 60_000, escalateTo: {} }])).toThrow(/a group or an approver/);
    expect(
      bad([
        { group: 'g', remindAfterMs: 60_000 },
        { group: 'g', remindAfterMs: 90_000 },
      ]),
    ).toThrow(/group "g" has two rules/);
  });
});

describe('store schema version 2', () => {
  it('a version-1 file is migrated keeping every request, vote and audit row (seq, channel, rule), and takes the new events', async () => {
    const dbPath = tempDb();
    const v1 = new Database(dbPath);
    v1.exec(`
CREATE TABLE access_requests (id TEXT PRIMARY KEY, idempotency_key TEXT NOT NULL UNIQUE, body_hash TEXT NOT NULL, body_json TEXT NOT NULL,
  tool TEXT NOT NULL, requester_sub TEXT NOT NULL, approver_group TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired', 'cancelled', 'failed')),
  created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, resolved_at_ms INTEGER, resolved_by TEXT, approval_json TEXT,
  required_approvals INTEGER NOT NULL DEFAULT 1, quorum_rule TEXT);
CREATE TABLE approval_votes (request_id TEXT NOT NULL REFERENCES access_requests (id), approver TEXT NOT NULL, via TEXT NOT NULL,
  comment TEXT, at_ms INTEGER NOT NULL, PRIMARY KEY (request_id, approver));
CREATE TABLE inbox_sessions (id_hash TEXT PRIMARY KEY, approver TEXT NOT NULL, created_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL);
CREATE TABLE audit_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL REFERENCES access_requests (id),
  event TEXT NOT NULL CHECK (event IN ('submitted', 'endorsed', 'approved', 'denied', 'expired', 'cancelled', 'notified')),
  actor TEXT NOT NULL, comment TEXT, at_ms INTEGER NOT NULL, via TEXT, rule TEXT);
PRAGMA user_version = 1;`);
    const body = {
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount: 500_000, to: 'acct-1' } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(T0 + 24 * HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    };
    v1.prepare(
      "INSERT INTO access_requests VALUES ('ar_v1', 'key-v1', 'h', ?, 'wire_transfer', 'alice', 'treasury', 'pending', ?, ?, NULL, NULL, NULL, 2, 'four-eyes')",
    ).run(JSON.stringify(body), T0, T0 + 24 * HOUR);
    v1.prepare("INSERT INTO approval_votes VALUES ('ar_v1', 'bob', 'inbox', 'ok', ?)").run(T0 + MIN);
    v1.prepare(
      "INSERT INTO audit_events (seq, request_id, event, actor, comment, at_ms, via, rule) VALUES (4, 'ar_v1', 'submitted', 'alice', NULL, ?, 'client', 'four-eyes')",
    ).run(T0);
    v1.prepare(
      "INSERT INTO audit_events (seq, request_id, event, actor, comment, at_ms, via, rule) VALUES (9, 'ar_v1', 'endorsed', 'bob', 'ok', ?, 'inbox', NULL)",
    ).run(T0 + MIN);
    v1.close();

    const s = makeService(dbPath);
    const check = new Database(dbPath, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    check.close();
    expect(await s.store.get('ar_v1')).toMatchObject({
      status: 'pending',
      requiredApprovals: 2,
      quorumRule: 'four-eyes',
      stepUpRule: null,
      remindedAtMs: null,
      escalation: null,
    });
    expect(await s.store.votes('ar_v1')).toEqual([
      { approver: 'bob', via: 'inbox', comment: 'ok', atMs: T0 + MIN, castBy: null, stepUp: null },
    ]);
    expect(await s.store.auditTrail('ar_v1')).toEqual([
      {
        seq: 4,
        requestId: 'ar_v1',
        event: 'submitted',
        actor: 'alice',
        comment: null,
        atMs: T0,
        via: 'client',
        rule: 'four-eyes',
        onBehalfOf: null,
      },
      {
        seq: 9,
        requestId: 'ar_v1',
        event: 'endorsed',
        actor: 'bob',
        comment: 'ok',
        atMs: T0 + MIN,
        via: 'inbox',
        rule: null,
        onBehalfOf: null,
      },
    ]);
    await s.store.appendAudit('ar_v1', 'reminded', 'system', T0 + 2 * MIN);
    expect((await s.store.auditTrail('ar_v1')).at(-1)).toMatchObject({ seq: 10, event: 'reminded' });
  });
});
