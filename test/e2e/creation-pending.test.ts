// Scope: task creation that outlasts the creation wait (docs/DESIGN.md §3.1, found under load), end to end on
// a real Temporal dev server, the real approval service and real HTTP. The slow path is forced
// deterministically, not by timing: the submit activity fails at its fault point
// (`worker.submit.before`, packages/http/src/fault-point.ts) for as long as the test holds it, so the approval
// workflow is running but has no backend handle; or the worker is stopped, so the caller's limiter
// cannot answer and nothing starts. Property: an error is never the last word on a task that
// exists — the error says whether the task was started and that the same call joins it, and the
// retry gets that task's handle, with one request at the backend and one slot of the limiter.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, type WireClient } from '@countersign/client';
import { approvalWorkflowId, createCallBinding } from '../../src/binding/call-binding.js';
import { quotaKeyOf } from '../../src/auth/principal-keys.js';
import { FAULT_HOOK_KEY, type FaultPointName } from '@countersign/http/fault-point';
import type { Stack } from '../../src/stack.js';
import { isWorkflowNotFound } from '../../src/temporal/not-found.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { limiterCountsQuery, limiterWorkflowIdOf } from '../../workflows/limiter-messages.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig, waitForTerminal } from '../support/stack-harness.js';

type Hook = { [FAULT_HOOK_KEY]?: (name: FaultPointName) => void };
let stack: Stack;
let holdSubmissions = false;

beforeAll(async () => {
  stack = await startTestStack(testConfig({ COUNTERSIGN_CREATE_WAIT_MS: 1_500 }));
  // this process runs the worker: while held, every submit attempt fails before reaching the backend
  (globalThis as Hook)[FAULT_HOOK_KEY] = (name) => {
    if (holdSubmissions && name === 'worker.submit.before') throw new Error('submission held by the test');
  };
});
afterEach(() => {
  holdSubmissions = false;
});
afterAll(async () => {
  delete (globalThis as Hook)[FAULT_HOOK_KEY];
  await stack?.stop();
});

const transfer = (memo: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });

/** The approval workflow id and the limiter id of `sub`'s call, derived as the gate derives them. */
function idsOf(sub: string, memo: string): { workflowId: string; limiterId: string } {
  const tools = createToolRegistry([createWireTransferTool(stack.ledger)]);
  const tool = tools.get('wire_transfer')!;
  const principal = { iss: stack.urls.issuer, sub };
  const binding = createCallBinding({
    tool: tool.name,
    arguments: tool.inputSchema.parse(transfer(memo).arguments) as Record<string, unknown>,
    principal,
    toolDescriptorDigest: tools.descriptorDigest(tool.name),
  });
  return {
    workflowId: approvalWorkflowId(stack.secrets.dedupKey, binding.digest),
    limiterId: limiterWorkflowIdOf(quotaKeyOf(stack.secrets.dedupKey, principal)),
  };
}

/** The call's answer: the result, or the JSON-RPC error. */
async function callOnce(client: WireClient, memo: string): Promise<{ taskId?: string; resultType?: string } | McpRpcError> {
  try {
    return await client.request<{ taskId?: string; resultType?: string }>('tools/call', transfer(memo));
  } catch (err) {
    if (err instanceof McpRpcError) return err;
    throw err;
  }
}

async function runOf(workflowId: string): Promise<{ status: string; runId: string } | null> {
  try {
    const d = await stack.temporal.workflow.getHandle(workflowId).describe();
    return { status: d.status.name, runId: d.runId };
  } catch (err) {
    if (isWorkflowNotFound(err)) return null;
    throw err;
  }
}

describe('task creation that outlasts the creation wait', () => {
  it('a call whose task exists but is not yet confirmed is told so, and repeating it returns that same task with one backend request and one limiter slot', async () => {
    const sub = `slow-${randomUUID().slice(0, 8)}`;
    const memo = `held ${randomUUID()}`;
    const client = await clientFor(stack, sub);
    const { workflowId, limiterId } = idsOf(sub, memo);

    holdSubmissions = true;
    const first = await callOnce(client, memo);
    expect(first).toBeInstanceOf(McpRpcError);
    const err = first as McpRpcError;
    expect(err.code).toBe(-32603);
    expect(err.httpStatus).toBe(503);
    expect(err.data).toMatchObject({ retryable: true, taskStarted: true, retryJoins: true });
    expect((err.data as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThan(0);
    // the task the error speaks of exists: its approval workflow runs, with nothing at the backend yet
    const run = await runOf(workflowId);
    expect(run?.status).toBe('RUNNING');
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === memo)).toHaveLength(0);

    // a retry while still held is the same answer, and joins rather than starting anything
    const again = await callOnce(client, memo);
    expect(again).toBeInstanceOf(McpRpcError);
    expect((again as McpRpcError).data).toMatchObject({ taskStarted: true });
    expect((await runOf(workflowId))?.runId).toBe(run!.runId);

    holdSubmissions = false;
    let created: { taskId?: string; resultType?: string } | McpRpcError = again;
    for (let i = 0; i < 60 && created instanceof McpRpcError; i++) {
      expect(created.data).toMatchObject({ retryable: true, taskStarted: true, retryJoins: true });
      created = await callOnce(client, memo);
    }
    expect(created).not.toBeInstanceOf(McpRpcError);
    const task = created as { taskId: string; resultType: string };
    expect(task.resultType).toBe('task');
    expect(parseTaskId(task.taskId)).toEqual({ workflowId, runId: run!.runId });

    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === memo)).toHaveLength(1);
    const counts = await stack.temporal.workflow.getHandle(limiterId).query(limiterCountsQuery);
    expect(counts).toEqual({ pending: 1, admissionsInWindow: 1 });

    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await waitForTerminal(client, task.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.list().filter((e) => e.memo === memo)).toHaveLength(1);
  });

  it('a call that could not start its task in time says it started nothing, and the task that a later repeat opens is the only one', async () => {
    const sub = `stopped-${randomUUID().slice(0, 8)}`;
    const memo = `no worker ${randomUUID()}`;
    const client = await clientFor(stack, sub);
    const { workflowId } = idsOf(sub, memo);

    await stack.stopWorker();
    let first: Awaited<ReturnType<typeof callOnce>>;
    try {
      first = await callOnce(client, memo);
    } finally {
      await stack.startWorker();
    }
    expect(first).toBeInstanceOf(McpRpcError);
    expect((first as McpRpcError).data).toMatchObject({ retryable: true, taskStarted: false, retryJoins: true });
    expect(await runOf(workflowId)).toBeNull();

    let created: Awaited<ReturnType<typeof callOnce>> = first;
    for (let i = 0; i < 60 && created instanceof McpRpcError; i++) created = await callOnce(client, memo);
    expect(created).not.toBeInstanceOf(McpRpcError);
    const task = created as { taskId: string };
    expect(parseTaskId(task.taskId)?.workflowId).toBe(workflowId);
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === memo)).toHaveLength(1);
  });
});
