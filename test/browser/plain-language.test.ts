// Scope: plain-language requests in a real browser against the whole stack (issue 27 item 3): the
// reason an approver reads is the reason of the rule that actually applies (a $150,000 transfer
// falls under the four-eyes quorum rule, not only the $25,000 policy line); the headline reads the
// tool's display hints (amount in USD, destination, fixed source) and names the calling client;
// identifiers (binding digest, issuer) wait behind "Technical details".
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WireClient } from '@countersign/client';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { clientFor, type WireTask } from '../support/stack-harness.js';
import { openRequest, screenshot, stackWithApprover } from './browser-harness.js';

const fx = stackWithApprover('bob');

async function transfer(amount: number): Promise<string> {
  const alice = await clientFor(fx.stack, 'alice');
  const memo = `plain-${randomUUID().slice(0, 8)}`;
  const created = await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-4242', amount, memo } });
  expect(created.status).toBe('working');
  return memo;
}

describe('the reason an approver reads is the reason of the rule that applies', () => {
  it('a $150,000 transfer gives the four-eyes rule as its reason, not "over $25,000"', async () => {
    const memo = await transfer(150_000);
    await openRequest(fx.browser.page, fx.stack.urls.approverPage, memo);
    const reason = await fx.browser.page.getByTestId('reason').innerText();
    expect(reason).toContain('Four-eyes rule: transfers over $100,000 need two treasury approvers.');
    expect(reason).not.toContain('$25,000');
  });

  it('a $30,000 transfer, under no quorum rule, gives the policy reason', async () => {
    const memo = await transfer(30_000);
    await openRequest(fx.browser.page, fx.stack.urls.approverPage, memo);
    expect(await fx.browser.page.getByTestId('reason').innerText()).toBe('Transfers over $25,000 require treasury approval.');
  });
});

describe('the request page reads in plain language', () => {
  it('a $50,000 transfer reads "$50,000.00 USD to acct-200" first, names alice and her client, and hides the binding digest and issuer until "Technical details" is opened', async () => {
    const alice = new WireClient({
      url: fx.stack.urls.mcp,
      token: await fx.stack.issuer.mintToken({ sub: 'alice' }),
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      clientInfo: { name: 'treasury-agent', version: '2.3.1' },
    });
    const memo = `plain-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-200', amount: 50_000, memo },
    });
    expect(created.status).toBe('working');
    const { page } = fx.browser;
    await page.goto(fx.stack.urls.approverPage);
    const row = page.locator('[data-testid=queue] tbody tr', { hasText: memo });
    expect(await row.locator('a.summary').innerText()).toBe(`Wire transfer · $50,000.00 USD to acct-200 · memo=${memo}`);
    await openRequest(page, fx.stack.urls.approverPage, memo);

    expect(await page.getByTestId('headline-text').innerText()).toBe(`Wire transfer · $50,000.00 USD to acct-200 · memo=${memo}`);
    expect(await page.getByTestId('requested-by').innerText()).toBe('requested by alice via treasury-agent 2.3.1');
    expect(await page.getByTestId('facts').innerText()).toBe('From: Treasury operating account (fixed for every transfer)');
    const amountRow = page.locator('[data-testid=argument-rows] tr').first();
    expect(await amountRow.innerText()).toMatch(/^Amount\s+amount\s+\$50,000\.00 USD$/);

    const digest = (await page.getByTestId('technical-details').textContent())!.match(/[0-9a-f]{64}/)![0];
    await expect.poll(() => page.getByText(digest).isVisible()).toBe(false);
    await expect.poll(() => page.getByText(fx.stack.urls.issuer, { exact: true }).isVisible()).toBe(false);
    expect(await page.locator('main').innerText()).not.toContain('Group · generation');
    await page.getByText('Technical details').click();
    expect(await page.getByText(digest).isVisible()).toBe(true);
    expect(await page.getByText(fx.stack.urls.issuer, { exact: true }).isVisible()).toBe(true);
    await screenshot(page, 'request-plain-language');
  });
});
