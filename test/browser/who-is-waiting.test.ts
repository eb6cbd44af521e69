// Scope: "who is waiting" in the approver inbox, in a real browser (Debian Chromium via
// playwright-core) against the whole stack: the request page names the calling client and who
// follows its task; a request nobody follows (the rules' `unfollowed`, here after 1.5 s) is marked,
// Approve without the confirmation checkbox is refused with a note, and with it the tool runs once.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideOnPage, openBrowser, openRequest, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  const config = testConfig({ COUNTERSIGN_FOLLOWER_REPORT_MS: 300 });
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'),
    JSON.stringify({ unfollowed: { afterMs: 1500, action: 'confirm' } }),
  );
  stack = await startTestStack(config);
});
afterAll(async () => {
  for (const b of browsers) await b.close();
  await stack?.stop();
});

const memo = () => `waiting-${randomUUID().slice(0, 8)}`;
const transfer = (m: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } });

async function agent(): Promise<WireClient> {
  const token = await stack.issuer.mintToken({ sub: 'alice' });
  return new WireClient({
    url: stack.urls.mcp,
    token,
    capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    clientInfo: { name: 'nightly-payments-agent', version: '3.1' },
  });
}

describe('who is waiting, in the inbox', () => {
  it('the request page names the calling client and says nobody reads the task; Approve needs the confirmation, then the tool runs once', async () => {
    const alice = await agent();
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', transfer(m));
    const b = await openBrowser();
    browsers.push(b);
    const { page } = b;
    await signIn(page, stack.urls.approverPage, 'bob', stack.secrets.approvers.find((a) => a.id === 'bob')!.secret);
    await new Promise((r) => setTimeout(r, 2000)); // past afterMs, nobody reading
    await openRequest(page, stack.urls.approverPage, m);
    expect(await page.getByTestId('calling-client').innerText()).toBe('nightly-payments-agent 3.1');
    expect(await page.getByTestId('followers').innerText()).toMatch(/^Nobody has read this task since it was submitted at /);
    await page.getByTestId('confirm-unfollowed').waitFor();
    await screenshot(page, 'who-is-waiting-unfollowed');

    await decideOnPage(page, 'approve', 'without confirming');
    expect(await page.getByTestId('flash').textContent()).toContain('nobody is following this request');
    expect(await page.getByTestId('audit').innerText()).not.toMatch(/approved/);

    await page.check('input[name=confirm_unfollowed]');
    await decideOnPage(page, 'approve', 'the agent runs nightly; confirmed');
    expect(await page.getByTestId('flash').textContent()).toContain('Approved');
    expect(await page.getByTestId('audit').innerText()).toMatch(/approved\s+bob\s+inbox\s+unfollowed-confirmed/);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
  });

  it('a request whose client reads it shows "last read by <client>" and no confirmation', async () => {
    const alice = await agent();
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', transfer(m));
    // the agent follows its task: a tasks/get every 300 ms while the approver looks
    const polling = setInterval(() => void alice.request('tasks/get', { taskId: created.taskId }).catch(() => undefined), 300);
    const b = await openBrowser();
    browsers.push(b);
    const { page } = b;
    await signIn(page, stack.urls.approverPage, 'carol', stack.secrets.approvers.find((a) => a.id === 'carol')!.secret);
    await openRequest(page, stack.urls.approverPage, m);
    for (let i = 0; i < 50 && !/^Last read by/.test(await page.getByTestId('followers').innerText()); i++) {
      await new Promise((r) => setTimeout(r, 100));
      await page.reload();
    }
    expect(await page.getByTestId('followers').innerText()).toMatch(/^Last read by nightly-payments-agent 3\.1 at \d{4}-\d\d-\d\d /);
    expect(await page.getByTestId('confirm-unfollowed').count()).toBe(0);
    await screenshot(page, 'who-is-waiting-followed');
    clearInterval(polling);
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });
});
