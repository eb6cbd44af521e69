// Scope: batch decisions and delegation in a real browser (Debian Chromium via playwright-core)
// against the whole stack (real Temporal dev server, real HTTP): three requests selected in the
// queue, the preflight table, one approval that decides each on its own (own audit entry, each
// MCP task approved-executed); a delegation made on the inbox page, then a decision for the
// delegator that resolves a real task.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { basic, clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  for (const b of browsers) await b.close();
  await stack?.stop();
});

const secretOf = (id: string) => stack.secrets.approvers.find((a) => a.id === id)!.secret;
async function browserAs(id: string): Promise<ApproverBrowser> {
  const b = await openBrowser();
  browsers.push(b);
  await signIn(b.page, stack.urls.approverPage, id, secretOf(id));
  return b;
}
const memo = () => `batch-${randomUUID().slice(0, 8)}`;
const transfer = (m: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } });

describe('batch decisions and delegation in the inbox', () => {
  it('three selected requests: the preflight lists tool, summary and requester; one approval decides each on its own, and each task ends approved-executed', async () => {
    const alice = await clientFor(stack, 'alice');
    const memos = [memo(), memo(), memo()];
    const tasks: WireTask[] = [];
    for (const m of memos) tasks.push(await alice.request<WireTask>('tools/call', transfer(m)));

    const { page } = await browserAs('bob');
    for (const m of memos) await page.locator('[data-testid=queue] tbody tr', { hasText: m }).waitFor();
    for (const m of memos) await page.locator('[data-testid=queue] tbody tr', { hasText: m }).getByTestId('select').check();
    await Promise.all([page.waitForURL(/\/approver\/batch\?/), page.getByTestId('batch-review').click()]);

    const rows = page.locator('[data-testid=batch-preflight] tbody tr');
    expect(await rows.count()).toBe(3);
    for (const m of memos) {
      const text = await rows.filter({ hasText: m }).innerText();
      expect(text).toContain('wire_transfer');
      expect(text).toContain('Wire transfer · $50,000.00 USD to acct-991');
      expect(text).toContain('alice');
      expect(text).toContain('your decision');
    }
    await screenshot(page, 'batch-preflight');

    await page.fill('#comment', 'month-end batch');
    await Promise.all([page.waitForURL(/\/approver\/batch$/), page.getByTestId('batch-approve').click()]);
    expect(await page.getByTestId('batch-outcome').allInnerTexts()).toEqual(['approved', 'approved', 'approved']);
    await screenshot(page, 'batch-result');

    const ids = await page
      .locator('[data-testid=batch-results] tbody tr')
      .evaluateAll((trs) => trs.map((t) => t.getAttribute('data-request-id')!));
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) {
      const approved = (await stack.approvals.store.auditTrail(id)).filter((e) => e.event === 'approved');
      expect(approved).toEqual([expect.objectContaining({ actor: 'bob', via: 'inbox', comment: 'month-end batch' })]);
    }
    for (const t of tasks) {
      const done = await waitForTerminal(alice, t.taskId);
      expect(done.status).toBe('completed');
      expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    }
  });

  it('a delegation made on the inbox page lets the colleague decide for the delegator: the task ends approved-executed and the audit shows both names', async () => {
    const { page } = await browserAs('carol');
    await page.goto(`${stack.urls.approverPage}/delegations`);
    await page.getByTestId('delegate-to').selectOption('bob');
    await page.getByTestId('delegate-until').fill(new Date(Date.now() + 86_400_000).toISOString());
    await Promise.all([page.waitForURL(/flash=delegated/), page.click('form[action="/approver/delegations"] button[type=submit]')]);
    expect(await page.getByTestId('delegations-given').innerText()).toContain('bob');
    await screenshot(page, 'delegations');

    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', transfer(m));
    const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
    const pending = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending`, {
      headers: { authorization: basic(bob.id, bob.secret) },
    });
    const item = ((await pending.json()) as { items: Array<{ id: string; arguments: { memo?: string } }> }).items.find(
      (i) => i.arguments.memo === m,
    )!;
    const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${item.id}/decision`, {
      method: 'POST',
      headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', on_behalf_of: 'carol', comment: 'carol is away' }),
    });
    expect(res.status).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect((await stack.approvals.store.auditTrail(item.id)).at(-1)).toMatchObject({
      event: 'approved',
      actor: 'bob',
      onBehalfOf: 'carol',
    });

    await page.goto(`${stack.urls.approverPage}/requests/${item.id}`);
    expect(await page.getByTestId('audit').innerText()).toMatch(/approved\s+bob for carol\s+api/);
  });
});
