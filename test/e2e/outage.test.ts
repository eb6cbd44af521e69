// Scope: the MCP front while a dependency is down, on real processes: the Temporal dev server
// stopped and restarted on the same port and SQLite file, and the worker stopped and restarted.
// Every tasks/* answer comes back in bounded time — 503 with Retry-After and a retryable JSON-RPC
// error while Temporal is away, a durable "cancel recorded" while no worker runs — allowed calls
// keep working, and afterwards the pending tasks finish with nothing lost or doubled.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, type WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { restartablePort, startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { ackedIds, listenOpened, openListen } from '../support/sse.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let dir: string;
let port: number;
let dev: DevServer | undefined;
let stack: Stack;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-outage-'));
  port = await restartablePort();
  dev = await startDevServer({ port, dbFile: join(dir, 'temporal.db') });
  stack = await startTestStack(
    testConfig({
      TEMPORAL_ADDRESS: dev.address,
      COUNTERSIGN_TEMPORAL_CALL_TIMEOUT_MS: 1_500,
      COUNTERSIGN_TEMPORAL_CIRCUIT_FAILURES: 2,
      COUNTERSIGN_TEMPORAL_CIRCUIT_OPEN_MS: 2_000,
    }),
  );
});
afterAll(async () => {
  await stack?.stop();
  await dev?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const transfer = (amount: number, memo: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo } });

/** One raw `tasks/get` over HTTP, so the status line and headers can be read. */
async function rawTasksGet(
  client: WireClient,
  taskId: string,
): Promise<{
  status: number;
  retryAfter: string | null;
  body: { result?: { status?: string }; error?: { code: number; data?: { retryable?: boolean; retryAfterSeconds?: number } } };
}> {
  const opts = (client as unknown as { opts: { url: string; token: string } }).opts;
  const res = await fetch(opts.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${opts.token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tasks/get',
      'mcp-name': taskId,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tasks/get',
      params: {
        taskId,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
          'io.modelcontextprotocol/clientInfo': { name: 'outage-test', version: '1' },
        },
      },
    }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as never };
}

/** Poll `fn` until it resolves (each failure retried after 500 ms), at most `tries` times. */
async function eventually<T>(fn: () => Promise<T>, tries = 120): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= tries) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

describe('Temporal down', () => {
  it('tasks/get and subscriptions/listen answer 503 with Retry-After and a retryable error while Temporal is stopped, allowed calls still run, and after the restart a subscribe opens and the pending task is approved, executes once and is pushed completed', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `outage ${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', transfer(50_000, m));
    expect(created.status).toBe('working');
    await dev!.stop();
    dev = undefined;

    for (let i = 0; i < 3; i++) {
      const r = await rawTasksGet(alice, created.taskId);
      expect(r.status).toBe(503);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body.error?.code).toBe(-32603);
      expect(r.body.error?.data).toMatchObject({ retryable: true, retryAfterSeconds: Number(r.retryAfter) });
    }
    // an allowed call needs no Temporal
    const small = await alice.request<{ isError?: boolean }>('tools/call', transfer(100, `${m} small`));
    expect(small.isError).toBe(false);
    // a new gated call cannot become a task now: a retryable error, never a task that exists unseen
    const gated = await alice.request('tools/call', transfer(50_001, `${m} during`)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(gated).toBeInstanceOf(McpRpcError);
    expect((gated as McpRpcError).data).toMatchObject({ retryable: true });

    // subscribing needs the task's state from Temporal: a retryable 503, and no stream is left open
    const target = { url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub: 'alice' }) };
    const refused = await openListen(target, [created.taskId]);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.error?.error.code).toBe(-32603);
    expect(refused.error?.error.data).toMatchObject({ retryable: true });

    dev = await startDevServer({ port, dbFile: join(dir, 'temporal.db') });
    const again = await eventually(() => alice.request<WireTask>('tasks/get', { taskId: created.taskId }));
    expect(again.status).toBe('working');
    // once Temporal is back the same subscribe opens, and the stream carries the completion below
    const { stream, ack } = await listenOpened(target, [created.taskId]);
    expect(ackedIds(ack)).toEqual([created.taskId]);
    await eventually(async () => {
      if ((await pendingFor(stack, 'bob')).every((p) => p.arguments.memo !== m)) throw new Error('not pending yet');
    });
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    const { match: pushed } = await stream.until(
      (msg) => msg.method === 'notifications/tasks' && msg.params?.taskId === created.taskId && msg.params?.status === 'completed',
    );
    expect(pushed.params?.status).toBe('completed');
    stream.close();
  });
});

describe('no worker', () => {
  it('tasks/cancel with no worker running is answered in bounded time and recorded (tasks/get still reads the working task from its record); once a worker returns the task ends cancelled and nothing runs', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `no-worker ${randomUUID().slice(0, 8)}`;
    const created = await eventually(() => alice.request<WireTask>('tools/call', transfer(60_000, m)));
    await stack.stopWorker();
    try {
      expect(await eventually(() => alice.request('tasks/cancel', { taskId: created.taskId }), 10)).toMatchObject({
        resultType: 'complete',
      });
      // recorded, not yet applied: the record still says working, and it is read without a worker
      const r = await rawTasksGet(alice, created.taskId);
      expect([r.status, r.body.result?.status]).toEqual([200, 'working']);
    } finally {
      await stack.startWorker();
    }
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('cancelled');
    expect(stack.ledger.countByTask(created.taskId)).toBe(0);
    // the winning cancel withdrew the request at the backend too: nobody can approve it any more
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
  });
});
