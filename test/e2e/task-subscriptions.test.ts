// Scope: `subscriptions/listen` with `notifications.taskIds` (tasks extension 2026-07-28, §Task Status
// Notifications; src/mcp/task-subscriptions.ts over the task feed, src/mcp/task-feed.ts) end to end on
// a real Temporal dev server and real HTTP: a second MCP instance in this process (test/support/
// mcp-instance.ts) serves streams for tasks the first created; the acknowledgement is no oracle;
// refusals (-32602, -32021, -32000 HTTP 429) open nothing; a stream survives a worker restart, ends
// after a terminal task, and ends gracefully when its instance shuts down; 1,000 idle streams are
// bounded in memory and release every feed watch when they close.
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { APPROVAL_WORKFLOW_ID_PREFIX, TASKS_EXTENSION } from '../../workflows/wire.js';
import { startMcpInstance, type McpInstance } from '../support/mcp-instance.js';
import { ackedIds, listenOpened, openListen, rawRpc, type RpcTarget, type SseReader, type StreamMessage } from '../support/sse.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const AUTHZ = 'io.modelcontextprotocol/authorization';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
/** The per-principal stream limit of instance A (small, so the limit test meets it). */
const PER_PRINCIPAL = 3;

let stack: Stack;
let b: McpInstance;
beforeAll(async () => {
  stack = await startTestStack(testConfig({ COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: PER_PRINCIPAL }));
  b = await startMcpInstance(stack, { COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: 16 });
});
afterAll(async () => {
  await b?.stop();
  await stack?.stop();
});

const memo = () => `subs ${randomUUID().slice(0, 12)}`;
const transfer = (m: string, amount = 50_000) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo: m } });

/** A target on instance A (the stack's own MCP endpoint) for `sub`. */
async function onA(sub: string): Promise<RpcTarget> {
  return { url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub }) };
}

/** Create a pending approval task as `sub` on instance A; its memo and the CreateTaskResult. */
async function pendingTask(sub = 'alice'): Promise<{ memo: string; task: WireTask }> {
  const m = memo();
  const task = await (await clientFor(stack, sub)).request<WireTask>('tools/call', transfer(m));
  expect(task.resultType).toBe('task');
  return { memo: m, task };
}

/** `notifications/tasks` for `taskId` in state `status`. */
const taskNote = (taskId: string, status?: string) => (m: StreamMessage) =>
  m.method === 'notifications/tasks' && m.params?.taskId === taskId && (status === undefined || m.params?.status === status);

/** The graceful end of a stream: the `subscriptions/listen` result for subscription `id`. */
function expectListenResult(m: StreamMessage | null, id: string | number): void {
  expect(m).toMatchObject({ jsonrpc: '2.0', id, result: { resultType: 'complete' } });
  expect(m!.result!._meta?.[SUBSCRIPTION_ID]).toBe(id);
  expect(m!.result!._meta?.[SERVER_INFO]).toMatchObject({ name: 'countersign' });
}

