// Scope: the email channel of the approval service with a real SMTP server started by the test
// (smtp-server): the notification each approver of the group receives, and the decision page of
// its signed, single-use, expiring link — a GET never decides, a POST needs the addressee's inbox
// session and CSRF token, the decision lands with via=email, and a reused, expired, tampered or
// foreign link is refused with a clear page.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { decisionLinkOf, startSmtpSink, type ReceivedMail, type SmtpSink } from '../support/smtp-sink.js';

const BASE = 'http://approvals.test';
/** Origin of in-process requests (`app.request` resolves paths against http://localhost). */
const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
/** Every log line the service wrote in the current test. */
const logLines: string[] = [];
let smtp: SmtpSink;
let svc: ApprovalService;

beforeAll(async () => {
  smtp = await startSmtpSink();
});
afterAll(async () => {
  await smtp?.close();
});
beforeEach(() => {
  now = T0;
  logLines.length = 0;
  smtp.messages.length = 0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
      { id: 'dave', secret: 'dave-pw', groups: ['ops'] },
    ],
    publicBaseUrl: BASE,
    logger: pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          logLines.push(chunk.toString());
          cb();
        },
      }),
    ),
    now: () => now,
    email: {
      smtpUrl: smtp.url,
      from: 'Countersign <approvals@example.test>',
      addresses: { alice: 'alice@example.test', bob: 'bob@example.test', carol: 'carol@example.test', dave: 'dave@example.test' },
      linkTtlMs: HOUR / 2,
      linkKey: 'email-link-key-for-tests-0123456789abcdefghij',
    },
  });
});
afterEach(async () => {
  await svc.drainCallbacks();
  svc.close();
});

