// Scope: `countersign approvals approve id1 id2 …` (batch), `delegate --to X --until ISO` and
// `approve --for` as a real process (tsx src/cli.ts) against the approval service over real HTTP:
// each request decided on its own with its own audit entry, a per-id result, one failing id not
// stopping the others, and the exit code of the failure.
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVALS_EXIT } from '@countersign/approvals/cli';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { runApprovalsCli } from '../support/stack-harness.js';

let svc: ApprovalService;
let server: ServerType;
let baseUrl: string;

beforeAll(async () => {
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
      { id: 'dave', secret: 'dave-pw', groups: ['payroll'] },
    ],
    publicBaseUrl: 'http://127.0.0.1',
    logger: pino({ level: 'silent' }),
  });
  await new Promise<void>((resolve) => {
    server = serve({ fetch: svc.app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      baseUrl = `http://127.0.0.1:${info.port}`;
      resolve();
    });
  });
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  svc?.close();
});

async function submit(sub: string, memo: string): Promise<string> {
  const res = await svc.app.request('/access/v1/requests', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Idempotency-Key': `k-${memo}`, Authorization: 'Bearer client-token' },
    body: JSON.stringify({
      subject: { iss: 'https://idp.example.test', sub },
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: { to: 'acct-991', amount: 50_000, memo } },
      approver_group: 'treasury',
      reason: 'Transfers over $25,000 require treasury approval.',
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      binding_digest: 'c'.repeat(64),
      generation: 1,
    }),
  });
  return ((await res.json()) as { id: string }).id;
}

const cli = (args: string[], approver: string) => runApprovalsCli(baseUrl, `${approver}:${approver}-pw`, args);

describe('countersign approvals batch and delegation', () => {
  it('approve with three ids decides each on its own: three approved requests, each with its own audit entry, one line each, exit 0', async () => {
    const ids = [await submit('alice', 'batch-1'), await submit('alice', 'batch-2'), await submit('alice', 'batch-3')];
    const r = await cli(['approve', ...ids, '--comment', 'month-end run'], 'bob');
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(ids.map((id) => `${id} is now approved.`));
    for (const id of ids) {
      const decided = (await svc.store.auditTrail(id)).filter((e) => e.event === 'approved');
      expect(decided).toEqual([expect.objectContaining({ actor: 'bob', via: 'api', comment: 'month-end run' })]);
    }
    expect(new Set(await Promise.all(ids.map(async (id) => (await svc.store.get(id))?.approval?.id))).size).toBe(3);
  });

  it('one failing id does not stop the others: the own request and an unknown id are reported, the rest decided, exit code of the first failure', async () => {
    const mine = await submit('bob', 'batch-own');
    const other = await submit('alice', 'batch-other');
    const r = await cli(['deny', mine, 'ar_nope', other, '--comment', 'not this quarter'], 'bob');
    expect(r.code).toBe(APPROVALS_EXIT.forbidden);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`${mine} not decided: A requester cannot decide their own access request.`);
    expect(lines[1]).toBe('ar_nope not decided: No such access request.');
    expect(lines[2]).toBe(`${other} is now denied.`);
    expect((await svc.store.get(mine))?.status).toBe('pending');
    expect((await svc.store.get(other))?.status).toBe('denied');
  });

  it('delegate --to --until, then the delegate approves --for the delegator: the audit shows both names', async () => {
    const until = new Date(Date.now() + 86_400_000).toISOString();
    const made = await cli(['delegate', '--to', 'dave', '--until', until], 'carol');
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^Delegated to dave until /);
    const id = await submit('alice', 'delegated-cli');
    const r = await cli(['approve', id, '--for', 'carol'], 'dave');
    expect(r).toMatchObject({ code: 0, stdout: `${id} is now approved.\n` });
    expect((await svc.store.auditTrail(id)).at(-1)).toMatchObject({ event: 'approved', actor: 'dave', onBehalfOf: 'carol' });
    expect((await cli(['show', id], 'carol')).stdout).toMatch(/approved\s+dave for carol via api/);
    const bad = await cli(['delegate', '--to', 'dave', '--until', 'soon'], 'carol');
    expect(bad.code).toBe(APPROVALS_EXIT.usage);
    expect(bad.stderr).toContain('until:');
  });
});
