// Scope: the ITSM integration end to end (real Temporal dev server, real HTTP, a real local HTTP
// receiver standing in for the ticketing system): signed notifications of new requests go out, a
// signed inbound decision resolves the task, and forged, misdirected, stale or self-approving
// decisions are refused without deciding anything.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { jwtVerify, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ITSM_DECISION_ISSUER, ITSM_NOTIFICATION_AUDIENCE } from '@countersign/approvals';
import { APPROVAL_RULES_FILE } from '@countersign/approvals';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

interface Received {
  contentType: string | undefined;
  body: string;
}
const received: Received[] = [];
const waiters: Array<() => void> = [];
let receiver: Server;
let stack: Stack;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      received.push({ contentType: req.headers['content-type'], body });
      for (const w of waiters.splice(0)) w();
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const config = testConfig();
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/tickets`;
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, APPROVAL_RULES_FILE),
    JSON.stringify({ itsm: { webhookUrl: url, groups: ['treasury'] } }),
  );
  stack = await startTestStack(config);
});
afterAll(async () => {
  await stack?.stop();
  await new Promise<void>((resolve) => receiver?.close(() => resolve()));
});

const key = () => new TextEncoder().encode(stack.secrets.itsmSecret);

/** Wait (event-driven) for the receiver to hold a notification about the request with `memo`. */
async function notificationFor(
  memo: string,
): Promise<{ raw: string; request: { id: string; arguments: Record<string, unknown>; summary: string } }> {
  for (;;) {
    for (const r of received) {
      const { payload } = await jwtVerify(r.body, key(), {
        audience: ITSM_NOTIFICATION_AUDIENCE,
        issuer: stack.urls.approvals,
        algorithms: ['HS256'],
      });
      const request = payload['request'] as { id: string; arguments: Record<string, unknown>; summary: string };
      if (request.arguments['memo'] === memo) return { raw: r.body, request };
    }
    await new Promise<void>((resolve) => waiters.push(resolve));
  }
}

function decision(
  claims: Record<string, unknown>,
  opts: { secret?: Uint8Array; audience?: string; issuer?: string; iat?: number } = {},
): Promise<string> {
  const iat = opts.iat ?? Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(opts.issuer ?? ITSM_DECISION_ISSUER)
    .setAudience(opts.audience ?? stack.urls.approvals)
    .setIssuedAt(iat)
    .setExpirationTime(iat + 300)
    .setJti(randomUUID())
    .sign(opts.secret ?? key());
}

const post = (body: string) =>
  fetch(`${stack.urls.approvals}/access/v1/itsm/decisions`, { method: 'POST', headers: { 'content-type': 'application/jwt' }, body });

describe('ITSM webhook', () => {
  it('a new request is sent to the ITSM URL as a JWS signed with the shared secret, with the arguments and a summary', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `itsm-${randomUUID().slice(0, 8)}`;
    await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } });
    const n = await notificationFor(m);
    expect(received.find((r) => r.body === n.raw)?.contentType).toBe('application/jwt');
    expect(n.request.summary).toBe(`Wire transfer · $50,000.00 USD to acct-991 · memo=${m}`);
    expect(n.request.arguments).toEqual({ to: 'acct-991', amount: 50_000, memo: m });
    await stack.approvals.drainCallbacks();
    expect((await stack.approvals.store.auditTrail(n.request.id)).map((e) => e.event)).toContain('notified');
  });

  it('a signed decision from the ITSM system by a configured approver resolves the task: approved-executed, itsm:<person> in the audit trail', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `itsm-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: m },
    });
    const { request } = await notificationFor(m);
    const res = await post(
      await decision({ request_id: request.id, decision: 'approve', decided_by: 'bob', comment: 'CHG-1234 approved' }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'approved', approvals: ['bob'] });
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect((await stack.approvals.store.auditTrail(request.id)).at(-1)).toMatchObject({
      event: 'approved',
      actor: 'itsm:bob',
      via: 'itsm',
      comment: 'CHG-1234 approved',
    });
  });

  it('forged, misdirected, stale, unsigned and replayed-notification decisions are refused with 401, and a self-approval with 403; the task keeps waiting', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `itsm-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: m },
    });
    const { raw, request } = await notificationFor(m);
    const claims = { request_id: request.id, decision: 'approve', decided_by: 'bob' };
    const refusals = [
      await decision(claims, { secret: new TextEncoder().encode('not-the-shared-secret') }),
      await decision(claims, { audience: 'https://some-other-service.example' }),
      await decision(claims, { issuer: 'urn:someone-else' }),
      await decision(claims, { iat: Math.floor(Date.now() / 1000) - 3600 }),
      new UnsecuredJWT(claims)
        .setIssuer(ITSM_DECISION_ISSUER)
        .setAudience(stack.urls.approvals)
        .setIssuedAt()
        .setExpirationTime('5m')
        .encode(),
      raw, // the outgoing notification replayed as a decision
      'not a jws',
    ];
    for (const body of refusals) {
      const res = await post(body);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ type: 'urn:countersign:problem:unauthorized' });
    }
    const self = await post(await decision({ ...claims, decided_by: 'alice' }));
    expect(self.status).toBe(403);
    expect((await stack.approvals.store.get(request.id))?.status).toBe('pending');
    expect((await stack.approvals.store.auditTrail(request.id)).map((e) => e.event)).not.toContain('approved');
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
    // a genuine denial still works afterwards
    expect((await post(await decision({ ...claims, decision: 'deny' }))).status).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
  });
});
