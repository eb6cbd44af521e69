// Scope: the approver inbox's HTTP surface in-process (app.request, injected clock): sign-in and the
// session cookie, CSRF (origin check and per-session token) on every form post, the queue's filters
// and escaping, history of decided and expired requests, and the live-refresh change mark.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodePageCursor } from '../src/api/page-cursor.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
let svc: ApprovalService;

function makeService(publicBaseUrl = 'http://localhost', logLines?: string[]): ApprovalService {
  return createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['ops'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
    ],
    publicBaseUrl,
    logger:
      logLines === undefined
        ? pino({ level: 'silent' })
        : pino(
            { level: 'info' },
            new Writable({
              write(chunk: Buffer, _enc, cb) {
                logLines.push(chunk.toString());
                cb();
              },
            }),
          ),
    now: () => now,
  });
}

beforeEach(() => {
  now = T0;
  svc = makeService();
});
afterEach(() => svc.close());

async function submit(sub: string, args: Record<string, unknown>, key: string, over: Record<string, unknown> = {}): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'Transfers over 25,000 need treasury approval.',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'b'.repeat(64),
      generation: 1,
      ...over,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, ...headers },
  body: new URLSearchParams(fields).toString(),
});

async function signIn(id: string, password: string): Promise<{ cookie: string; setCookie: string }> {
  const res = await svc.app.request('/approver/login', form({ id, password }));
  expect(res.status).toBe(303);
  const setCookie = res.headers.get('Set-Cookie') ?? '';
  return { cookie: setCookie.split(';')[0]!, setCookie };
}

async function page(path: string, cookie: string): Promise<string> {
  const res = await svc.app.request(path, { headers: { Cookie: cookie } });
  expect(res.status).toBe(200);
  return res.text();
}

const csrfOf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

