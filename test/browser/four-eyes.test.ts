// Scope: M-of-N in a real browser against the whole stack: a transfer over 100,000 needs two
// distinct treasury approvers (the default quorum rule); the first approval is recorded and
// visible while the task keeps working, the same approver cannot count twice, and the second
// approver completes it, after which tasks/get shows completed / approved-executed.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideOnPage, openBrowser, openRequest, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

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

async function browserAs(id: string): Promise<ApproverBrowser> {
  const b = await openBrowser();
  browsers.push(b);
  await signIn(b.page, stack.urls.approverPage, id, stack.secrets.approvers.find((a) => a.id === id)!.secret);
  return b;
}

describe('two of N treasury approvers in a browser', () => {
  it('a transfer over 100,000 resolves only when a second, distinct approver approves; the partial approval is visible meanwhile', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `four-eyes-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-4242', amount: 150_000, memo: m },
    });
    expect(created.status).toBe('working');

    const bob = await browserAs('bob');
    const bobRow = bob.page.locator('[data-testid=queue] tbody tr', { hasText: m });
    expect(await bobRow.innerText()).toContain('0 of 2');
    await openRequest(bob.page, stack.urls.approverPage, m);
    expect(await bob.page.locator('.decide:not(.narrow)').innerText()).toContain('Needs 2 distinct approvers; 0 so far');
    await decideOnPage(bob.page, 'approve', 'first pair of eyes');
    expect(await bob.page.getByTestId('flash').textContent()).toContain('Another approver must approve');
    expect(await bob.page.getByTestId('approvals').innerText()).toContain('1 of 2');
    expect(await bob.page.getByTestId('refusal').textContent()).toContain('needs another approver');
    expect(await bob.page.locator('button[name=decision]').count()).toBe(0);
    await screenshot(bob.page, 'request-partial');

    // still pending for the approval service and still working for the client
    const id = /\/requests\/([^/?]+)/.exec(bob.page.url())![1]!;
    expect((await stack.approvals.store.get(id))?.status).toBe('pending');
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');

    await bob.page.goto(stack.urls.approverPage);
    expect(await bobRow.innerText()).toMatch(/1 of 2[\s\S]*you approved · waiting for another approver/);
    await screenshot(bob.page, 'queue-partial');

    const carol = await browserAs('carol');
    const carolRow = carol.page.locator('[data-testid=queue] tbody tr', { hasText: m });
    expect(await carolRow.innerText()).toMatch(/1 of 2[\s\S]*your decision/);
    await openRequest(carol.page, stack.urls.approverPage, m);
    await decideOnPage(carol.page, 'approve', 'second pair of eyes');
    expect(await carol.page.getByTestId('flash').textContent()).toContain('Approved');
    expect(await carol.page.getByTestId('approvals').innerText()).toContain('2 of 2');
    const audit = await carol.page.getByTestId('audit').innerText();
    expect(audit).toMatch(/approved \(partial\)\s+bob\s+inbox/);
    await carol.page.getByText('Technical details').click(); // rule ids are behind the toggle
    expect(await carol.page.getByTestId('technical-details').innerText()).toMatch(/quorum rule\s+four-eyes-large-transfers/i);
    expect(audit).toMatch(/approved\s+carol\s+inbox/);

    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    expect((await stack.approvals.store.get(id))?.approval?.approvers).toEqual(['bob', 'carol']);
  });

  it('a transfer at or under 100,000 needs one approver', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `one-eye-${randomUUID().slice(0, 8)}`;
    await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-4242', amount: 100_000, memo: m } });
    const bob = await browserAs('bob');
    expect(await bob.page.locator('[data-testid=queue] tbody tr', { hasText: m }).innerText()).toContain('0 of 1');
  });
});
