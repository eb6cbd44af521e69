// Scope: durability across a full stop of the embedded stack (Temporal dev server with its
// SQLite file, worker, MCP server, approval service) while a task is pending.
import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { restartablePort } from '../../src/temporal/dev-server.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack | undefined;
afterAll(async () => {
  await stack?.stop();
});

it('a task pending when the whole stack stops is served under the same taskId after a restart and can still be approved', async () => {
  // fixed ports below the ephemeral range (nothing outgoing takes them while stopped): the issuer URL (token iss), the audience and the stored backend handle survive the restart
  const config = testConfig({
    COUNTERSIGN_PORT: await restartablePort(),
    COUNTERSIGN_APPROVALS_PORT: await restartablePort(),
    COUNTERSIGN_ISSUER_PORT: await restartablePort(),
    TEMPORAL_PORT: await restartablePort(),
  });
  stack = await startTestStack(config);
  const m = `restart ${randomUUID().slice(0, 8)}`;
  const alice = await clientFor(stack, 'alice');
  const created = await alice.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 60_000, memo: m },
  });
  expect(created.status).toBe('working');
  await stack.stop();

  stack = await startTestStack(config);
  const alice2 = await clientFor(stack, 'alice');
  const again = await alice2.request<WireTask>('tasks/get', { taskId: created.taskId });
  expect(again.status).toBe('working');
  expect(again.createdAt).toBe(created.createdAt);
  // the same call after the restart joins the same pending task
  const joined = await alice2.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 60_000, memo: m },
  });
  expect(joined.taskId).toBe(created.taskId);
  expect(await decide(stack, m, 'approve')).toBe(200);
  const done = await waitForTerminal(alice2, created.taskId);
  expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
  expect(stack.ledger.countByTask(created.taskId)).toBe(1);
});
