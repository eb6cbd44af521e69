// Scope: the approval workflow's typed search attributes on a real Temporal dev server (started by
// the stack, which registers them): found through the visibility API with the list queries
// docs/OPERATIONS.md gives operators, updated on each transition, and never carrying an argument or
// a name.
import { randomUUID } from 'node:crypto';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { SEARCH_ATTRIBUTE_KEYS } from '../../workflows/search-attributes.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

/** The runs `query` lists once visibility (eventually consistent) shows `workflowId` in it; fails after 150 tries. */
async function listedBy(query: string, workflowId: string): Promise<WorkflowExecutionInfo> {
  for (let i = 0; i < 150; i++) {
    for await (const wf of stack.temporal.workflow.list({ query })) if (wf.workflowId === workflowId) return wf;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${workflowId} never listed by: ${query}`);
}

describe('approval workflows in the Temporal Web UI and visibility API', () => {
  it("a pending task is listed by `CountersignStatus = 'working' AND CountersignTool = 'wire_transfer'`, and once approved by `CountersignDisposition = 'approved-executed'`", async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `sa ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    const { workflowId } = parseTaskId(created.taskId)!;

    const pending = await listedBy(
      "CountersignStatus = 'working' AND CountersignTool = 'wire_transfer' AND CountersignApproverGroup = 'treasury'",
      workflowId,
    );
    const owner = pending.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.owner);
    expect(owner).toMatch(/^[0-9a-f]{64}$/);
    expect((await stack.temporal.workflow.getHandle(workflowId).describe()).memo?.owner).toBe(owner);
    const count = await stack.temporal.workflow.count(`CountersignStatus = 'working' AND CountersignOwner = '${owner}'`);
    expect(count.count).toBeGreaterThanOrEqual(1);

    expect(await decide(stack, memo, 'approve')).toBe(200);
    expect((await waitForTerminal(alice, created.taskId)).status).toBe('completed');
    const done = await listedBy(
      "CountersignStatus = 'completed' AND CountersignDisposition = 'approved-executed' AND ExecutionStatus = 'Completed'",
      workflowId,
    );

    // only the five keywords of ours (besides Temporal's own, e.g. TemporalChangeVersion from `patched`); no argument, memo or principal name in any value
    const attrs = Object.fromEntries(
      done.typedSearchAttributes
        .getAll()
        .filter((p) => p.key.name.startsWith('Countersign'))
        .map((p) => [p.key.name, p.value]),
    );
    expect(Object.keys(attrs).sort()).toEqual([
      'CountersignApproverGroup',
      'CountersignDisposition',
      'CountersignOwner',
      'CountersignStatus',
      'CountersignTool',
    ]);
    expect(JSON.stringify(attrs)).not.toMatch(/acct-991|50000|alice|sa [0-9a-f]/);
  });

  it("a cancelled task is listed by `CountersignStatus = 'cancelled'` and carries no disposition", async () => {
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: `sa ${randomUUID().slice(0, 12)}` },
    });
    const { workflowId } = parseTaskId(created.taskId)!;
    await alice.request('tasks/cancel', { taskId: created.taskId });
    const cancelled = await listedBy("CountersignStatus = 'cancelled' AND CountersignTool = 'wire_transfer'", workflowId);
    expect(cancelled.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.disposition)).toBeUndefined();
  });
});
