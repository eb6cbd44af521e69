// Scope: the inbox queue past 200 pending requests in a real browser (Debian Chromium via
// playwright-core) against the approval service served over real HTTP: the badge shows the true
// count, the queue pages to the newest and back to the oldest request, and the tool filter narrows
// the rows and the counts. Requests arrive through the service's ARAP submit API, as the MCP
// server sends them (no Temporal needed for what is on the page).
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const CLIENT_TOKEN = 'client-token-for-browser-paging';
let svc: ApprovalService | undefined;
let server: ServerType;
let baseUrl: string;
let browser: ApproverBrowser | undefined;
/** Ids in submission order; the clock moves 1 ms per reading, so that is also the queue's order. */
const transfers: string[] = [];
const changes: string[] = [];

async function submit(tool: string, sub: string, n: number): Promise<string> {
  const res = await svc!.app.request('/access/v1/requests', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'Idempotency-Key': `paging-${tool}-${sub}-${n}`,
      Authorization: `Bearer ${CLIENT_TOKEN}`,
    },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: tool },
      context: { arguments: { to: `acct-${n}`, amount: 30_000 + n, memo: `paging-${tool}-${n}` } },
      approver_group: 'treasury',
      reason: 'needs approval',
      expires_at: new Date(Date.now() + 86_400_000).toISOString(),
      binding_digest: 'b'.repeat(64),
      generation: 1,
    }),
  });
  if (res.status !== 201) throw new Error(`submit answered ${res.status}`);
  return ((await res.json()) as { id: string }).id;
}

beforeAll(async () => {
  // Listen first: the service needs its own URL (the inbox's origin check compares it).
  await new Promise<void>((resolve) => {
    server = serve(
      {
        fetch: (req, env) => (svc === undefined ? new Response('starting', { status: 503 }) : svc.app.fetch(req, env)),
        port: 0,
        hostname: '127.0.0.1',
      },
      (info: AddressInfo) => {
        baseUrl = `http://127.0.0.1:${info.port}`;
        resolve();
      },
    );
  });
  let clock = Date.now();
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: 'callback-secret',
    approvers: [{ id: 'bob', secret: 'bob-pw', groups: ['treasury'] }],
    publicBaseUrl: baseUrl,
    logger: pino({ level: 'silent' }),
    now: () => (clock += 1),
  });
  for (let i = 0; i < 230; i += 1) transfers.push(await submit('wire_transfer', 'alice', i));
  for (let i = 0; i < 12; i += 1) changes.push(await submit('submit_change', 'alice', i));
  await submit('wire_transfer', 'bob', 0); // bob's own: in his queue, not in his count
  browser = await openBrowser();
});
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  svc?.close();
});

describe('the inbox queue past 200 pending requests', () => {
  it('the badge shows the true count, the queue pages to the newest and back to the oldest request, and the tool filter narrows rows and counts', async () => {
    const page = browser!.page;
    await signIn(page, `${baseUrl}/approver`, 'bob', 'bob-pw');
    const waiting = transfers.length + changes.length;
    await expect(page.locator('#pending-count').textContent()).resolves.toBe(String(waiting));
    await expect(page.getByTestId('queue-counts').textContent()).resolves.toContain(
      `${waiting} waiting for your decision, ${waiting + 1} open in your groups`,
    );
    const rows = page.locator('[data-testid=queue] tbody tr');
    const ids = () => rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-request-id')));
    expect((await ids())[0]).toBe(transfers[0]);
    await expect(page.getByTestId('page-previous').count()).resolves.toBe(0);

    // Newer → to the last page: it holds the newest request (bob's own, after the changes).
    const seen = new Set(await ids());
    let pages = 1;
    while ((await page.getByTestId('page-next').count()) > 0) {
      await Promise.all([page.waitForURL(/after=/), page.getByTestId('page-next').click()]);
      for (const id of await ids()) {
        expect(seen.has(id!)).toBe(false);
        seen.add(id!);
      }
      pages += 1;
    }
    expect(pages).toBe(5);
    expect(seen.size).toBe(waiting + 1);
    expect((await ids()).at(-2)).toBe(changes.at(-1));
    await expect(page.locator('#pending-count').textContent()).resolves.toBe(String(waiting));
    await screenshot(page, 'inbox-paging-newest');

    // ← Older back to the first page: it starts with the oldest request again.
    while ((await page.getByTestId('page-previous').count()) > 0) {
      await Promise.all([page.waitForURL(/before=/), page.getByTestId('page-previous').click()]);
    }
    expect((await ids())[0]).toBe(transfers[0]);
    expect(await ids()).toHaveLength(50);

    // Filter by tool: only the change requests, with their own counts; the badge stays the total.
    await page.getByTestId('filter-tool').selectOption('submit_change');
    await Promise.all([page.waitForURL(/tool=submit_change/), page.locator('form.filters button[type=submit]').click()]);
    expect(await ids()).toEqual(changes);
    await expect(page.getByTestId('queue-counts').textContent()).resolves.toContain(
      `${changes.length} waiting for your decision, ${changes.length} open in your groups`,
    );
    await expect(page.locator('#pending-count').textContent()).resolves.toBe(String(waiting));
    await screenshot(page, 'inbox-paging-filtered');
  });
});
