// Scope: the approver inbox in a real browser (Debian Chromium via playwright-core) against the
// whole stack (real Temporal dev server, real HTTP): sign in, the queue, the request page, approve,
// live refresh, four-eyes for the requester, and an upstream tool of the gateway (the reference
// filesystem server) shown with its title, upstream and hints; the MCP client sees the outcome in tasks/get.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { writeGatewayConfig } from '../gateway/gateway-support.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideOnPage, openBrowser, openRequest, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  const gateway = writeGatewayConfig([
    {
      name: 'fs',
      transport: 'stdio',
      command: process.execPath,
      args: [join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), '${dataDir}/files'],
      createDirs: ['${dataDir}/files/protected'],
    },
  ]);
  stack = await startTestStack(testConfig({ COUNTERSIGN_CONFIG: gateway }));
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
const memo = () => `inbox-${randomUUID().slice(0, 8)}`;
const transfer = (m: string, amount = 50_000) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo: m } });

describe('approver inbox in a browser', () => {
  it('an approver signs in, sees the pending transfer with its summary, approves it, and tasks/get shows completed / approved-executed', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', transfer(m));
    expect(created.status).toBe('working');

    const { page } = await browserAs('bob');
    await expect(page.getByTestId('approver').textContent()).resolves.toBe('bob');
    const row = page.locator('[data-testid=queue] tbody tr', { hasText: m });
    await row.waitFor();
    const rowText = await row.innerText();
    expect(rowText).toContain('wire_transfer');
    expect(rowText).toContain('alice');
    expect(rowText).toContain(`Wire transfer · $50,000.00 USD to acct-991 · memo=${m}`);
    expect(rowText).toMatch(/\d+d \d+h left/); // the 7-day request window, counting down
    expect(rowText).toContain('your decision');
    expect(Number(await page.locator('#pending-count').textContent())).toBeGreaterThanOrEqual(1);
    await screenshot(page, 'queue');

    await openRequest(page, stack.urls.approverPage, m);
    expect(await page.getByTestId('requester').textContent()).toBe('alice');
    expect(await page.getByTestId('reason').textContent()).toBe('Transfers over $25,000 require treasury approval.');
    expect(JSON.parse((await page.getByTestId('arguments').textContent()) ?? '{}')).toEqual(transfer(m).arguments);
    expect(await page.getByTestId('approvals').innerText()).toContain('0 of 1');
    await screenshot(page, 'request');

    await decideOnPage(page, 'approve', 'checked the invoice');
    expect(await page.getByTestId('flash').textContent()).toContain('Approved');
    const audit = await page.getByTestId('audit').innerText();
    expect(audit).toMatch(/approved\s+bob\s+inbox/);
    expect(audit).toContain('checked the invoice');
    await screenshot(page, 'request-approved');

    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    await page.goto(`${stack.urls.approverPage}/history`);
    expect(await page.locator('[data-testid=history] tbody tr', { hasText: m }).innerText()).toMatch(/approved[\s\S]*bob/);
    await screenshot(page, 'history');
  });

  it('an upstream tool is shown with its title, upstream and hints, one row per argument; approved, it writes the file once', async () => {
    const alice = await clientFor(stack, 'alice');
    const name = `${memo()}.txt`;
    const path = join(stack.config.COUNTERSIGN_DATA_DIR, 'files', 'protected', name);
    const created = await alice.request<WireTask>('tools/call', {
      name: 'fs__write_file',
      arguments: { path, content: 'first line\nsecond line' },
    });
    expect(created.status).toBe('working');

    const { page } = await browserAs('bob');
    const row = page.locator('[data-testid=queue] tbody tr', { hasText: name });
    await row.waitFor();
    expect(await row.getByTestId('tool-note').innerText()).toMatch(/Write File · via fs\s+destructive\s+idempotent\s+closed-world/);
    await openRequest(page, stack.urls.approverPage, name);
    expect(await page.getByTestId('tool-title').innerText()).toContain('Write File');
    expect(await page.getByTestId('tool-origin').innerText()).toBe('from upstream MCP server "fs" (its tool write_file)');
    const rows = page.locator('[data-testid=argument-rows] tr');
    expect(await rows.locator('td.name').allInnerTexts()).toEqual(['path', 'content']);
    expect(await rows.nth(0).locator('td').nth(1).innerText()).toBe(path);
    expect(await rows.nth(1).locator('pre').innerText()).toBe('first line\nsecond line'); // multi-line text as written
    await screenshot(page, 'request-upstream-tool');

    await decideOnPage(page, 'approve', 'checked the file');
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(readFileSync(path, 'utf8')).toBe('first line\nsecond line');
  });

  it('the queue shows a new request without a manual reload', async () => {
    const { page } = await browserAs('carol');
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    await alice.request<WireTask>('tools/call', transfer(m));
    // no page.goto / reload: the inbox script polls the change mark and swaps the list in
    await page.locator('[data-testid=queue] tbody tr', { hasText: m }).waitFor({ timeout: 30_000 });
  });

  it('a requester never approves their own request: no decision form, and a forged decision post is refused', async () => {
    const bobAsRequester = await clientFor(stack, 'bob');
    const m = memo();
    const created = await bobAsRequester.request<WireTask>('tools/call', transfer(m));
    const { page } = await browserAs('bob');
    const row = page.locator('[data-testid=queue] tbody tr', { hasText: m });
    expect(await row.innerText()).toContain('your own request');

    await openRequest(page, stack.urls.approverPage, m);
    expect(await page.getByTestId('refusal').textContent()).toContain('a requester never approves their own request');
    expect(await page.locator('button[name=decision]').count()).toBe(0);
    await screenshot(page, 'request-own');

    // A hand-made post with a valid session and CSRF token still cannot decide it.
    const csrf = await page.locator('input[name=csrf]').first().inputValue();
    const id = /\/requests\/([^/?]+)/.exec(page.url())![1]!;
    const res = await page.request.post(`${stack.urls.approverPage}/requests/${id}/decision`, {
      form: { csrf, decision: 'approve', comment: 'self' },
      headers: { Origin: new URL(stack.urls.approverPage).origin },
    });
    expect(res.url()).toContain('flash=forbidden');
    expect((await stack.approvals.store.get(id))?.status).toBe('pending');
    expect((await bobAsRequester.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
  });
});
