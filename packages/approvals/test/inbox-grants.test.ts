// Scope: the inbox's grant form in-process (app.request, injected clock, a signed-in approver with
// the grant right): a reason of only invisible characters is refused like an empty one.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const ORIGIN = 'http://localhost';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
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

describe('the inbox grant form', () => {
  it('a grant reason of only zero-width and other invisible characters is refused like an empty one, and no grant is made', async () => {
    const cookie = await signIn('alice');
    const csrf = /name="csrf" value="([^"]+)"/.exec(
      await (await svc.app.request('/approver/grants', { headers: { Cookie: cookie } })).text(),
    )?.[1];
    const res = await post(
      '/approver/grants',
      {
        csrf: csrf ?? '',
        principal: 'carol',
        tool: 'wire_transfer',
        approver_group: 'treasury',
        max_uses: '3',
        reason: '\u200b\u200c\u200d\u2060\ufeff\u00ad',
      },
      cookie,
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('A grant needs a reason a reader can see');
    expect(svc.store.grants.list({ groups: ['treasury'], createdBy: 'alice' })).toEqual([]);
  });
});
