// Scope: hostile `subscriptions/listen` requests naming task ids (src/mcp/task-subscriptions.ts) at the
// MCP HTTP app in-process, over a task service whose every lookup is counted: too many ids, ids of
// the wrong type, no tasks capability, a lying Mcp-Method header, an instance at its stream limit —
// each a clean JSON-RPC error before any task is looked up or any stream counted; repeated ids are
// looked up once; and an instance shut down while a subscription's ids are still being checked ends
// that response with the subscriptions/listen result instead of holding it open.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskService } from '../../src/mcp/task-service.js';
import { createTaskSubscriptions, type TaskSubscriptionLimits, type TaskSubscriptions } from '../../src/mcp/task-subscriptions.js';
import type { TaskSnapshot } from '../../workflows/types.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { mcpHeaders, mcpUnderTest, modernEnvelope, type McpUnderTest } from './apps.js';

const TASK = `${'a'.repeat(32)}.00000000-0000-4000-8000-000000000000`;

const working: TaskSnapshot = {
  status: 'working',
  phase: 'awaiting-approval',
  ownerKey: 'owner',
  policyReason: '',
  createdAt: '2026-12-01T10:00:00.000Z',
  lastUpdatedAt: '2026-12-01T10:00:00.000Z',
  ttlMs: 86_400_000,
  pollIntervalMs: 2_000,
  generation: 1,
  claimed: false,
};

/** What `follow` is asked and answers: every id it is asked for, and the follows it stopped. */
interface FollowProbe {
  asked: unknown[];
  stopped: string[];
  /** Answer of `follow` (default: the task is the caller's and working). */
  answer: (taskId: unknown) => Promise<{ current: TaskSnapshot; stop: () => void } | null>;
}

let mcp: McpUnderTest | undefined;
afterEach(async () => {
  await mcp?.close();
  mcp = undefined;
});

async function underTest(limits: Partial<TaskSubscriptionLimits> = {}): Promise<{ subs: TaskSubscriptions; probe: FollowProbe }> {
  const probe: FollowProbe = {
    asked: [],
    stopped: [],
    answer: async (taskId) => ({ current: working, stop: () => probe.stopped.push(String(taskId)) }),
  };
  const tasks = {
    follow: (taskId: unknown) => {
      probe.asked.push(taskId);
      return probe.answer(taskId);
    },
  } as unknown as TaskService;
  const subs = createTaskSubscriptions({
    tasks,
    logger: pino({ level: 'silent' }),
    serverInfo: { name: 'countersign', version: 'test' },
    limits: { keepAliveMs: 0, ...limits },
  });
  mcp = await mcpUnderTest({ subscriptions: subs });
  return { subs, probe };
}

/** POST a `subscriptions/listen` naming `taskIds` (as given) to the app. */
function listen(taskIds: unknown, opts: { capabilities?: Record<string, unknown>; headers?: Record<string, string>; id?: number } = {}) {
  const meta = { ...modernEnvelope(), ...(opts.capabilities ? { 'io.modelcontextprotocol/clientCapabilities': opts.capabilities } : {}) };
  return mcp!.app.request('/mcp', {
    method: 'POST',
    headers: { ...mcpHeaders('subscriptions/listen'), ...opts.headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: opts.id ?? 7,
      method: 'subscriptions/listen',
      params: { notifications: { taskIds }, _meta: meta },
    }),
  });
}

