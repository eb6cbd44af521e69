// Scope: passkey step-up challenges at the approval service's inbox, over its real HTTP app
// in-process, with a software authenticator whose signature counter stays 0 (as many synced
// passkeys do, where the counter check proves nothing): each decision attempt gets its own
// server-issued challenge, bound to the request and its binding digest, expiring, consumed on
// use, so a captured assertion approves nothing else (src/inbox/passkeys.ts).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { STEP_UP_CHALLENGE_MS } from '../src/inbox/passkeys.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';
import { softwareAuthenticator, type SoftwareAuthenticator } from './software-authenticator.js';

const ORIGIN = 'http://localhost:8788';
let clock = Date.parse('2026-12-01T09:00:00Z');
let svc: ApprovalService;
let bob: { cookie: string; csrf: string };
let authenticator: SoftwareAuthenticator;

/** One request to the service's app, as a same-origin browser would send it (cookie, Origin). */
async function send(path: string, init: RequestInit & { cookie?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.cookie) headers.set('cookie', init.cookie);
  if (init.method === 'POST') headers.set('origin', ORIGIN);
  return svc.app.fetch(new Request(`${ORIGIN}${path}`, { ...init, headers }));
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

async function signIn(id: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await send('/approver/login', form({ id, password }));
  expect(res.status).toBe(303);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const page = await (await send('/approver/passkeys', { cookie })).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeDefined();
  return { cookie, csrf: csrf! };
}

/** Submit the identical $400,000 call (one binding digest) under a new idempotency key; its request id. */
async function submitIdenticalCall(key: string): Promise<string> {
  const res = await send('/access/v1/requests', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount: 400_000, memo: 'identical' } },
      approver_group: 'treasury',
      reason: 'Transfers over $250,000 need a passkey.',
      expires_at: new Date(clock + 3_600_000).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** The options a decision attempt on request `id` starts with (what the page's script fetches). */
async function stepUpOptions(id: string): Promise<{ challenge: string }> {
  const res = await send(`/approver/requests/${id}/step-up-options`, { cookie: bob.cookie });
  expect(res.status).toBe(200);
  return (await res.json()) as { challenge: string };
}

/** Post "Approve with passkey" for `id` with `assertion`; the flash the inbox answers with. */
async function approveWith(id: string, assertion: unknown): Promise<string | null> {
  const res = await send(`/approver/requests/${id}/decision`, {
    ...form({ csrf: bob.csrf, decision: 'approve', webauthn: JSON.stringify(assertion) }),
    cookie: bob.cookie,
  });
  expect(res.status).toBe(303);
  return new URL(res.headers.get('location')!, ORIGIN).searchParams.get('flash');
}

beforeAll(async () => {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [{ id: 'bob', secret: 'bob-pw', groups: ['treasury'] }],
    publicBaseUrl: ORIGIN,
    now: () => clock,
    logger: pino({ level: 'silent' }),
    rules: parseApprovalRules(
      JSON.stringify({ stepUp: [{ id: 'passkey-over-250k', group: 'treasury', when: [{ field: 'arguments.amount', gt: 250_000 }] }] }),
    ),
  });
  bob = await signIn('bob', 'bob-pw');
  authenticator = softwareAuthenticator({ rpID: 'localhost', origin: ORIGIN });
  const options = (await (await send('/approver/passkeys/registration-options', { cookie: bob.cookie })).json()) as { challenge: string };
  const registered = await send('/approver/passkeys', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ csrf: bob.csrf, response: authenticator.register(options) }),
    cookie: bob.cookie,
  });
  expect(registered.status).toBe(201);
});
afterAll(() => svc?.close());

describe('step-up challenges', () => {
  it("a captured assertion (counter 0) does not approve a later request for the identical call: bob's session, no device, the second request stays pending", async () => {
    const first = await submitIdenticalCall('replay-1');
    const captured = authenticator.assert(await stepUpOptions(first));
    expect(await approveWith(first, captured)).toBe('approved');

    const second = await submitIdenticalCall('replay-2');
    expect((await svc.store.get(second))?.body.binding_digest).toBe((await svc.store.get(first))?.body.binding_digest);
    expect(await approveWith(second, captured)).toBe('step-up-failed');
    await stepUpOptions(second); // the attacker may even start a ceremony: the new challenge is not the one signed
    expect(await approveWith(second, captured)).toBe('step-up-failed');
    expect((await svc.store.get(second))?.status).toBe('pending');
    expect(await svc.store.votes(second)).toEqual([]);
    // the first approval's proof names what its challenge was issued for
    expect((await svc.store.votes(first))[0]?.stepUp).toMatchObject({
      binding_digest: 'd'.repeat(64),
      request_id: first,
      rule: 'passkey-over-250k',
    });
  });

  it('each challenge is single use: an assertion that failed once cannot be posted again, and a fresh one approves', async () => {
    const id = await submitIdenticalCall('single-use');
    const options = await stepUpOptions(id);
    const signed = authenticator.assert(options);
    const wrongApprover = await send(`/approver/requests/${id}/decision`, {
      ...form({ csrf: bob.csrf, decision: 'approve', webauthn: JSON.stringify({ ...signed, id: 'not-a-passkey' }) }),
      cookie: bob.cookie,
    });
    expect(new URL(wrongApprover.headers.get('location')!, ORIGIN).searchParams.get('flash')).toBe('step-up-failed');
    expect(await approveWith(id, signed)).toBe('step-up-failed'); // its challenge was consumed by the failed attempt
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(await approveWith(id, authenticator.assert(await stepUpOptions(id)))).toBe('approved');
  });

  it('a challenge expires: an assertion over one issued more than two minutes ago is refused', async () => {
    const id = await submitIdenticalCall('expiry');
    const options = await stepUpOptions(id);
    clock += STEP_UP_CHALLENGE_MS + 1;
    expect(await approveWith(id, authenticator.assert(options))).toBe('step-up-failed');
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a challenge is bound to its request: one issued for another request does not approve this one', async () => {
    const a = await submitIdenticalCall('bound-a');
    const b = await submitIdenticalCall('bound-b');
    const forA = authenticator.assert(await stepUpOptions(a));
    await stepUpOptions(b);
    expect(await approveWith(b, forA)).toBe('step-up-failed');
    expect((await svc.store.get(b))?.status).toBe('pending');
  });
});
