// Scope: delivery of the approval service's status-change callbacks (packages/approvals/src/api/callbacks.ts
// and the outbox in packages/approvals/src/store/) to real HTTP receivers: retried with backoff until
// delivered once, given up after the budget, the decision answered while the receiver hangs, a slow
// receiver not holding up another, and a restart of the service resuming what was not delivered.
// The backoff schedule as a pure function with an injected random source.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { callbackRetryDelayMs, DEFAULT_CALLBACK_DELIVERY, type CallbackDeliveryPolicy } from '@countersign/approvals';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { verifyCallback } from '@countersign/arap';
import { createAppMetrics } from '../../src/ops/metrics.js';

const CLIENT_TOKEN = 'client-token';
const SECRET = 'callback-secret';

/** What a receiver does with one callback: answer with a status, or never answer. */
type Behaviour = number | 'hang';

interface Received {
  body: string;
  requestId: string;
  signatureOk: boolean;
  answered: number | null;
}

/** A real HTTP callback receiver; `script` decides each answer in turn, then `after`. */
async function receiver(script: Behaviour[], after: Behaviour = 204) {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  let open = 0;
  let maxOpen = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const signature = {
        timestamp: String(req.headers['x-countersign-timestamp'] ?? ''),
        signature: String(req.headers['x-countersign-signature'] ?? ''),
      };
      const entry: Received = {
        body,
        requestId: (JSON.parse(body) as { request_id: string }).request_id,
        signatureOk: verifyCallback(SECRET, req.url ?? '', body, signature, Date.now() / 1000).ok,
        answered: null,
      };
      received.push(entry);
      const behaviour = script.length > 0 ? script.shift()! : after;
      if (behaviour === 'hang') {
        open += 1;
        maxOpen = Math.max(maxOpen, open);
        hanging.add(res);
        res.on('close', () => {
          if (hanging.delete(res)) open -= 1;
        });
        return;
      }
      entry.answered = behaviour;
      res.writeHead(behaviour).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks/arap`;
  const r = {
    url,
    received,
    /** Requests being held open right now, and the most ever held at once. */
    open: () => open,
    maxOpen: () => maxOpen,
    /** From now on answer every callback with `status` (held ones stay held). */
    answerAll(status: number) {
      script.length = 0;
      after = status;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  cleanups.push(() => r.close());
  return r;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function service(over: { dbPath?: string; policy?: Partial<CallbackDeliveryPolicy>; now?: () => number; random?: () => number } = {}) {
  const svc = createApprovalService({
    dbPath: over.dbPath ?? ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: SECRET,
    approvers: [{ id: 'bob', secret: 'bob-pw', groups: ['treasury'] }],
    publicBaseUrl: 'http://approvals.example.test',
    logger: pino({ level: 'silent' }),
    callbackDelivery: { baseDelayMs: 1, maxDelayMs: 5, attemptTimeoutMs: 2_000, ...over.policy },
    ...(over.now ? { now: over.now } : {}),
    ...(over.random ? { callbackRandom: over.random } : {}),
  });
  cleanups.push(() => svc.close());
  return svc;
}

let seq = 0;
async function submit(svc: ApprovalService, callbackUrl: string): Promise<string> {
  seq += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `cb-${seq}`, Authorization: `Bearer ${CLIENT_TOKEN}` },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-1', amount: 40_000 } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
      callback_url: callbackUrl,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function approve(svc: ApprovalService, id: string): Promise<Response> {
  return svc.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from('bob:bob-pw').toString('base64')}` },
    body: JSON.stringify({ decision: 'approve' }),
  });
}

