// Scope: hidden values in a real browser against the whole stack (issue 27 item 1, docs/APPROVERS.md
// §Hidden values): a $50,000 transfer with a `reference` (writeOnly in wire_transfer's schema) shows
// the reference as "hidden · sha256:<12 hex>…", never its value in the page; the compare box hashes
// a pasted value in the browser and says match or no match; approved, the ledger records the real
// reference.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jcsSha256 } from '@countersign/receipts';
import { clientFor, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideOnPage, openRequest, screenshot, stackWithApprover } from './browser-harness.js';

const fx = stackWithApprover('bob');

describe('a hidden value on the request page', () => {
  it('the reference reads hidden with its digest, is nowhere in the page, compares match and no match in the browser, and the approved transfer records the real one', async () => {
    const alice = await clientFor(fx.stack, 'alice');
    const memo = `hidden-${randomUUID().slice(0, 8)}`;
    const reference = `INV-${randomUUID().slice(0, 13)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-4242', amount: 50_000, memo, reference },
    });
    expect(created.status).toBe('working');

    const page = fx.browser.page;
    await openRequest(page, fx.stack.urls.approverPage, memo);
    const label = `hidden · sha256:${jcsSha256(reference).slice(0, 12)}…`;
    const row = page.locator('[data-testid=argument-rows] tr', { hasText: 'reference' });
    expect(await row.innerText()).toContain(label);
    const field = page.locator('[data-testid=hidden-values] [data-redacted-digest]');
    expect(await field.getAttribute('data-redacted-digest')).toBe(jcsSha256(reference));
    expect(await page.content()).not.toContain(reference);

    const input = field.locator('input[data-compare-input]');
    const result = field.locator('[data-compare-result]');
    await input.fill(`${reference}X`);
    await field.getByRole('button', { name: 'Compare' }).click();
    await expect.poll(() => result.innerText()).toBe('No match: the request holds a different value.');
    await input.fill(reference);
    await field.getByRole('button', { name: 'Compare' }).click();
    await expect.poll(() => result.innerText()).toBe('Match: this is the value in the request.');
    await screenshot(page, 'redacted-request');
    // what was typed stays in the field (a property, not markup): the page's markup never holds it
    expect(await page.evaluate((v) => document.documentElement.outerHTML.includes(v), reference)).toBe(false);

    await decideOnPage(page, 'approve', 'reference checked with the supplier');
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(fx.stack.ledger.list().find((e) => e.memo === memo)?.reference).toBe(reference);
  });
});
