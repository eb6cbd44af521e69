// Scope: the ARAP HTTP adapter (src/backends/arap-http-backend.ts) against the real reference Access Request Service over real HTTP, plus tiny real servers for failure modes and signed callbacks.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyCallback } from '@countersign/arap';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { BackendError, type SubmissionBody } from '../../src/backends/approval-backend.js';
import { createArapHttpBackend } from '../../src/backends/arap-http-backend.js';

const CLIENT_TOKEN = 'adapter-test-client-token';
const CALLBACK_SECRET = 'adapter-test-callback-secret';

let svc: ApprovalService;
let http: ServerType;
let baseUrl: string;
let keySeq = 0;
const extraServers: Server[] = [];

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

function closeServer(server: ServerType | Server): Promise<void> {
  return new Promise((resolve) => {
    if ('closeAllConnections' in server) server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** A tiny real HTTP server answering every request with `handler`. */
async function tinyServer(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<string> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => handler(req, res, body));
  });
  extraServers.push(server);
  return listen(server);
}

function submission(over: Partial<SubmissionBody> = {}): SubmissionBody {
  return {
    tool: 'wire_transfer',
    arguments: { amount: 50000, to: 'acct-991' },
    requester: { iss: 'https://idp.example.test', sub: 'dave', act: [{ sub: 'agent-7' }] },
    approverGroup: 'treasury',
    reason: 'Transfers over 10000 need treasury approval',
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    bindingDigest: 'b'.repeat(64),
    generation: 1,
    ...over,
  };
}

const backend = () => createArapHttpBackend({ baseUrl: `${baseUrl}/`, clientToken: CLIENT_TOKEN });
const freshKey = () => `idem-${(keySeq += 1)}`;

async function decideOverHttp(requestId: string, decision: 'approve' | 'deny'): Promise<Response> {
  return fetch(`${baseUrl}/access/v1/requests/${requestId}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}` },
    body: JSON.stringify({ decision }),
  });
}

async function expectBackendError(p: Promise<unknown>, code: BackendError['code'], retryable: boolean, message?: RegExp): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BackendError);
  const be = err as BackendError;
  expect(be.code).toBe(code);
  expect(be.retryable).toBe(retryable);
  if (message !== undefined) expect(be.message).toMatch(message);
  expect(be.message).not.toContain(CLIENT_TOKEN);
  expect(be.message).not.toContain('acct-991');
}

beforeAll(async () => {
  http = serve({ fetch: (req) => svc.app.fetch(req), port: 0, hostname: '127.0.0.1' });
  baseUrl = await new Promise<string>((resolve) => {
    const s = http as Server;
    if (s.listening) resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`);
    else s.once('listening', () => resolve(`http://127.0.0.1:${(s.address() as AddressInfo).port}`));
  });
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: CALLBACK_SECRET,
    approvers: [{ id: 'alice', secret: 'alice-pw', groups: ['treasury'] }],
    publicBaseUrl: baseUrl,
    logger: pino({ level: 'silent' }),
    callbackDelivery: { maxAttempts: 3, baseDelayMs: 0 },
  });
});

afterEach(async () => {
  await Promise.all(extraServers.splice(0).map(closeServer));
});

afterAll(async () => {
  await svc.drainCallbacks();
  await closeServer(http);
  svc.close();
});

