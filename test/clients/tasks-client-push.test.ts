// Scope: how packages/client/src/tasks-client.ts follows a task by push — `subscriptions/listen` with
// `notifications.taskIds` and the `notifications/tasks` it streams — against a locally started
// Countersign (real Temporal dev server, real HTTP, the reference approval service deciding out of
// band): the completion arrives by notification with no tasks/get sent, in-task input is answered
// from a notification, a lost stream is read once and subscribed again, an id the server does not
// acknowledge and a refused subscription are polled instead, `push: false` only polls, and an abort
// closes the stream. Every request is counted from the client's own `onMessage`; the stream is cut
// through the client's `fetch` option.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TasksClient, type AnswerInput, type Task, type TasksClientOptions } from '@countersign/client';
import { executionOutcome } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { SECOND_APPROVAL_POLICY } from '../support/test-policies.js';

/** Streams one caller may hold open in this file's stack (the refusal test fills them). */
const STREAMS_PER_CALLER = 2;

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(
    testConfig({ COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: STREAMS_PER_CALLER }, { 'b-second-approval.cedar': SECOND_APPROVAL_POLICY }),
  );
});
afterAll(async () => {
  await stack?.stop();
});

const memo = () => `push ${randomUUID().slice(0, 12)}`;
const transfer = (m: string, amount = 50_000) => ({ to: 'acct-991', amount, memo: m });

interface Wire {
  method?: string;
  id?: unknown;
  params?: { status?: string; taskId?: string; notifications?: { taskIds?: string[] }; _meta?: Record<string, unknown> };
}

/** Resolves when `check` holds, looking every 50 ms (at most 30 s). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A tasks client for `sub` that records every message it sends and receives, and goes through a
 * `fetch` that can cut its subscription streams (as a dropped connection would) and remembers the
 * signal each stream was opened with.
 */
async function clientFor(sub: string, extra: Partial<TasksClientOptions> = {}) {
  const sent: Wire[] = [];
  const received: Wire[] = [];
  const streams: Array<{ cut: AbortController; signal: AbortSignal | undefined }> = [];
  const cuttable: typeof fetch = (input, init) => {
    if (new Headers(init?.headers).get('mcp-method') !== 'subscriptions/listen') return fetch(input, init);
    const cut = new AbortController();
    streams.push({ cut, signal: init?.signal ?? undefined });
    return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal });
  };
  const client = new TasksClient({
    url: stack.urls.mcp,
    token: await stack.issuer.mintToken({ sub }),
    fetch: cuttable,
    reconnect: { delayMs: 100 },
    onMessage: (dir, msg) => (dir === '>' ? sent : received).push(msg as Wire),
    ...extra,
  });
  const count = (method: string) => sent.filter((m) => m.method === method).length;
  const acks = () => received.filter((m) => m.method === 'notifications/subscriptions/acknowledged');
  const notified = () => received.filter((m) => m.method === 'notifications/tasks');
  return { client, sent, received, streams, count, acks, notified };
}

