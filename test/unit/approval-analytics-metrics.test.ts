// Scope: the approval analytics on /metrics (packages/approvals/src/analytics.ts, its store reads in
// packages/approvals/src/store/analytics-store.ts, rendered by src/ops/metrics.ts and served by
// src/ops/ops-routes.ts): a real approval service on a SQLite file, requests submitted and decided
// through its HTTP API and inbox (app.request, injected clock), /metrics read as Prometheus text.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createApprovalService, METRICS_SNAPSHOT_TTL_MS, type ApprovalRules, type ApprovalService } from '@countersign/approvals';
import { ApprovalRulesSchema } from '@countersign/approvals';
import { createAppMetrics } from '../../src/ops/metrics.js';
import { withOpsRoutes } from '../../src/ops/ops-routes.js';
import { loadConfig } from '../../src/config.js';
import { withOps } from '../../src/stack-roles.js';
import type { FetchFn } from '@countersign/http/server-lifecycle';

const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
let now = T0;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
  now = T0;
});

function service(rules: Record<string, unknown>): ApprovalService {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-analytics-'));
  const svc = createApprovalService({
    dbPath: join(dir, 'approvals.db'),
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury', 'ops'] },
      { id: 'dana', secret: 'dana-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: 'http://localhost',
    logger: pino({ level: 'silent' }),
    now: () => now,
    rules: ApprovalRulesSchema.parse(rules) as ApprovalRules,
  });
  cleanups.push(() => {
    svc.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return svc;
}

let seq = 0;
async function submit(
  svc: ApprovalService,
  over: { tool?: string; group?: string; expiresInMs?: number; sub?: string } = {},
): Promise<string> {
  seq += 1;
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `an-${seq}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub: over.sub ?? 'alice' },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: over.tool ?? 'wire_transfer' },
      context: { arguments: { amount: seq } },
      approver_group: over.group ?? 'treasury',
      reason: 'needs approval',
      expires_at: new Date(now + (over.expiresInMs ?? 30 * DAY)).toISOString(),
      binding_digest: 'b'.repeat(64),
      generation: 1,
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

async function decideByApi(svc: ApprovalService, id: string, decision: 'approve' | 'deny', who = 'bob'): Promise<void> {
  const res = await svc.app.request(`/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from(`${who}:${who}-pw`).toString('base64')}` },
    body: JSON.stringify({ decision }),
  });
  expect(res.status).toBe(200);
}

/** Sign in to the inbox as `who`; the session cookie. */
async function signIn(svc: ApprovalService, who: string): Promise<string> {
  const res = await svc.app.request('/approver/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://localhost' },
    body: new URLSearchParams({ id: who, password: `${who}-pw` }).toString(),
  });
  expect(res.status).toBe(303);
  return (res.headers.get('Set-Cookie') ?? '').split(';')[0]!;
}

async function openPage(svc: ApprovalService, cookie: string, id: string): Promise<void> {
  const res = await svc.app.request(`/approver/requests/${id}`, { headers: { Cookie: cookie } });
  expect(res.status).toBe(200);
}

/** GET /metrics of the approval service's role (as `src/stack-roles.ts` wires it), after the snapshot's reuse time. */
async function scrape(svc: ApprovalService): Promise<string> {
  now += METRICS_SNAPSHOT_TTL_MS;
  const metrics = createAppMetrics();
  metrics.setApprovalAnalyticsSource(() => svc.metricsSnapshot());
  const fetch = withOpsRoutes((req) => svc.app.fetch(req), { metrics, checks: [] });
  const res = await fetch(new Request('http://approvals.test/metrics'), {});
  expect(res.status).toBe(200);
  return res.text();
}

/** The lines of `name` (exactly: not its `_bucket` etc. unless given), as label records and values. */
function series(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
  const out: Array<{ labels: Record<string, string>; value: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

const valueOf = (text: string, name: string, labels: Record<string, string>): number | undefined =>
  series(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

describe('approval analytics on /metrics', () => {
  it('decisions of 300 distinct tool names keep the tool label to the configured tools and "other", and the group label to configured groups', async () => {
    const svc = service({
      analytics: { tools: ['wire_transfer'] },
      quorum: [{ id: 'q', group: 'treasury', tool: 'submit_change', approvals: 2 }],
    });
    for (let i = 0; i < 300; i++) {
      const id = await submit(svc, { tool: `generated_tool_${i}`, group: i % 3 === 0 ? `team-${i}` : 'treasury' });
      if (i % 3 !== 0) await decideByApi(svc, id, i % 2 === 0 ? 'approve' : 'deny');
    }
    await decideByApi(svc, await submit(svc), 'approve');
    const text = await scrape(svc);
    const names = [
      'countersign_approvals_decision_seconds_count',
      'countersign_approvals_decision_seconds_bucket',
      'countersign_approvals_resolved_total',
      'countersign_approvals_person_approvals_total',
      'countersign_approvals_pending',
    ];
    const tools = new Set(names.flatMap((n) => series(text, n).flatMap((s) => (s.labels.tool === undefined ? [] : [s.labels.tool]))));
    const groups = new Set(names.flatMap((n) => series(text, n).map((s) => s.labels.group)));
    expect([...tools].sort()).toEqual(['other', 'wire_transfer']);
    expect([...groups].sort()).toEqual(['ops', 'other', 'treasury']);
    // every request is still counted, under "other"
    expect(valueOf(text, 'countersign_approvals_pending', { group: 'other', age: 'under_1h' })).toBe(100);
    const resolvedOther = series(text, 'countersign_approvals_resolved_total').filter((s) => s.labels.tool === 'other');
    expect(resolvedOther.reduce((n, s) => n + s.value, 0)).toBe(200);
    expect(valueOf(text, 'countersign_approvals_resolved_total', { tool: 'wire_transfer', group: 'treasury', outcome: 'approved' })).toBe(
      1,
    );
    expect(series(text, 'countersign_approvals_decision_seconds_count').length).toBeLessThanOrEqual(2 * 3 * 8);
  });

  it('time to decision lands in the histogram bucket of its duration, per tool, group and channel', async () => {
    const svc = service({});
    const quick = await submit(svc);
    now += 45_000;
    await decideByApi(svc, quick, 'approve');
    const slow = await submit(svc);
    now += 2 * HOUR;
    await decideByApi(svc, slow, 'deny');
    const text = await scrape(svc);
    const l = { tool: 'other', group: 'treasury', channel: 'api' };
    expect(valueOf(text, 'countersign_approvals_decision_seconds_bucket', { ...l, le: '30' })).toBe(0);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_bucket', { ...l, le: '60' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_bucket', { ...l, le: '3600' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_bucket', { ...l, le: '14400' })).toBe(2);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_bucket', { ...l, le: '+Inf' })).toBe(2);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_sum', l)).toBe(45 + 2 * 3600);
    expect(text).toContain('# TYPE countersign_approvals_decision_seconds histogram');
  });

  it('an approval within quickApprovalSeconds of opening the request page counts as quick, a later one as read, one never opened as unopened', async () => {
    const svc = service({ analytics: { quickApprovalSeconds: 10 } });
    const bob = await signIn(svc, 'bob');
    const [a, b, c] = [await submit(svc), await submit(svc), await submit(svc)];
    await openPage(svc, bob, a);
    now += 3_000;
    await decideByApi(svc, a, 'approve');
    await openPage(svc, bob, b);
    now += 60_000;
    await openPage(svc, bob, b); // a second look does not move the first open
    now += 2_000;
    await decideByApi(svc, b, 'approve');
    await decideByApi(svc, c, 'approve');
    const text = await scrape(svc);
    const l = { tool: 'other', group: 'treasury' };
    expect(valueOf(text, 'countersign_approvals_person_approvals_total', { ...l, reading: 'quick' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_person_approvals_total', { ...l, reading: 'read' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_person_approvals_total', { ...l, reading: 'unopened' })).toBe(1);
  });

  it('a request a grant approves at submission is timed under channel "grant" and is not counted as a person approving without opening it', async () => {
    const svc = service({ grants: { approvers: ['dana'] } });
    const res = await svc.app.request('/access/v1/grants', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Basic ${Buffer.from('dana:dana-pw').toString('base64')}` },
      body: JSON.stringify({
        principal: 'alice',
        tool: 'wire_transfer',
        approver_group: 'treasury',
        max_uses: 5,
        any_arguments: true,
        reason: 'supplier run',
      }),
    });
    expect(res.status).toBe(201);
    await submit(svc); // approved by the grant at once
    await decideByApi(svc, await submit(svc, { sub: 'erin' }), 'approve');
    const text = await scrape(svc);
    const l = { tool: 'other', group: 'treasury' };
    expect(valueOf(text, 'countersign_approvals_decision_seconds_count', { ...l, channel: 'grant' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_decision_seconds_count', { ...l, channel: 'api' })).toBe(1);
    expect(valueOf(text, 'countersign_approvals_resolved_total', { ...l, outcome: 'approved' })).toBe(2);
    expect(valueOf(text, 'countersign_approvals_person_approvals_total', { ...l, reading: 'unopened' })).toBe(1); // bob's, not the grant's
  });

  it('pending requests are counted by age bucket, and expiries and escalations are counted', async () => {
    const svc = service({ escalation: [{ group: 'treasury', escalateAfterMs: 2 * HOUR, escalateTo: { group: 'ops' } }] });
    await submit(svc); // will be 8 days old
    now += 4 * DAY;
    await submit(svc); // 4 days
    now += 2 * DAY;
    await submit(svc); // 2 days
    now += 2 * DAY - 2 * HOUR;
    await submit(svc); // 1 h 50 min
    await submit(svc, { expiresInMs: HOUR }); // expires
    now += 2 * HOUR - 10 * 60_000;
    await submit(svc); // 10 minutes
    await svc.sweep();
    const text = await scrape(svc);
    const age = (a: string) => valueOf(text, 'countersign_approvals_pending', { group: 'treasury', age: a });
    expect([age('under_1h'), age('1h_to_1d'), age('1d_to_3d'), age('3d_to_7d'), age('over_7d')]).toEqual([1, 1, 1, 1, 1]);
    expect(valueOf(text, 'countersign_approvals_resolved_total', { tool: 'other', group: 'treasury', outcome: 'expired' })).toBe(1);
    // the three requests pending longer than two hours were escalated
    expect(valueOf(text, 'countersign_approvals_escalations_total', { group: 'treasury' })).toBe(3);
  });
  it('with COUNTERSIGN_METRICS_TOKEN set, /metrics answers 401 problem+json without the bearer token or with another, and the analytics with it', async () => {
    const svc = service({});
    await decideByApi(svc, await submit(svc), 'approve');
    now += METRICS_SNAPSHOT_TTL_MS;
    const token = 'metrics-token-0123456789';
    const config = loadConfig({ COUNTERSIGN_METRICS_TOKEN: token });
    const metrics = createAppMetrics();
    metrics.setApprovalAnalyticsSource(() => svc.metricsSnapshot());
    let served: FetchFn | undefined;
    await withOps(
      async (fetch) => {
        served = fetch;
        return async () => {};
      },
      config,
      metrics,
      [],
    )((req) => svc.app.fetch(req));
    const get = (headers: Record<string, string>) => served!(new Request('http://mcp.test/metrics', { headers }), {});
    const refused: Array<Record<string, string>> = [
      {},
      { Authorization: 'Bearer wrong-token-0123456789' },
      { Authorization: `Basic ${token}` },
    ];
    for (const headers of refused) {
      const res = await get(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.text()).not.toMatch(/countersign_approvals/);
    }
    const ok = await get({ Authorization: `bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(series(await ok.text(), 'countersign_approvals_resolved_total').length).toBeGreaterThan(0);
    expect((await served!(new Request('http://mcp.test/livez'), {})).status).toBe(200);
  });

  it('COUNTERSIGN_METRICS_TOKEN shorter than 16 characters or with a space is refused at start with the setting named', () => {
    expect(() => loadConfig({ COUNTERSIGN_METRICS_TOKEN: 'short' })).toThrow(/COUNTERSIGN_METRICS_TOKEN/);
    expect(() => loadConfig({ COUNTERSIGN_METRICS_TOKEN: 'has a space in it 1234' })).toThrow(/COUNTERSIGN_METRICS_TOKEN/);
  });
});
