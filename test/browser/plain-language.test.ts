// Scope: plain-language requests in a real browser against the whole stack (issue 27 item 3): the
// reason an approver reads is the reason of the rule that actually applies (a $150,000 transfer
// falls under the four-eyes quorum rule, not only the $25,000 policy line).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, type WireTask } from '../support/stack-harness.js';
import { openBrowser, openRequest, signIn, type ApproverBrowser } from './browser-harness.js';

let stack: Stack;
let bob: ApproverBrowser;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
  bob = await openBrowser();
  await signIn(bob.page, stack.urls.approverPage, 'bob', stack.secrets.approvers.find((a) => a.id === 'bob')!.secret);
});
afterAll(async () => {
  await bob?.close();
  await stack?.stop();
});

async function transfer(amount: number): Promise<string> {
  const alice = await clientFor(stack, 'alice');
  const memo = `plain-${randomUUID().slice(0, 8)}`;
  const created = await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-4242', amount, memo } });
  expect(created.status).toBe('working');
  return memo;
}

describe('the reason an approver reads is the reason of the rule that applies', () => {
  it('a $150,000 transfer gives the four-eyes rule as its reason, not "over $25,000"', async () => {
    const memo = await transfer(150_000);
    await openRequest(bob.page, stack.urls.approverPage, memo);
    const reason = await bob.page.getByTestId('reason').innerText();
    expect(reason).toContain('Four-eyes rule: transfers over $100,000 need two treasury approvers.');
    expect(reason).not.toContain('$25,000');
  });

  it('a $30,000 transfer, under no quorum rule, gives the policy reason', async () => {
    const memo = await transfer(30_000);
    await openRequest(bob.page, stack.urls.approverPage, memo);
    expect(await bob.page.getByTestId('reason').innerText()).toBe('Transfers over $25,000 require treasury approval.');
  });
});
