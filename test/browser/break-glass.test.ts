// Scope: break-glass in the approver inbox, in a real browser (Debian Chromium via playwright-core)
// against the whole stack: alice, in the break-glass role, opens her own pending transfer, sees the
// Break glass box instead of the decision form, approves with a reason, and the page shows the
// break-glass banner with her reason; the tool runs once. Bob's "Needs review" page (and its badge)
// lists it, he marks it reviewed with a comment, and the banner then says so.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import {
  clientFor,
  pendingFor,
  startTestStack,
  testConfig,
  waitForTerminal,
  withBreakGlassRequester,
  type WireTask,
} from '../support/stack-harness.js';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const REASON = 'Bank cut-off in 20 minutes; treasury approvers are on a flight';

let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  const config = testConfig();
  withBreakGlassRequester(config);
  stack = await startTestStack(config);
}, 120_000);
afterAll(async () => {
  for (const b of browsers) await b.close();
  await stack?.stop();
});

const secretOf = (id: string) => stack.secrets.approvers.find((a) => a.id === id)!.secret;

describe('break-glass in the inbox', () => {
  it('the requester breaks glass on their own request with a reason, the page shows the banner, and a reviewer marks it reviewed on Needs review', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `bg-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    let requestId: string | undefined;
    for (let i = 0; i < 100 && requestId === undefined; i++) {
      requestId = (await pendingFor(stack, 'carol')).find((r) => r.arguments.memo === memo)?.id;
      if (requestId === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    const requestUrl = `${stack.urls.approverPage}/requests/${requestId!}`;

    const a = await openBrowser();
    browsers.push(a);
    await signIn(a.page, stack.urls.approverPage, 'alice', secretOf('alice'));
    await a.page.goto(requestUrl);
    await a.page.getByTestId('break-glass-form').waitFor();
    expect(await a.page.locator('#comment').count()).toBe(0); // no ordinary decision form on one's own request
    await a.page.fill('#break-glass-reason', REASON);
    await Promise.all([a.page.waitForURL(/flash=approved/), a.page.click('button:has-text("Break glass and approve")')]);
    const banner = a.page.getByTestId('break-glass-banner');
    expect(await banner.innerText()).toMatch(/^Break-glass: alice approved their own request at .+, skipping bob, carol\./);
    expect(await a.page.getByTestId('break-glass-reason').innerText()).toContain(REASON);
    expect(await a.page.getByTestId('break-glass-review').innerText()).toMatch(/^Needs review by someone else by /);
    expect(await a.page.getByTestId('audit').innerText()).toMatch(/approved\s+alice\s+inbox\s+break-glass/);
    await screenshot(a.page, 'break-glass-banner');
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    const b = await openBrowser();
    browsers.push(b);
    await signIn(b.page, stack.urls.approverPage, 'bob', secretOf('bob'));
    expect(await b.page.locator('#review-count').innerText()).toBe('1');
    await b.page.goto(`${stack.urls.approverPage}/reviews`);
    const card = b.page.locator(`[data-review-id="${requestId!}"]`);
    expect(await card.innerText()).toContain(REASON);
    await screenshot(b.page, 'break-glass-needs-review');
    await card.locator('textarea[name=comment]').fill('Called the bank: the transfer matches the supplier invoice.');
    await Promise.all([b.page.waitForURL(/flash=reviewed/), card.locator('button:has-text("Mark reviewed")').click()]);
    expect(await b.page.getByTestId('break-glass-review').innerText()).toMatch(
      /^Reviewed by bob at .+: Called the bank: the transfer matches the supplier invoice\./,
    );
    await b.page.goto(`${stack.urls.approverPage}/reviews`);
    await b.page.getByTestId('no-reviews').waitFor();
    expect(await b.page.locator('#review-count').innerText()).toBe('0');
  });
});
