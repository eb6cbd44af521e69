// Scope: "who is waiting" (issue 27 §2, docs/APPROVERS.md §Who is waiting) end to end with the
// official requester stack (`@modelcontextprotocol/client` 2.4 + `@modelcontextprotocol/ext-tasks`)
// against a real stack: the approval request names the calling client from its `clientInfo`
// (bounded, control characters escaped); the MCP server reports reads (`tasks/get`) and held
// subscriptions (`subscriptions/listen`) to the approval service, which the approval API and
// `countersign approvals show` turn into "last read by … at …" / "subscribed" / "nobody has read
// this task since …"; and reporting costs no Temporal action (nothing is added to the run's history).
import { writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, type SubscriptionFilter } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { createRawDispatch, v2RequestFraming } from '@countersign/client/ext-tasks';
import { WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { approvalsCli, basic, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

const CLIENT_INFO = { name: 'who-is-waiting-e2e', version: '1.0.0' };

/** The stack the running describe block uses (each block starts its own, with its rules file). */
let stack: Stack;
const stacks: Stack[] = [];
const open: Array<{ client: Client; session: TaskEnabledSession }> = [];
afterAll(async () => {
  for (const o of open) {
    await o.session.close().catch(() => undefined);
    await o.client.close().catch(() => undefined);
  }
  for (const s of stacks) await s.stop();
});

/**
 * A stack whose approval service reads `rules` (its `approval-rules.json`), with follower reports
 * every 300 ms (default 60 s) so a later read is seen, and no fallback status poll within a test
 * (callbacks decide), so the runs' histories hold still while the tasks are read.
 */
async function startWithRules(rules: Record<string, unknown> | undefined): Promise<Stack> {
  const config = testConfig({ COUNTERSIGN_FOLLOWER_REPORT_MS: 300, COUNTERSIGN_STATUS_POLL_INITIAL_MS: 600_000 });
  if (rules !== undefined) writeFileSync(join(config.COUNTERSIGN_DATA_DIR, 'approval-rules.json'), JSON.stringify(rules));
  const started = await startTestStack(config);
  stacks.push(started);
  return started;
}

const memo = () => `waiting ${randomUUID().slice(0, 12)}`;
const transfer = (m: string) => ({ to: 'acct-991', amount: 50_000, memo: m });

/** The official SDK `Client` (2026-07-28 by auto negotiation) with its ext-tasks session, naming itself `CLIENT_INFO`. */
async function sessionFor(sub: string) {
  const token = await stack.issuer.mintToken({ sub });
  const capabilities = { extensions: { [TASKS_EXTENSION]: {} } };
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: 'auto' }, capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const session = createTaskSessionFromClient(client, {
    endpointId: 'countersign-e2e',
    rawDispatch: createRawDispatch({ url: stack.urls.mcp, token }),
    v2RequestFraming: v2RequestFraming(CLIENT_INFO, capabilities),
  });
  open.push({ client, session });
  return { client, session };
}

/** What `GET /access/v1/approvals/:id` says of the calling client and the followers. */
interface Shown {
  id: string;
  client: { name: string; version?: string } | null;
  followers: { text: string; subscribed: boolean; last_read_by: string | null; last_read_at: string | null; unfollowed: boolean };
}

/** The request for `m` as approver bob reads it, waiting (bounded) until it is pending. */
async function requestFor(m: string): Promise<Shown> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  for (let i = 0; i < 200; i++) {
    const found = (await pendingFor(stack, 'bob')).find((r) => r.arguments.memo === m);
    if (found) {
      const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/${found.id}`, {
        headers: { authorization: basic(bob.id, bob.secret) },
      });
      return (await res.json()) as Shown;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request for ${m}`);
}

/** Read the request for `m` until `ok` holds of it (bounded). */
async function until(m: string, ok: (s: Shown) => boolean): Promise<Shown> {
  let last: Shown | undefined;
  for (let i = 0; i < 100; i++) {
    last = await requestFor(m);
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`request for ${m} never got there at ${new Date().toISOString()}: ${JSON.stringify(last)}`);
}

/** `countersign approvals <args>` as bob, a real process against the stack's approval service. */
const cli = (args: string[]) => approvalsCli(stack, 'bob', args);

describe('who is waiting', () => {
  beforeAll(async () => {
    stack = await startWithRules(undefined);
  });

  it('the approval request names the calling client from its clientInfo, and says nobody has read the task until the client reads it; then "last read by <client>"', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const before = await requestFor(m);
    expect(before.client).toEqual(CLIENT_INFO);
    expect(before.followers).toMatchObject({ subscribed: false, last_read_by: null, last_read_at: null });
    expect(before.followers.text).toMatch(/^Nobody has read this task since it was submitted at \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\.$/);

    await session.task(execution.handle.taskId).snapshot(); // one tasks/get
    const after = await until(m, (s) => s.followers.last_read_by !== null);
    expect(after.followers.last_read_by).toBe('who-is-waiting-e2e 1.0.0');
    expect(after.followers.text).toMatch(/^Last read by who-is-waiting-e2e 1\.0\.0 at \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\.$/);

    const show = await cli(['show', after.id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('  client        who-is-waiting-e2e 1.0.0\n');
    expect(show.stdout).toMatch(/ {2}waiting {7}Last read by who-is-waiting-e2e 1\.0\.0 at /);
    await execution.cancel();
  });

  it('a client holding a subscriptions/listen stream on the task is shown as subscribed', async () => {
    const { client, session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const subscription = await client.listen({ taskIds: [execution.handle.taskId] } as SubscriptionFilter);
    const shown = await until(m, (s) => s.followers.subscribed);
    expect(shown.followers.text).toBe('Subscribed: who-is-waiting-e2e 1.0.0 holds a subscription to this task and will see the result.');
    await execution.cancel();
    expect(await subscription.closed).toBe('graceful');
  });

  it('a clientInfo name with a newline, an escape sequence and 300 characters reaches the approver escaped and cut to 100 characters', async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const name = `evil\n\u001b[31mred\u202e${'x'.repeat(300)}`;
    const wire = new WireClient({
      url: stack.urls.mcp,
      token,
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      clientInfo: { name, version: '1' },
    });
    const m = memo();
    const created = await wire.request<{ taskId: string }>('tools/call', { name: 'wire_transfer', arguments: transfer(m) });
    const shown = await requestFor(m);
    expect(shown.client?.name).toMatch(/^evil\\u\{a\}\\u\{1b\}\[31mred\\u\{202e\}x+…$/);
    expect([...shown.client!.name]).toHaveLength(100);
    expect(shown.client?.version).toBe('1');
    await wire.request('tasks/cancel', { taskId: created.taskId });
  });

  it("reads and their follower reports cost no Temporal action: the run's history gains no event from tasks/get or a subscription", async () => {
    const { client, session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    await requestFor(m);
    const ids = parseTaskId(execution.handle.taskId)!;
    const run = stack.temporal.workflow.getHandle(ids.workflowId, ids.runId);
    const eventsBefore = (await run.fetchHistory()).events?.length;
    for (let i = 0; i < 5; i++) await session.task(execution.handle.taskId).snapshot();
    const subscription = await client.listen({ taskIds: [execution.handle.taskId] } as SubscriptionFilter);
    await until(m, (s) => s.followers.subscribed);
    expect((await run.fetchHistory()).events?.length).toBe(eventsBefore);
    await execution.cancel();
    await subscription.closed;
  });
});

/**
 * An agent that opens the approval task for `m` and stops following it at once (ext-tasks
 * `detach()`: local driving stops, the remote task stays), so nothing reads the task: its id.
 */
async function createAndLeave(m: string): Promise<string> {
  const { session } = await sessionFor('alice');
  const execution = await session.callTool('wire_transfer', transfer(m));
  if (execution.kind !== 'task') throw new Error('expected a task');
  await execution.detach();
  return execution.handle.taskId;
}

/** The outcome of task `taskId` as a new ext-tasks session of alice reads it (it polls until the task ends). */
async function outcomeOf(taskId: string) {
  const { session } = await sessionFor('alice');
  return session.task(taskId as never).result();
}

/** Bob's decision on request `id` through the approval API; the status and the body. */
async function decideById(id: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The tool's result as ext-tasks hands it over. */
interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}
const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const textOf = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('\n');

describe('unfollowed: confirm (approving a request nobody follows needs a confirmation)', () => {
  beforeAll(async () => {
    stack = await startWithRules({ unfollowed: { afterMs: 1500, action: 'confirm' } });
  });

  it('a task its client created and never read: approving it without confirmation is refused (409 unfollowed, CLI exit 8); confirmed, it runs once', async () => {
    const m = memo();
    const taskId = await createAndLeave(m);
    const shown = await until(m, (s) => s.followers.unfollowed);
    expect(shown.followers.text).toMatch(/^Nobody has read this task since it was submitted at /);

    const refused = await decideById(shown.id, { decision: 'approve' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ type: 'urn:countersign:problem:unfollowed', status: 409 });
    const cliRefused = await cli(['approve', shown.id]);
    expect(cliRefused.code).toBe(8);
    expect(cliRefused.stderr).toContain('To approve anyway, run the command again with --confirm-unfollowed.');
    expect(cliRefused.stderr).not.toContain('confirm_unfollowed');
    expect((await requestFor(m)).id).toBe(shown.id); // still pending

    const confirmed = await cli(['approve', shown.id, '--confirm-unfollowed', '--comment', 'the agent is gone; I want it done']);
    expect(confirmed).toMatchObject({ code: 0, stdout: `${shown.id} is now approved.\n` });
    const outcome = await outcomeOf(taskId);
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(taskId)).toBe(1);
    const show = await cli(['show', shown.id]);
    expect(show.stdout).toMatch(/approved\s+bob via api rule unfollowed-confirmed — the agent is gone/);
  });

  it('a task its client keeps reading is approved without any confirmation', async () => {
    const { session } = await sessionFor('alice');
    const m = memo();
    const execution = await session.callTool('wire_transfer', transfer(m));
    if (execution.kind !== 'task') throw new Error('expected a task');
    const settled = execution.settle(); // polls tasks/get at the suggested interval
    const first = await until(m, (s) => s.followers.last_read_by !== null);
    await new Promise((r) => setTimeout(r, 2500)); // longer than afterMs: followed all along
    const shown = await requestFor(m);
    expect(shown.followers.unfollowed).toBe(false);
    expect(Date.parse(shown.followers.last_read_at!)).toBeGreaterThan(Date.parse(first.followers.last_read_at!));
    expect((await decideById(shown.id, { decision: 'approve' })).status).toBe(200);
    const { outcome } = await settled;
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    expect((outcome.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
  });
});

describe('unfollowed: close (a request nobody follows is closed after the grace period)', () => {
  beforeAll(async () => {
    stack = await startWithRules({ unfollowed: { afterMs: 1000, action: 'close', graceMs: 500 } });
  });

  it('a task nobody reads ends denied-not-executed, saying nobody followed it; its request expired with status_reason unfollowed', async () => {
    const m = memo();
    const taskId = await createAndLeave(m);
    const { id } = await requestFor(m);
    // the service's sweeper (every 5 s) closes it; the client does not read until then
    for (let i = 0; i < 150 && (await pendingFor(stack, 'bob')).some((r) => r.id === id); i++) await new Promise((r) => setTimeout(r, 100));
    const status = await fetch(`${stack.urls.approvals}/access/v1/requests/${id}`, {
      headers: { authorization: `Bearer ${stack.secrets.approvalsClientToken}` },
    });
    expect(await status.json()).toMatchObject({ id, status: 'expired', status_reason: 'unfollowed' });
    const outcome = await outcomeOf(taskId);
    expect(outcome.status).toBe('completed');
    if (outcome.status !== 'completed') return;
    const result = outcome.result as ToolResult;
    expect(result.isError).toBe(true);
    expect(result._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(textOf(result)).toBe(
      'Not executed: Nobody followed this task, so the approval request was closed without a decision. The tool did not run and no side effect occurred. Outcome: denied-not-executed.',
    );
    expect(stack.ledger.countByTask(taskId)).toBe(0);
  });
});