describe('ARAP HTTP adapter against the reference service', () => {
  it('submit sends the snake_case wire body and returns an absolute, resumable handle', async () => {
    const b = backend();
    const body = submission();
    const handle = await b.submit(body, freshKey());
    expect(handle.requestId).toMatch(/^ar_/);
    expect(handle).toEqual({
      requestId: handle.requestId,
      statusUrl: `${baseUrl}/access/v1/requests/${handle.requestId}`,
      cancelUrl: `${baseUrl}/access/v1/requests/${handle.requestId}/cancel`,
      expiresAt: body.expiresAt,
    });
    const stored = await svc.store.get(handle.requestId);
    expect(stored?.body).toEqual({
      subject: { iss: 'https://idp.example.test', sub: 'dave', act: [{ sub: 'agent-7' }] },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { amount: 50000, to: 'acct-991' } },
      approver_group: 'treasury',
      reason: 'Transfers over 10000 need treasury approval',
      expires_at: body.expiresAt,
      binding_digest: 'b'.repeat(64),
      generation: 1,
    });
    expect(await b.status(handle)).toEqual({ state: 'pending', expiresAt: body.expiresAt });
  });

  it('re-submitting under the same key with the same body returns the same handle', async () => {
    const b = backend();
    const key = freshKey();
    const body = submission();
    const first = await b.submit(body, key);
    const second = await b.submit({ ...body }, key);
    expect(second).toEqual(first);
  });

  it('the same key with a different body is a non-retryable conflict', async () => {
    const b = backend();
    const key = freshKey();
    await b.submit(submission(), key);
    await expectBackendError(b.submit(submission({ arguments: { amount: 1, to: 'acct-991' } }), key), 'conflict', false, /409/);
  });

  it('a wrong client token is a non-retryable unauthorized error', async () => {
    const b = createArapHttpBackend({ baseUrl, clientToken: 'wrong-token' });
    await expectBackendError(b.submit(submission(), freshKey()), 'unauthorized', false, /401/);
  });

  it('an invalid submission is a non-retryable invalid error carrying the problem detail', async () => {
    await expectBackendError(backend().submit(submission({ generation: 0 }), freshKey()), 'invalid', false, /400.*generation/);
  });

  it('an approval reads back as camelCase approval material', async () => {
    const b = backend();
    const handle = await b.submit(submission(), freshKey());
    const res = await decideOverHttp(handle.requestId, 'approve');
    expect(res.status).toBe(200);
    const wire = (await res.json()) as { result: { approval: { id: string; approved_at: string; approved_until: string } } };
    const a = wire.result.approval;
    expect(await b.status(handle)).toEqual({
      state: 'approved',
      approval: { id: a.id, approvedAt: a.approved_at, approvedUntil: a.approved_until, state: 'approved', approvers: ['alice'] },
    });
    expect(Date.parse(a.approved_until) - Date.parse(a.approved_at)).toBe(24 * 3_600_000);
  });

  it('a denial reads back as denied', async () => {
    const b = backend();
    const handle = await b.submit(submission(), freshKey());
    expect((await decideOverHttp(handle.requestId, 'deny')).status).toBe(200);
    expect(await b.status(handle)).toEqual({ state: 'denied' });
  });

  it("the policy's narrowable spec reaches the service, and a narrowed request reads back denied with its counter-proposal", async () => {
    const b = backend();
    const handle = await b.submit(submission({ narrowable: { amount: 'max' } }), freshKey());
    const res = await fetch(`${baseUrl}/access/v1/requests/${handle.requestId}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}` },
      body: JSON.stringify({ decision: 'narrow', proposed_arguments: { amount: 20_000, to: 'acct-991' } }),
    });
    expect(res.status).toBe(200);
    const status = await b.status(handle);
    expect(status).toMatchObject({
      state: 'denied',
      counterProposal: { tool: 'wire_transfer', arguments: { amount: 20_000, to: 'acct-991' } },
    });
    expect(status.state === 'denied' && Date.parse(status.counterProposal?.expiresAt ?? '')).toBeGreaterThan(Date.now());
  });

  it('cancel returns true for a pending (and an already cancelled) request and false once decided', async () => {
    const b = backend();
    const handle = await b.submit(submission(), freshKey());
    expect(await b.cancel(handle)).toBe(true);
    expect(await b.status(handle)).toEqual({ state: 'cancelled' });
    expect(await b.cancel(handle)).toBe(true);
    const approved = await b.submit(submission(), freshKey());
    await decideOverHttp(approved.requestId, 'approve');
    expect(await b.cancel(approved)).toBe(false);
  });

  it('cancel without a cancel endpoint returns false without calling the backend', async () => {
    const b = createArapHttpBackend({
      baseUrl,
      clientToken: CLIENT_TOKEN,
      fetch: (() => Promise.reject(new Error('must not be called'))) as typeof fetch,
    });
    expect(
      await b.cancel({ requestId: 'ar_x', statusUrl: `${baseUrl}/access/v1/requests/ar_x`, expiresAt: new Date().toISOString() }),
    ).toBe(false);
  });

  it('status of an unknown request is a non-retryable not-found error', async () => {
    const handle = { requestId: 'ar_nope', statusUrl: `${baseUrl}/access/v1/requests/ar_nope`, expiresAt: new Date().toISOString() };
    await expectBackendError(backend().status(handle), 'not-found', false, /404/);
  });

  it('an approved status callback arrives signed and verifies, then status is authoritative', async () => {
    type Delivered = { target: string; body: string; timestamp: string | undefined; signature: string | undefined };
    let deliver: (v: Delivered) => void = () => undefined;
    const received = new Promise<Delivered>((r) => (deliver = r));
    const receiver = await tinyServer((req, res, body) => {
      res.writeHead(204).end();
      deliver({
        target: req.url ?? '',
        body,
        timestamp: req.headers['x-countersign-timestamp'] as string | undefined,
        signature: req.headers['x-countersign-signature'] as string | undefined,
      });
    });
    const b = backend();
    const handle = await b.submit(submission({ callbackUrl: `${receiver}/callbacks/approval`, generation: 4 }), freshKey());
    await decideOverHttp(handle.requestId, 'approve');
    const cb = await received;
    expect(JSON.parse(cb.body)).toEqual({ request_id: handle.requestId, status: 'approved', generation: 4 });
    // the request target on the wire is the one signed
    expect(cb.target).toBe('/callbacks/approval');
    expect(verifyCallback(CALLBACK_SECRET, cb.target, cb.body, cb, Date.now() / 1000)).toEqual({ ok: true });
    expect(verifyCallback(CALLBACK_SECRET, cb.target, cb.body.replace('approved', 'denied'), cb, Date.now() / 1000)).toEqual({
      ok: false,
      reason: 'bad-signature',
    });
    expect((await b.status(handle)).state).toBe('approved');
  });
});