/** The JSON-RPC messages of an SSE body that has ended (the `data:` line of each frame). */
async function frames(res: Response): Promise<Array<Record<string, unknown>>> {
  const text = await Promise.race([
    res.text(),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the response never ended')), 10_000)),
  ]);
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

describe('subscriptions/listen for task ids under hostile input', () => {
  it('10,000 task ids are refused -32602 naming the limit before any task is looked up, and nothing is counted', async () => {
    const { subs, probe } = await underTest();
    const res = await listen(Array.from({ length: 10_000 }, () => TASK));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: number; error: { code: number; message: string; data: { issues: Array<{ path: string }> } } };
    expect(body.id).toBe(7);
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toBe(
      'Invalid params for subscriptions/listen: $.params.notifications.taskIds: at most 100 task ids per subscription (got 10000)',
    );
    expect(body.error.data.issues).toEqual([
      { path: '$.params.notifications.taskIds', message: 'at most 100 task ids per subscription (got 10000)' },
    ]);
    expect(probe.asked).toEqual([]);
    expect(subs.stats()).toEqual({ streams: 0, followed: 0 });
  });

  it('task ids of the wrong type are refused -32602 with the path of the offending value, nothing looked up', async () => {
    const { probe } = await underTest();
    for (const [taskIds, path] of [
      [42, '$.params.notifications.taskIds'],
      [{ length: 1, 0: TASK }, '$.params.notifications.taskIds'],
      [[TASK, TASK, 7], '$.params.notifications.taskIds[2]'],
      [[[TASK]], '$.params.notifications.taskIds[0]'],
    ] as Array<[unknown, string]>) {
      const body = (await (await listen(taskIds)).json()) as { error: { code: number; data: { issues: Array<{ path: string }> } } };
      expect(body.error.code).toBe(-32602);
      expect(body.error.data.issues[0]!.path).toBe(path);
    }
    expect(probe.asked).toEqual([]);
  });

  it('without the tasks extension declared the answer is -32021 with data.requiredCapabilities, nothing looked up', async () => {
    const { probe } = await underTest();
    for (const capabilities of [{}, { extensions: {} }, { extensions: { 'io.example/other': {} } }]) {
      const body = (await (await listen([TASK], { capabilities })).json()) as { error: { code: number; data: unknown } };
      expect(body.error.code).toBe(-32021);
      expect(body.error.data).toEqual({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    }
    expect(probe.asked).toEqual([]);
  });

  it('an Mcp-Method header naming another method is refused -32020 (HTTP 400), nothing looked up', async () => {
    const { probe } = await underTest();
    const res = await listen([TASK], { headers: { 'mcp-method': 'tasks/get' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32020);
    expect(probe.asked).toEqual([]);
  });

  it('an instance at its stream limit refuses the next subscribe -32000 with HTTP 429 and Retry-After, without looking anything up', async () => {
    const { subs, probe } = await underTest({ maxStreams: 2, maxPerPrincipal: 10 });
    const open = [await listen([TASK], { id: 1 }), await listen([TASK], { id: 2 })];
    expect(open.map((r) => r.status)).toEqual([200, 200]);
    expect(subs.stats()).toEqual({ streams: 2, followed: 2 });
    const refused = await listen([TASK], { id: 3 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    const body = (await refused.json()) as { id: number; error: { code: number; data: unknown } };
    expect(body).toMatchObject({ id: 3, error: { code: -32000, data: { rateLimited: true, scope: 'instance', limit: 2 } } });
    expect(probe.asked).toHaveLength(2);
    subs.closeAll();
    for (const r of open) expect((await frames(r)).at(-1)).toMatchObject({ result: { resultType: 'complete' } });
    expect(subs.stats()).toEqual({ streams: 0, followed: 0 });
  });

  it('a task id repeated in one subscribe is looked up and acknowledged once', async () => {
    const { subs, probe } = await underTest();
    const res = await listen([TASK, TASK, TASK]);
    subs.closeAll();
    const [ack, current, end] = await frames(res);
    expect(probe.asked).toEqual([TASK]);
    expect(ack).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: { taskIds: [TASK] } } });
    expect(current).toMatchObject({ method: 'notifications/tasks', params: { taskId: TASK, status: 'working' } });
    expect(end).toMatchObject({ id: 7, result: { resultType: 'complete' } });
  });

  it('an instance shut down while a subscription’s ids are still being checked ends that response with the subscriptions/listen result, and stops the follow it then gets', async () => {
    const { subs, probe } = await underTest();
    let release: () => void = () => undefined;
    probe.answer = (taskId) =>
      new Promise((resolve) => {
        release = () => resolve({ current: working, stop: () => probe.stopped.push(String(taskId)) });
      });
    const pending = listen([TASK], { id: 'shutdown-during-checks' as unknown as number });
    await new Promise((r) => setImmediate(r));
    expect(probe.asked).toEqual([TASK]);
    subs.closeAll();
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    const messages = await frames(res);
    expect(messages).toEqual([
      {
        jsonrpc: '2.0',
        id: 'shutdown-during-checks',
        result: {
          resultType: 'complete',
          _meta: {
            'io.modelcontextprotocol/subscriptionId': 'shutdown-during-checks',
            'io.modelcontextprotocol/serverInfo': { name: 'countersign', version: 'test' },
          },
        },
      },
    ]);
    expect(probe.stopped).toEqual([TASK]);
    expect(subs.stats()).toEqual({ streams: 0, followed: 0 });
  });
});
