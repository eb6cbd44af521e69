// Scope: the reference Access Request Service (packages/approvals/src/) in-process via app.request with an injected clock: ARAP API, four-eyes rules, expiry, signed callbacks, store. (The inbox pages: approver-inbox.test.ts; quorum, risk engine, agents, ITSM: their own files.)
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callbackRequestTarget, DecisionRecordBodySchema, signCallback, verifyCallback } from '@countersign/arap';
import { summarizeArguments } from '../src/inbox/format.js';
import { createApprovalService, type ApprovalService, type ApprovalServiceOptions } from '../src/service.js';
import { approvalServiceExtras } from '../src/stack-wiring.js';
import { generateApprovalMachineSecrets } from '../src/secrets.js';

const BASE = 'https://approvals.example.test';
const CLIENT_TOKEN = 'client-token-for-tests';
const CALLBACK_SECRET = 'callback-secret-for-tests';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;

interface CapturedCallback {
  url: string;
  body: string;
  timestamp: string | null;
  signature: string | null;
}

/** A callback sink standing in for `fetch`: records each POST and answers with the next scripted status. */
function callbackSink(script: Array<number | 'throw'> = []) {
  const calls: CapturedCallback[] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const fetchImpl = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    calls.push({
      url: String(input),
      body: String(init?.body),
      timestamp: headers.get('X-Countersign-Timestamp'),
      signature: headers.get('X-Countersign-Signature'),
    });
    for (const w of waiters.filter((x) => calls.length >= x.n)) w.resolve();
    const next = script.shift() ?? 204;
    if (next === 'throw') throw new TypeError('fetch failed');
    return new Response(null, { status: next });
  }) as typeof fetch;
  const waitFor = (n: number): Promise<void> =>
    calls.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
  return { calls, fetchImpl, waitFor };
}

let now = T0;
let sink = callbackSink();
let svc: ApprovalService;

function makeService(extra: Partial<ApprovalServiceOptions> = {}): ApprovalService {
  return createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: CALLBACK_SECRET,
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['ops'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury', 'ops'] },
    ],
    approvalValidityMs: 2 * HOUR,
    publicBaseUrl: `${BASE}/`,
    logger: pino({ level: 'silent' }),
    now: () => now,
    fetch: sink.fetchImpl,
    callbackDelivery: { maxAttempts: 3, baseDelayMs: 0 },
    ...extra,
  });
}

function requestBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    subject: { iss: 'https://idp.example.test', sub: 'carol' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 'wire_transfer' },
    context: { arguments: { amount: 50000, to: 'acct-991' } },
    approver_group: 'treasury',
    reason: 'Transfers over 10000 need treasury approval',
    expires_at: new Date(T0 + HOUR).toISOString(),
    binding_digest: 'a'.repeat(64),
    generation: 1,
    callback_url: 'https://mcp.example.test/callbacks/approval',
    ...over,
  };
}

const bearer = { Authorization: `Bearer ${CLIENT_TOKEN}` };
const basic = (id: string, secret: string) => ({ Authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });

