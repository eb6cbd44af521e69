// Scope: the inbox's grant form in-process (app.request, injected clock, a signed-in approver with
// the grant right): "Grant calls like this one…" prefills each argument so that submitting the form
// unchanged grants exactly that call (a text "42" stays text), two limit rows on one argument are
// refused naming it, and a reason of only invisible characters is refused like an empty one.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let now = T0;
let svc: ApprovalService;

beforeEach(() => {
  now = T0;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'alice', secret: 'alice-pw', groups: ['treasury'] },
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: ORIGIN,
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: parseApprovalRules(JSON.stringify({ grants: { approvers: ['alice'] }, unfollowed: { action: 'off' } })),
  });
});
afterEach(() => svc.close());

let keys = 0;
async function submit(args: Record<string, unknown>): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'carol' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
      approver_group: 'treasury',
      reason: 'Transfers over 25,000 need treasury approval.',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'b'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const post = (path: string, fields: Record<string, string>, cookie: string) =>
  svc.app.request(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN, Cookie: cookie },
    body: new URLSearchParams(fields).toString(),
  });

async function signIn(id: string): Promise<string> {
  const res = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: ORIGIN },
    body: new URLSearchParams({ id, password: `${id}-pw` }).toString(),
  });
  expect(res.status).toBe(303);
  return (res.headers.get('Set-Cookie') ?? '').split(';')[0]!;
}

/** An HTML attribute value as the browser reads it (hono/jsx escapes `&`, `<`, `>`, `"`, `'`). */
const unescape = (v: string) =>
  v
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/**
 * The fields the grant form would submit as a browser sends it, untouched: every named input's
 * value, and each select's selected option (its first when none is selected).
 */
function formAsSubmitted(html: string): Record<string, string> {
  const form = /<section[^>]*data-testid="grant-form"[\s\S]*?<\/form>/.exec(html)?.[0] ?? '';
  expect(form).not.toBe('');
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input\b([^>]*)>/g)) {
    const name = /\bname="([^"]*)"/.exec(m[1]!)?.[1];
    if (name !== undefined) fields[unescape(name)] = unescape(/\bvalue="([^"]*)"/.exec(m[1]!)?.[1] ?? '');
  }
  for (const m of form.matchAll(/<select\b[^>]*\bname="([^"]*)"[^>]*>([\s\S]*?)<\/select>/g)) {
    const options = [...m[2]!.matchAll(/<option\b([^>]*)>/g)].map((o) => o[1]!);
    const chosen = options.find((o) => /\bselected\b/.test(o)) ?? options[0]!;
    fields[unescape(m[1]!)] = unescape(/\bvalue="([^"]*)"/.exec(chosen)?.[1] ?? '');
  }
  return fields;
}

/** alice posts the Grants page's form for a new grant to carol's wire_transfer of treasury, with `fields` (limits, count, reason) added. */
async function postNewGrant(fields: Record<string, string>): Promise<Response> {
  const cookie = await signIn('alice');
  const csrf = /name="csrf" value="([^"]+)"/.exec(
    await (await svc.app.request('/approver/grants', { headers: { Cookie: cookie } })).text(),
  )?.[1];
  return post(
    '/approver/grants',
    { csrf: csrf ?? '', principal: 'carol', tool: 'wire_transfer', approver_group: 'treasury', ...fields },
    cookie,
  );
}

describe('the inbox grant form', () => {
  it('a string "42" argument prefilled by "Grant calls like this one…" and submitted unchanged yields a grant whose constraint is eq "42" (string) that matches the original call', async () => {
    const id = await submit({ ref: '42', amount: 30_000, to: 'acct\u200b-991', urgent: true });
    const cookie = await signIn('alice');
    const page = await (await svc.app.request(`/approver/grants?from=${id}`, { headers: { Cookie: cookie } })).text();
    const fields = formAsSubmitted(page);
    const res = await post('/approver/grants', { ...fields, max_uses: '3', reason: 'carol runs this reference again today' }, cookie);
    expect(res.status).toBe(303);
    const [grant] = await svc.store.grants.list({ groups: ['treasury'], createdBy: 'alice' });
    expect(grant?.constraints).toEqual({ ref: { eq: '42' }, amount: { eq: 30_000 }, to: { eq: 'acct\u200b-991' }, urgent: { eq: true } });
    // made from a pending request it meets, the grant approves that request: it matches the original call
    expect(res.headers.get('Location')).toBe('/approver/grants?flash=granted-approved');
    expect((await svc.store.get(id))?.status).toBe('approved');
    // each value was prefilled as its JSON: text in quotes, an invisible character as a visible escape
    expect(Object.values(fields)).toEqual(expect.arrayContaining(['"42"', '30000', '"acct\\u200b-991"', 'true']));
  });

  it('two limit rows on the same argument are refused with a 400 page naming the argument, and no grant is made', async () => {
    const res = await postNewGrant({
      field_0: 'amount',
      dir_0: 'max',
      value_0: '50000',
      field_1: ' amount ',
      dir_1: 'min',
      value_1: '1',
      max_uses: '3',
      reason: 'supplier run',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('limits 1 and 2 both limit the argument &quot;amount&quot;: give each argument one limit');
    expect(await svc.store.grants.list({ groups: ['treasury'], createdBy: 'alice' })).toEqual([]);
  });

  it('a grant reason of only zero-width and other invisible characters is refused like an empty one, and no grant is made', async () => {
    const res = await postNewGrant({
      max_uses: '3',
      reason: '\u200b\u200c\u200d\u2060\ufeff\u00ad',
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('A grant needs a reason a reader can see');
    expect(await svc.store.grants.list({ groups: ['treasury'], createdBy: 'alice' })).toEqual([]);
  });
  it('"Grant calls like this one…" on a request with seven arguments prefills a row for each, and the grant made unchanged limits all seven', async () => {
    const args = { a: 1, b: 'two', c: 3, d: 'four', e: 5, f: 'six', g: 7 };
    const id = await submit(args);
    const cookie = await signIn('alice');
    const page = await (await svc.app.request(`/approver/grants?from=${id}`, { headers: { Cookie: cookie } })).text();
    const res = await post(
      '/approver/grants',
      { ...formAsSubmitted(page), max_uses: '1', reason: 'the same seven-argument call again' },
      cookie,
    );
    expect(res.status).toBe(303);
    const [grant] = await svc.store.grants.list({ groups: ['treasury'], createdBy: 'alice' });
    expect(grant?.constraints).toEqual(Object.fromEntries(Object.entries(args).map(([k, v]) => [k, { eq: v }])));
  });
});
