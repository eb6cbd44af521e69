// Scope: the official requester stack a new user picks up — `@modelcontextprotocol/client` 2.4
// (`Client`, `versionNegotiation: {mode: "auto"}`, so 2026-07-28 over `server/discover`) with
// `@modelcontextprotocol/ext-tasks` 0.2.2 (`createTaskSessionFromClient`, the raw dispatcher of
// packages/client/src/ext-tasks-dispatch.ts) — against a locally started Countersign (real Temporal dev
// server, real HTTP, the reference approval service deciding out of band): tools/list and an
// allowed call answered without a task; approve, deny, cancel, expiry and in-task input each
// settle as ext-tasks reads them, and the ledger shows what ran. The docs/CLIENTS.md recipe (its
// inline raw dispatcher; polling with settle(), and subscribing with the Client's own
// `listen({taskIds})`, whose notifications/tasks ext-tasks settles from) is exercised as written.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type SubscriptionFilter } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type TaskEnabledSession, type WithTasksOptions } from '@modelcontextprotocol/ext-tasks/client';
import { createRawDispatch, v2RequestFraming } from '@countersign/client/ext-tasks';
import type { Stack } from '../../src/stack.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { QUICK_EXPIRY_POLICY, SECOND_APPROVAL_POLICY } from '../support/test-policies.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
const open: Array<{ client: Client; session: TaskEnabledSession }> = [];
beforeAll(async () => {
  stack = await startTestStack(
    testConfig({}, { 'a-quick-expiry.cedar': QUICK_EXPIRY_POLICY, 'b-second-approval.cedar': SECOND_APPROVAL_POLICY }),
  );
});
afterAll(async () => {
  for (const o of open) {
    await o.session.close().catch(() => undefined);
    await o.client.close().catch(() => undefined);
  }
  await stack?.stop();
});

const memo = () => `ext-tasks ${randomUUID().slice(0, 12)}`;
const transfer = (m: string, amount = 50_000) => ({ to: 'acct-991', amount, memo: m });

/** The tool's result as ext-tasks hands it over (a 2026-07-28 CallToolResult). */
interface ToolResult {
  resultType?: string;
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}
const text = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('\n');