function submit(body: unknown, key = 'key-1', headers: Record<string, string> = bearer): Promise<Response> {
  return Promise.resolve(
    svc.app.request('/access/v1/requests', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );
}

async function submitOk(over: Record<string, unknown> = {}, key = 'key-1'): Promise<string> {
  const res = await submit(requestBody(over), key);
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

function getStatus(id: string): Promise<Response> {
  return Promise.resolve(svc.app.request(`/access/v1/requests/${id}`, { headers: bearer }));
}

function decide(id: string, who: [string, string], decision: 'approve' | 'deny', comment?: string): Promise<Response> {
  return Promise.resolve(
    svc.app.request(`/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic(...who) },
      body: JSON.stringify(comment === undefined ? { decision } : { decision, comment }),
    }),
  );
}

async function expectProblem(res: Response, status: number, kind: string): Promise<{ detail: string }> {
  expect(res.status).toBe(status);
  expect(res.headers.get('Content-Type')).toBe('application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ type: `urn:countersign:problem:${kind}`, status });
  expect(typeof body['title']).toBe('string');
  expect(typeof body['detail']).toBe('string');
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+/);
  return body as { detail: string };
}

beforeEach(() => {
  now = T0;
  sink = callbackSink();
  svc = makeService();
});

afterEach(async () => {
  await svc.drainCallbacks();
  svc.close();
});

describe('ARAP submit', () => {
  it('healthz answers ok', async () => {
    const res = await svc.app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('a submission without the client bearer token is a 401 problem+json', async () => {
    await expectProblem(await submit(requestBody(), 'k', {}), 401, 'unauthorized');
    const wrong = await submit(requestBody(), 'k', { Authorization: 'Bearer not-the-token' });
    expect(wrong.headers.get('WWW-Authenticate')).toContain('Bearer');
    await expectProblem(wrong, 401, 'unauthorized');
  });

  it('a submission without a usable Idempotency-Key is a 400 problem+json', async () => {
    await expectProblem(await submit(requestBody(), ''), 400, 'idempotency-key-required');
    await expectProblem(await submit(requestBody(), 'x'.repeat(201)), 400, 'idempotency-key-required');
    const noKey = await svc.app.request('/access/v1/requests', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...bearer },
      body: JSON.stringify(requestBody()),
    });
    await expectProblem(noKey, 400, 'idempotency-key-required');
  });

  it('an invalid body is a 400 problem+json naming the field, and non-JSON is rejected', async () => {
    const p = await expectProblem(await submit(requestBody({ action: { name: 'tools/list' } })), 400, 'invalid-request');
    expect(p.detail).toContain('action.name');
    const g = await expectProblem(await submit(requestBody({ generation: 0 })), 400, 'invalid-request');
    expect(g.detail).toContain('generation');
    const cb = await expectProblem(await submit(requestBody({ callback_url: 'ftp://x.example/cb' })), 400, 'invalid-request');
    expect(cb.detail).toContain('callback_url');
    await expectProblem(await submit('{not json'), 400, 'invalid-request');
  });

  it('a new submission returns 201 with an ARAP task handle and an unguessable id', async () => {
    const res = await submit(requestBody());
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    const id = body['id'] as string;
    expect(id).toMatch(/^ar_[A-Za-z0-9_-]{22}$/);
    expect(body).toEqual({
      id,
      status: 'pending',
      status_endpoint: `${BASE}/access/v1/requests/${id}`,
      expires_at: new Date(T0 + HOUR).toISOString(),
      links: { self: `${BASE}/access/v1/requests/${id}`, cancel: `${BASE}/access/v1/requests/${id}/cancel` },
    });
    expect(res.headers.get('Location')).toBe(`${BASE}/access/v1/requests/${id}`);
    const other = await submitOk({}, 'key-2');
    expect(other).not.toBe(id);
  });

  it('same Idempotency-Key and same body returns the same request', async () => {
    const first = (await (await submit(requestBody())).json()) as { id: string };
    // Key order differs; canonical JSON makes it the same body.
    const reordered = Object.fromEntries(Object.entries(requestBody()).reverse());
    const again = await submit(reordered);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: first.id, status: 'pending' });
    expect((await svc.store.auditTrail(first.id)).filter((e) => e.event === 'submitted')).toHaveLength(1);
  });

  it('same key with a different body is a 409 problem+json', async () => {
    await submitOk();
    await expectProblem(
      await submit(requestBody({ context: { arguments: { amount: 50001, to: 'acct-991' } } })),
      409,
      'idempotency-conflict',
    );
  });

  // The key's read and the insert are two awaited store calls: a racing submission may insert
  // between them. The insert checks the key in its transaction, and the later one replays.
  it('two submissions under one idempotency key at the same time create one request and replay it to the other', async () => {
    // both started before either is awaited
    const [one, two] = await Promise.all([submit(requestBody(), 'same-key'), submit(requestBody(), 'same-key')]);

    expect([one.status, two.status].sort()).toEqual([200, 201]);
    const ids = await Promise.all([one, two].map(async (r) => ((await r.json()) as { id: string }).id));
    expect(ids[0]).toBe(ids[1]);
    expect(await svc.store.listPending({})).toHaveLength(1);
  });

  it('a new request whose deadline already passed is a 400 problem+json', async () => {
    const p = await expectProblem(await submit(requestBody({ expires_at: new Date(T0 - 1).toISOString() })), 400, 'invalid-request');
    expect(p.detail).toContain('expires_at');
  });
});

describe('ARAP status, decision, cancel', () => {
  it('status of a pending request has no result; an unknown id is a 404 problem', async () => {
    const id = await submitOk();
    const res = await getStatus(id);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id, status: 'pending', expires_at: new Date(T0 + HOUR).toISOString() });
    await expectProblem(await getStatus('ar_unknown'), 404, 'not-found');
    await expectProblem(await svc.app.request(`/access/v1/requests/${id}`), 401, 'unauthorized');
  });

  it('a group member approves: approval material is valid for approvalValidityMs and the decision is audited', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    now = T0 + 60_000;
    const res = await decide(id, ['alice', 'alice-pw'], 'approve', 'looks right');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { approval: { id: string } } };
    const approval = {
      id: body.result.approval.id,
      approved_at: new Date(T0 + 60_000).toISOString(),
      approved_until: new Date(T0 + 60_000 + 2 * HOUR).toISOString(),
      state: 'approved',
      approvers: ['alice'],
    };
    expect(approval.id).toMatch(/^apv_[A-Za-z0-9_-]{22}$/);
    const status = { id, status: 'approved', expires_at: new Date(T0 + HOUR).toISOString(), result: { approval } };
    // the decision answer adds the quorum: how many approvals were needed and who gave them
    expect(body).toEqual({ ...status, required_approvals: 1, approvals: ['alice'] });
    expect(await (await getStatus(id)).json()).toEqual(status);
    expect((await svc.store.auditTrail(id)).map((e) => [e.event, e.actor, e.comment, e.atMs])).toEqual([
      ['submitted', 'dave', null, T0],
      ['approved', 'alice', 'looks right', T0 + 60_000],
    ]);
  });

  it('a group member denies: status denied without a result', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    const res = await decide(id, ['carol', 'carol-pw'], 'deny', 'no');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      id,
      status: 'denied',
      expires_at: new Date(T0 + HOUR).toISOString(),
      required_approvals: 1,
      approvals: [],
    });
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'denied', actor: 'carol', comment: 'no' });
  });

  it('a requester cannot approve their own request', async () => {
    const id = await submitOk(); // subject.sub = carol, carol is in treasury
    const p = await expectProblem(await decide(id, ['carol', 'carol-pw'], 'approve'), 403, 'forbidden');
    expect(p.detail).toContain('own');
    expect(await (await getStatus(id)).json()).toMatchObject({ status: 'pending' });
  });

  it('an actor in the requester delegation chain cannot approve the request either', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave', act: [{ sub: 'alice' }] } });
    await expectProblem(await decide(id, ['alice', 'alice-pw'], 'approve'), 403, 'forbidden');
  });

  it('an approver outside the group gets 403', async () => {
    const id = await submitOk();
    const p = await expectProblem(await decide(id, ['bob', 'bob-pw'], 'approve'), 403, 'forbidden');
    expect(p.detail).toContain('group');
  });

  it('wrong approver credentials get a 401 with a Basic challenge', async () => {
    const id = await submitOk();
    const res = await decide(id, ['alice', 'wrong'], 'approve');
    expect(res.headers.get('WWW-Authenticate')).toBe('Basic realm="countersign approvals"');
    await expectProblem(res, 401, 'unauthorized');
    const asClient = await svc.app.request(`/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...bearer },
      body: JSON.stringify({ decision: 'approve' }),
    });
    await expectProblem(asClient, 401, 'unauthorized');
  });

  it('an invalid decision body is a 400 problem+json', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    const res = await svc.app.request(`/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic('alice', 'alice-pw') },
      body: JSON.stringify({ decision: 'maybe', comment: 'x'.repeat(1001) }),
    });
    const p = await expectProblem(res, 400, 'invalid-request');
    expect(p.detail).toContain('decision');
    expect(p.detail).toContain('comment');
  });

  it('deciding a request that is no longer pending is a 409', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    expect((await decide(id, ['alice', 'alice-pw'], 'deny')).status).toBe(200);
    const p = await expectProblem(await decide(id, ['carol', 'carol-pw'], 'approve'), 409, 'not-pending');
    expect(p.detail).toContain('denied');
    await expectProblem(await decide('ar_unknown', ['alice', 'alice-pw'], 'approve'), 404, 'not-found');
  });

  it('cancel moves a pending request to cancelled, is idempotent, and is a 409 once decided', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    const cancel = (rid: string) => svc.app.request(`/access/v1/requests/${rid}/cancel`, { method: 'POST', headers: bearer });
    const first = await cancel(id);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ id, status: 'cancelled', expires_at: new Date(T0 + HOUR).toISOString() });
    const again = await cancel(id);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id, status: 'cancelled' });
    expect((await svc.store.auditTrail(id)).filter((e) => e.event === 'cancelled')).toHaveLength(1);
    await expectProblem(await decide(id, ['alice', 'alice-pw'], 'approve'), 409, 'not-pending');

    const approvedId = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } }, 'key-2');
    await decide(approvedId, ['alice', 'alice-pw'], 'approve');
    await expectProblem(await cancel(approvedId), 409, 'not-pending');
    await expectProblem(await cancel('ar_unknown'), 404, 'not-found');
  });

  it('unknown routes are a 404 problem+json', async () => {
    await expectProblem(await svc.app.request('/nope'), 404, 'not-found');
  });
});

describe('expiry and callbacks', () => {
  it('a pending request past its deadline reads as expired and fires a callback', async () => {
    const id = await submitOk();
    now = T0 + HOUR;
    const res = await getStatus(id);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id, status: 'expired', expires_at: new Date(T0 + HOUR).toISOString() });
    await sink.waitFor(1);
    expect(sink.calls[0]?.url).toBe('https://mcp.example.test/callbacks/approval');
    expect(JSON.parse(sink.calls[0]?.body ?? '')).toEqual({ request_id: id, status: 'expired', generation: 1 });
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'expired', actor: 'system', atMs: T0 + HOUR });
    // Persisted: reading again does not expire (or call back) twice.
    await getStatus(id);
    await svc.drainCallbacks();
    expect(sink.calls).toHaveLength(1);
  });

  it('a decision after the deadline is a 409 and the request is expired', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    now = T0 + HOUR + 1;
    const p = await expectProblem(await decide(id, ['alice', 'alice-pw'], 'approve'), 409, 'not-pending');
    expect(p.detail).toContain('expired');
  });

  it('sweep expires every due pending request with a callback and leaves the rest pending', async () => {
    const due = await submitOk({ generation: 3 });
    const later = await submitOk({ expires_at: new Date(T0 + 5 * HOUR).toISOString() }, 'key-2');
    now = T0 + 2 * HOUR;
    await svc.sweep();
    await svc.drainCallbacks();
    expect((await svc.store.get(due))?.status).toBe('expired');
    expect((await svc.store.get(later))?.status).toBe('pending');
    expect(sink.calls.map((c) => JSON.parse(c.body) as unknown)).toEqual([{ request_id: due, status: 'expired', generation: 3 }]);
  });

  it('callbacks carry a valid HMAC over timestamp, request target and body', async () => {
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' }, generation: 2 });
    now = T0 + 90_500;
    await decide(id, ['alice', 'alice-pw'], 'approve');
    await sink.waitFor(1);
    const call = sink.calls[0];
    expect(call).toBeDefined();
    if (call === undefined) return;
    expect(call.timestamp).toBe(String(Math.floor((T0 + 90_500) / 1000)));
    expect(call.signature).toMatch(/^v2=[0-9a-f]{64}$/);
    expect(JSON.parse(call.body)).toEqual({ request_id: id, status: 'approved', generation: 2 });
    const headers = { timestamp: call.timestamp, signature: call.signature };
    const target = new URL(call.url).pathname;
    expect(verifyCallback(CALLBACK_SECRET, target, call.body, headers, (T0 + 90_500) / 1000)).toEqual({ ok: true });
    expect(verifyCallback('another-secret', target, call.body, headers, (T0 + 90_500) / 1000)).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    // signed for its own callback URL: the same delivery checked as another URL's does not verify
    expect(verifyCallback(CALLBACK_SECRET, `${target}x`, call.body, headers, (T0 + 90_500) / 1000)).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    expect(call.body).not.toContain('acct-991');
  });

  it('a cancel and a denial each fire one callback; requests without callback_url fire none', async () => {
    const a = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    const b = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } }, 'key-2');
    const c = await submitOk({ callback_url: undefined }, 'key-3');
    await svc.app.request(`/access/v1/requests/${a}/cancel`, { method: 'POST', headers: bearer });
    await decide(b, ['alice', 'alice-pw'], 'deny');
    await svc.app.request(`/access/v1/requests/${c}/cancel`, { method: 'POST', headers: bearer });
    await svc.drainCallbacks();
    expect(sink.calls.map((x) => JSON.parse(x.body) as { request_id: string; status: string })).toEqual([
      { request_id: a, status: 'cancelled', generation: 1 },
      { request_id: b, status: 'denied', generation: 1 },
    ]);
  });

  it('a failing callback is retried, 3 attempts at most, and never fails the decision', async () => {
    sink = callbackSink(['throw', 500, 'throw', 500]);
    svc.close();
    svc = makeService();
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    const res = await decide(id, ['alice', 'alice-pw'], 'approve');
    expect(res.status).toBe(200);
    await svc.drainCallbacks();
    expect(sink.calls).toHaveLength(3);
    expect(new Set(sink.calls.map((c) => c.body)).size).toBe(1);
    expect((await svc.store.get(id))?.status).toBe('approved');
  });

  it('a callback that succeeds on its second attempt is not sent again', async () => {
    sink = callbackSink([503, 200]);
    svc.close();
    svc = makeService();
    const id = await submitOk({ subject: { iss: 'https://idp.example.test', sub: 'dave' } });
    await decide(id, ['alice', 'alice-pw'], 'deny');
    await svc.drainCallbacks();
    expect(sink.calls).toHaveLength(2);
  });
});

describe('verifyCallback', () => {
  const body = JSON.stringify({ request_id: 'ar_x', status: 'approved', generation: 1 });
  const at = 1_800_000_000;
  const target = `/callbacks/arap/approval-${'a'.repeat(32)}/1`;
  const signed = signCallback(CALLBACK_SECRET, target, body, at + 0.9);

  it('accepts a signature made with the same secret for the same request target within the window', () => {
    expect(signed.timestamp).toBe(String(at));
    expect(verifyCallback(CALLBACK_SECRET, target, body, signed, at + 299)).toEqual({ ok: true });
    expect(verifyCallback(CALLBACK_SECRET, target, body, signed, at - 299)).toEqual({ ok: true });
  });

  it('the signature is HMAC-SHA256 over "v2\\n<timestamp>\\n<request target>\\n<body>", the string docs/PRODUCTION.md §Callback signatures gives', () => {
    const hex = createHmac('sha256', CALLBACK_SECRET).update(`v2\n${at}\n${target}\n${body}`).digest('hex');
    expect(signed.signature).toBe(`v2=${hex}`);
    expect(callbackRequestTarget(`https://mcp.example.test:8787${target}?x=1`)).toBe(`${target}?x=1`);
  });

  it('verifyCallback rejects a stale timestamp', () => {
    expect(verifyCallback(CALLBACK_SECRET, target, body, signed, at + 301)).toEqual({ ok: false, reason: 'stale' });
    expect(verifyCallback(CALLBACK_SECRET, target, body, signed, at - 301)).toEqual({ ok: false, reason: 'stale' });
    expect(verifyCallback(CALLBACK_SECRET, target, body, signed, at + 30, 10)).toEqual({ ok: false, reason: 'stale' });
  });

  it('verifyCallback rejects a tampered body, a moved timestamp, a wrong secret and another request target (workflow or generation)', () => {
    const tampered = body.replace('approved', 'denied');
    expect(verifyCallback(CALLBACK_SECRET, target, tampered, signed, at)).toEqual({ ok: false, reason: 'bad-signature' });
    expect(verifyCallback(CALLBACK_SECRET, target, body, { ...signed, timestamp: String(at + 1) }, at)).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    expect(verifyCallback('other', target, body, signed, at)).toEqual({ ok: false, reason: 'bad-signature' });
    for (const other of [`/callbacks/arap/approval-${'b'.repeat(32)}/1`, target.replace(/1$/, '2'), `${target}?x=1`]) {
      expect(verifyCallback(CALLBACK_SECRET, other, body, signed, at)).toEqual({ ok: false, reason: 'bad-signature' });
    }
  });

  it('verifyCallback reports missing and malformed headers, and a signature of another scheme version', () => {
    expect(verifyCallback(CALLBACK_SECRET, target, body, {}, at)).toEqual({ ok: false, reason: 'missing' });
    expect(verifyCallback(CALLBACK_SECRET, target, body, { timestamp: signed.timestamp, signature: null }, at)).toEqual({
      ok: false,
      reason: 'missing',
    });
    expect(verifyCallback(CALLBACK_SECRET, target, body, { timestamp: 'soon', signature: signed.signature }, at)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(verifyCallback(CALLBACK_SECRET, target, body, { timestamp: signed.timestamp, signature: 'v2=abc' }, at)).toEqual({
      ok: false,
      reason: 'malformed',
    });
    // the retired v1 form (timestamp and body only), correctly computed, is refused as such
    const v1 = createHmac('sha256', CALLBACK_SECRET).update(`${at}.${body}`).digest('hex');
    expect(verifyCallback(CALLBACK_SECRET, target, body, { timestamp: signed.timestamp, signature: `v1=${v1}` }, at)).toEqual({
      ok: false,
      reason: 'unsupported-version',
    });
  });
});