/** Wait until `approver` sees a pending request for `m` (bounded). */
async function waitForPending(m: string, approver = 'bob'): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await pendingFor(stack, approver)).some((r) => r.arguments.memo === m)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request for ${m} at ${approver}`);
}

describe('the tasks client follows a task by subscriptions/listen', () => {
  it('receives the completion by notifications/tasks and sends no tasks/get while subscribed', async () => {
    const c = await clientFor('alice');
    const m = memo();
    const outcome = c.client.callTool('wire_transfer', transfer(m));
    await until(() => c.notified().length >= 1, 'the first notification');
    const taskId = c.notified()[0]!.params!.taskId!;
    expect(c.acks()[0]?.params?.notifications?.taskIds).toEqual([taskId]);
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind !== 'task') return;
    expect(executionOutcome(done.task)).toMatchObject({ outcome: 'executed', disposition: 'approved-executed' });
    // the terminal task is the last notification, stamped with the subscription's id
    const last = c.notified().at(-1)!;
    expect(last.params).toMatchObject({ taskId, status: 'completed' });
    expect(last.params?._meta?.['io.modelcontextprotocol/subscriptionId']).toBe(
      c.sent.find((s) => s.method === 'subscriptions/listen')?.id,
    );
    expect(c.sent.map((s) => s.method)).toEqual(['tools/call', 'subscriptions/listen']);
    expect(c.count('tasks/get')).toBe(0);
    expect(stack.ledger.countByTask(taskId)).toBe(1);
  });

  it('a task resumed by id is subscribed to at once and its decision arrives by notification', async () => {
    const first = await clientFor('ann', { push: false });
    const m = memo();
    const abort = new AbortController();
    const created: Task[] = [];
    const call = first.client.callTool('wire_transfer', transfer(m), { signal: abort.signal });
    await until(() => first.count('tasks/get') >= 1, 'the first poll');
    abort.abort(new Error('process died'));
    await expect(call).rejects.toThrow('process died');
    const taskId = (first.received.find((r) => (r as { result?: Task }).result?.taskId) as { result: Task }).result.taskId;

    const later = await clientFor('ann', { onTask: (t) => created.push(t) });
    const done = later.client.waitForTask(taskId);
    await until(() => later.notified().length >= 1, 'the current state by notification');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const task = await done;
    expect(task.status).toBe('completed');
    expect(created.at(-1)).toEqual(task);
    expect(later.sent.map((s) => s.method)).toEqual(['subscriptions/listen']);
    expect(stack.ledger.countByTask(taskId)).toBe(1);
  });

  it('input asked for inside the task is seen in a notification and answered with tasks/update, without polling', async () => {
    const answers: Array<Record<string, unknown>> = [];
    const answer: AnswerInput = (requests) => {
      answers.push(requests);
      return Object.fromEntries(
        Object.keys(requests).map((k) => [k, { action: 'accept', content: { justification: 'Carol owns this supplier.' } }]),
      );
    };
    const c = await clientFor('ines', { answer, capabilities: { elicitation: { form: {} } } });
    const m = memo();
    const outcome = c.client.callTool('wire_transfer', transfer(m, 66_666));
    await waitForPending(m, 'bob');
    expect(await decide(stack, m, 'approve', 'bob')).toBe(200);
    await until(() => c.count('tasks/update') === 1, 'the answer to the in-task input');
    expect(c.notified().some((n) => n.params?.status === 'input_required')).toBe(true);
    await waitForPending(m, 'carol');
    expect(await decide(stack, m, 'approve', 'carol')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind !== 'task') return;
    expect(answers).toHaveLength(1);
    expect(c.count('tasks/get')).toBe(0);
    expect(c.count('subscriptions/listen')).toBe(1);
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(1);
  });

  it('a stream cut before the task ends is followed by one tasks/get and a new subscription, which brings the result', async () => {
    const c = await clientFor('cody');
    const m = memo();
    const outcome = c.client.callTool('wire_transfer', transfer(m));
    await until(() => c.notified().length >= 1, 'the first notification');
    c.streams[0]!.cut.abort(new Error('connection dropped'));
    await until(() => c.acks().length === 2, 'the second subscription');
    expect(c.count('tasks/get')).toBe(1);
    const sent = c.sent.map((s) => s.method);
    expect(sent.indexOf('tasks/get')).toBeGreaterThan(sent.indexOf('subscriptions/listen'));
    expect(sent.lastIndexOf('subscriptions/listen')).toBeGreaterThan(sent.indexOf('tasks/get'));
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind !== 'task') return;
    expect(c.count('tasks/get')).toBe(1);
    expect(c.count('subscriptions/listen')).toBe(2);
    expect(c.count('tools/call')).toBe(1);
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(1);
  });

  it('aborting the call closes its stream and rejects with the reason; the task stays pending', async () => {
    const c = await clientFor('abe');
    const m = memo();
    const abort = new AbortController();
    const call = c.client.callTool('wire_transfer', transfer(m), { signal: abort.signal });
    await until(() => c.notified().length >= 1, 'the subscription');
    abort.abort(new Error('agent stopped'));
    await expect(call).rejects.toThrow('agent stopped');
    expect(c.streams).toHaveLength(1);
    expect(c.streams[0]!.signal?.aborted).toBe(true);
    const taskId = c.notified()[0]!.params!.taskId!;
    expect((await c.client.getTask(taskId)).status).toBe('working');
    await c.client.cancel(taskId);
  });
});

describe('the tasks client polls when the server does not push the task', () => {
  it("another caller's task id is not acknowledged, so the client polls tasks/get, which answers -32602 as for any unknown id", async () => {
    const alice = await clientFor('alice');
    const abort = new AbortController();
    const call = alice.client.callTool('wire_transfer', transfer(memo()), { signal: abort.signal });
    await until(() => alice.notified().length >= 1, "alice's subscription");
    const taskId = alice.notified()[0]!.params!.taskId!;

    const mallory = await clientFor('mallory');
    await expect(mallory.client.waitForTask(taskId)).rejects.toMatchObject({ name: 'McpRpcError', code: -32602 });
    expect(mallory.acks()[0]?.params?.notifications?.taskIds).toEqual([]);
    expect(mallory.sent.map((s) => s.method)).toEqual(['subscriptions/listen', 'tasks/get']);
    abort.abort(new Error('done'));
    await call.catch(() => undefined);
    await alice.client.cancel(taskId);
  });

  it('a subscription refused over the per-caller stream limit (-32000, HTTP 429) falls back to polling at pollIntervalMs, and the result arrives', async () => {
    // hold every stream this caller may open, on a task of its own
    const holder = await clientFor('zoe');
    const held = new AbortController();
    const heldCall = holder.client.callTool('wire_transfer', transfer(memo()), { signal: held.signal });
    await until(() => holder.notified().length >= 1, 'the first held stream');
    const heldTaskId = holder.notified()[0]!.params!.taskId!;
    const token = await stack.issuer.mintToken({ sub: 'zoe' });
    const extra: Response[] = [];
    for (let i = 1; i < STREAMS_PER_CALLER; i++) extra.push(await rawListen(token, [heldTaskId], held.signal));
    expect(extra.every((r) => r.status === 200)).toBe(true);

    const delays: number[] = [];
    const seen: Task[] = [];
    const c = await clientFor('zoe', {
      onTask: (t) => seen.push(t),
      sleep: (ms, signal) => {
        delays.push(ms);
        return new Promise((resolve) => setTimeout(resolve, ms)).then(() => signal?.throwIfAborted());
      },
    });
    const m = memo();
    const outcome = c.client.callTool('wire_transfer', transfer(m));
    await until(() => c.count('tasks/get') >= 1, 'the first poll');
    const refusal = c.received.find((r) => (r as { error?: { code: number } }).error) as { error: { code: number; data?: unknown } };
    expect(refusal.error).toMatchObject({ code: -32000, data: { rateLimited: true, scope: 'principal' } });
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    expect(c.count('subscriptions/listen')).toBe(1);
    expect(c.count('tasks/get')).toBeGreaterThanOrEqual(1);
    // each sleep was the pollIntervalMs of the state read before it (the created task, then each tasks/get)
    expect(delays.length).toBeGreaterThan(0);
    expect(delays).toEqual(seen.slice(0, delays.length).map((t) => t.pollIntervalMs));

    held.abort(new Error('release'));
    await heldCall.catch(() => undefined);
    await holder.client.cancel(heldTaskId);
  });

  it('with push: false the client only polls tasks/get, and the result arrives', async () => {
    const c = await clientFor('paul', { push: false });
    const m = memo();
    const outcome = c.client.callTool('wire_transfer', transfer(m));
    await until(() => c.count('tasks/get') >= 1, 'the first poll');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    expect(c.count('subscriptions/listen')).toBe(0);
    expect(c.count('tasks/get')).toBeGreaterThanOrEqual(1);
    expect(c.streams).toHaveLength(0);
  });
});

/** A `subscriptions/listen` for `taskIds` as `token`'s caller, held open until `signal` aborts. */
function rawListen(token: string, taskIds: string[], signal: AbortSignal): Promise<Response> {
  return fetch(stack.urls.mcp, {
    method: 'POST',
    signal,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
        },
      },
    }),
  });
}
