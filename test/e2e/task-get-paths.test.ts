// Scope: src/mcp/task-service.ts `get` — an open run is answered by its query alone and a completed
// run by its result alone (no describe), each checking the owner key the snapshot carries: the
// owner reads both, another principal gets the same -32602 as for an unknown task, on both paths.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

async function rpcError(p: Promise<unknown>): Promise<McpRpcError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpRpcError);
  return err as McpRpcError;
}

describe('tasks/get on open and completed runs', () => {
  it('the owner reads a pending, then a completed task; another principal gets the unknown-task error on both', async () => {
    const alice = await clientFor(stack, 'alice');
    const mallory = await clientFor(stack, 'mallory');
    const m = `paths ${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-7', amount: 50_000, memo: m },
    });
    const unknown = await rpcError(mallory.request('tasks/get', { taskId: `${'0'.repeat(32)}.${randomUUID()}` }));

    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
    const foreignOpen = await rpcError(mallory.request('tasks/get', { taskId: created.taskId }));
    expect([foreignOpen.code, foreignOpen.message]).toEqual([unknown.code, unknown.message]);

    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('completed');
    const foreignClosed = await rpcError(mallory.request('tasks/get', { taskId: created.taskId }));
    expect([foreignClosed.code, foreignClosed.message]).toEqual([unknown.code, unknown.message]);
  });
});
