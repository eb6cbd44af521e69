// Scope: `@modelcontextprotocol/client` 2.4 with DEFAULT options (it opens with `initialize`,
// 2025-11-25, and cannot take a task) against the real stack: connect, tools/list, an allowed call
// inline, and a requestable denial that opens the approval (COUNTERSIGN_NO_TASKS_RESPONSE=
// approval-tools, the default) and is followed with approval_status to approved-executed or
// denied-not-executed, bound to the caller (docs/DESIGN.md §3; src/mcp/legacy-server.ts,
// src/mcp/approval-tools.ts).
import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

async function defaultClient(sub: string): Promise<Client> {
  const token = await stack.issuer.mintToken({ sub });
  const client = new Client({ name: 'sdk2-default-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const memo = () => `sdk2 ${randomUUID().slice(0, 12)}`;
const transfer = (m: string) => ({ to: 'acct-991', amount: 50_000, memo: m });

/** What the companion tools' results carry in `structuredContent` (src/mcp/approval-tools.ts). */
interface ApprovalState {
  approvalId: string;
  status: string;
  outcome: string;
  disposition?: string;
  checkAgainAfterMs?: number;
  next?: { tool: string; arguments: { approvalId: string } };
  result?: { isError: boolean };
}
interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}
const text = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('\n');

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

describe('@modelcontextprotocol/client 2.4 with default options against Countersign', () => {
  it('connects (initialize, 2025-11-25) where it used to fail with -32022', async () => {
    const client = await defaultClient('alice');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(client.getServerVersion()?.name).toBe('countersign');
    expect((client.getServerCapabilities() as Record<string, unknown>).extensions).toBeUndefined();
    await client.close();
  });

  it('tools/list returns the same tools as the 2026-07-28 face', async () => {
    const client = await defaultClient('alice');
    const { tools } = await client.listTools();
    const modern = await (
      await clientFor(stack, 'alice')
    ).request<{ tools: Array<{ name: string; inputSchema: unknown }> }>('tools/list', {});
    expect(tools.map((t) => [t.name, t.inputSchema])).toEqual(modern.tools.map((t) => [t.name, t.inputSchema]));
    await client.close();
  });

  it('an allowed call ($100 transfer) runs inline', async () => {
    const client = await defaultClient('alice');
    const res = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-100', amount: 100, memo: memo() } });
    expect(res.isError).toBe(false);
    expect(res.content.length).toBeGreaterThan(0);
    await client.close();
  });

  it('tools/list also offers approval_status and approval_cancel, never as tasks', async () => {
    const client = await defaultClient('alice');
    const { tools } = await client.listTools();
    for (const name of ['approval_status', 'approval_cancel']) {
      const t = tools.find((x) => x.name === name);
      expect(t?.inputSchema).toMatchObject({ type: 'object', required: ['approvalId'] });
      expect(t?.execution?.taskSupport).toBe('forbidden');
    }
    await client.close();
  });

  it('$50,000 transfer → the approval is opened and the result names its id, approval_status and params.task; approved → approval_status shows approved-executed and exactly one ledger row', async () => {
    const client = await defaultClient('alice');
    await client.listTools(); // so the SDK checks output schemas
    const m = memo();
    const opened = await call(client, 'wire_transfer', transfer(m));
    expect(opened.isError).toBe(true);
    const state = opened.structuredContent as unknown as ApprovalState;
    expect(state).toMatchObject({
      status: 'working',
      outcome: 'pending',
      next: { tool: 'approval_status', arguments: { approvalId: state.approvalId } },
    });
    expect(text(opened)).toContain(state.approvalId);
    expect(text(opened)).toMatch(/approval_status/);
    expect(text(opened)).toMatch(/params\.task/);
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === m)).toHaveLength(1);
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await statusUntilDone(client, state.approvalId);
    expect(done.result.isError).toBe(false);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'executed', disposition: 'approved-executed' });
    expect(done.state.result?.isError).toBe(false);
    expect(stack.ledger.countByTask(state.approvalId)).toBe(1);
    await client.close();
  });

  it('denied → approval_status shows denied-not-executed, the tool did not run, no ledger row', async () => {
    const client = await defaultClient('alice');
    const m = memo();
    const state = (await call(client, 'wire_transfer', transfer(m))).structuredContent as unknown as ApprovalState;
    expect(await decide(stack, m, 'deny', 'carol')).toBe(200);
    const done = await statusUntilDone(client, state.approvalId);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'not-executed', disposition: 'denied-not-executed' });
    expect(text(done.result)).toMatch(/did not run/);
    expect(stack.ledger.countByTask(state.approvalId)).toBe(0);
    await client.close();
  });

  it('another principal gets the same answer for the approval id as for an unknown one, and cannot cancel it; the owner can', async () => {
    const alice = await defaultClient('alice');
    const state = (await call(alice, 'wire_transfer', transfer(memo()))).structuredContent as unknown as ApprovalState;
    const mallory = await defaultClient('mallory');
    const foreign = await call(mallory, 'approval_status', { approvalId: state.approvalId });
    const unknown = await call(mallory, 'approval_status', { approvalId: `${state.approvalId.slice(0, -4)}0000` });
    expect(foreign.isError).toBe(true);
    expect(foreign).toEqual(unknown);
    expect(await call(mallory, 'approval_cancel', { approvalId: state.approvalId })).toEqual(unknown);
    const cancelled = await call(alice, 'approval_cancel', { approvalId: state.approvalId });
    expect(cancelled.structuredContent).toMatchObject({ status: 'cancelled', outcome: 'not-executed' });
    expect(stack.ledger.countByTask(state.approvalId)).toBe(0);
    await Promise.all([alice.close(), mallory.close()]);
  });
});