describe('ARAP HTTP adapter failure modes', () => {
  const handleAt = (url: string) => ({
    requestId: 'ar_x',
    statusUrl: `${url}/access/v1/requests/ar_x`,
    expiresAt: new Date().toISOString(),
  });

  it('a 5xx is a retryable unavailable error carrying the problem title', async () => {
    const url = await tinyServer((_req, res) => {
      res
        .writeHead(503, { 'Content-Type': 'application/problem+json' })
        .end(JSON.stringify({ title: 'Down for maintenance', status: 503 }));
    });
    const b = createArapHttpBackend({ baseUrl: url, clientToken: CLIENT_TOKEN });
    await expectBackendError(b.submit(submission(), freshKey()), 'unavailable', true, /503.*Down for maintenance/);
    await expectBackendError(b.status(handleAt(url)), 'unavailable', true, /503/);
    await expectBackendError(b.cancel({ ...handleAt(url), cancelUrl: `${url}/c` }), 'unavailable', true, /503/);
  });

  it('a malformed response is a retryable unavailable error with a clear message', async () => {
    const url = await tinyServer((req, res) => {
      if (req.url === '/access/v1/requests/ar_x') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ id: 'ar_x', status: 'approved' }));
      } else if (req.url === '/access/v1/requests/ar_other') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ id: 'ar_y', status: 'denied' }));
      } else if (req.url === '/access/v1/requests/ar_twice') {
        // valid under the schema if read last-wins: approved, with an approval
        const approval = {
          id: 'ap_1',
          approved_at: new Date().toISOString(),
          approved_until: new Date(Date.now() + 60_000).toISOString(),
          state: 'approved',
        };
        res
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(`{"id":"ar_twice","status":"denied","status":"approved","result":{"approval":${JSON.stringify(approval)}}}`);
      } else if (req.url === '/access/v1/requests') {
        res.writeHead(201, { 'Content-Type': 'application/json' }).end(JSON.stringify({ id: 7, status: 'pending' }));
      } else {
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>hello</html>');
      }
    });
    const b = createArapHttpBackend({ baseUrl: url, clientToken: CLIENT_TOKEN });
    await expectBackendError(b.submit(submission(), freshKey()), 'unavailable', true, /malformed ARAP submit response.*id/);
    await expectBackendError(b.status(handleAt(url)), 'unavailable', true, /approved without result\.approval/);
    await expectBackendError(
      b.status({ ...handleAt(url), requestId: 'ar_other', statusUrl: `${url}/access/v1/requests/ar_other` }),
      'unavailable',
      true,
      /id does not match/,
    );
    await expectBackendError(b.status({ ...handleAt(url), statusUrl: `${url}/html` }), 'unavailable', true, /not JSON/);
    await expectBackendError(
      b.status({ ...handleAt(url), requestId: 'ar_twice', statusUrl: `${url}/access/v1/requests/ar_twice` }),
      'unavailable',
      true,
      /malformed ARAP status response \(HTTP 200\): duplicate object key at \$\.status/,
    );
  });

  it('a network error is a retryable unavailable error', async () => {
    const url = await tinyServer((_req, res) => res.end());
    const closed = extraServers.pop();
    if (closed !== undefined) await closeServer(closed);
    const b = createArapHttpBackend({ baseUrl: url, clientToken: CLIENT_TOKEN });
    await expectBackendError(b.submit(submission(), freshKey()), 'unavailable', true, /network error/);
  });

  it('a backend that never answers times out as a retryable unavailable error', async () => {
    let arrived: () => void = () => undefined;
    const requestArrived = new Promise<void>((r) => (arrived = r));
    const url = await tinyServer(() => arrived()); // never responds
    const b = createArapHttpBackend({ baseUrl: url, clientToken: CLIENT_TOKEN, timeoutMs: 100 });
    const pending = b.status(handleAt(url));
    await requestArrived;
    await expectBackendError(pending, 'unavailable', true, /timed out after 100 ms/);
  });

  it('a failed status carries the backend message', async () => {
    const url = await tinyServer((_req, res) => {
      res
        .writeHead(200, { 'Content-Type': 'application/json' })
        .end(JSON.stringify({ id: 'ar_x', status: 'failed', error: { message: 'ticketing system rejected the request' } }));
    });
    const b = createArapHttpBackend({ baseUrl: url, clientToken: CLIENT_TOKEN });
    expect(await b.status(handleAt(url))).toEqual({ state: 'failed', message: 'ticketing system rejected the request' });
  });
});
