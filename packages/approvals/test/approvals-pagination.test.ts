// Scope: paging of pending approvals (packages/approvals/src/api/page-cursor.ts, the store's keyset page,
// GET /access/v1/approvals/pending) in-process via app.request: every request exactly once across
// pages while new ones arrive, the true total of what this approver may decide, filters, and 400s
// for a bad limit or cursor. (The inbox's pages: test/browser/inbox-paging.test.ts; the CLI:
// test/e2e/approvals-cli.test.ts.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodePageCursor, encodePageCursor, parsePageQuery } from '../src/api/page-cursor.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';
import { openApprovalStore } from '../src/store/store.js';

const CLIENT_TOKEN = 'client-token-for-tests';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;

let clock = T0;
let svc: ApprovalService;
let seq = 0;

beforeEach(() => {
  clock = T0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury', 'ops'] },
    ],
    publicBaseUrl: 'https://approvals.example.test',
    logger: pino({ level: 'silent' }),
    // Each reading moves the clock on by 1 ms, as time does between requests.
    now: () => (clock += 1),
    rules: {
      quorum: [{ id: 'two-for-big', group: 'treasury', when: [{ field: 'arguments.amount', gt: 100_000 }], approvals: 2 }],
      risk: [],
      riskIntervalMs: 30_000,
    },
  });
});
afterEach(() => svc.close());

const basic = (id: string) => ({ Authorization: `Basic ${Buffer.from(`${id}:${id}-pw`).toString('base64')}` });

interface Over {
  sub?: string;
  act?: Array<{ sub: string }>;
  tool?: string;
  group?: string;
  amount?: number;
}

/** Submit one request through the ARAP API (as the MCP server does); returns its id. */
async function submit(over: Over = {}): Promise<string> {
  seq += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `k-${seq}`, Authorization: `Bearer ${CLIENT_TOKEN}` },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: over.sub ?? 'alice', ...(over.act ? { act: over.act } : {}) },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: over.tool ?? 'wire_transfer' },
      context: { arguments: { amount: over.amount ?? 50_000, to: 'acct-991', memo: `m-${seq}` } },
      approver_group: over.group ?? 'treasury',
      reason: 'needs approval',
      expires_at: new Date(T0 + 24 * HOUR).toISOString(),
      binding_digest: 'a'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

interface Page {
  items: Array<{ id: string; tool: string; approver_group: string }>;
  total: number;
  next_cursor: string | null;
}

async function pending(who: string, query = ''): Promise<Response> {
  return svc.app.request(`/access/v1/approvals/pending${query}`, { headers: basic(who) });
}
async function page(who: string, query = ''): Promise<Page> {
  const res = await pending(who, query);
  expect(res.status).toBe(200);
  return (await res.json()) as Page;
}