let keyCounter = 0;
async function submit(args: Record<string, unknown>, sub = 'alice'): Promise<string> {
  keyCounter += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `e-${keyCounter}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'Transfers over 25,000 need treasury approval.',
      expires_at: new Date(T0 + 2 * HOUR).toISOString(),
      binding_digest: 'd'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  const id = ((await res.json()) as { id: string }).id;
  await svc.drainCallbacks();
  return id;
}

const mailTo = (address: string): ReceivedMail => {
  const found = smtp.messages.find((m) => m.to.includes(address));
  if (found === undefined) throw new Error(`no mail to ${address}`);
  return found;
};
/** The link's path (the service runs in-process at BASE). */
const pathOf = (link: string) => new URL(link).pathname;

async function signIn(id: string): Promise<string> {
  const res = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN },
    body: new URLSearchParams({ id, password: `${id}-pw` }).toString(),
  });
  expect(res.status).toBe(303);
  return (res.headers.get('Set-Cookie') ?? '').split(';')[0]!;
}
const get = (path: string, cookie?: string) => svc.app.request(path, { headers: cookie === undefined ? {} : { Cookie: cookie } });
const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
function post(path: string, cookie: string | undefined, fields: Record<string, string>): Promise<Response> {
  return Promise.resolve(
    svc.app.request(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, ...(cookie === undefined ? {} : { Cookie: cookie }) },
      body: new URLSearchParams(fields).toString(),
    }),
  );
}
/** Open the link as `id` and post `decision` with the page's CSRF token. */
async function decideByLink(path: string, id: string, decision: 'approve' | 'deny', comment = ''): Promise<Response> {
  const cookie = await signIn(id);
  const page = await get(path, cookie);
  expect(page.status).toBe(200);
  return post(path, cookie, { csrf: csrfOf(await page.text()), decision, comment });
}

describe('approval email', () => {
  it('each approver of the group with an address, but not the requester, gets a mail with a link of their own; the mail holds no arguments', async () => {
    await submit({ to: 'acct-991', amount: 50_000, memo: 'secret-memo-77' });
    expect(smtp.messages.map((m) => m.to).sort()).toEqual([['bob@example.test'], ['carol@example.test']]);
    const bob = mailTo('bob@example.test');
    expect(bob.subject).toBe('Approval needed: wire_transfer requested by alice');
    expect(bob.text).toContain('Transfers over 25,000 need treasury approval.');
    expect(bob.text).not.toContain('secret-memo-77');
    expect(bob.text).not.toContain('acct-991');
    expect(decisionLinkOf(bob)).toMatch(new RegExp(`^${BASE}/approver/email/`));
    expect(decisionLinkOf(bob)).not.toBe(decisionLinkOf(mailTo('carol@example.test')));
  });
});

describe('decision link', () => {
  it('a GET without a session shows the request without its arguments and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'secret-memo-78' });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    for (let i = 0; i < 3; i++) {
      const res = await get(path);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain('wire_transfer');
      expect(html).toContain('data-testid="sign-in-needed"');
      expect(html).not.toContain('secret-memo-78');
      expect(html).not.toContain('name="decision"');
    }
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect((await svc.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
  });

  it('a GET by the signed-in addressee shows the arguments and the form, and still decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'memo-79' });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const html = await (await get(path, await signIn('bob'))).text();
    expect(html).toContain('memo-79');
    expect(html).toContain('name="decision" value="approve"');
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it("the addressee's GET of the decision page marks when they first opened the request, for the analytics' approved-without-reading; a GET without a session does not", async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'memo-80' });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    await get(path);
    expect(await svc.store.analytics.openOf(id, 'bob')).toBeUndefined();
    const cookie = await signIn('bob');
    await get(path, cookie);
    now += 5_000;
    await get(path, cookie);
    expect(await svc.store.analytics.openOf(id, 'bob')).toMatchObject({ firstOpenedAtMs: T0, lastOpenedAtMs: T0 + 5_000, opens: 2 });
  });

  it('the signed-in addressee approves with a POST: the decision is theirs with via=email, and the browser goes to the inbox page', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const res = await decideByLink(path, 'bob', 'approve', 'checked the invoice');
    expect(res.status).toBe(303);
    expect(res.headers.get('Location')).toBe(`/approver/requests/${id}?flash=approved`);
    expect((await svc.store.get(id))?.status).toBe('approved');
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({
      event: 'approved',
      actor: 'bob',
      via: 'email',
      comment: 'checked the invoice',
    });
  });

  it('a used link is refused (410) on GET and POST, even for its addressee', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const cookie = await signIn('bob');
    const csrf = csrfOf(await (await get(path, cookie)).text());
    expect((await post(path, cookie, { csrf, decision: 'deny' })).status).toBe(303);
    const again = await get(path, cookie);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain('already been used');
    expect((await post(path, cookie, { csrf, decision: 'approve' })).status).toBe(410);
    expect(await svc.store.get(id)).toMatchObject({ status: 'denied', resolvedBy: 'bob' });
  });

  it('a POST without a session is refused (401) and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const res = await post(path, undefined, { decision: 'approve' });
    expect(res.status).toBe(401);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('another approver signed in cannot use the link (403), and nothing is decided', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const carol = await signIn('carol');
    const page = await get(path, carol);
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('This link was sent to bob, and you are signed in as carol');
    const inbox = await (await get(`/approver/requests/${id}`, carol)).text();
    expect((await post(path, carol, { csrf: csrfOf(inbox), decision: 'approve' })).status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a POST without the session CSRF token is refused (403)', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const res = await post(path, await signIn('bob'), { decision: 'approve' });
    expect(res.status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a POST that repeats the decision is a 400 page, decides nothing, and leaves the link usable', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const cookie = await signIn('bob');
    const csrf = csrfOf(await (await get(path, cookie)).text());
    const res = await svc.app.request(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, Cookie: cookie },
      body: `csrf=${encodeURIComponent(csrf)}&decision=deny&decision=approve&comment=first&comment=second`,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('&quot;decision&quot; more than once');
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect((await post(path, cookie, { csrf, decision: 'deny' })).status).toBe(303);
    expect((await svc.store.get(id))?.status).toBe('denied');
  });

  it('a POST from another origin is refused and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const cookie = await signIn('bob');
    const csrf = csrfOf(await (await get(path, cookie)).text());
    const res = await svc.app.request(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'https://evil.example', Cookie: cookie },
      body: new URLSearchParams({ csrf, decision: 'approve' }).toString(),
    });
    expect(res.status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a link past its lifetime is refused (410) and decides nothing', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const cookie = await signIn('bob');
    const csrf = csrfOf(await (await get(path, cookie)).text());
    now = T0 + HOUR; // the link lives 30 minutes, the request 2 hours
    const res = await post(path, cookie, { csrf, decision: 'approve' });
    expect(res.status).toBe(410);
    expect(await res.text()).toContain('expired');
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a link whose token was altered is refused (400)', async () => {
    await submit({ to: 'acct-991', amount: 50_000 });
    const path = pathOf(decisionLinkOf(mailTo('bob@example.test')));
    const [head, payload, sig] = path.split('/').at(-1)!.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'carol' })).toString('base64url');
    const res = await get(`/approver/email/${head}.${forged}.${sig}`, await signIn('carol'));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('not valid');
  });

  it("the requester is mailed no link for their own request, and cannot use a colleague's", async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 }, 'bob');
    expect(smtp.messages.map((m) => m.to[0]).sort()).toEqual(['alice@example.test', 'carol@example.test']);
    const path = pathOf(decisionLinkOf(mailTo('carol@example.test')));
    expect((await get(path, await signIn('bob'))).status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });
});

describe('email channel logs', () => {
  it('log lines name requests and approvers, but never a link token, the link key or tool arguments', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000, memo: 'private-memo-6' });
    const link = decisionLinkOf(mailTo('bob@example.test'));
    await decideByLink(pathOf(link), 'bob', 'approve');
    await svc.drainCallbacks();
    const all = logLines.join('');
    expect(all).toContain(id);
    expect(all).toContain('approval email sent');
    const token = link.split('/').at(-1)!;
    for (const hidden of [token, token.split('.')[2]!, 'email-link-key-for-tests', 'private-memo-6', 'acct-991'])
      expect(all).not.toContain(hidden);
  });
});

describe('reminders through the notification port', () => {
  it('a reminder mails each addressee a fresh link; the first link still works until one of them decides', async () => {
    const id = await submit({ to: 'acct-991', amount: 50_000 });
    const firstLink = decisionLinkOf(mailTo('bob@example.test'));
    await svc.notify({ kind: 'reminded', request: (await svc.store.get(id))!, group: 'treasury' });
    const toBob = smtp.messages.filter((m) => m.to.includes('bob@example.test'));
    expect(toBob.map((m) => m.subject)).toEqual([
      'Approval needed: wire_transfer requested by alice',
      'Reminder: approval still needed: wire_transfer requested by alice',
    ]);
    expect(decisionLinkOf(toBob[1]!)).not.toBe(firstLink);
    expect((await decideByLink(pathOf(firstLink), 'bob', 'approve')).status).toBe(303);
    expect((await svc.store.get(id))?.status).toBe('approved');
  });
});
