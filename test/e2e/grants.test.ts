// Scope: grants (docs/APPROVERS.md §Grants) end to end on a real Temporal dev server and the whole
// stack over real HTTP, with a second MCP front instance (test/support/mcp-instance.ts) over the
// same Temporal and approval service: bob, a treasury approver with the grant right in the rules
// file, grants dave "transfers of at most $30,000 to acct-991, 3 times, for an hour"; six such calls
// made at once, three on each front, are each evaluated by the gate (requestable: over $25,000) and
// exactly three are approved by the grant and run once — the other three stay ordinary pending
// requests; each receipt names the grant and its use. A revoked or an expired grant approves
// nothing; a call outside the constraints is never approved by it; a forbidden call never reaches it.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countActions, totalActions } from '../../bench/lib/actions.js';
import { WireClient } from '@countersign/client';
import type { Config } from '../../src/config.js';
import type { Stack } from '../../src/stack.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { startMcpInstance, type McpInstance } from '../support/mcp-instance.js';
import {
  approvalsCli,
  basic,
  clientFor,
  exportReceipts as exportReceiptsOf,
  startTestStack,
  testConfig,
  waitForTerminal,
  type WireTask,
} from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
let config: Config;
let b: McpInstance;

beforeAll(async () => {
  config = testConfig();
  writeFileSync(
    join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'),
    JSON.stringify({ grants: { approvers: ['bob'] }, unfollowed: { action: 'off' } }),
  );
  stack = await startTestStack(config);
  b = await startMcpInstance(stack);
}, 120_000);
afterAll(async () => {
  await b?.stop();
  await stack?.stop();
});