describe('argument summaries', () => {
  it('summarizes arguments on one line and truncates long ones', () => {
    expect(summarizeArguments({ amount: 50000, to: 'acct-991' })).toBe('amount=50000 to=acct-991');
    expect(summarizeArguments({ memo: 'two words', nested: { a: 1 } })).toBe('memo="two words" nested={"a":1}');
    expect(summarizeArguments({ long: 'x'.repeat(500) }, 40)).toHaveLength(40);
  });
});

describe('store', () => {
  it('requests and their audit trail survive a restart on a database file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-approvals-'));
    try {
      svc.close();
      svc = makeService({ dbPath: join(dir, 'approvals.db') });
      const id = await submitOk();
      svc.close();
      svc = makeService({ dbPath: join(dir, 'approvals.db') });
      expect(await (await getStatus(id)).json()).toMatchObject({ id, status: 'pending' });
      const replay = await submit(requestBody());
      expect(replay.status).toBe(200);
      expect((await svc.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
    } finally {
      svc.close();
      svc = makeService();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('inbox session key (H2)', () => {
  it('the inbox session key is its own random secret in secrets.json, given to the approval service as sessionKey and never derived from the callback secret', () => {
    const machine = generateApprovalMachineSecrets();
    expect(machine.inboxSessionKey).toMatch(/^[\w-]{43}$/);
    expect(machine.inboxSessionKey).not.toBe(generateApprovalMachineSecrets().inboxSessionKey);
    const extras = approvalServiceExtras('/tmp/unused', { ...machine }, {});
    expect(extras.sessionKey).toBe(machine.inboxSessionKey);
  });
});

describe('the decisions read API (GET /access/v1/requests/:id/decisions), for evidence receipts', () => {
  const decisions = (id: string, headers: Record<string, string> = bearer) =>
    Promise.resolve(svc.app.request(`/access/v1/requests/${id}/decisions`, { headers }));

  it('answers the status, the quorum and each counted decision with its channel and time, as the ARAP schema says', async () => {
    const id = await submitOk();
    expect((await decide(id, ['alice', 'alice-pw'], 'approve', 'checked')).status).toBe(200);
    const res = await decisions(id);
    expect(res.status).toBe(200);
    const body = DecisionRecordBodySchema.parse(await res.json());
    expect(body).toEqual({
      id,
      status: 'approved',
      quorum: { required: 1, rule: null },
      decisions: [{ approver: 'alice', decision: 'approve', channel: 'api', at: new Date(T0).toISOString() }],
    });
  });

  it('a denial is a deny decision; a pending request has none; reading never expires the request', async () => {
    const denied = await submitOk({}, 'key-d');
    expect((await decide(denied, ['alice', 'alice-pw'], 'deny', 'no')).status).toBe(200);
    expect(DecisionRecordBodySchema.parse(await (await decisions(denied)).json()).decisions.map((d) => d.decision)).toEqual(['deny']);
    const pending = await submitOk({ binding_digest: 'b'.repeat(64) }, 'key-p');
    now = T0 + 2 * HOUR; // past its deadline: a status read would expire it, this read does not
    const body = DecisionRecordBodySchema.parse(await (await decisions(pending)).json());
    expect(body).toMatchObject({ status: 'pending', decisions: [] });
  });

  it('needs the client bearer token (401 problem+json) and answers 404 problem+json for an unknown request', async () => {
    const id = await submitOk();
    await expectProblem(await decisions(id, {}), 401, 'unauthorized');
    await expectProblem(await decisions(id, basic('alice', 'alice-pw')), 401, 'unauthorized');
    await expectProblem(await decisions('no-such-request'), 404, 'not-found');
  });
});
