// Scope: result retention on a real dev server: once a terminal task's retention has passed,
// tasks/get, tasks/update and tasks/cancel answer it exactly like an unknown task, on the
// 2026-07-28 face and the 2025-11-25 face alike (SEP-2848 §Retention, no oracle).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { McpRpcError } from '@countersign/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CancelTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
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

/** The error a request ends with (null when it succeeded): code and message, as a client sees them. */
async function errorOf(p: Promise<unknown>): Promise<{ code: number; message: string } | null> {
  return p.then(
    () => null,
    (e: unknown) => {
      if (e instanceof McpRpcError || e instanceof McpError) return { code: e.code, message: e.message };
      throw e;
    },
  );
}

it('after createdAt + ttlMs every method and face answers the task as unknown: tasks/get, tasks/update and tasks/cancel (2026-07-28) and tasks/cancel (2025-11-25)', async () => {
  const alice = await clientFor(stack, 'alice');
  const legacy = new Client({ name: 'retention-legacy', version: '1.0.0' });
  const token = await stack.issuer.mintToken({ sub: 'alice' });
  await legacy.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const m = `retention-all ${randomUUID().slice(0, 8)}`;
  const created = await alice.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 40_000, memo: m },
  });
  expect(await decide(stack, m, 'deny')).toBe(200);
  const done = await waitForTerminal(alice, created.taskId);
  const unknownId = `${'0'.repeat(32)}.${randomUUID()}`;
  const ask = {
    get: (taskId: string) => errorOf(alice.request('tasks/get', { taskId })),
    update: (taskId: string) => errorOf(alice.request('tasks/update', { taskId, inputResponses: { justification: 'late' } })),
    cancel: (taskId: string) => errorOf(alice.request('tasks/cancel', { taskId })),
    legacyCancel: (taskId: string) => errorOf(legacy.request({ method: 'tasks/cancel', params: { taskId } }, CancelTaskResultSchema)),
  };
  // while retained: the ended task is known, so its answers differ from an unknown task's
  expect(await ask.get(created.taskId)).toBeNull();
  expect(await ask.cancel(created.taskId)).toBeNull(); // cancelling an ended task is a no-op that succeeds
  expect((await ask.legacyCancel(created.taskId))?.message).not.toBe((await ask.legacyCancel(unknownId))?.message);
  expect((await ask.update(created.taskId))?.message).not.toBe((await ask.update(unknownId))?.message);

  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(done.createdAt) + (done.ttlMs ?? 0) - Date.now()) + 200));
  for (const [method, answer] of Object.entries(ask)) {
    const unknown = await answer(unknownId);
    expect(unknown, method).not.toBeNull();
    expect(await answer(created.taskId), method).toEqual(unknown);
  }
  await legacy.close();
});
