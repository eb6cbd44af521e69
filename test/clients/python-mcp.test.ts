// Scope: the Python MCP SDK (`mcp` 2.3.0 from PyPI, installed once into .tools/py-mcp by
// scripts/install-python-mcp.mjs) against the real stack, through test/clients/python_mcp_client.py:
// it negotiates 2026-07-28 on its own, lists tools, runs an allowed call, gets an isError result
// for a requestable denial without the tasks extension, and, with a ClientExtension declaring
// io.modelcontextprotocol/tasks and a ResultClaim for resultType "task", follows a $50,000
// transfer via tasks/get to approved-executed after the test approves it (DESIGN.md §8).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { runPythonClient, type ScriptEvent } from './python-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

type ToolResult = { content: Array<{ type: string; text?: string }>; isError?: boolean; _meta?: Record<string, unknown> };
const resultOf = (events: ScriptEvent[], name: string) => events.find((e) => e.event === name)?.result as ToolResult | undefined;

describe('Python mcp 2.3.0 against Countersign', () => {
  it('connects on 2026-07-28, lists tools, runs an allowed call, gets a plain isError for a requestable denial, and follows an approved task via tasks/get to approved-executed', async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const memos = { ALLOWED_MEMO: `py ${randomUUID().slice(0, 12)}`, PLAIN_MEMO: `py ${randomUUID().slice(0, 12)}`, TASK_MEMO: `py ${randomUUID().slice(0, 12)}` };
    let plainStartedApproval: boolean | undefined;
    let approveStatus: number | undefined;
    const run = await runPythonClient({ COUNTERSIGN_MCP_URL: stack.urls.mcp, COUNTERSIGN_TOKEN: token, ...memos }, async (e) => {
      if (e.event === 'plain') plainStartedApproval = (await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === memos.PLAIN_MEMO);
      if (e.event === 'task-created') approveStatus = await decide(stack, memos.TASK_MEMO, 'approve');
    });
    expect(run.stderr).not.toMatch(/Traceback/);
    expect(run.code).toBe(0);
    const events = run.events;

    expect(events.find((e) => e.event === 'connected')?.protocolVersion).toBe('2026-07-28');
    expect(events.find((e) => e.event === 'tools')?.names).toEqual(['wire_transfer']);
    expect(resultOf(events, 'allowed')?.isError).toBe(false);

    const plain = resultOf(events, 'plain');
    expect(plain?.isError).toBe(true);
    expect(plain?.content[0]?.text).toMatch(/did not run/);
    expect(plainStartedApproval).toBe(false);

    const created = events.find((e) => e.event === 'task-created');
    expect(approveStatus).toBe(200);
    expect(created?.status).toBe('working');
    expect(events.find((e) => e.event === 'task-terminal')?.status).toBe('completed');
    const final = resultOf(events, 'task-result');
    expect(final?.isError).toBe(false);
    expect(final?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created!.taskId as string)).toBe(1);
  });
});
