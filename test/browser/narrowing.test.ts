// Scope: counter-proposals in a real browser against the whole stack (docs/APPROVERS.md §Narrowing a
// request): the request page of a $50,000 transfer offers "Propose a narrower call" with only the
// amount editable, "at most 50,000"; proposing $20,000 denies the request, the agent's task ends
// denied-not-executed with the counter-proposal, and both request pages show the trail once the
// agent takes it up.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clientFor, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { openRequest, stackWithApprover } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const fx = stackWithApprover('bob');

describe('the "Propose a narrower call" form', () => {
  it('edits only the narrowable amount, at most the requested 50,000; proposing 20,000 denies the request with the counter-proposal the agent receives, and the trail shows on the page', async () => {
    const alice = await clientFor(fx.stack, 'alice');
    const memo = `narrow-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-4242', amount: 50_000, memo },
    });
    const page = fx.browser.page;
    await openRequest(page, fx.stack.urls.approverPage, memo);
    const form = page.locator('[data-testid=narrow-form]');
    expect(
      await form.locator('input[data-narrow-field]').evaluateAll((els) => els.map((e) => e.getAttribute('data-narrow-field'))),
    ).toEqual(['amount']);
    expect(await form.locator('[data-testid=narrow-direction-amount]').innerText()).toBe('at most 50,000');
    const amount = form.locator('input[data-narrow-field=amount]');
    expect(await amount.getAttribute('max')).toBe('50000');

    await amount.fill('20000');
    await form.locator('textarea[name=comment]').fill('half now, the rest next quarter');
    await form.locator('[data-testid=narrow-submit]').click();
    await page.locator('[data-testid=flash]', { hasText: 'Proposed.' }).waitFor();
    expect(await page.locator('[data-testid=counter-proposal]').innerText()).toContain('Narrowed by bob');
    expect(await page.locator('[data-testid=narrow-form]').count()).toBe(0);

    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    const proposal = (
      done.result as unknown as { structuredContent: { counterProposal: { tool: string; arguments: Record<string, unknown> } } }
    ).structuredContent.counterProposal;
    expect(proposal.arguments).toEqual({ to: 'acct-4242', amount: 20_000, memo });

    // the agent takes it up: under $25,000 the narrowed call runs without a request at all
    const narrowed = await alice.request<{ content: Array<{ text: string }>; isError?: boolean }>('tools/call', {
      name: proposal.tool,
      arguments: proposal.arguments,
    });
    expect(narrowed.isError ?? false).toBe(false);
    expect(
      fx.stack.ledger
        .list()
        .filter((e) => e.memo === memo)
        .map((e) => e.amountCents),
    ).toEqual([2_000_000]);
  });
});
