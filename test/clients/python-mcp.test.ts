// Scope: the Python MCP SDK (`mcp` 2.3.0 from PyPI, installed once into .tools/py-mcp by
// scripts/install-python-packages.mjs) against the real stack, through test/clients/python_mcp_client.py
// (run once for the whole file): it negotiates 2026-07-28 on its own, lists tools, runs an allowed
// call; without the tasks extension a requestable denial opens the approval (the plain tier,
// COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools, the default) and approval_cancel withdraws it; with
// a ClientExtension declaring io.modelcontextprotocol/tasks and a ResultClaim for resultType
// "task" it follows a $50,000 transfer via tasks/get to approved-executed after the test approves
// it, and another to denied-not-executed after the test denies it (docs/DESIGN.md §3); and with an
// extension that subscribes (subscriptions/listen naming the task id, notifications/tasks received
// through a NotificationBinding) one more is pushed to it to approved-executed (docs/CLIENTS.md).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { runPythonClient, type ScriptEvent } from './python-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

type ToolResult = {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
};

const memos = {
  ALLOWED_MEMO: `py ${randomUUID().slice(0, 12)}`,
  PLAIN_MEMO: `py ${randomUUID().slice(0, 12)}`,
  TASK_MEMO: `py ${randomUUID().slice(0, 12)}`,
  DENY_MEMO: `py ${randomUUID().slice(0, 12)}`,
  SUBSCRIBE_MEMO: `py ${randomUUID().slice(0, 12)}`,
};
let stack: Stack;
let run: Awaited<ReturnType<typeof runPythonClient>>;
/** Whether the approver saw the plain call's request before it was withdrawn. */
let plainPending: boolean | undefined;
/** HTTP status of the approver's decision, and the task id, per memo. */
const decided = new Map<string, number>();
const taskIds = new Map<string, string>();

beforeAll(async () => {
  stack = await startTestStack(testConfig());
  const token = await stack.issuer.mintToken({ sub: 'alice' });
  let calling: string | undefined;
  run = await runPythonClient({ COUNTERSIGN_MCP_URL: stack.urls.mcp, COUNTERSIGN_TOKEN: token, ...memos }, async (e) => {
    if (e.event === 'plain') plainPending = (await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === memos.PLAIN_MEMO);
    if (e.event === 'task-call') calling = e.memo as string;
    if (e.event === 'task-created' && calling) taskIds.set(calling, e.taskId as string);
    if (e.event === 'task-created' && (calling === memos.TASK_MEMO || calling === memos.DENY_MEMO)) {
      const memo = calling;
      decided.set(memo, memo === memos.TASK_MEMO ? await decide(stack, memo, 'approve') : await decide(stack, memo, 'deny', 'carol'));
    }
    // decided once the stream shows the task's current state: the decision can only reach the script by push
    if (e.event === 'task-subscribed' && calling === memos.SUBSCRIBE_MEMO && !decided.has(calling))
      decided.set(calling, await decide(stack, calling, 'approve'));
  });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

const eventOf = (name: string, memo?: string): ScriptEvent | undefined =>
  run.events.find((e) => e.event === name && (memo === undefined || e.memo === memo));
const resultOf = (name: string, memo?: string) => eventOf(name, memo)?.result as ToolResult | undefined;
/** The events the script printed between its `task-call` for `memo` and the call's result. */
const eventsOfCall = (memo: string): ScriptEvent[] => {
  const start = run.events.findIndex((e) => e.event === 'task-call' && e.memo === memo);
  const end = run.events.findIndex((e, i) => i > start && e.event === 'task-result');
  return run.events.slice(start, end);
};

describe('Python mcp 2.3.0 against Countersign', () => {
  it('the script runs every step and exits 0', () => {
    expect(run.stderr).not.toMatch(/Traceback/);
    expect(run.code).toBe(0);
  });

  it('connects on 2026-07-28, lists the tools (the companion tools included) and runs an allowed call inline', () => {
    expect(eventOf('connected')?.protocolVersion).toBe('2026-07-28');
    expect(eventOf('tools')?.names).toEqual(['wire_transfer', 'submit_change', 'approval_status', 'approval_cancel']);
    expect(resultOf('allowed')?.isError).toBe(false);
  });

  it('without the tasks extension a requestable denial opens the approval and names its id; approval_cancel withdraws it and nothing runs', () => {
    const plain = resultOf('plain');
    expect(plain?.isError).toBe(true);
    const approvalId = plain?.structuredContent?.approvalId as string;
    expect(plain?.content[0]?.text).toContain(approvalId);
    expect(plainPending).toBe(true);
    expect(resultOf('plain-cancelled')?.structuredContent).toMatchObject({ approvalId, status: 'cancelled', outcome: 'not-executed' });
    expect(stack.ledger.countByTask(approvalId)).toBe(0);
  });

  it('with the tasks extension a $50,000 transfer is followed via tasks/get: approved → completed, approved-executed, exactly one ledger row', () => {
    expect(decided.get(memos.TASK_MEMO)).toBe(200);
    const final = resultOf('task-result', memos.TASK_MEMO);
    expect(final?.isError).toBe(false);
    expect(final?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(taskIds.get(memos.TASK_MEMO)!)).toBe(1);
  });

  it('the polling extension follows its task with tasks/get: task-poll events between the call and its result', () => {
    const polls = eventsOfCall(memos.TASK_MEMO).filter((e) => e.event === 'task-poll');
    expect(polls.length).toBeGreaterThan(0);
  });

  it('subscribed with subscriptions/listen, a $50,000 transfer is pushed to the script by notifications/tasks up to its completion: approved-executed, one ledger row, at most one tasks/get (after the stream ended)', () => {
    const memo = memos.SUBSCRIBE_MEMO;
    const taskId = taskIds.get(memo)!;
    expect(decided.get(memo)).toBe(200);
    const during = eventsOfCall(memo);
    const notices = during.filter((e) => e.event === 'task-notice' && e.taskId === taskId).map((e) => e.status);
    expect(notices[0]).toBe('working');
    expect(notices.at(-1)).toBe('completed');
    expect(during.filter((e) => e.event === 'task-poll').length).toBeLessThanOrEqual(1);
    const final = resultOf('task-result', memo);
    expect(final?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(taskId)).toBe(1);
  });

  it('with the tasks extension a $50,000 transfer the approver denies → completed, denied-not-executed, the result says it did not run, no ledger row', () => {
    expect(decided.get(memos.DENY_MEMO)).toBe(200);
    const final = resultOf('task-result', memos.DENY_MEMO);
    expect(final?.isError).toBe(true);
    expect(final?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(final?.content[0]?.text).toMatch(/did not run/);
    expect(stack.ledger.countByTask(taskIds.get(memos.DENY_MEMO)!)).toBe(0);
  });
});
