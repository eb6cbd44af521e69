// Scope: the plain tier (src/mcp/approval-tools.ts, COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools,
// the default) with the real `@modelcontextprotocol/client` 2.4 `Client` in
// `versionNegotiation: {mode: "auto"}` (2026-07-28), declaring no tasks extension, against a
// locally started Countersign (real Temporal dev server, real HTTP, the reference approval
// service): an allowed call runs inline; a requestable denial opens the approval and says how to
// follow it; approval_status and approval_cancel follow it, bound to the caller like tasks/*.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Stack } from '../../src/stack.js';
import { clientFor as wireClientFor, decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
const clients: Client[] = [];
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await stack?.stop();
});

const memo = () => `plain ${randomUUID().slice(0, 12)}`;
const transfer = (m: string, amount = 50_000) => ({ to: 'acct-991', amount, memo: m });

/** What the plain tier's results carry in `structuredContent`. */
interface ApprovalState {
  approvalId: string;
  status: string;
  statusMessage: string;
  outcome: string;
  disposition?: string;
  checkAgainAfterMs?: number;
  next?: { tool: string; arguments: { approvalId: string } };
  result?: { content: Array<{ type: string; text?: string }>; isError: boolean };
}
interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}
const text = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('\n');

/** A connected SDK client for `sub`, 2026-07-28 by auto negotiation, without the tasks extension; tools listed (so the SDK checks output schemas). */
async function plainClient(sub: string): Promise<Client> {
  const token = await stack.issuer.mintToken({ sub });
  const client = new Client({ name: 'countersign-plain-e2e', version: '0.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  clients.push(client);
  await client.listTools();
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

/** `approval_status` until the approval leaves pending, at its suggested pace; at most `limit` calls. */
async function statusUntilDone(client: Client, approvalId: string, limit = 300): Promise<{ result: ToolResult; state: ApprovalState }> {
  for (let i = 0; i < limit; i++) {
    const result = await call(client, 'approval_status', { approvalId });
    const state = result.structuredContent as unknown as ApprovalState;
    if (state.outcome !== 'pending') return { result, state };
    await new Promise((r) => setTimeout(r, state.checkAgainAfterMs ?? 200));
  }
  throw new Error(`approval ${approvalId} did not end`);
}

describe('a client without the tasks extension follows an approval through the companion tools', () => {
  it('the client speaks 2026-07-28 and tools/list offers approval_status and approval_cancel with input and output schemas', async () => {
    const client = await plainClient('alice');
    expect(client.getProtocolEra()).toBe('modern');
    const { tools } = await client.listTools();
    for (const name of ['approval_status', 'approval_cancel']) {
      const t = tools.find((x) => x.name === name);
      expect(t?.inputSchema).toMatchObject({ type: 'object', required: ['approvalId'] });
      expect(t?.outputSchema).toMatchObject({ type: 'object' });
    }
  });

  it('an allowed call ($100 transfer) runs inline and opens nothing', async () => {
    const client = await plainClient('alice');
    const m = memo();
    const res = await call(client, 'wire_transfer', transfer(m, 100));
    expect(res.isError).toBe(false);
    expect(text(res)).toMatch(/Transfer of \$100\.00/);
    expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m)).toBe(false);
  });

  it('$50,000 transfer → the approval is opened and the result names its id and the next call; approved → approval_status shows approved-executed and exactly one ledger row', async () => {
    const client = await plainClient('alice');
    const m = memo();
    const opened = await call(client, 'wire_transfer', transfer(m));
    expect(opened.isError).toBe(true);
    const state = opened.structuredContent as unknown as ApprovalState;
    expect(state.status).toBe('working');
    expect(state.outcome).toBe('pending');
    expect(state.next).toEqual({ tool: 'approval_status', arguments: { approvalId: state.approvalId } });
    expect(text(opened)).toContain(state.approvalId);
    expect(text(opened)).toMatch(/approval_status/);
    expect(text(opened)).not.toMatch(/io\.modelcontextprotocol\/tasks/); // nothing to switch clients for
    expect(stack.ledger.countByTask(state.approvalId)).toBe(0);
    // the same approval an approver sees
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === m)).toHaveLength(1);
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await statusUntilDone(client, state.approvalId);
    expect(done.result.isError).toBe(false);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'executed', disposition: 'approved-executed' });
    expect(done.state.next).toBeUndefined();
    expect(done.state.result?.isError).toBe(false);
    expect(text(done.result)).toMatch(/executed once/);
    expect(stack.ledger.countByTask(state.approvalId)).toBe(1);
  });

  it('denied → approval_status shows denied-not-executed, the tool did not run, no ledger row', async () => {
    const client = await plainClient('alice');
    const m = memo();
    const state = (await call(client, 'wire_transfer', transfer(m))).structuredContent as unknown as ApprovalState;
    expect(await decide(stack, m, 'deny', 'carol')).toBe(200);
    const done = await statusUntilDone(client, state.approvalId);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'not-executed', disposition: 'denied-not-executed' });
    expect(text(done.result)).toMatch(/did not run/);
    expect(stack.ledger.countByTask(state.approvalId)).toBe(0);
  });

  it('approval_cancel withdraws the request: cancelled, the approver no longer sees it, nothing runs', async () => {
    const client = await plainClient('alice');
    const m = memo();
    const state = (await call(client, 'wire_transfer', transfer(m))).structuredContent as unknown as ApprovalState;
    const cancelled = await call(client, 'approval_cancel', { approvalId: state.approvalId });
    expect(cancelled.structuredContent).toMatchObject({ status: 'cancelled', outcome: 'not-executed' });
    for (let i = 0; i < 100 && (await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m)).toBe(false);
    expect(stack.ledger.countByTask(state.approvalId)).toBe(0);
  });

  it('the plain call joins the same approval a tasks client opens for the same call (same workflow, same dedup)', async () => {
    const client = await plainClient('alice');
    const m = memo();
    const wire = await wireClientFor(stack, 'alice');
    const task = await wire.request<{ taskId: string }>('tools/call', { name: 'wire_transfer', arguments: transfer(m) });
    const state = (await call(client, 'wire_transfer', transfer(m))).structuredContent as unknown as ApprovalState;
    expect(state.approvalId).toBe(task.taskId);
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === m)).toHaveLength(1);
    await wire.request('tasks/cancel', { taskId: task.taskId });
  });

  it('another principal gets the same answer for the approval id as for an unknown one, and cannot cancel it', async () => {
    const alice = await plainClient('alice');
    const m = memo();
    const state = (await call(alice, 'wire_transfer', transfer(m))).structuredContent as unknown as ApprovalState;
    const mallory = await plainClient('mallory');
    const foreign = await call(mallory, 'approval_status', { approvalId: state.approvalId });
    const unknown = await call(mallory, 'approval_status', { approvalId: `${state.approvalId.slice(0, -4)}0000` });
    expect(foreign.isError).toBe(true);
    expect(foreign).toEqual(unknown);
    expect(await call(mallory, 'approval_cancel', { approvalId: state.approvalId })).toEqual(unknown);
    expect(
      ((await call(alice, 'approval_status', { approvalId: state.approvalId })).structuredContent as unknown as ApprovalState).status,
    ).toBe('working');
    await call(alice, 'approval_cancel', { approvalId: state.approvalId });
  });
});