describe('GET /access/v1/approvals/pending pages', () => {
  it('more than 200 pending requests page through exactly once each, none missing, while new requests arrive and others are decided between pages', async () => {
    const before: string[] = [];
    for (let i = 0; i < 230; i += 1) before.push(await submit());
    const arrived: string[] = [];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let decided = 0;
    do {
      const p: Page = await page('bob', `?limit=40${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(p.total).toBe(before.length + arrived.length - decided);
      seen.push(...p.items.map((i) => i.id));
      cursor = p.next_cursor;
      pages += 1;
      // Between pages, while the approver pages: three new requests arrive, and another approver
      // decides two already seen (an offset would now skip two unseen ones).
      if (cursor !== null && pages <= 4) {
        for (let i = 0; i < 3; i += 1) arrived.push(await submit());
        for (const id of seen.slice(-2)) {
          const denied = await svc.app.request(`/access/v1/requests/${id}/decision`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', ...basic('carol') },
            body: JSON.stringify({ decision: 'deny', comment: 'no' }),
          });
          expect(denied.status).toBe(200);
          decided += 1;
        }
      }
    } while (cursor !== null);

    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...before, ...arrived].sort());
    // Oldest first: the submission order.
    expect(seen).toEqual([...before, ...arrived]);
  });

  it('without a limit a page holds 50, and the old {items} shape is still there', async () => {
    for (let i = 0; i < 60; i += 1) await submit();
    const first = await page('bob');
    expect(first.items).toHaveLength(50);
    expect(first.total).toBe(60);
    expect(typeof first.next_cursor).toBe('string');
    const second = await page('bob', `?cursor=${first.next_cursor}`);
    expect(second.items).toHaveLength(10);
    expect(second.next_cursor).toBeNull();
  });

  it("the total counts only what this approver may decide now: not another group's, not their own (any case, any actor in the act chain), not one they already approved", async () => {
    const mine = [await submit(), await submit(), await submit({ amount: 500_000 })];
    await submit({ group: 'ops' }); // bob is not in ops
    await submit({ sub: 'Bob' }); // bob's own request
    await submit({ sub: 'alice', act: [{ sub: 'agent-x' }, { sub: 'BOB' }] }); // bob acting for alice
    const partly = await submit({ amount: 500_000 }); // needs two; bob approves it first
    const approve = await svc.app.request(`/access/v1/requests/${partly}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...basic('bob') },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(((await approve.json()) as { status: string }).status).toBe('pending');

    const forBob = await page('bob', '?limit=1');
    expect(forBob.total).toBe(mine.length);
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const p: Page = await page('bob', `?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      all.push(...p.items.map((i) => i.id));
      cursor = p.next_cursor;
    } while (cursor !== null);
    expect(all).toEqual(mine);

    // carol sees both groups, bob's requests, and the one bob approved (she has not).
    expect((await page('carol')).total).toBe(7);
  });

  it('tool= and group= narrow the page and its total', async () => {
    await submit({ tool: 'wire_transfer' });
    const change = await submit({ tool: 'submit_change', group: 'ops' });
    await submit({ tool: 'wire_transfer', group: 'ops' });
    const byTool = await page('carol', '?tool=submit_change');
    expect(byTool.items.map((i) => i.id)).toEqual([change]);
    expect(byTool.total).toBe(1);
    const byGroup = await page('carol', '?group=ops');
    expect(byGroup.total).toBe(2);
    expect(byGroup.items.every((i) => i.approver_group === 'ops')).toBe(true);
    // bob is not in ops: asking for it shows nothing rather than widening his scope.
    expect(await page('bob', '?group=ops')).toEqual({ items: [], total: 0, next_cursor: null });
  });

  it('a well-formed cursor the service never issued only positions the page: the caller still sees only their own scope', async () => {
    const mine = [await submit(), await submit()];
    await submit({ group: 'ops' }); // bob is not in ops
    const made = encodePageCursor({ createdAtMs: 0, id: 'ar_made_up' });
    expect(await page('bob', `?cursor=${made}`)).toEqual(await page('bob'));
    expect((await page('bob', `?cursor=${made}`)).items.map((i) => i.id)).toEqual(mine);
  });

  it.each([
    ['?limit=0', 'limit must be a whole number from 1 to 200.'],
    ['?limit=201', 'limit must be a whole number from 1 to 200.'],
    ['?limit=ten', 'limit must be a whole number from 1 to 200.'],
    ['?limit=-5', 'limit must be a whole number from 1 to 200.'],
    ['?cursor=not*base64', 'cursor is malformed; use next_cursor from a previous page.'],
    [`?cursor=${Buffer.from('{"offset":50}').toString('base64url')}`, 'cursor is malformed; use next_cursor from a previous page.'],
    ['?cursor=', 'cursor is malformed; use next_cursor from a previous page.'],
    ['?limit=1&limit=2', 'limit must be given at most once.'],
    [
      `?cursor=${encodePageCursor({ createdAtMs: T0, id: 'ar_a' })}&cursor=${encodePageCursor({ createdAtMs: T0, id: 'ar_b' })}`,
      'cursor must be given at most once.',
    ],
    ['?cursor[]=x', 'cursor must be a plain query parameter (cursor=…), not cursor[].'],
    ['?cursor%5B%5D=x', 'cursor must be a plain query parameter (cursor=…), not cursor[].'],
    ['?limit[0]=1', 'limit must be a plain query parameter (limit=…), not limit[0].'],
    ['?tool=a&tool=b', 'tool must be given at most once.'],
    ['?tool=', 'tool must be 1 to 200 characters.'],
    [`?group=${'g'.repeat(201)}`, 'group must be 1 to 200 characters.'],
  ])('%s is refused with 400 problem+json saying what is wrong', async (query, detail) => {
    const res = await pending('bob', query);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ type: 'urn:countersign:problem:invalid-request', status: 400, detail });
  });
});

describe('GET /access/v1/approvals/pending with any query', () => {
  it('answers a page or a 400 problem+json, never anything else, whatever limit, cursor, tool and group hold', async () => {
    for (let i = 0; i < 3; i += 1) await submit();
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.integer({ min: -5, max: 300 }).map(String),
      fc.constant(encodePageCursor({ createdAtMs: T0, id: 'ar_x' })),
      fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b).toString('base64url')),
    );
    const query = fc.record({ limit: value, cursor: value, tool: value, group: value, other: value }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const res = await pending('carol', `?${new URLSearchParams(q as Record<string, string>).toString()}`);
        const body = (await res.json()) as Record<string, unknown>;
        if (res.status === 200) {
          expect(Array.isArray(body['items'])).toBe(true);
          expect(typeof body['total']).toBe('number');
          expect(body['next_cursor'] === null || typeof body['next_cursor'] === 'string').toBe(true);
        } else {
          expect(res.status).toBe(400);
          expect(res.headers.get('content-type')).toBe('application/problem+json');
          expect(typeof body['detail']).toBe('string');
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe('stores from before request_principals', () => {
  it("opening a version-1 file fills in the requesters' names, so an approver's own older requests stay out of their count", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-principals-'));
    try {
      const file = join(dir, 'approvals.db');
      const old = openApprovalStore(file);
      const body = (sub: string, act?: Array<{ sub: string }>) => ({
        subject: { iss: 'https://idp.example.test', sub, ...(act ? { act } : {}) },
        action: { name: 'tools/call' as const },
        resource: { type: 'tool' as const, id: 'wire_transfer' },
        context: { arguments: { amount: 1 } },
        approver_group: 'treasury',
        reason: 'r',
        expires_at: new Date(T0 + HOUR).toISOString(),
        binding_digest: 'a'.repeat(64),
        generation: 1,
      });
      const add = (id: string, b: ReturnType<typeof body>) =>
        old.insert(
          {
            id,
            idempotencyKey: id,
            bodyHash: id,
            body: b,
            createdAtMs: T0,
            expiresAtMs: T0 + HOUR,
            requiredApprovals: 1,
            quorumRule: null,
          },
          'x',
        );
      await add('ar_1', body('Bob'));
      await add('ar_2', body('alice', [{ sub: 'BOB' }]));
      await add('ar_3', body('alice'));
      await old.close();
      // What a version-1 file looks like: no names recorded.
      const raw = new Database(file);
      raw.exec('DELETE FROM request_principals');
      raw.pragma('user_version = 1');
      raw.close();

      const reopened = openApprovalStore(file);
      expect(await reopened.countPending({ excludeNames: ['bob'] })).toBe(1);
      expect(await reopened.countPending({})).toBe(3);
      await reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('page cursors', () => {
  it('a cursor decodes to the position it was made from', () => {
    const key = { createdAtMs: T0, id: 'ar_abc' };
    expect(decodePageCursor(encodePageCursor(key))).toEqual(key);
  });

  it.each([
    ['an array of the wrong length', [T0]],
    ['a negative time', [-1, 'ar_x']],
    ['a fractional time', [1.5, 'ar_x']],
    ['an empty id', [T0, '']],
    ['an object', { createdAtMs: T0, id: 'ar_x' }],
  ])('a cursor holding %s is refused', (_what, value) => {
    expect(decodePageCursor(Buffer.from(JSON.stringify(value)).toString('base64url'))).toBeNull();
  });

  it('limit defaults to 50 and a cursor becomes the position to continue after', () => {
    expect(parsePageQuery(undefined, undefined)).toEqual({ ok: true, limit: 50 });
    const cursor = encodePageCursor({ createdAtMs: 5, id: 'ar_y' });
    expect(parsePageQuery('200', cursor)).toEqual({ ok: true, limit: 200, after: { createdAtMs: 5, id: 'ar_y' } });
  });
});
