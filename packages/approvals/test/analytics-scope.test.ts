// Scope: which requests a lead's analytics page covers (the rules file's analytics.scope,
// src/analytics.ts analyticsGroupsOf): in-process service (app.request, real SQLite in memory,
// signed-in inbox sessions); a lead sees the approver groups they belong to by default, every
// group with scope "all".
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseApprovalRules } from '../src/deciders/approval-rules.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
const ORIGIN = 'https://approvals.example.test';
const open: ApprovalService[] = [];
let clock = T0;
afterEach(() => {
  for (const s of open.splice(0)) s.close();
  clock = T0;
});

function service(analytics: Record<string, unknown>): ApprovalService {
  const s = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'dan', secret: 'dan-pw', groups: ['ops'] },
    ],
    publicBaseUrl: ORIGIN,
    logger: pino({ level: 'silent' }),
    now: () => clock,
    rules: parseApprovalRules(JSON.stringify({ analytics: { leads: ['bob', 'dan'], ...analytics }, unfollowed: { action: 'off' } })),
  });
  open.push(s);
  return s;
}

let keys = 0;
/** alice's call of `tool` for `group`, decided at once by `approver` (approve or deny). */
async function decidedRequest(svc: ApprovalService, tool: string, group: string, approver: string, decision: 'approve' | 'deny') {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `key-${++keys}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: tool },
      context: { arguments: { n: keys } },
      approver_group: group,
      reason: 'needs a person',
      expires_at: new Date(T0 + HOUR).toISOString(),
      binding_digest: 'c'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  const { id } = (await res.json()) as { id: string };
  const decided = await svc.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from(`${approver}:${approver}-pw`).toString('base64')}` },
    body: JSON.stringify({ decision }),
  });
  expect(decided.status).toBe(200);
}

/** The analytics page as `id` sees it, signed in. */
async function analyticsPageOf(svc: ApprovalService, id: string): Promise<string> {
  const login = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://localhost' },
    body: new URLSearchParams({ id, password: `${id}-pw` }).toString(),
  });
  expect(login.status).toBe(303);
  const cookie = (login.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  const page = await svc.app.request('/approver/analytics', { headers: { Cookie: cookie } });
  expect(page.status).toBe(200);
  return page.text();
}

describe("a lead's analytics page", () => {
  it("covers only the approver groups the lead belongs to by default: treasury's lead sees wire_transfer and not ops' restart_service, and ops' lead the reverse", async () => {
    const svc = service({});
    await decidedRequest(svc, 'wire_transfer', 'treasury', 'bob', 'approve');
    await decidedRequest(svc, 'restart_service', 'ops', 'dan', 'deny');
    const bobs = await analyticsPageOf(svc, 'bob');
    expect(bobs).toContain('wire_transfer');
    expect(bobs).not.toContain('restart_service');
    expect(bobs).toContain('approver group treasury');
    const dans = await analyticsPageOf(svc, 'dan');
    expect(dans).toContain('restart_service');
    expect(dans).not.toContain('wire_transfer');
  });

  it('covers every group with scope "all"', async () => {
    const svc = service({ scope: 'all' });
    await decidedRequest(svc, 'wire_transfer', 'treasury', 'bob', 'approve');
    await decidedRequest(svc, 'restart_service', 'ops', 'dan', 'deny');
    const bobs = await analyticsPageOf(svc, 'bob');
    expect(bobs).toContain('wire_transfer');
    expect(bobs).toContain('restart_service');
    expect(bobs).toContain('all approver groups');
  });
  it("reads a lead's groups' decisions before the decision limit: newer decisions of other groups never crowd them out", async () => {
    const svc = service({});
    await decidedRequest(svc, 'wire_transfer', 'treasury', 'bob', 'approve');
    clock += 1000;
    await decidedRequest(svc, 'wire_transfer', 'treasury', 'bob', 'deny');
    for (let i = 0; i < 3; i++) {
      clock += 1000;
      await decidedRequest(svc, 'restart_service', 'ops', 'dan', 'approve');
    }
    // with a limit of 3 the three newest are ops'; the treasury lead's two must still be read
    const treasury = await svc.store.analytics.decisions(T0 - HOUR, 3, ['treasury']);
    expect(treasury.map((d) => [d.group, d.outcome])).toEqual([
      ['treasury', 'denied'],
      ['treasury', 'approved'],
    ]);
    expect((await svc.store.analytics.decisions(T0 - HOUR, 3)).map((d) => d.group)).toEqual(['ops', 'ops', 'ops']);
  });
});