describe('sign-in and session', () => {
  it('pages without a session redirect to the sign-in form', async () => {
    const res = await svc.app.request('/approver');
    expect(res.status).toBe(303);
    expect(res.headers.get('Location')).toBe('/approver/login');
    const login = await svc.app.request('/approver/login');
    expect(await login.text()).toContain('Approver sign-in');
  });

  it('a wrong password or unknown approver is refused with no cookie', async () => {
    for (const [id, pw] of [
      ['alice', 'nope'],
      ['mallory', 'alice-pw'],
      ['', ''],
    ] as const) {
      const res = await svc.app.request('/approver/login', form({ id, password: pw }));
      expect(res.status).toBe(401);
      expect(res.headers.get('Set-Cookie')).toBeNull();
      expect(await res.text()).toContain('Unknown approver id or wrong password.');
    }
  });

  it('signing in sets an opaque random, HTTP-only, SameSite=Strict session cookie scoped to /approver', async () => {
    const { setCookie, cookie } = await signIn('alice', 'alice-pw');
    expect(setCookie).toMatch(/^countersign_session=[\w-]{43};/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/approver');
    expect(setCookie).not.toContain('Secure'); // http base URL
    expect(await page('/approver', cookie)).toContain('Signed in as <strong data-testid="approver">alice</strong>');
  });

  it('the cookie is Secure when the service is served over https', async () => {
    svc.close();
    svc = makeService('https://approvals.example.test');
    const res = await svc.app.request('http://localhost/approver/login', form({ id: 'alice', password: 'alice-pw' }));
    expect(res.headers.get('Set-Cookie')).toContain('Secure');
  });

  it('a forged or tampered session cookie is not a session', async () => {
    const { cookie } = await signIn('alice', 'alice-pw');
    const [name, sid] = cookie.split('=') as [string, string];
    const flipped = `${sid.slice(0, -1)}${sid.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [`${name}=${flipped}`, `${name}=garbage`, `${name}=${'x'.repeat(500)}`]) {
      const res = await svc.app.request('/approver', { headers: { Cookie: bad } });
      expect(res.status).toBe(303);
    }
  });

  it('the session lasts 8 hours: the cookie says so, and after 8 hours it no longer opens the inbox', async () => {
    const { cookie, setCookie } = await signIn('alice', 'alice-pw');
    expect(setCookie).toContain('Max-Age=28800');
    now = T0 + 8 * HOUR - 1000;
    expect((await svc.app.request('/approver', { headers: { Cookie: cookie } })).status).toBe(200);
    now = T0 + 8 * HOUR;
    expect((await svc.app.request('/approver', { headers: { Cookie: cookie } })).status).toBe(303);
  });

  it('signing out ends the session server-side: a copy of the old cookie no longer opens the inbox or decides', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page('/approver', cookie));
    expect((await svc.app.request('/approver/logout', form({ csrf }, { Cookie: cookie }))).status).toBe(303);
    const after = await svc.app.request('/approver', { headers: { Cookie: cookie } });
    expect(after.status).toBe(303);
    expect(after.headers.get('Location')).toBe('/approver/login');
    const decide = await svc.app.request(`/approver/requests/${id}/decision`, form({ csrf, decision: 'approve' }, { Cookie: cookie }));
    expect(decide.status).toBe(401);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('another session of the same approver survives one sign-out', async () => {
    const a = await signIn('alice', 'alice-pw');
    const b = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page('/approver', a.cookie));
    await svc.app.request('/approver/logout', form({ csrf }, { Cookie: a.cookie }));
    expect((await svc.app.request('/approver', { headers: { Cookie: b.cookie } })).status).toBe(200);
  });

  it('after 5 failed sign-ins for one approver id within a minute, the next attempt is 429 with Retry-After even with the right password; failures are logged with the id, never the password', async () => {
    svc.close();
    const lines: string[] = [];
    svc = makeService('http://localhost', lines);
    for (let i = 0; i < 5; i += 1)
      expect((await svc.app.request('/approver/login', form({ id: 'alice', password: `guess-${i}` }))).status).toBe(401);
    const blocked = await svc.app.request('/approver/login', form({ id: 'alice', password: 'alice-pw' }));
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('Retry-After'))).toBeGreaterThan(0);
    expect(blocked.headers.get('Set-Cookie')).toBeNull();
    // another approver is not affected
    expect((await svc.app.request('/approver/login', form({ id: 'carol', password: 'carol-pw' }))).status).toBe(303);
    const failures = lines.filter((l) => l.includes('approver sign-in failed'));
    expect(failures).toHaveLength(5);
    expect(failures[0]).toContain('"approver":"alice"');
    expect(lines.join('')).not.toContain('guess-');
    now = T0 + 61_000;
    expect((await svc.app.request('/approver/login', form({ id: 'alice', password: 'alice-pw' }))).status).toBe(303);
  });
});

describe('CSRF', () => {
  it('a decision post without the session CSRF token is refused and decides nothing', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    for (const token of [undefined, '', 'forged-token']) {
      const fields: Record<string, string> = { decision: 'approve' };
      if (token !== undefined) fields['csrf'] = token;
      const res = await svc.app.request(`/approver/requests/${id}/decision`, form(fields, { Cookie: cookie }));
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('nothing was decided');
    }
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect((await svc.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
  });

  it("another session's CSRF token does not work", async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const carol = await signIn('carol', 'carol-pw');
    const alice = await signIn('alice', 'alice-pw');
    const carolToken = csrfOf(await page('/approver', carol.cookie));
    const res = await svc.app.request(
      `/approver/requests/${id}/decision`,
      form({ csrf: carolToken, decision: 'approve' }, { Cookie: alice.cookie }),
    );
    expect(res.status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a cross-origin form post is refused even with a valid cookie and token', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page(`/approver/requests/${id}`, cookie));
    const res = await svc.app.request(
      `/approver/requests/${id}/decision`,
      form({ csrf, decision: 'approve' }, { Cookie: cookie, Origin: 'https://evil.example' }),
    );
    expect(res.status).toBe(403);
    const login = await svc.app.request('/approver/login', form({ id: 'alice', password: 'alice-pw' }, { Origin: 'https://evil.example' }));
    expect(login.status).toBe(403);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a post without a session is 401 and decides nothing', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const res = await svc.app.request(`/approver/requests/${id}/decision`, form({ csrf: 'x', decision: 'approve' }));
    expect(res.status).toBe(401);
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('with the token, the form decides and redirects back to the request with a flash; sign-out needs the token too', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page(`/approver/requests/${id}`, cookie));
    const res = await svc.app.request(
      `/approver/requests/${id}/decision`,
      form({ csrf, decision: 'approve', comment: 'fine' }, { Cookie: cookie }),
    );
    expect(res.status).toBe(303);
    expect(res.headers.get('Location')).toBe(`/approver/requests/${id}?flash=approved`);
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'alice', via: 'inbox', comment: 'fine' });
    expect((await svc.app.request('/approver/logout', form({}, { Cookie: cookie }))).status).toBe(403);
    const out = await svc.app.request('/approver/logout', form({ csrf }, { Cookie: cookie }));
    expect(out.status).toBe(303);
    expect(out.headers.get('Set-Cookie')).toMatch(/countersign_session=;.*Max-Age=0/);
  });
});

describe('repeated form fields', () => {
  const raw = (body: string, headers: Record<string, string> = {}): RequestInit => ({
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, ...headers },
    body,
  });

  it('a decision post that repeats decision and comment is a 400 page naming the field, and the request stays pending with no decision recorded', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page(`/approver/requests/${id}`, cookie));
    const res = await svc.app.request(
      `/approver/requests/${id}/decision`,
      raw(`csrf=${encodeURIComponent(csrf)}&decision=deny&decision=approve&comment=first&comment=second`, { Cookie: cookie }),
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('Content-Type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toContain('Bad request');
    expect(html).toContain('&quot;decision&quot; more than once');
    expect((await svc.store.get(id))?.status).toBe('pending');
    expect((await svc.store.auditTrail(id)).map((e) => e.event)).toEqual(['submitted']);
  });

  it('a decision post that repeats only the comment is refused too, and decides nothing', async () => {
    const id = await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = csrfOf(await page(`/approver/requests/${id}`, cookie));
    const res = await svc.app.request(
      `/approver/requests/${id}/decision`,
      raw(`csrf=${encodeURIComponent(csrf)}&decision=approve&comment=first&comment=second`, { Cookie: cookie }),
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('&quot;comment&quot; more than once');
    expect((await svc.store.get(id))?.status).toBe('pending');
  });

  it('a sign-in that repeats the approver id is a 400 page and sets no session cookie', async () => {
    const res = await svc.app.request('/approver/login', raw('id=carol&id=alice&password=alice-pw'));
    expect(res.status).toBe(400);
    expect(res.headers.get('Set-Cookie')).toBeNull();
    expect(await res.text()).toContain('&quot;id&quot; more than once');
  });

  it('a sign-out that repeats the CSRF token is a 400 page and the session still opens the inbox', async () => {
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = encodeURIComponent(csrfOf(await page('/approver', cookie)));
    const res = await svc.app.request('/approver/logout', raw(`csrf=${csrf}&csrf=${csrf}`, { Cookie: cookie }));
    expect(res.status).toBe(400);
    await page('/approver', cookie);
  });

  it('a delegation post that repeats the delegate is a 400 page and delegates nothing', async () => {
    const { cookie } = await signIn('alice', 'alice-pw');
    const csrf = encodeURIComponent(csrfOf(await page('/approver', cookie)));
    const until = encodeURIComponent(new Date(T0 + HOUR).toISOString());
    const res = await svc.app.request('/approver/delegations', raw(`csrf=${csrf}&to=carol&to=bob&until=${until}`, { Cookie: cookie }));
    expect(res.status).toBe(400);
    expect(await svc.store.delegations.activeFrom('alice', now)).toEqual([]);
  });
});

describe('queue, request page and history', () => {
  it('a malformed queue page link is an HTML 400 page, and a valid one pages from there', async () => {
    const ids = [await submit('dave', { amount: 50_000, to: 'acct-1' }, 'p1')];
    now += 1;
    ids.push(await submit('dave', { amount: 50_000, to: 'acct-2' }, 'p2'));
    const { cookie } = await signIn('alice', 'alice-pw');
    for (const bad of ['?after=%%%', '?before=bm90LWEtY3Vyc29y', `?after=${Buffer.from('[1]').toString('base64url')}`]) {
      const res = await svc.app.request(`/approver${bad}`, { headers: { Cookie: cookie } });
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('That page link is not one this inbox made.');
    }
    const first = (await svc.store.get(ids[0]!))!;
    const after = encodePageCursor({ createdAtMs: first.createdAtMs, id: first.id });
    const html = await page(`/approver?after=${after}`, cookie);
    expect(html).toContain(`data-request-id="${ids[1]}"`);
    expect(html).not.toContain(`data-request-id="${ids[0]}"`);
    expect(html).toContain('data-testid="page-previous"');
  });

  it('the queue lists the group’s pending requests with summary and countdown, filters by tool and requester, and escapes user data', async () => {
    await submit('dave', { amount: 50_000, to: 'acct-991', memo: 'rent' }, 'k1');
    await submit('<img src=x onerror=alert(1)>', { amount: 30_000, to: 'acct-2', memo: '<script>alert(1)</script>' }, 'k2');
    await submit('erin', { amount: 40_000, to: 'acct-3' }, 'k3', { approver_group: 'ops' });
    now = T0 + 5 * 60_000;
    const { cookie } = await signIn('alice', 'alice-pw');
    const res = await svc.app.request('/approver', { headers: { Cookie: cookie } });
    expect(res.headers.get('Content-Security-Policy')).toContain("script-src 'self'");
    const html = await res.text();
    expect(html).toContain('50,000.00 → acct-991 · memo=rent');
    expect(html).toContain('55m 0s left');
    expect(html).toContain('data-expires-at="' + String(T0 + HOUR) + '"');
    expect(html).toContain('>5m<');
    expect(html).not.toContain('erin');
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('<span class="badge" id="pending-count">2</span>');

    const byDave = await page('/approver?requester=dave', cookie);
    expect(byDave).toContain('acct-991');
    expect(byDave).not.toContain('acct-2');
    const noSuchTool = await page('/approver?tool=other_tool', cookie);
    expect(noSuchTool).toContain('Nothing is pending');
  });

  it('the request page shows arguments, justification, reason and audit trail; history lists decided and expired requests', async () => {
    const decided = await submit('dave', { amount: 50_000, to: 'acct-991' }, 'k1', {
      context: { arguments: { amount: 50_000, to: 'acct-991' }, justification: 'quarterly rent' },
    });
    const expiring = await submit('dave', { amount: 60_000, to: 'acct-992' }, 'k2');
    const { cookie } = await signIn('alice', 'alice-pw');
    const html = await page(`/approver/requests/${decided}`, cookie);
    expect(html).toContain('quarterly rent');
    expect(html).toContain('Transfers over 25,000 need treasury approval.');
    expect(html).toContain('&quot;to&quot;: &quot;acct-991&quot;');
    const csrf = csrfOf(html);
    await svc.app.request(
      `/approver/requests/${decided}/decision`,
      form({ csrf, decision: 'deny', comment: 'not this quarter' }, { Cookie: cookie }),
    );
    now = T0 + HOUR;
    const history = await page('/approver/history', cookie);
    expect(history).toContain('<span class="pill denied">denied</span>');
    expect(history).toContain('<span class="pill expired">expired</span>');
    expect(history).toContain(`/approver/requests/${expiring}`);
    const after = await page(`/approver/requests/${decided}`, cookie);
    expect(after).toContain('not this quarter');
    expect(after).not.toContain('name="decision"');
  });

  it('the queue badge is grey (class zero) when nothing waits for this approver, orange otherwise', async () => {
    const { cookie } = await signIn('alice', 'alice-pw');
    expect(await page('/approver', cookie)).toContain('<span class="badge zero" id="pending-count">0</span>');
    await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    expect(await page('/approver', cookie)).toContain('<span class="badge" id="pending-count">1</span>');
  });

  it('bidi overrides and control characters in request data are shown as visible escapes on the queue and request page', async () => {
    const id = await submit('dave\u202e', { amount: 50_000, to: 'acct-1\u202egnp.exe', memo: 'a\u2066b\u0007' }, 'k1', {
      reason: 'needs\u202d approval',
      context: { arguments: { amount: 50_000, to: 'acct-1\u202egnp.exe', memo: 'a\u2066b\u0007' }, justification: 'rent\u2069\u001b[2J' },
    });
    const { cookie } = await signIn('alice', 'alice-pw');
    for (const html of [await page('/approver', cookie), await page(`/approver/requests/${id}`, cookie)]) {
      // attribute values (the filter's option values) are not rendered text; everything shown is escaped
      expect(html.replace(/ value="[^"]*"/g, '')).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u0007\u001b]/);
      expect(html).toContain('acct-1\\u{202e}gnp.exe');
    }
    const detail = await page(`/approver/requests/${id}`, cookie);
    expect(detail).toContain('dave\\u{202e}');
    expect(detail).toContain('needs\\u{202d} approval');
    expect(detail).toContain('rent\\u{2069}\\u{1b}[2J');
  });

  it('the live mark changes when anything is recorded, so open pages refresh', async () => {
    const { cookie } = await signIn('alice', 'alice-pw');
    const mark = async () =>
      ((await (await svc.app.request('/approver/live', { headers: { Cookie: cookie } })).json()) as { mark: number }).mark;
    const before = await mark();
    await submit('dave', { amount: 50_000, to: 'acct-1' }, 'k1');
    expect(await mark()).toBeGreaterThan(before);
    expect((await svc.app.request('/approver/live')).status).toBe(401);
  });
});