/** Poll `check` (every 100 ms, at most `tries`) until it holds; a condition wait, not a timing assertion. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, tries = 300): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never: ${what}`);
}

describe('subscriptions/listen for tasks across instances', () => {
  it('a stream opened on instance B to a task created on instance A receives the completed notification with the full DetailedTask (result, disposition in result._meta) that tasks/get answers, then ends with the subscriptions/listen result', async () => {
    const { memo: m, task } = await pendingTask();
    const alice = await b.target('alice');
    const { stream, ack, id } = await listenOpened(alice, [task.taskId]);
    expect(ackedIds(ack)).toEqual([task.taskId]);
    expect(ack.params?._meta?.[SUBSCRIPTION_ID]).toBe(id);

    // the current state first (what tasks/get says now), with the SEP-2643 envelope and the subscription id
    const first = await stream.next();
    expect(first).toMatchObject({ method: 'notifications/tasks', params: { taskId: task.taskId, status: 'working' } });
    expect(first!.params!._meta?.[AUTHZ]).toMatchObject({ remediation: 'available' });
    expect(first!.params!._meta?.[SUBSCRIPTION_ID]).toBe(id);

    expect(await decide(stack, m, 'approve')).toBe(200);
    const { match: done, skipped } = await stream.until(taskNote(task.taskId, 'completed'));
    for (const s of skipped) expect(s.method).toBe('notifications/tasks'); // nothing else on the stream (no progress, no log messages)
    const result = done.params!.result as { resultType: string; isError: boolean; content: unknown[]; _meta: Record<string, unknown> };
    expect(result._meta[DISPOSITION]).toBe('approved-executed');
    expect(result).toMatchObject({ resultType: 'complete', isError: false });
    expect(result.content.length).toBeGreaterThan(0);
    expect(stack.ledger.countByTask(task.taskId)).toBe(1);

    // identical to what tasks/get answers (on either instance), but for the result envelope (resultType,
    // serverInfo) of a response and the subscription id of a notification
    const got = (await rawRpc(await onA('alice'), 'tasks/get', { taskId: task.taskId })).body.result!;
    const { resultType, _meta: gotMeta, ...gotTask } = got;
    expect(resultType).toBe('complete');
    expect(Object.keys(gotMeta ?? {})).toEqual([SERVER_INFO]);
    const { _meta: noteMeta, ...noteTask } = done.params!;
    expect(noteTask).toEqual(gotTask);
    expect(noteMeta).toEqual({ [SUBSCRIPTION_ID]: id });

    // no task left to follow: the stream ends gracefully
    expectListenResult(await stream.next(), id);
    expect(await stream.next()).toBeNull();
    expect(stream.error).toBeUndefined();
    expect(stream.events.every((e) => e === 'message')).toBe(true);
    // the instance holds nothing for it any more
    await eventually(() => b.stats().subscriptions.streams === 0, 'the stream is released');
    expect(b.stats().subscriptions).toEqual({ streams: 0, followed: 0 });
  });

  it('the acknowledgement lists only the caller’s own task ids: an unknown id and another principal’s id are both left out, indistinguishably (same acknowledgement, no error)', async () => {
    const mine = await pendingTask('alice');
    const theirs = await pendingTask('mallory');
    const unknown = `${mine.task.taskId.split('.')[0]}.${randomUUID()}`;
    const alice = await b.target('alice');

    const all = await listenOpened(alice, [unknown, mine.task.taskId, theirs.task.taskId]);
    expect(ackedIds(all.ack)).toEqual([mine.task.taskId]);
    const current = await all.stream.next();
    expect(current?.params?.taskId).toBe(mine.task.taskId);
    all.stream.close();

    // the same request id and one id left out each way: byte-for-byte the same answer
    const withUnknown = await listenOpened(alice, [unknown], { id: 'same-id' });
    const unknownFrames = [withUnknown.ack, ...(await withUnknown.stream.rest())];
    const withForeign = await listenOpened(alice, [theirs.task.taskId], { id: 'same-id' });
    const foreignFrames = [withForeign.ack, ...(await withForeign.stream.rest())];
    expect(foreignFrames).toEqual(unknownFrames);
    expect(ackedIds(withForeign.ack)).toEqual([]);
    // nothing to follow: acknowledged with no ids, then the graceful end, and no notifications/tasks
    expect(unknownFrames).toHaveLength(2);
    expectListenResult(unknownFrames[1]!, 'same-id');
    // the owner of the other task is served it
    const mallory = await listenOpened(await b.target('mallory'), [theirs.task.taskId]);
    expect(ackedIds(mallory.ack)).toEqual([theirs.task.taskId]);
    mallory.stream.close();
  });

  it('a task already terminal when subscribed is acknowledged, sent once with its terminal state, and the stream ends', async () => {
    const { memo: m, task } = await pendingTask();
    expect(await decide(stack, m, 'deny')).toBe(200);
    const done = await waitForTerminal(await clientFor(stack, 'alice'), task.taskId);
    expect(done.status).toBe('completed');

    const { stream, ack, id } = await listenOpened(await b.target('alice'), [task.taskId]);
    expect(ackedIds(ack)).toEqual([task.taskId]);
    const rest = await stream.rest();
    expect(rest).toHaveLength(2);
    expect(rest[0]).toMatchObject({ method: 'notifications/tasks', params: { taskId: task.taskId, status: 'completed' } });
    expect((rest[0]!.params!.result as { _meta: Record<string, unknown> })._meta[DISPOSITION]).toBe('denied-not-executed');
    expect(rest[0]!.params!._meta).toEqual({ [SUBSCRIPTION_ID]: id });
    expectListenResult(rest[1]!, id);
  });

  it('a stream following several tasks acknowledges them in the order asked, goes on after one ends, and ends after the last', async () => {
    const first = await pendingTask();
    const second = await pendingTask();
    const { stream, ack, id } = await listenOpened(await b.target('alice'), [second.task.taskId, first.task.taskId, second.task.taskId]);
    expect(ackedIds(ack)).toEqual([second.task.taskId, first.task.taskId]); // a repeated id once
    expect(await decide(stack, first.memo, 'deny')).toBe(200);
    await stream.until(taskNote(first.task.taskId, 'completed'));
    expect(b.stats().subscriptions.followed).toBeGreaterThanOrEqual(1);
    expect(await decide(stack, second.memo, 'approve')).toBe(200);
    const { match, skipped } = await stream.until(taskNote(second.task.taskId, 'completed'));
    expect(skipped.every((m) => m.method === 'notifications/tasks')).toBe(true);
    expect((match.params!.result as { _meta: Record<string, unknown> })._meta[DISPOSITION]).toBe('approved-executed');
    expectListenResult(await stream.next(), id);
    expect(await stream.next()).toBeNull();
  });

  it('a task whose run an operator terminates is sent as tasks/get reads it then (failed, -32603, the tool never ran) and the stream ends', async () => {
    const { task } = await pendingTask();
    const { stream, id } = await listenOpened(await b.target('alice'), [task.taskId]);
    await stream.until(taskNote(task.taskId, 'working'));
    const [hash, runId] = task.taskId.split('.');
    await stack.temporal.workflow.getHandle(`${APPROVAL_WORKFLOW_ID_PREFIX}${hash}`, runId).terminate('operator test');
    const { match } = await stream.until(taskNote(task.taskId, 'failed'));
    expect(match.params!.error).toMatchObject({ code: -32603 });
    expectListenResult(await stream.next(), id);
    const got = (await rawRpc(await onA('alice'), 'tasks/get', { taskId: task.taskId })).body.result!;
    expect([got.status, (got.error as { code: number }).code]).toEqual(['failed', -32603]);
    expect(stack.ledger.countByTask(task.taskId)).toBe(0);
  });

  it('a stream held across a worker restart still delivers the completion after the approval, executed exactly once', async () => {
    const { memo: m, task } = await pendingTask();
    const { stream, id } = await listenOpened(await onA('alice'), [task.taskId]);
    await stream.until(taskNote(task.taskId, 'working'));
    await stack.stopWorker();
    try {
      expect(await decide(stack, m, 'approve')).toBe(200);
    } finally {
      await stack.startWorker();
    }
    const { match: done } = await stream.until(taskNote(task.taskId, 'completed'), 90_000);
    expect((done.params!.result as { _meta: Record<string, unknown> })._meta[DISPOSITION]).toBe('approved-executed');
    expectListenResult(await stream.next(), id);
    expect(stack.ledger.countByTask(task.taskId)).toBe(1);
  });
});

describe('subscriptions/listen refusals open nothing', () => {
  it('10,000 task ids in one subscribe are refused -32602 naming the limit, and nothing is opened', async () => {
    const { task } = await pendingTask();
    const before = b.stats();
    const ids = [task.taskId, ...Array.from({ length: 9_999 }, (_, i) => `t${i}`)];
    const answer = await openListen(await b.target('alice'), ids);
    expect(answer.stream).toBeUndefined();
    expect(answer.error?.error.code).toBe(-32602);
    expect(answer.error?.error.message).toContain('at most 100 task ids');
    expect(answer.error?.error.data?.issues?.[0]?.path).toBe('$.params.notifications.taskIds');
    expect(b.stats().subscriptions).toEqual(before.subscriptions);
    expect(b.stats().feed.watches).toBe(before.feed.watches);
  });

  it('taskIds that is not an array, or holds a non-string id, is refused -32602 with the path of the offending value', async () => {
    const alice = await b.target('alice');
    const before = b.stats().subscriptions.streams;
    const cases: Array<[unknown, string]> = [
      ['not-an-array', '$.params.notifications.taskIds'],
      [{ 0: 'x' }, '$.params.notifications.taskIds'],
      [null, '$.params.notifications.taskIds'],
      [['fine', 42], '$.params.notifications.taskIds[1]'],
      [[{ taskId: 'x' }], '$.params.notifications.taskIds[0]'],
    ];
    for (const [taskIds, path] of cases) {
      const answer = await openListen(alice, taskIds);
      expect(answer.error?.error.code, JSON.stringify(taskIds)).toBe(-32602);
      expect(answer.error?.error.data?.issues?.[0]?.path).toBe(path);
      expect(answer.error?.error.message).toContain(path);
    }
    expect(b.stats().subscriptions.streams).toBe(before);
  });

  it('a client that does not declare the tasks extension is refused -32021 with data.requiredCapabilities and HTTP 400, exactly as tasks/get refuses it', async () => {
    const { task } = await pendingTask();
    const before = b.stats().subscriptions.streams;
    const target = await b.target('alice');
    const answer = await openListen(target, [task.taskId], { capabilities: {} });
    expect(answer.error?.error.code).toBe(-32021);
    expect(answer.error?.error.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    const get = await new WireClient({ ...target, capabilities: {} }).request('tasks/get', { taskId: task.taskId }).then(
      () => null,
      (e: unknown) => e as McpRpcError,
    );
    expect({ status: answer.status, code: answer.error?.error.code, message: answer.error?.error.message }).toEqual({
      status: get?.httpStatus,
      code: get?.code,
      message: get?.message,
    });
    expect(b.stats().subscriptions.streams).toBe(before);
  });

  it('a tasks declaration that is not an object (null, true) is the invalid-envelope -32602 of every other method, and opens nothing', async () => {
    const { task } = await pendingTask();
    const before = b.stats().subscriptions.streams;
    const target = await b.target('alice');
    for (const declared of [null, true]) {
      const capabilities = { extensions: { [TASKS_EXTENSION]: declared } };
      const answer = await openListen(target, [task.taskId], { capabilities });
      const get = await new WireClient({ ...target, capabilities }).request('tasks/get', { taskId: task.taskId }).then(
        () => null,
        (e: unknown) => e as McpRpcError,
      );
      expect(get?.code).toBe(-32602);
      expect({ status: answer.status, code: answer.error?.error.code, message: answer.error?.error.message }).toEqual({
        status: get?.httpStatus,
        code: get?.code,
        message: get?.message,
      });
    }
    expect(b.stats().subscriptions.streams).toBe(before);
  });

  it('past the per-principal stream limit a subscribe is refused -32000 with HTTP 429 and Retry-After; closing a stream frees its place', async () => {
    const sub = `limited-${randomUUID().slice(0, 6)}`;
    const { task } = await pendingTask(sub);
    const target = await onA(sub);
    const open: SseReader[] = [];
    for (let i = 0; i < PER_PRINCIPAL; i++) open.push((await listenOpened(target, [task.taskId])).stream);
    const refused = await openListen(target, [task.taskId]);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.error?.error.code).toBe(-32000);
    expect(refused.error?.error.data).toMatchObject({ rateLimited: true, scope: 'principal', limit: PER_PRINCIPAL });
    // another caller is not affected
    const other = await listenOpened(await onA('alice'), [task.taskId]);
    expect(ackedIds(other.ack)).toEqual([]); // not alice's task: acknowledged, nothing followed
    // a client that goes away frees its place
    open.pop()!.close();
    let again: Awaited<ReturnType<typeof openListen>> | undefined;
    await eventually(async () => {
      again = await openListen(target, [task.taskId]);
      if (again.stream) return true;
      expect(again.status).toBe(429);
      return false;
    }, 'a place is free again');
    open.push(again!.stream!);
    for (const s of open) s.close();
  });
});

describe('many idle streams', () => {
  it('1,000 idle streams on one instance are all acknowledged, use bounded memory, and release every feed watch when they close', async () => {
    const STREAMS = 1_000;
    const TASKS = 10;
    // tasks created through this instance poll their backend once an hour: idle runs, as in production,
    // whose history long-polls answer nothing until the server's interval runs out
    const c = await startMcpInstance(stack, {
      COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: 2_000,
      COUNTERSIGN_SUBSCRIPTIONS_MAX: 2_000,
      COUNTERSIGN_STATUS_POLL_INITIAL_MS: 3_600_000,
      COUNTERSIGN_STATUS_POLL_MAX_MS: 3_600_000,
    });
    try {
      const sub = `many-${randomUUID().slice(0, 6)}`;
      const target = await c.target(sub);
      const creator = new WireClient({ url: c.url, token: target.token, capabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
      const tasks: string[] = [];
      for (let i = 0; i < TASKS; i++) tasks.push((await creator.request<WireTask>('tools/call', transfer(memo()))).taskId);
      // warm up (code paths, connection pool), then measure from an idle instance
      (await listenOpened(target, [tasks[0]!])).stream.close();
      await eventually(() => c.stats().subscriptions.streams === 0 && c.stats().feed.watches === 0, 'the warm-up stream is released');
      const heapBefore = settledHeap();

      const streams: SseReader[] = [];
      for (let start = 0; start < STREAMS; start += 100) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(100, STREAMS - start) }, async (_, j) => {
            const taskId = tasks[(start + j) % TASKS]!;
            const opened = await listenOpened(target, [taskId]);
            expect(ackedIds(opened.ack)).toEqual([taskId]);
            await opened.stream.until(taskNote(taskId, 'working'));
            return opened.stream;
          }),
        );
        streams.push(...batch);
      }
      expect(c.stats().subscriptions).toEqual({ streams: STREAMS, followed: STREAMS });
      expect(c.stats().feed.watches).toBe(TASKS); // one history long-poll per run, shared by its 100 streams
      const heapAfter = settledHeap();
      const perStreamBytes = (heapAfter - heapBefore) / STREAMS;
      process.stdout.write(
        `1,000 idle subscriptions/listen streams (${TASKS} tasks): heap ${mb(heapBefore)} -> ${mb(heapAfter)} MB, ` +
          `${(perStreamBytes / 1024).toFixed(1)} KiB per stream (server and client side of each stream, same process)\n`,
      );
      // generous bound: measured about 70 KiB per stream with both ends in this process
      expect(perStreamBytes).toBeLessThan(512 * 1024);

      for (const s of streams) s.close();
      await eventually(() => c.stats().subscriptions.streams === 0, 'every stream is released');
      expect(c.stats().subscriptions.followed).toBe(0);
      await eventually(() => c.stats().feed.watches === 0, 'every feed watch is released');
      for (const s of streams) expect(s.ended).toBe(true);
    } finally {
      await c.stop();
    }
  });
});

describe('instance shutdown', () => {
  it('closing the front ends an open stream gracefully with the subscriptions/listen result (resultType complete, subscription id in _meta)', async () => {
    const { task } = await pendingTask();
    const d = await startMcpInstance(stack);
    try {
      const { stream, id } = await listenOpened(await d.target('alice'), [task.taskId]);
      await stream.until(taskNote(task.taskId, 'working'));
      await d.closeFront();
      expectListenResult(await stream.next(), id);
      expect(await stream.next()).toBeNull();
      expect(stream.error).toBeUndefined();
      expect(d.stats().subscriptions).toEqual({ streams: 0, followed: 0 });
    } finally {
      await d.stop();
    }
  });

  it('stopping the stack (the mcp role’s own shutdown) ends an open stream gracefully too, before the listener closes', async () => {
    const { task } = await pendingTask();
    expect((await pendingFor(stack, 'bob')).length).toBeGreaterThan(0);
    const { stream, id } = await listenOpened(await onA('alice'), [task.taskId]);
    await stream.until(taskNote(task.taskId, 'working'));
    await b.stop();
    const stopping = stack.stop();
    const end = await stream.next();
    await stopping;
    expectListenResult(end, id);
    expect(await stream.next()).toBeNull();
    expect(stream.error).toBeUndefined();
  });
});

/** Heap in use after full collections (`--expose-gc` switched on here when the run did not). */
function settledHeap(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