/** Wait (polling every 10 ms, at most 20 s) until `condition` holds. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i += 1) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never happened: ${what}`);
}

const rowOf = async (svc: ApprovalService, id: string) => (await svc.store.callbacks.forRequest(id))[0];

describe('callback delivery', () => {
  it('a receiver that fails three times and then succeeds gets the callback delivered exactly once, with the same signed body each time', async () => {
    const r = await receiver([503, 500, 503]);
    const svc = service();
    const id = await submit(svc, r.url);
    expect((await approve(svc, id)).status).toBe(200);
    await until(async () => (await rowOf(svc, id))?.state === 'delivered', 'delivered');
    await svc.drainCallbacks();

    expect(r.received.map((x) => x.answered)).toEqual([503, 500, 503, 204]);
    expect(new Set(r.received.map((x) => x.body))).toEqual(
      new Set([JSON.stringify({ request_id: id, status: 'approved', generation: 1 })]),
    );
    expect(r.received.every((x) => x.signatureOk)).toBe(true);
    expect(await rowOf(svc, id)).toMatchObject({ state: 'delivered', attempts: 4, status: 'approved' });
    expect(await svc.store.callbacks.nextDueAtMs()).toBeNull();
  });

  it('after the attempt budget the callback is given up, recorded so and counted on /metrics; the request stays decided', async () => {
    const r = await receiver([], 500);
    const svc = service({ policy: { maxAttempts: 3 } });
    const id = await submit(svc, r.url);
    await approve(svc, id);
    await until(async () => (await rowOf(svc, id))?.state === 'gave-up', 'given up');
    expect(r.received).toHaveLength(3);
    expect(await rowOf(svc, id)).toMatchObject({ state: 'gave-up', attempts: 3, lastFailure: 'HTTP 500' });
    expect((await svc.store.get(id))?.status).toBe('approved');
    // Operators see it on /metrics.
    const metrics = createAppMetrics();
    metrics.setCallbackOutboxSource(async () => await svc.store.callbacks.counts());
    const text = await metrics.registry.metrics();
    expect(text).toContain('countersign_callback_outbox{state="gave-up"} 1');
    expect(text).toContain('countersign_callback_outbox{state="pending"} 0');
  });

  it('a receiver that refuses for good (409: it already has this callback) is not asked again; 429 and 408 are retried', async () => {
    const r = await receiver([409]);
    const busy = await receiver([429, 408]);
    const svc = service();
    const refused = await submit(svc, r.url);
    const retried = await submit(svc, busy.url);
    await approve(svc, refused);
    await approve(svc, retried);
    await until(
      async () => (await rowOf(svc, refused))?.state === 'refused' && (await rowOf(svc, retried))?.state === 'delivered',
      'both settled',
    );
    await svc.drainCallbacks();
    expect(r.received).toHaveLength(1);
    expect(await rowOf(svc, refused)).toMatchObject({ attempts: 1, lastFailure: 'HTTP 409' });
    expect(busy.received.map((x) => x.answered)).toEqual([429, 408, 204]);
  });

  it('the decision is answered, and recorded, while the receiver hangs; the timed-out attempt is retried and delivered once the receiver answers', async () => {
    const r = await receiver(['hang']);
    const svc = service({ policy: { attemptTimeoutMs: 300 } });
    const id = await submit(svc, r.url);
    const res = await approve(svc, id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('approved');
    expect((await svc.store.get(id))?.status).toBe('approved');
    // The callback reaches the receiver and is held there, unanswered, after the decision returned.
    await until(() => r.open() === 1, 'callback held by the receiver');
    expect(r.received.filter((x) => x.answered !== null)).toHaveLength(0);

    await until(async () => (await rowOf(svc, id))?.state === 'delivered', 'delivered after the hang');
    expect(r.received.map((x) => x.answered)).toEqual([null, 204]);
    expect(await rowOf(svc, id)).toMatchObject({ attempts: 2 });
  });

  it('a receiver that hangs holds at most its per-receiver share of attempts; callbacks to another receiver are delivered meanwhile', async () => {
    const slow = await receiver([], 'hang');
    const fast = await receiver([]);
    const svc = service({ policy: { concurrency: 4, perReceiverConcurrency: 2, attemptTimeoutMs: 60_000 } });
    const slowIds: string[] = [];
    // Many more callbacks due for the slow receiver than there are slots: they must not crowd out the fast one.
    for (let i = 0; i < 40; i += 1) slowIds.push(await submit(svc, slow.url));
    for (const id of slowIds) await approve(svc, id);
    await until(() => slow.open() === 2, 'two callbacks held by the slow receiver');

    const fastIds = [await submit(svc, fast.url), await submit(svc, fast.url)];
    for (const id of fastIds) await approve(svc, id);
    const states = (ids: string[]) => Promise.all(ids.map(async (id) => (await rowOf(svc, id))?.state));
    await until(async () => (await states(fastIds)).every((s) => s === 'delivered'), 'fast receiver served');

    expect(slow.maxOpen()).toBe(2);
    expect(slow.received).toHaveLength(2);
    expect(await states(slowIds)).toEqual(Array(40).fill('pending'));
  });

  it('a restart of the service resumes the deliveries that were waiting for a retry or in flight when it stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-outbox-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const dbPath = join(dir, 'approvals.db');
    const r = await receiver([503, 'hang']);
    // Before the restart: the first callback fails and waits 30 s for its retry; the second is held in flight.
    const first = service({ dbPath, random: () => 0.5, policy: { baseDelayMs: 60_000, maxDelayMs: 60_000, attemptTimeoutMs: 60_000 } });
    const waiting = await submit(first, r.url);
    await approve(first, waiting);
    await until(async () => (await rowOf(first, waiting))?.attempts === 1, 'first attempt failed');
    const inFlight = await submit(first, r.url);
    await approve(first, inFlight);
    await until(() => r.open() === 1, 'second callback in flight');
    first.close();

    r.answerAll(204);
    // After the restart, later than the retry and the in-flight attempt's lease.
    const second = service({ dbPath, now: () => Date.now() + 120_000 });
    await until(
      async () => (await Promise.all([waiting, inFlight].map((id) => rowOf(second, id)))).every((row) => row?.state === 'delivered'),
      'both delivered after restart',
    );
    expect(
      r.received
        .filter((x) => x.answered === 204)
        .map((x) => x.requestId)
        .sort(),
    ).toEqual([waiting, inFlight].sort());
    expect(await rowOf(second, waiting)).toMatchObject({ attempts: 2 });
  });
});

describe('callbackRetryDelayMs', () => {
  const policy = { baseDelayMs: 500, maxDelayMs: 60_000 };

  it('with the lowest random draw the next attempt is immediate, whatever the attempt', () => {
    for (let n = 1; n <= 12; n += 1) expect(callbackRetryDelayMs(n, policy, () => 0)).toBe(0);
  });

  it('the delay bound doubles per failed attempt from the base and stops at the cap', () => {
    const top = (n: number) => callbackRetryDelayMs(n, policy, () => 0.999999999);
    expect(top(1)).toBeLessThan(policy.baseDelayMs);
    for (let n = 2; n <= 7; n += 1) {
      expect(top(n)).toBeGreaterThan(top(n - 1) * 1.9);
      expect(top(n)).toBeLessThan(policy.baseDelayMs * 2 ** (n - 1));
    }
    for (let n = 8; n <= 60; n += 1) {
      expect(top(n)).toBeLessThan(policy.maxDelayMs);
      expect(top(n)).toBeGreaterThan(policy.maxDelayMs * 0.99);
    }
  });

  it('full jitter spreads the delays over the whole range, and the same random draws give the same schedule', () => {
    /** A small deterministic generator (LCG) in [0, 1). */
    const seeded = (seed: number) => () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const draw = (seed: number) => {
      const random = seeded(seed);
      return Array.from({ length: 200 }, () => callbackRetryDelayMs(9, policy, random));
    };
    const delays = draw(42);
    expect(draw(42)).toEqual(delays);
    expect(Math.min(...delays)).toBeLessThan(policy.maxDelayMs * 0.1);
    expect(Math.max(...delays)).toBeGreaterThan(policy.maxDelayMs * 0.9);
    expect(delays.every((d) => Number.isInteger(d) && d >= 0 && d < policy.maxDelayMs)).toBe(true);
  });

  it('refuses an attempt count that is not a positive integer', () => {
    for (const n of [0, -1, 1.5, Number.NaN]) expect(() => callbackRetryDelayMs(n, policy)).toThrow(RangeError);
  });

  it('the documented defaults keep retrying one callback for about 16 hours on average, and at most about 32', () => {
    const waited = (random: () => number) =>
      Array.from({ length: DEFAULT_CALLBACK_DELIVERY.maxAttempts - 1 }, (_, i) =>
        callbackRetryDelayMs(i + 1, DEFAULT_CALLBACK_DELIVERY, random),
      ).reduce((a, b) => a + b, 0);
    const HOUR = 3_600_000;
    expect(waited(() => 0.5) / HOUR).toBeGreaterThan(15.5);
    expect(waited(() => 0.5) / HOUR).toBeLessThan(16.1);
    expect(waited(() => 0.999999999) / HOUR).toBeGreaterThan(31);
    expect(waited(() => 0.999999999) / HOUR).toBeLessThan(32);
  });
});