/** POST/GET `path` of the approvals API as approver `id`. */
function api(id: string, path: string, body?: unknown): Promise<Response> {
  const a = stack.secrets.approvers.find((x) => x.id === id)!;
  return fetch(`${stack.urls.approvals}/access/v1${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Create a grant as bob; returns its id. */
async function grant(body: Record<string, unknown>): Promise<string> {
  const res = await api('bob', '/grants', { approver_group: 'treasury', reason: 'month-end supplier run', ...body });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** A wire client of `sub` on the second front. */
async function clientOnB(sub: string): Promise<WireClient> {
  return new WireClient({
    url: b.url,
    token: await stack.issuer.mintToken({ sub }),
    capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });
}

const transfer = (memo: string, amount = 30_000, to = 'acct-991') => ({ name: 'wire_transfer', arguments: { to, amount, memo } });

/** The access request whose memo is `memo` (waits until the gate submitted it). */
async function requestOf(memo: string): Promise<{ id: string; status: string }> {
  for (let i = 0; i < 300; i++) {
    const s = stack.approvals.store;
    const r = [...(await s.listPending({ requester: 'dave' }, 1000)), ...(await s.listResolved({ requester: 'dave' }, 1000))].find(
      (x) => x.body.context.arguments['memo'] === memo,
    );
    if (r !== undefined) return { id: r.id, status: r.status };
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`no access request for ${memo}`);
}

const exportReceipts = () => exportReceiptsOf(stack, config);

describe('grants end to end', () => {
  it('a count-3 grant allows exactly 3 of 6 concurrent calls across two MCP instances; each runs once and its receipt names the grant', async () => {
    const id = await grant({
      principal: 'dave',
      tool: 'wire_transfer',
      constraints: { amount: { max: 30_000 }, to: { eq: 'acct-991' } },
      max_uses: 3,
      duration_ms: 3_600_000,
    });
    const onA = await clientFor(stack, 'dave');
    const onB = await clientOnB('dave');
    const memos = Array.from({ length: 6 }, () => `grant ${randomUUID().slice(0, 8)}`);
    const tasks = await Promise.all(memos.map((m, i) => (i % 2 === 0 ? onA : onB).request<WireTask>('tools/call', transfer(m))));
    expect(tasks.every((t) => t.resultType === 'task')).toBe(true);

    const requests = await Promise.all(memos.map(requestOf));
    const approved = requests.flatMap((r, i) => (r.status === 'approved' ? [i] : []));
    expect(approved).toHaveLength(3);
    expect(requests.filter((r) => r.status === 'pending')).toHaveLength(3);
    expect(await stack.approvals.store.grants.get(id)).toMatchObject({ uses: 3, maxUses: 3 });
    const uses = await Promise.all(approved.map((i) => stack.approvals.store.grants.useBy(requests[i]!.id)));
    expect(uses.map((u) => u?.use).sort()).toEqual([1, 2, 3]);

    for (const i of approved) {
      const done = await waitForTerminal(i % 2 === 0 ? onA : onB, tasks[i]!.taskId);
      expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
      expect(stack.ledger.countByTask(tasks[i]!.taskId)).toBe(1);
      const audit = await stack.approvals.store.auditTrail(requests[i]!.id);
      expect(audit.find((e) => e.event === 'grant-used')).toMatchObject({ actor: 'bob', rule: 'grant' });
      expect(audit.find((e) => e.event === 'approved')).toMatchObject({ actor: 'bob', rule: 'grant' });
    }
    // the three left over are ordinary pending requests: still working, nothing ran
    for (const [i, r] of requests.entries()) {
      if (r.status !== 'pending') continue;
      expect((await onA.request<WireTask>('tasks/get', { taskId: tasks[i]!.taskId })).status).toBe('working');
      expect(stack.ledger.countByTask(tasks[i]!.taskId)).toBe(0);
    }

    // the receipt of each allowed task names the grant and its use
    for (const i of approved) {
      const ids = parseTaskId(tasks[i]!.taskId)!;
      await stack.temporal.workflow.getHandle(ids.workflowId, ids.runId).result();
    }
    const receipts = await exportReceipts();
    for (const i of approved) {
      const receipt = receipts.find((p) => p.task.taskId === tasks[i]!.taskId)!;
      expect(receipt.approvalRequests[0]?.grant).toEqual({
        id,
        createdBy: 'bob',
        use: (await stack.approvals.store.grants.useBy(requests[i]!.id))!.use,
        maxUses: 3,
        expiresAt: expect.stringMatching(/Z$/),
      });
    }

    // listed with its uses, used up
    const listed = (await (await api('carol', '/grants?state=all')).json()) as { items: Array<Record<string, unknown>> };
    const item = listed.items.find((g) => g['id'] === id)!;
    expect(item).toMatchObject({ state: 'used-up', uses: 3, max_uses: 3, principal: 'dave', created_by: 'bob' });
    expect((item['used_by'] as unknown[]).length).toBe(3);
  });

  it('a task a grant approves costs no more Temporal actions than the same call a person approves at once (counted from both workflow histories)', async () => {
    await grant({ principal: 'dave', tool: 'wire_transfer', constraints: { to: { eq: 'acct-993' } }, max_uses: 1, duration_ms: 3_600_000 });
    const dave = await clientFor(stack, 'dave');
    const granted = await dave.request<WireTask>('tools/call', transfer(`measured grant ${randomUUID().slice(0, 8)}`, 30_000, 'acct-993'));
    const personMemo = `measured person ${randomUUID().slice(0, 8)}`;
    const person = await dave.request<WireTask>('tools/call', transfer(personMemo, 30_000, 'acct-994'));
    const pending = await requestOf(personMemo);
    expect(pending.status).toBe('pending');
    expect((await api('bob', `/requests/${pending.id}/decision`, { decision: 'approve' })).status).toBe(200);
    const actions = [];
    for (const task of [granted, person]) {
      expect((await waitForTerminal(dave, task.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');
      const ids = parseTaskId(task.taskId)!;
      const handle = stack.temporal.workflow.getHandle(ids.workflowId, ids.runId);
      await handle.result();
      actions.push(countActions(await handle.fetchHistory()));
    }
    const [byGrant, byPerson] = actions as [ReturnType<typeof countActions>, ReturnType<typeof countActions>];
    // the figures docs/PERFORMANCE-ACTIONS.md §grants quotes
    process.stderr.write(
      `grant-approved task actions ${JSON.stringify(byGrant)} = ${totalActions(byGrant)}; person-approved ${JSON.stringify(byPerson)} = ${totalActions(byPerson)}\n`,
    );
    expect(byGrant.activity).toBeGreaterThan(0);
    expect(totalActions(byGrant)).toBeLessThanOrEqual(totalActions(byPerson));
    expect(byGrant.signalReceived + byGrant.update).toBeLessThanOrEqual(byPerson.signalReceived + byPerson.update);
  });

  it('a revoked grant and an expired grant allow none; a call outside the constraints is not approved by a live one', async () => {
    const dave = await clientFor(stack, 'dave');
    const revoked = await grant({ principal: 'dave', tool: 'wire_transfer', constraints: { to: { eq: 'acct-992' } }, max_uses: 5 });
    const rev = await api('bob', `/grants/${revoked}/revoke`, {});
    expect(rev.status).toBe(200);
    expect(((await rev.json()) as { state: string }).state).toBe('revoked');
    expect((await api('bob', `/grants/${revoked}/revoke`, {})).status).toBe(409);
    const m1 = `revoked ${randomUUID().slice(0, 8)}`;
    await dave.request<WireTask>('tools/call', transfer(m1, 30_000, 'acct-992'));
    expect((await requestOf(m1)).status).toBe('pending');

    await grant({ principal: 'dave', tool: 'wire_transfer', constraints: { to: { eq: 'acct-993' } }, duration_ms: 1000 });
    await new Promise((r) => setTimeout(r, 1200)); // past its end
    const m2 = `expired ${randomUUID().slice(0, 8)}`;
    await dave.request<WireTask>('tools/call', transfer(m2, 30_000, 'acct-993'));
    expect((await requestOf(m2)).status).toBe('pending');

    const live = await grant({
      principal: 'dave',
      tool: 'wire_transfer',
      constraints: { amount: { max: 40_000 }, to: { eq: 'acct-994' } },
      max_uses: 2,
    });
    const m3 = `over ${randomUUID().slice(0, 8)}`;
    await dave.request<WireTask>('tools/call', transfer(m3, 45_000, 'acct-994'));
    expect((await requestOf(m3)).status).toBe('pending');
    expect((await stack.approvals.store.grants.get(live))?.uses).toBe(0);
  });

  it('countersign approvals grants create --from a pending request approves it and the calls after it; list shows the uses; revoke ends it; without the right exit 4', async () => {
    const dave = await clientFor(stack, 'dave');
    const m = `cli ${randomUUID().slice(0, 8)}`;
    const first = await dave.request<WireTask>('tools/call', transfer(m, 28_000, 'acct-995'));
    const pending = await requestOf(m);
    expect(pending.status).toBe('pending');

    const refused = await approvalsCli(stack, 'carol', ['grants', 'create', '--from', pending.id, '--uses', '2', '--reason', 'x']);
    expect(refused.code).toBe(4);
    const created = await approvalsCli(stack, 'bob', [
      'grants',
      'create',
      '--from',
      pending.id,
      '--where',
      'amount:max=30000',
      '--where',
      'to:eq=acct-995',
      '--uses',
      '2',
      '--duration',
      '1h',
      '--reason',
      'quarter-end supplier run',
    ]);
    expect(created.stderr).toBe('');
    const id = /^Granted (grt_\S+): dave · wire_transfer · amount at most 30000; to = "acct-995" · 2 uses · until \S+Z\n/.exec(
      created.stdout,
    )?.[1];
    expect(id).toBeDefined();
    expect(created.stdout).toContain(`It approved ${pending.id}.`);
    expect((await waitForTerminal(dave, first.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');

    const m2 = `cli ${randomUUID().slice(0, 8)}`;
    const second = await dave.request<WireTask>('tools/call', transfer(m2, 29_000, 'acct-995'));
    expect((await requestOf(m2)).status).toBe('approved');
    expect((await waitForTerminal(dave, second.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');

    const all = await approvalsCli(stack, 'carol', ['grants', 'list', '--all']);
    expect(all.stdout).toContain(`${id!}  used-up`);
    expect(all.stdout).toContain('uses         2 of 2 used');
    expect(all.stdout).toContain('by           bob: quarter-end supplier run');
    expect((await approvalsCli(stack, 'carol', ['grants', 'list'])).stdout).not.toContain(id!);
    expect((await stack.approvals.store.auditTrail(pending.id)).map((e) => e.event)).toEqual([
      'submitted',
      'granted',
      'grant-used',
      'approved',
    ]);
    expect((await approvalsCli(stack, 'carol', ['show', pending.id])).stdout).toContain(`  grant         ${id!} by bob, use 1 of 2\n`);

    const revoked = await approvalsCli(stack, 'bob', ['grants', 'revoke', id!]);
    expect(revoked.stdout).toBe(`Revoked ${id!} (2 used).\n`);
    expect((await approvalsCli(stack, 'bob', ['grants', 'revoke', id!])).code).toBe(6);
    expect(
      (
        await approvalsCli(stack, 'bob', [
          'grants',
          'create',
          '--principal',
          'dave',
          '--tool',
          'wire_transfer',
          '--group',
          'treasury',
          '--where',
          'amount:below=1',
          '--uses',
          '1',
          '--reason',
          'x',
        ])
      ).code,
    ).toBe(2);
  });

  it('only an approver with the grant right creates grants, never for themselves, within the rules', async () => {
    const body = { principal: 'dave', tool: 'wire_transfer', approver_group: 'treasury', max_uses: 1, reason: 'x' };
    const carol = await api('carol', '/grants', body);
    expect(carol.status).toBe(403);
    expect(((await carol.json()) as { type: string }).type).toBe('urn:countersign:problem:no-grant-right');
    expect((await api('bob', '/grants', { ...body, principal: 'bob' })).status).toBe(403);
    const broad = await api('bob', '/grants', { ...body, max_uses: 101 });
    expect(broad.status).toBe(400);
    expect(((await broad.json()) as { type: string }).type).toBe('urn:countersign:problem:grant-too-broad');
    expect((await api('bob', '/grants', { ...body, max_uses: undefined })).status).toBe(400); // unbounded
  });
});
