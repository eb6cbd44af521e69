// Scope: passkey step-up in a real browser (Debian Chromium via playwright-core, a virtual
// authenticator through the DevTools protocol) against the approval service over real HTTP on
// localhost (browsers refuse IP addresses as WebAuthn RP IDs): a step-up rule marks large
// transfers; the API cannot approve one; an approver registers a passkey, approves with it, and
// the verified assertion over a single-use challenge that begins with the binding digest is
// recorded with the vote and in the approval (replay: packages/approvals/test/passkey-step-up-challenges.test.ts).
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import type { CDPSession } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '@countersign/approvals';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { openBrowser, screenshot, signIn, type ApproverBrowser } from './browser-harness.js';

let svc: ApprovalService;
let server: ServerType;
let base: string;
let browser: ApproverBrowser;
let cdp: CDPSession;
let authenticatorId: string;

beforeAll(async () => {
  let app: ApprovalService['app'] | undefined;
  await new Promise<void>((resolve) => {
    server = serve({ fetch: (req) => app!.fetch(req), port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      base = `http://localhost:${info.port}`;
      resolve();
    });
  });
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: base,
    logger: pino({ level: 'silent' }),
    rules: parseApprovalRules(
      JSON.stringify({ stepUp: [{ id: 'passkey-over-250k', group: 'treasury', when: [{ field: 'arguments.amount', gt: 250_000 }] }] }),
    ),
  });
  app = svc.app;
  browser = await openBrowser();
  cdp = await browser.context.newCDPSession(browser.page);
  await cdp.send('WebAuthn.enable');
  const added = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  authenticatorId = added.authenticatorId;
});
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  svc?.close();
});

async function submit(amount: number, key: string): Promise<{ id: string; digest: string }> {
  const digest = `${key}-`.padEnd(64, 'e');
  const res = await fetch(`${base}/access/v1/requests`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount, memo: key } },
      approver_group: 'treasury',
      reason: 'Transfers over $25,000 require treasury approval.',
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      binding_digest: digest,
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return { id: ((await res.json()) as { id: string }).id, digest };
}

describe('passkey step-up', () => {
  it('a step-up request cannot be approved on the API; in the inbox, after registering a passkey, "Approve with passkey" approves it and the proof over the binding digest is recorded', async () => {
    const { id, digest } = await submit(400_000, 'stepup-1');
    const viaApi = await fetch(`${base}/access/v1/requests/${id}/decision`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from('carol:carol-pw').toString('base64')}` },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(viaApi.status).toBe(403);
    expect(((await viaApi.json()) as { detail: string }).detail).toContain('passkey');

    const { page } = browser;
    await signIn(page, `${base}/approver`, 'bob', 'bob-pw');
    await page.goto(`${base}/approver/passkeys`);
    await Promise.all([page.waitForURL(/flash=passkey-added/), page.getByTestId('passkey-register').click()]);
    expect(await page.getByTestId('passkey-count').innerText()).toBe('1 passkey(s) registered.');

    await page.goto(`${base}/approver/requests/${id}`);
    expect(await page.getByTestId('step-up').innerText()).toContain('passkey-over-250k');
    await screenshot(page, 'step-up-request');
    await Promise.all([page.waitForURL(/flash=approved/), page.click('button[data-step-up]')]);

    const record = (await svc.store.get(id))!;
    expect(record.status).toBe('approved');
    const [vote] = await svc.store.votes(id);
    expect(vote).toMatchObject({
      approver: 'bob',
      via: 'inbox',
      stepUp: { method: 'webauthn', user_verified: true, binding_digest: digest, request_id: id, rule: 'passkey-over-250k' },
    });
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    expect(vote?.stepUp?.credential_id).toBe(credentials[0]?.credentialId.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'));
    expect(vote?.stepUp?.challenge).toMatch(new RegExp(`^${digest}\\.[A-Za-z0-9_-]{43}$`)); // the digest, then the single-use nonce
    expect(record.approval?.step_up).toEqual([expect.objectContaining({ approver: 'bob', binding_digest: digest, user_verified: true })]);
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'bob', rule: 'passkey-over-250k' });
  });

  it('an assertion without user verification is refused by the server, and nothing is approved', async () => {
    const { id } = await submit(300_000, 'stepup-2');
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
    const { page } = browser;
    await page.goto(`${base}/approver/requests/${id}`);
    // The page asks for user verification (the browser would refuse); a hand-made ceremony that
    // does not ask gets a valid signature without the UV flag, and posts it as the page would.
    await Promise.all([
      page.waitForURL(/flash=/),
      page.evaluate(async () => {
        const w = window as unknown as {
          SimpleWebAuthnBrowser: { startAuthentication(o: { optionsJSON: Record<string, unknown> }): Promise<unknown> };
        };
        const form = document.querySelector<HTMLFormElement>('form[data-step-up-url]')!;
        const options = (await (await fetch(form.getAttribute('data-step-up-url')!)).json()) as Record<string, unknown>;
        const response = await w.SimpleWebAuthnBrowser.startAuthentication({
          optionsJSON: { ...options, userVerification: 'discouraged' },
        });
        form.querySelector<HTMLInputElement>('input[name=webauthn]')!.value = JSON.stringify(response);
        const decision = document.createElement('input');
        decision.type = 'hidden';
        decision.name = 'decision';
        decision.value = 'approve';
        form.appendChild(decision);
        form.submit();
      }),
    ]);
    expect(page.url()).toContain('flash=step-up-failed');
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect(await svc.store.votes(id)).toEqual([]);
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: true });
  });

  it('a request below the threshold needs no passkey', async () => {
    const { id } = await submit(50_000, 'stepup-3');
    expect((await svc.store.get(id))?.stepUpRule).toBeNull();
    const { page } = browser;
    await page.goto(`${base}/approver/requests/${id}`);
    expect(await page.getByTestId('step-up').count()).toBe(0);
    await Promise.all([page.waitForURL(/flash=approved/), page.click('button[name=decision][value=approve]')]);
    expect((await svc.store.votes(id))[0]?.stepUp).toBeNull();
  });
});
