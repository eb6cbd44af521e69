// Scope: the supervising agent end to end (real Temporal dev server, real HTTP): a machine
// credential from secrets.json, scoped to wire_transfer, lists and decides pending requests over the
// ARAP-side API with no human; its identity is in the audit trail; it is not a member of the
// approver group, so it never counts towards a quorum above 1 (two treasury approvers means two
// treasury people), and never bypasses four-eyes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

const agentAuth = () => ({ authorization: `Bearer ${stack.secrets.agents[0]!.secret}` });
const memo = () => `agent-${randomUUID().slice(0, 8)}`;

async function agentPending(): Promise<
  Array<{ id: string; arguments: Record<string, unknown>; required_approvals: number; approvals: string[] }>
> {
  const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending?limit=200`, { headers: agentAuth() });
  expect(res.status).toBe(200);
  return (
    (await res.json()) as {
      items: Array<{ id: string; arguments: Record<string, unknown>; required_approvals: number; approvals: string[] }>;
    }
  ).items;
}

async function agentDecides(id: string, decision: 'approve' | 'deny', comment: string): Promise<Response> {
  return fetch(`${stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { ...agentAuth(), 'content-type': 'application/json' },
    body: JSON.stringify({ decision, comment }),
  });
}

describe('supervising agent', () => {
  it('the agent lists the pending transfer and approves it with its bearer credential: approved-executed, with agent:supervisor in the audit trail', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: m },
    });
    const item = (await agentPending()).find((r) => r.arguments['memo'] === m)!;
    expect(item).toMatchObject({ required_approvals: 1, approvals: [] });
    const res = await agentDecides(item.id, 'approve', 'matches the purchase order');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'approved', approvals: ['agent:supervisor'] });
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    expect((await stack.approvals.store.auditTrail(item.id)).at(-1)).toMatchObject({
      event: 'approved',
      actor: 'agent:supervisor',
      via: 'agent',
      comment: 'matches the purchase order',
    });
  });

  it('the agent denies: denied-not-executed', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 60_000, memo: m },
    });
    const item = (await agentPending()).find((r) => r.arguments['memo'] === m)!;
    expect((await agentDecides(item.id, 'deny', 'no purchase order')).status).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
  });

  it('on a two-approver transfer the agent is not a treasury approver: its approval is refused (403) and two treasury people approve it', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 250_000, memo: m },
    });
    const item = (await agentPending()).find((r) => r.arguments['memo'] === m)!;
    expect(item.required_approvals).toBe(2);
    const first = await agentDecides(item.id, 'approve', 'looks fine');
    expect(first.status).toBe(403);
    expect(((await first.json()) as { detail: string }).detail).toContain('not a member');
    expect(await stack.approvals.store.votes(item.id)).toEqual([]);
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
    const person = async (id: 'bob' | 'carol') => {
      const secret = stack.secrets.approvers.find((a) => a.id === id)!.secret;
      const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${item.id}/decision`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
      return res.json();
    };
    expect(await person('carol')).toMatchObject({ status: 'pending', approvals: ['carol'] });
    expect(await person('bob')).toMatchObject({ status: 'approved', approvals: ['carol', 'bob'] });
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
  });

  it('a wrong agent secret is a 401 and decides nothing', async () => {
    const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending?limit=200`, {
      headers: { authorization: 'Bearer not-the-agent' },
    });
    expect(res.status).toBe(401);
    const client = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending?limit=200`, {
      headers: { authorization: `Bearer ${stack.secrets.approvalsClientToken}` },
    });
    expect(client.status).toBe(401); // the MCP server's client token cannot decide
  });
});
