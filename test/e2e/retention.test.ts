// Scope: result retention on a real dev server: once a terminal task's retention has passed,
// tasks/get answers it exactly like an unknown task (SEP-2848 §Retention, no oracle).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { McpRpcError } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig({ COUNTERSIGN_RESULT_RETENTION_MS: 1500 }));
});
afterAll(async () => {
  await stack?.stop();
});

it('an expired task gets the same -32602 as an unknown one, and its ttlMs said when', async () => {
  const alice = await clientFor(stack, 'alice');
  const m = `retention ${randomUUID().slice(0, 8)}`;
  const created = await alice.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 40_000, memo: m },
  });
  expect(await decide(stack, m, 'deny')).toBe(200);
  const done = await waitForTerminal(alice, created.taskId);
  const expiresAt = Date.parse(done.createdAt) + (done.ttlMs ?? 0);
  // at terminalization ttlMs covers terminalizedAt + resultRetention (1500 ms here)
  expect(expiresAt).toBe(Date.parse((done as WireTask & { lastUpdatedAt: string }).lastUpdatedAt) + 1500);
  expect(expiresAt).toBeGreaterThan(Date.now());
  await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 200));
  const expired = await alice.request('tasks/get', { taskId: created.taskId }).then(
    () => null,
    (e: unknown) => e as McpRpcError,
  );
  const unknown = await alice.request('tasks/get', { taskId: `${'0'.repeat(32)}.${randomUUID()}` }).then(
    () => null,
    (e: unknown) => e as McpRpcError,
  );
  expect(expired).toBeInstanceOf(McpRpcError);
  expect(expired?.code).toBe(-32602);
  expect(expired?.message).toBe(unknown?.message);
});
