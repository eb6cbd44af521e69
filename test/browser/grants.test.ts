// Scope: grants in the approver inbox, in a real browser (Debian Chromium via playwright-core)
// against the whole stack: bob, who holds the grant right, opens dave's pending $30,000 transfer,
// follows "Grant calls like this one…", turns the prefilled limits into "to = acct-991, amount at
// most 30000" (clearing the memo), two calls; the request he made it from is approved by it and
// runs, the Grants page shows 1 of 2 used, dave's next such call runs at once, and Revoke ends it:
// the call after that waits for an approver.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  const config = testConfig();
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'),
    JSON.stringify({ grants: { approvers: ['bob'] }, unfollowed: { action: 'off' } }),
  );
  stack = await startTestStack(config);
}, 120_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await stack?.stop();
});

const secretOf = (id: string) => stack.secrets.approvers.find((a) => a.id === id)!.secret;

/** dave's $30,000 transfer to acct-991: its task and, once the gate submitted it, its request. */
async function transfer(): Promise<{ task: WireTask; request: { id: string; status: string } }> {
  const dave = await clientFor(stack, 'dave');
  const memo = `grant-${randomUUID().slice(0, 8)}`;
  const task = await dave.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 30_000, memo } });
  for (let i = 0; i < 200; i++) {
    const s = stack.approvals.store;
    const r = [...(await s.listPending({ requester: 'dave' })), ...(await s.listResolved({ requester: 'dave' }))].find(
      (x) => x.body.context.arguments['memo'] === memo,
    );
    if (r !== undefined) return { task, request: { id: r.id, status: r.status } };
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`no request for ${memo}`);
}

describe('grants in the inbox', () => {
  it('an approver with the grant right makes a grant from a pending request, it approves that request and the next call, and Revoke ends it', async () => {
    const first = await transfer();
    expect(first.request.status).toBe('pending');

    const b = await openBrowser();
    browsers.push(b);
    await signIn(b.page, stack.urls.approverPage, 'bob', secretOf('bob'));
    await b.page.goto(`${stack.urls.approverPage}/requests/${first.request.id}`);
    await Promise.all([b.page.waitForURL(/\/grants\?from=/), b.page.getByTestId('grant-link').click()]);
    const form = b.page.getByTestId('grant-form');
    expect(await form.locator('input[name=principal]').inputValue()).toBe('dave');
    expect(await form.locator('input[name=tool]').inputValue()).toBe('wire_transfer');
    const rows = await Promise.all([0, 1, 2].map((i) => form.locator(`input[name=field_${i}]`).inputValue()));
    const at = (name: string) => rows.indexOf(name);
    await form.locator(`select[name=dir_${at('amount')}]`).selectOption('max');
    await form.locator(`input[name=field_${at('memo')}]`).fill(''); // a memo differs per call: no limit on it
    await form.locator('input[name=max_uses]').fill('2');
    await form.locator('input[name=duration_minutes]').fill('60');
    await form.locator('#grant-reason').fill('Month-end supplier run to acct-991');
    await screenshot(b.page, 'grant-form');
    await Promise.all([b.page.waitForURL(/flash=granted-approved/), form.locator('button:has-text("Create grant")').click()]);

    const card = b.page.locator('section.grant').first();
    expect(await card.getByTestId('grant-state').innerText()).toBe('active');
    expect(await card.getByTestId('grant-limits').innerText()).toBe('amount at most 30000; to = "acct-991"');
    expect(await card.getByTestId('grant-uses').innerText()).toMatch(/^1 of 2 used · until /);
    expect(await card.innerText()).toContain(first.request.id);
    const dave = await clientFor(stack, 'dave');
    expect((await waitForTerminal(dave, first.task.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');

    const second = await transfer();
    expect(second.request.status).toBe('approved');
    expect((await waitForTerminal(dave, second.task.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');
    await b.page.reload();
    expect(await card.getByTestId('grant-uses').innerText()).toMatch(/^2 of 2 used/);
    expect(await card.getByTestId('grant-state').innerText()).toBe('used-up');
    await screenshot(b.page, 'grants-page');

    // a fresh grant, revoked from the page: the next call waits for an approver
    await stack.approvals.store.grants.create({
      id: `grt_${randomUUID().slice(0, 8)}`,
      principal: 'dave',
      principalIssuer: null,
      tool: 'wire_transfer',
      approverGroup: 'treasury',
      constraints: { to: { eq: 'acct-991' } },
      maxUses: 5,
      createdBy: 'bob',
      via: 'inbox',
      reason: 'second run',
      fromRequest: null,
      createdAtMs: Date.now(),
      expiresAtMs: Date.now() + 3_600_000,
    });
    await b.page.reload();
    const fresh = b.page.locator('section.grant').first();
    expect(await fresh.getByTestId('grant-state').innerText()).toBe('active');
    await Promise.all([b.page.waitForURL(/flash=grant-revoked/), fresh.locator('button:has-text("Revoke")').click()]);
    expect(await b.page.locator('section.grant').first().getByTestId('grant-state').innerText()).toBe('revoked');
    expect((await transfer()).request.status).toBe('pending');
  });
});