/** A connected SDK `Client` for `sub` (2026-07-28 by auto negotiation) and its ext-tasks session. */
async function sessionFor(sub: string, options: WithTasksOptions = {}) {
  const token = await stack.issuer.mintToken({ sub });
  const clientInfo = { name: 'countersign-ext-tasks-e2e', version: '0.0.0' };
  const client = new Client(clientInfo, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const session = createTaskSessionFromClient(client, {
    endpointId: 'countersign-e2e',
    rawDispatch: createRawDispatch({ url: stack.urls.mcp, token }),
    v2RequestFraming: v2RequestFraming(clientInfo),
    ...options,
  });
  open.push({ client, session });
  return { client, session };
}

/** Wait (bounded, polling the approval service) until `approver` sees a pending request for `m`. */
async function waitForPending(m: string, approver: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await pendingFor(stack, approver)).some((r) => r.arguments.memo === m)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request for ${m} at ${approver}`);
}

describe('@modelcontextprotocol/ext-tasks 0.2.2 over @modelcontextprotocol/client 2.4 (2026-07-28)', () => {
  it('the client negotiates 2026-07-28 and ext-tasks sees the tasks extension', async () => {
    const { client, session } = await sessionFor('alice');
    expect(client.getProtocolEra()).toBe('modern');
    expect(session.capabilities.execution).toBe(true);
  });

  it("another principal's task id reaches ext-tasks as the JSON-RPC error -32602, the same as an unknown id", async () => {
    const alice = await sessionFor('alice');
    const execution = await alice.session.callTool('wire_transfer', transfer(memo()));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const mallory = await sessionFor('mallory');
    const foreign = await mallory.session
      .task(execution.handle.taskId)
      .snapshot()
      .then(
        () => null,
        (e: unknown) => e,
      );
    const unknown = await mallory.session
      .task(`${execution.handle.taskId.slice(0, -4)}0000` as typeof execution.handle.taskId)
      .snapshot()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(foreign).toMatchObject({ name: 'JsonRpcResponseError', code: -32602 });
    expect((foreign as Error).message).toBe((unknown as Error).message);
    await execution.cancel();
  });

  it('tools/list offers wire_transfer, and an allowed call ($100) is answered at once, without a task', async () => {
    const { client, session } = await sessionFor('alice');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('wire_transfer');
    const execution = await session.callTool('wire_transfer', transfer(memo(), 100));
    expect(execution.kind).toBe('immediate');
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult).isError).toBe(false);
    expect(text(outcome.result as ToolResult)).toMatch(/Transfer of \$100\.00/);
  });

  it('approve → the execution settles completed with approved-executed, a complete CallToolResult and exactly one ledger row', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    expect(execution.kind).toBe('task');
    if (execution.kind !== 'task') return;
    const taskId = execution.handle.taskId;
    expect(stack.ledger.countByTask(taskId)).toBe(0);
    const settled = execution.settle();
    expect(await decide(stack, m, 'approve')).toBe(200);
    const { outcome } = await settled;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    const result = outcome.result as ToolResult;
    expect(result.resultType).toBe('complete');
    expect(result.isError).toBe(false);
    expect(result._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(text(result)).toMatch(/executed once/);
    expect(stack.ledger.countByTask(taskId)).toBe(1);
  });

  it('deny → completed with denied-not-executed, isError, the body says it did not run, no ledger row', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const settled = execution.settle();
    expect(await decide(stack, m, 'deny', 'carol')).toBe(200);
    const { outcome } = await settled;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    const result = outcome.result as ToolResult;
    expect(result.isError).toBe(true);
    expect(result._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(text(result)).toMatch(/did not run/);
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(0);
  });

  it('cancel through ext-tasks → the task settles cancelled, the approval request is withdrawn, nothing runs', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    await execution.cancel();
    const outcome = await execution.result();
    expect(outcome.status).toBe('cancelled');
    const snapshot = await session.task(execution.handle.taskId).snapshot();
    expect(snapshot.status).toBe('cancelled');
    // the backend request is withdrawn asynchronously: it leaves the approver's pending list
    for (let i = 0; i < 100 && (await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m)).toBe(false);
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(0);
  });

  it('a request nobody decides expires → completed with denied-not-executed saying it expired', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m, 77_777));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    const result = outcome.result as ToolResult;
    expect(result._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(text(result)).toMatch(/expired/);
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(0);
  });

  it('in-task input: ext-tasks hands the justification form to onInputRequest, delivers the answer with tasks/update, and the second approval executes once', async () => {
    const asked: Array<{ kind: string; delivery: string; message: unknown }> = [];
    const { session } = await sessionFor('alice', {
      onInputRequest: async (request, context) => {
        asked.push({ kind: request.kind, delivery: context.delivery, message: request.params?.message });
        return { action: 'accept', content: { justification: 'Carol owns this supplier relationship.' } } as never;
      },
    });
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m, 66_666));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const settled = execution.settle();
    expect(await decide(stack, m, 'approve', 'bob')).toBe(200);
    await waitForPending(m, 'carol'); // the justified second request, submitted after tasks/update
    const second = (await pendingFor(stack, 'carol')).find((r) => r.arguments.memo === m) as { justification?: string } | undefined;
    expect(second?.justification).toBe('Carol owns this supplier relationship.');
    expect(await decide(stack, m, 'approve', 'carol')).toBe(200);
    const { outcome } = await settled;
    expect(asked).toEqual([{ kind: 'elicitation', delivery: 'task-update', message: expect.any(String) }]);
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(1);
  });
});

describe('the docs/CLIENTS.md recipe for ext-tasks: following a task by polling and by subscription', () => {
  /** The recipe's Client and session for `sub`; `hold()` makes every later tasks/get wait forever (counted). */
  async function recipeFor(sub: string) {
    const url = stack.urls.mcp;
    const token = await stack.issuer.mintToken({ sub });
    const clientInfo = { name: 'my-agent', version: '1.0.0' };
    const capabilities = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
    const client = new Client(clientInfo, { versionNegotiation: { mode: 'auto' }, capabilities });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    const counts = { get: 0, held: 0 };
    let holding = false;
    // the recipe's dispatcher: imported from @countersign/client/ext-tasks, not written out
    const recipe = createRawDispatch({ url, token });
    const session = createTaskSessionFromClient(client, {
      endpointId: 'countersign-prod',
      rawDispatch: (request, options) => {
        if ((request as { method?: string }).method === 'tasks/get') {
          counts.get++;
          if (holding) {
            counts.held++;
            return new Promise(() => undefined);
          }
        }
        return recipe(request, options);
      },
      v2RequestFraming: v2RequestFraming(clientInfo, capabilities),
    });
    open.push({ client, session });
    return { client, session, counts, hold: () => (holding = true) };
  }

  it('polling: settle() reads tasks/get through the inline dispatcher until the approval completes it (approved-executed, one ledger row)', async () => {
    const { session, counts } = await recipeFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const settled = execution.settle();
    await waitForPending(m, 'bob');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const { outcome } = await settled;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(counts.get).toBeGreaterThan(0);
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(1);
  });

  it('subscription: after client.listen({taskIds}) the execution settles from notifications/tasks although every tasks/get from then on is left unanswered', async () => {
    const { client, session, counts, hold } = await recipeFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const subscription = await client.listen({ taskIds: [execution.handle.taskId] } as SubscriptionFilter); // the SDK's type has no taskIds yet
    hold();
    const settled = execution.settle();
    // ext-tasks keeps polling too: wait until one of its tasks/get is held, then decide
    for (let i = 0; i < 200 && counts.held === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(counts.held).toBeGreaterThan(0);
    await waitForPending(m, 'bob');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const { outcome } = await settled;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
    // the server ends the stream once the task is terminal
    expect(await subscription.closed).toBe('graceful');
    expect(stack.ledger.countByTask(execution.handle.taskId)).toBe(1);
  });
});
