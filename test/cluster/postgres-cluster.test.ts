// Scope: the stack against a production-shaped Temporal cluster: the Go server (frontend, history,
// matching and worker services) on PostgreSQL, schema, namespace and the approval workflow's search
// attributes set up by docker-compose.yml's scripts as an operator would
// (test/support/postgres-temporal.ts). An approval runs end to end, the workflow is found by its
// search attributes through SQL visibility, and /readyz answers ready. Needs the server and SQL tool
// built into .tools/temporal-server/ and PostgreSQL's initdb / pg_ctl on PATH (docs/OPERATIONS.md
// §Connecting); fails without them.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { startPostgresTemporal, type PostgresTemporal } from '../support/postgres-temporal.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

describe('a Temporal cluster on PostgreSQL', () => {
  let temporal: PostgresTemporal;
  let stack: Stack;

  beforeAll(async () => {
    temporal = await startPostgresTemporal({ namespace: 'countersign', retention: '48h' });
    stack = await startTestStack(testConfig({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace }));
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    await temporal?.stop();
  });

  it('an approval runs end to end, is found by its search attributes through SQL visibility, and every role is ready', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `pg ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    const { workflowId } = parseTaskId(created.taskId)!;
    let found = false;
    for (let i = 0; i < 150 && !found; i++) {
      for await (const wf of stack.temporal.workflow.list({
        query: "CountersignDisposition = 'approved-executed' AND CountersignTool = 'wire_transfer'",
      }))
        if (wf.workflowId === workflowId) found = true;
      if (!found) await new Promise((r) => setTimeout(r, 200));
    }
    expect(found).toBe(true);

    const ready = await fetch(`${new URL(stack.urls.mcp).origin}/readyz`);
    expect(ready.status).toBe(200);
  });
});
