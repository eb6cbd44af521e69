// Scope: `tasks/get` from the task record (workflows/task-record.ts, src/mcp/task-reads.ts) and the
// poll limit (src/mcp/poll-interval.ts) end to end on a real Temporal dev server and real HTTP: with
// every worker stopped a pending task reads as its true `working` snapshot with the SEP-2643 envelope
// (never 503), on the instance that created it and on another; an approval decided meanwhile runs
// exactly once when a worker returns; a client polling in a tight loop is refused past the burst
// with -32000 HTTP 429 and Retry-After (SEP-2663: servers MAY rate-limit), one honouring
// pollIntervalMs never is.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startMcpInstance, type McpInstance } from '../support/mcp-instance.js';
import { rawRpc, type RpcTarget } from '../support/sse.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const AUTHZ = 'io.modelcontextprotocol/authorization';

let stack: Stack;
let b: McpInstance;
beforeAll(async () => {
  stack = await startTestStack(testConfig({ COUNTERSIGN_POLL_RATE_LIMIT: 'on' }));
  b = await startMcpInstance(stack);
});
afterAll(async () => {
  await b?.stop();
  await stack?.stop();
});

const memo = () => `reads ${randomUUID().slice(0, 12)}`;
const transfer = (m: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } });

async function onA(sub: string): Promise<RpcTarget> {
  return { url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub }) };
}

/** The fields of a task that only a change of the task moves (not the advertised interval, which follows its age). */
const stateOf = (t: Record<string, unknown>) => ({
  taskId: t.taskId,
  status: t.status,
  statusMessage: t.statusMessage,
  createdAt: t.createdAt,
  lastUpdatedAt: t.lastUpdatedAt,
  ttlMs: t.ttlMs,
  _meta: { [AUTHZ]: (t._meta as Record<string, unknown> | undefined)?.[AUTHZ] },
});

describe('tasks/get without a worker', () => {
  it('with every worker stopped, tasks/get of a pending task answers its true working snapshot with the SEP-2643 envelope on either instance, never 503; an approval decided meanwhile completes approved-executed exactly once after a worker starts', async () => {
    const m = memo();
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', transfer(m));
    expect(created.resultType).toBe('task');
    const a = await onA('alice');
    const viaB = await b.target('alice');
    const before = await rawRpc(a, 'tasks/get', { taskId: created.taskId });
    expect(before.status).toBe(200);

    await stack.stopWorker();
    try {
      for (const target of [a, viaB, a, viaB]) {
        const r = await rawRpc(target, 'tasks/get', { taskId: created.taskId });
        expect(r.status).toBe(200);
        expect(r.headers.get('retry-after')).toBeNull();
        expect(r.body.result).toMatchObject({ resultType: 'complete', status: 'working' });
        expect((r.body.result!._meta as Record<string, unknown>)[AUTHZ]).toEqual({
          reason: 'insufficient_authorization',
          remediation: 'available',
          remediationHints: [{ type: 'task' }],
        });
        expect(r.body.result!.pollIntervalMs).toEqual(expect.any(Number));
        expect(stateOf(r.body.result!)).toEqual(stateOf(before.body.result!));
      }
      // decided while no worker runs: recorded at the approval service, nothing has run yet
      expect(await decide(stack, m, 'approve')).toBe(200);
      expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
      const still = await rawRpc(viaB, 'tasks/get', { taskId: created.taskId });
      expect([still.status, still.body.result?.status]).toEqual([200, 'working']);
      expect(stack.ledger.countByTask(created.taskId)).toBe(0);
    } finally {
      await stack.startWorker();
    }
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    // and the completed task reads the same without a worker, executed still once
    await stack.stopWorker();
    try {
      const closed = await rawRpc(viaB, 'tasks/get', { taskId: created.taskId });
      expect(closed.status).toBe(200);
      expect((closed.body.result!.result as { _meta: Record<string, unknown> })._meta[DISPOSITION]).toBe('approved-executed');
    } finally {
      await stack.startWorker();
    }
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
  });
});

