// Scope: an email approval in a real browser (Debian Chromium via playwright-core) against the whole
// stack (real Temporal dev server, a real SMTP server started here, a local stand-in for the Slack
// Web API): the notification mail's link opens a page that decides nothing, the approver signs in,
// approves with the page's POST, the task ends approved-executed, the Slack message of the same
// request shows the email decision, and the used link is refused.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startSlackStandIn, type SlackStandIn } from '../support/slack-stand-in.js';
import { decisionLinkOf, startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';
import { clientFor, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let smtp: SmtpSink;
let slack: SlackStandIn;
let stack: Stack;
const browsers: ApproverBrowser[] = [];
beforeAll(async () => {
  smtp = await startSmtpSink();
  slack = await startSlackStandIn();
  stack = await startTestStack(
    testConfig({
      COUNTERSIGN_SMTP_URL: smtp.url,
      COUNTERSIGN_EMAIL_FROM: 'Countersign <approvals@example.test>',
      COUNTERSIGN_EMAIL_ADDRESSES: { bob: 'bob@example.test', carol: 'carol@example.test' },
      COUNTERSIGN_SLACK_BOT_TOKEN: 'xoxb-browser',
      COUNTERSIGN_SLACK_SIGNING_SECRET: 'browser-signing-secret',
      COUNTERSIGN_SLACK_API_URL: slack.url,
      COUNTERSIGN_SLACK_CHANNELS: { treasury: 'C0TREASURY' },
    }),
  );
});
afterAll(async () => {
  for (const b of browsers) await b.close();
  await stack?.stop();
  await smtp?.close();
  await slack?.close();
});

/** The request id a link points to (its `rid` claim; the signature is the server's business). */
const ridOf = (link: string): string => {
  const payload = link.split('/').at(-1)!.split('.')[1]!;
  return (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { rid: string }).rid;
};

describe('email approval in a browser', () => {
  it('the emailed link shows the request and decides nothing; signed in, the approver approves; the task ends approved-executed; the link is then refused', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `email-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.status).toBe('working');
    const requestId = (await pendingFor(stack, 'bob')).find((r) => r.arguments['memo'] === memo)!.id;
    const mail: ReceivedMail = await smtp.waitFor((m) => m.to.includes('bob@example.test') && ridOf(decisionLinkOf(m)) === requestId);
    expect(mail.subject).toBe('Approval needed: wire_transfer requested by alice');
    const link = decisionLinkOf(mail);
    expect(link.startsWith(`${stack.urls.approvals}/approver/email/`)).toBe(true);

    const b = await openBrowser();
    browsers.push(b);
    const { page } = b;
    // Opened before signing in (as a mail scanner would): the request, no arguments, no decision.
    const first = await page.goto(link);
    expect(first?.status()).toBe(200);
    await page.getByTestId('sign-in-needed').waitFor();
    expect(await page.getByTestId('requester').textContent()).toBe('alice');
    expect(await page.content()).not.toContain(memo);
    expect(await page.locator('button[name=decision]').count()).toBe(0);
    await screenshot(page, 'email-link-signed-out');
    expect((await stack.approvals.store.get(requestId))?.status).toBe('pending');
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');

    await signIn(page, stack.urls.approverPage, 'bob', stack.secrets.approvers.find((a) => a.id === 'bob')!.secret);
    await page.goto(link);
    expect(await page.getByTestId('arguments').textContent()).toContain(memo);
    await screenshot(page, 'email-link-signed-in');
    await page.fill('#comment', 'approved from the email');
    await Promise.all([page.waitForURL(/flash=approved/), page.click('button[name=decision][value=approve]')]);
    expect(await page.getByTestId('flash').textContent()).toContain('Approved');
    expect(await page.getByTestId('audit').innerText()).toMatch(/approved\s+bob\s+email/);
    await screenshot(page, 'email-link-approved');

    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    // The Slack message of the same request shows the decision taken by email.
    const posted = await slack.waitFor((c) => c.method === 'chat.postMessage' && JSON.stringify(c.args['blocks']).includes(memo));
    const updated = await slack.waitFor((c) => c.method === 'chat.update' && c.args['ts'] === posted.answer['ts']);
    expect(JSON.stringify(updated.args['blocks'])).toContain('*Approved* by bob (via email)');

    // The same link again: refused, clearly.
    const reused = await page.goto(link);
    expect(reused?.status()).toBe(410);
    expect(await page.getByTestId('link-refusal').innerText()).toContain('already been used');
    await screenshot(page, 'email-link-reused');
  });

  it('a link clicked on another site opens without the SameSite=Strict session; "Continue" reopens it from this site, signed in', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `email-${randomUUID().slice(0, 8)}`;
    await alice.request<WireTask>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });
    const requestId = (await pendingFor(stack, 'carol')).find((r) => r.arguments['memo'] === memo)!.id;
    const link = decisionLinkOf(await smtp.waitFor((m) => m.to.includes('carol@example.test') && ridOf(decisionLinkOf(m)) === requestId));
    // A stand-in for a webmail page, on another site (localhost, not the service's 127.0.0.1).
    const webmail: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html', connection: 'close' }).end(`<a id="mail-link" href="${link}">open</a>`);
    });
    await new Promise<void>((resolve) => webmail.listen(0, '127.0.0.1', resolve));
    try {
      expect(new URL(link).hostname).toBe('127.0.0.1');
      const b = await openBrowser();
      browsers.push(b);
      const { page } = b;
      await signIn(page, stack.urls.approverPage, 'carol', stack.secrets.approvers.find((a) => a.id === 'carol')!.secret);
      await page.goto(`http://localhost:${(webmail.address() as AddressInfo).port}/`);
      await Promise.all([page.waitForURL(link), page.click('#mail-link')]);
      await page.getByTestId('sign-in-needed').waitFor();
      await page.getByTestId('continue').click();
      expect(await page.getByTestId('arguments').textContent()).toContain(memo);
      expect(await page.locator('button[name=decision][value=approve]').count()).toBe(1);
      expect((await stack.approvals.store.get(requestId))?.status).toBe('pending');
    } finally {
      webmail.closeAllConnections();
      await new Promise<void>((resolve) => webmail.close(() => resolve()));
    }
  });
});
