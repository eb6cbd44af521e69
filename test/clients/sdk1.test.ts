// Scope: `@modelcontextprotocol/sdk` 1.32.2 (MCP 2025-11-25 only) against the real stack: it
// connects with `initialize`, lists the same tools, runs an allowed call inline, and follows an
// approval through its experimental tasks API (task-augmented tools/call, tasks/get,
// tasks/result) to the final CallToolResult, approved and denied; a call without a task opens the
// approval (COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools, the default) and its result names both
// approval_status and params.task, which joins the same approval (docs/DESIGN.md §3;
// src/mcp/legacy-server.ts).
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

async function sdk1Client(sub: string): Promise<Client> {
  const token = await stack.issuer.mintToken({ sub });
  const client = new Client({ name: 'sdk1-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  return client;
}

const memo = () => `sdk1 ${randomUUID().slice(0, 12)}`;

/** Drive `callToolStream` with a task to its end; returns the task id, statuses seen and the final message. */
async function followTask(client: Client, args: Record<string, unknown>, onCreated: () => Promise<void>) {
  const stream = client.experimental.tasks.callToolStream({ name: 'wire_transfer', arguments: args }, CallToolResultSchema, {
    task: { ttl: 3_600_000 },
  });
  let taskId: string | undefined;
  const statuses: string[] = [];
  for await (const message of stream) {
    if (message.type === 'taskCreated') {
      taskId = message.task.taskId;
      statuses.push(message.task.status);
      await onCreated();
    } else if (message.type === 'taskStatus') {
      statuses.push(message.task.status);
    } else if (message.type === 'result') {
      return {
        taskId,
        statuses,
        result: message.result as { isError?: boolean; content: Array<{ type: string; text?: string }>; _meta?: Record<string, unknown> },
      };
    } else if (message.type === 'error') {
      throw message.error;
    }
  }
  throw new Error('stream ended without a result');
}

describe('@modelcontextprotocol/sdk 1.32.2 (2025-11-25) against Countersign', () => {
  it('connects with initialize, negotiates 2025-11-25, sees capabilities.tasks and no extensions', async () => {
    const client = await sdk1Client('alice');
    const caps = client.getServerCapabilities() as Record<string, unknown>;
    expect(caps.tools).toBeDefined();
    expect(caps.tasks).toMatchObject({ cancel: {}, requests: { tools: { call: {} } } });
    expect(caps.extensions).toBeUndefined();
    expect(client.getServerVersion()?.name).toBe('countersign');
    await client.close();
  });

  it('tools/list returns the same tool set, wire_transfer with optional task support and the companion tools forbidden as tasks', async () => {
    const client = await sdk1Client('alice');
    const { tools } = await client.listTools();
    const modern = await (
      await clientFor(stack, 'alice')
    ).request<{ tools: Array<{ name: string; inputSchema: unknown }> }>('tools/list', {});
    expect(tools.map((t) => [t.name, t.inputSchema])).toEqual(modern.tools.map((t) => [t.name, t.inputSchema]));
    expect(Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]))).toEqual({
      wire_transfer: 'optional',
      approval_status: 'forbidden',
      approval_cancel: 'forbidden',
    });
    await client.close();
  });

  it('an allowed call ($100 transfer) runs inline and returns its content', async () => {
    const client = await sdk1Client('alice');
    const res = (await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-100', amount: 100, memo: memo() } })) as {
      isError?: boolean;
      content: unknown[];
    };
    expect(res.isError).toBe(false);
    expect(res.content.length).toBeGreaterThan(0);
    await client.close();
  });

  it('a $50,000 transfer through the experimental tasks API: approved by an approver → completed, approved-executed, exactly one ledger row', async () => {
    const client = await sdk1Client('alice');
    const m = memo();
    const out = await followTask(client, { to: 'acct-991', amount: 50_000, memo: m }, async () => {
      expect(await decide(stack, m, 'approve')).toBe(200);
    });
    expect(out.statuses[0]).toBe('working');
    expect(out.statuses.at(-1)).toBe('completed');
    expect(out.result.isError).toBeFalsy();
    expect(out.result._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(out.taskId!)).toBe(1);
    // the task stays readable: tasks/get and tasks/result again neither re-run nor change it
    expect((await client.experimental.tasks.getTask(out.taskId!)).status).toBe('completed');
    const again = (await client.experimental.tasks.getTaskResult(out.taskId!, CallToolResultSchema)) as { _meta?: Record<string, unknown> };
    expect(again._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(out.taskId!)).toBe(1);
    await client.close();
  });

  it('a $50,000 transfer the approver denies → completed, denied-not-executed, the result says it did not run, no ledger row', async () => {
    const client = await sdk1Client('alice');
    const m = memo();
    const out = await followTask(client, { to: 'acct-991', amount: 50_000, memo: m }, async () => {
      expect(await decide(stack, m, 'deny', 'carol')).toBe(200);
    });
    expect(out.statuses.at(-1)).toBe('completed');
    expect(out.result.isError).toBe(true);
    expect(out.result._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(out.result.content[0]?.text).toMatch(/did not run/);
    expect(stack.ledger.countByTask(out.taskId!)).toBe(0);
    await client.close();
  });

  it('an allowed call made with a task ($100) runs inline and comes back as a completed task whose tasks/result is the call result', async () => {
    const client = await sdk1Client('alice');
    const out = await followTask(client, { to: 'acct-100', amount: 100, memo: memo() }, async () => {});
    expect(out.statuses).toEqual(['completed', 'completed']);
    expect(out.result.isError).toBe(false);
    expect(out.result.content[0]?.text).toMatch(/Transfer of \$100\.00/);
    // the sealed task id is the caller's only: another principal, or a tampered id, is an unknown task
    const mallory = await sdk1Client('mallory');
    const foreign = await mallory.experimental.tasks.getTask(out.taskId!).then(
      () => null,
      (e: McpError) => [e.code, e.message],
    );
    const tampered = await client.experimental.tasks.getTask(`${out.taskId!.slice(0, -2)}AA`).then(
      () => null,
      (e: McpError) => [e.code, e.message],
    );
    expect(foreign).toEqual([-32602, 'MCP error -32602: Invalid params: unknown task']);
    expect(tampered).toEqual(foreign);
    await Promise.all([client.close(), mallory.close()]);
  });

  it('a requestable denial called without a task opens the approval, and the same call with a task joins it (one approval request)', async () => {
    const client = await sdk1Client('alice');
    const m = memo();
    const res = (await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } })) as {
      isError?: boolean;
      content: Array<{ text?: string }>;
      structuredContent?: { approvalId?: string };
    };
    expect(res.isError).toBe(true);
    const approvalId = res.structuredContent?.approvalId;
    expect(res.content[0]?.text).toContain(approvalId);
    expect(res.content[0]?.text).toMatch(/approval_status/);
    expect(res.content[0]?.text).toMatch(/params\.task/);
    const joined = await client.experimental.tasks.callToolStream(
      { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } },
      CallToolResultSchema,
      {
        task: { ttl: 3_600_000 },
      },
    );
    for await (const message of joined) {
      expect(message.type).toBe('taskCreated');
      if (message.type === 'taskCreated') expect(message.task.taskId).toBe(approvalId);
      break;
    }
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === m)).toHaveLength(1);
    expect((await client.experimental.tasks.cancelTask(approvalId!)).status).toBe('cancelled');
    await client.close();
  });

  it('approval_status called as a task is -32601 (its taskSupport is forbidden); called plainly it answers for the caller', async () => {
    const client = await sdk1Client('alice');
    const res = (await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: memo() } })) as {
      structuredContent?: { approvalId?: string };
    };
    const approvalId = res.structuredContent!.approvalId!;
    const asTask = await client
      .request(
        { method: 'tools/call', params: { name: 'approval_status', arguments: { approvalId }, task: { ttl: 60_000 } } },
        CallToolResultSchema,
      )
      .then(
        () => null,
        (e: McpError) => e.code,
      );
    expect(asTask).toBe(-32601);
    const plain = (await client.callTool({ name: 'approval_status', arguments: { approvalId } })) as {
      isError?: boolean;
      structuredContent?: Record<string, unknown>;
    };
    expect(plain.isError).toBe(false);
    expect(plain.structuredContent).toMatchObject({ approvalId, status: 'working', outcome: 'pending' });
    await client.callTool({ name: 'approval_cancel', arguments: { approvalId } });
    await client.close();
  });

  it('the same call by the same caller over 2025-11-25 and over 2026-07-28 joins one approval task (same dedup, same owner)', async () => {
    const client = await sdk1Client('alice');
    const args = { to: 'acct-991', amount: 50_000, memo: memo() };
    const stream = client.experimental.tasks.callToolStream({ name: 'wire_transfer', arguments: args }, CallToolResultSchema, { task: {} });
    const first = await stream.next();
    await stream.return(undefined);
    const legacyTaskId = (first.value as { task: { taskId: string } }).task.taskId;
    const modern = await clientFor(stack, 'alice');
    const joined = await modern.request<{ resultType: string; taskId: string }>('tools/call', { name: 'wire_transfer', arguments: args });
    expect(joined.resultType).toBe('task');
    expect(joined.taskId).toBe(legacyTaskId);
    expect((await modern.request<{ status: string }>('tasks/get', { taskId: legacyTaskId })).status).toBe('working');
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === args.memo)).toHaveLength(1);
    expect((await client.experimental.tasks.cancelTask(legacyTaskId)).status).toBe('cancelled');
    await client.close();
  });

  it("another principal's task id is indistinguishable from an unknown one (-32602) on tasks/get, tasks/result and tasks/cancel", async () => {
    const alice = await sdk1Client('alice');
    const mallory = await sdk1Client('mallory');
    const m = memo();
    const stream = alice.experimental.tasks.callToolStream(
      { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } },
      CallToolResultSchema,
      { task: {} },
    );
    const first = await stream.next();
    expect(first.value?.type).toBe('taskCreated');
    const taskId = (first.value as { task: { taskId: string } }).task.taskId;
    await stream.return(undefined);
    const codes = async (id: string) =>
      Promise.all([
        mallory.experimental.tasks.getTask(id).then(
          () => null,
          (e: McpError) => [e.code, e.message],
        ),
        mallory.experimental.tasks.getTaskResult(id, CallToolResultSchema).then(
          () => null,
          (e: McpError) => [e.code, e.message],
        ),
        mallory.experimental.tasks.cancelTask(id).then(
          () => null,
          (e: McpError) => [e.code, e.message],
        ),
      ]);
    const foreign = await codes(taskId);
    const unknown = await codes(`${taskId.slice(0, -4)}0000`);
    expect(foreign).toEqual(unknown);
    expect(foreign[0]?.[0]).toBe(-32602);
    // the owner can still cancel it
    expect((await alice.experimental.tasks.cancelTask(taskId)).status).toBe('cancelled');
    await Promise.all([alice.close(), mallory.close()]);
  });
});