describe('tasks/get poll limit', () => {
  it('tasks/get polled in a tight loop is answered for the burst, then refused -32000 with HTTP 429 and Retry-After; after that wait it answers again', async () => {
    const sub = `tight-${randomUUID().slice(0, 6)}`;
    const created = await (await clientFor(stack, sub)).request<WireTask>('tools/call', transfer(memo()));
    const target = await onA(sub);
    let refused: Awaited<ReturnType<typeof rawRpc>> | undefined;
    let answered = 0;
    for (let i = 0; i < 1_000 && !refused; i++) {
      const r = await rawRpc(target, 'tasks/get', { taskId: created.taskId });
      if (r.status === 429) refused = r;
      else {
        expect(r.status).toBe(200);
        answered++;
      }
    }
    expect(refused, 'a tight loop is refused at some point').toBeDefined();
    expect(answered).toBeGreaterThanOrEqual(10); // the burst
    expect(refused!.body.error?.code).toBe(-32000);
    const data = refused!.body.error?.data as { rateLimited: boolean; retryAfterMs: number };
    expect(data.rateLimited).toBe(true);
    expect(data.retryAfterMs).toBeGreaterThan(0);
    expect(Number(refused!.headers.get('retry-after'))).toBe(Math.max(1, Math.ceil(data.retryAfterMs / 1000)));
    expect(refused!.body.error?.message).toContain('pollIntervalMs');
    // another caller polling the same task is not refused by it
    const other = await rawRpc(await onA('alice'), 'tasks/get', { taskId: created.taskId });
    expect(other.body.error?.code).toBe(-32602); // not alice's task: the unknown-task answer, not 429
    // a client that waits as told is answered
    await new Promise((r) => setTimeout(r, Number(refused!.headers.get('retry-after')) * 1000));
    expect((await rawRpc(target, 'tasks/get', { taskId: created.taskId })).status).toBe(200);
  });

  it('a caller reading a new id of nobody’s task each time is refused -32000 with HTTP 429 and Retry-After after its miss budget, before any lookup; another caller is not', async () => {
    const sub = `prober-${randomUUID().slice(0, 6)}`;
    const created = await (await clientFor(stack, `owner-${randomUUID().slice(0, 6)}`)).request<WireTask>('tools/call', transfer(memo()));
    const target = await onA(sub);
    // well-formed ids of runs that do not exist: the owner's id with another run id each time
    const forged = (i: number) => `${created.taskId.slice(0, -12)}${String(i).padStart(12, '0')}`;
    let refused: Awaited<ReturnType<typeof rawRpc>> | undefined;
    let unknown = 0;
    for (let i = 0; i < 200 && !refused; i++) {
      const r = await rawRpc(target, 'tasks/get', { taskId: forged(i) });
      if (r.status === 429) refused = r;
      else {
        expect(r.body.error?.code).toBe(-32602);
        unknown++;
      }
    }
    expect(refused, 'probing new ids is refused at some point').toBeDefined();
    expect(unknown).toBeGreaterThanOrEqual(20); // the miss budget
    expect(unknown).toBeLessThan(200);
    expect(refused!.body.error?.code).toBe(-32000);
    expect(refused!.body.error?.data).toMatchObject({ rateLimited: true, scope: 'unknown-tasks' });
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // another caller's budget is its own: the same unknown id is answered unknown task, not 429
    const other = await rawRpc(await onA(`other-${randomUUID().slice(0, 6)}`), 'tasks/get', { taskId: forged(0) });
    expect([other.status, other.body.error?.code]).toEqual([200, -32602]);
  });

  it('a client honouring pollIntervalMs is never refused, well past the burst', async () => {
    const sub = `patient-${randomUUID().slice(0, 6)}`;
    const created = await (await clientFor(stack, sub)).request<WireTask>('tools/call', transfer(memo()));
    const target = await onA(sub);
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) {
      const r = await rawRpc(target, 'tasks/get', { taskId: created.taskId });
      statuses.push(r.status);
      const interval = r.body.result?.pollIntervalMs;
      expect(interval).toEqual(expect.any(Number));
      await new Promise((resolve) => setTimeout(resolve, interval as number));
    }
    expect(statuses).toEqual(Array(15).fill(200));
  });
});
