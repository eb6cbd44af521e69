// Scope: Countersign while a part of the production-shaped cluster is down (docs/TESTING.md, cluster
// tests: the "kill a Temporal service" rows). The cluster is the one of test/support/postgres-temporal.ts
// with each Temporal service (frontend, history, matching, worker) in its own process on PostgreSQL;
// Countersign runs as separate `countersign serve` processes (approval service, issuer, workers, one
// MCP front). Each row SIGKILLs one part while approval tasks are pending and starts it again on the
// same ports and database: the history service (which owns every workflow's state), the frontend,
// matching, and PostgreSQL itself. During the outage every read and new gated call the front refuses
// is refused retryably (tasks/get: 503, Retry-After and a retryable JSON-RPC error, docs/DESIGN.md §6,
// src/temporal/availability.ts; tools/call: a retryable error and no task id with nothing behind it);
// a task approved at the backend during the outage executes once the part is back; afterwards every
// pending task is approved and executed exactly once (the ledger counts executions per task), and the
// call made during the outage, repeated as its error said, is exactly one task. History is also killed
// while an approved task is about to execute: the fault hook of the fault harness
// (test/faults/install-fault-hook.mjs) kills its worker after the re-evaluation allowed it and before
// the execution claim; a new worker started during the outage executes it exactly once after the
// restart. Last, both Countersign workers are restarted one after the other (SIGTERM, a new process)
// while a client keeps creating and approving tasks: each executes exactly once. The tests share the
// processes and run in order.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import { McpRpcError, WireClient } from '@countersign/client';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { loadOrCreateSecrets } from '../../src/secrets.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { openLedger, type Ledger } from '../../src/tools/ledger.js';
import { bundleWorkflows } from '../../src/worker.js';
import { startPostgresTemporal, type PostgresTemporal } from '../support/postgres-temporal.js';
import { basic, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
let temporal: PostgresTemporal;
let dataDir: string;
let ledger: Ledger;
const procs = new Map<string, ChildProcess>();
/** The last 3,000 characters each process wrote to stderr, by name. */
const stderrOf = new Map<string, string>();
/** `countersign serve` environment shared by every role; set in beforeAll. */
let common: Record<string, string>;
let bundlePath: string;
/** The fault hook of the fault harness (test/faults/install-fault-hook.mjs): COUNTERSIGN_FAULT=<point> SIGKILLs at that point. */
const FAULT_HOOK = join(PROJECT_ROOT, 'test/faults/install-fault-hook.mjs');
const ports = { approvals: 0, issuer: 0, mcp: 0, worker: 0, workerB: 0 };
let alice: WireClient;
let token: string;
let bob: { id: string; secret: string };

/**
 * Start `countersign serve --role <role> …args` with `env` only; resolves once it prints
 * countersign-ready. `nodeArgs` go before the command (the fault hook's `--import`).
 */
async function serve(name: string, role: string, env: Record<string, string>, args: string[] = [], nodeArgs: string[] = []): Promise<void> {
  const child = spawn(process.execPath, [...nodeArgs, join(PROJECT_ROOT, 'bin/countersign.mjs'), 'serve', '--role', role, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.set(name, child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-3000);
    stderrOf.set(name, stderr);
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('countersign-ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${name} exited ${code} before it was ready:\n${stderr}`)));
  });
}

const transfer = (memo: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });

/** The approval service's pending requests whose memo is `memo` (approver bob). */
async function pendingWith(memo: string): Promise<string[]> {
  const res = await fetch(`http://127.0.0.1:${ports.approvals}/access/v1/approvals/pending`, {
    headers: { authorization: basic(bob.id, bob.secret) },
  });
  const body = (await res.json()) as { items: Array<{ id: string; arguments: { memo?: string } }> };
  return body.items.filter((r) => r.arguments.memo === memo).map((r) => r.id);
}

/** Wait until the approval service lists the request of `memo` as pending; returns its id. */
async function pendingRequest(memo: string): Promise<string> {
  return eventually(async () => {
    const [id] = await pendingWith(memo);
    if (!id) throw new Error(`no pending request for ${memo}`);
    return id;
  });
}

/** Approve `requestId` as bob at the approval service; returns the HTTP status. */
async function approve(requestId: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${ports.approvals}/access/v1/requests/${requestId}/decision`, {
    method: 'POST',
    headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  await res.body?.cancel();
  return res.status;
}

/** Poll `fn` until it resolves (each failure retried after 500 ms), at most `tries` times. */
async function eventually<T>(fn: () => Promise<T>, tries = 240): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= tries) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * One raw `tasks/get` over HTTP, so the status line and headers can be read. The abort is a liveness
 * bound (a hung request fails here with its own message), far above the front's call deadline.
 */
async function rawTasksGet(taskId: string): Promise<{
  status: number;
  retryAfter: string | null;
  body: { result?: { status?: string }; error?: { code: number; data?: { retryable?: boolean; retryAfterSeconds?: number } } };
}> {
  const res = await fetch(`http://127.0.0.1:${ports.mcp}/mcp`, {
    method: 'POST',
    signal: AbortSignal.timeout(60_000),
    headers: {
      authorization: `Bearer ${token}`,
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
          'io.modelcontextprotocol/clientInfo': { name: 'temporal-outage-test', version: '1' },
        },
      },
    }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as never };
}

/**
 * `tools/call` as a client following the contract of a retryable create error (-32603 "retry the
 * same call to join it", docs/DESIGN.md §3.1): the same call again, which joins the same task. Seen
 * right after a worker was replaced: the first workflow task can go to the dead worker's last poll.
 */
async function callJoining(params: Record<string, unknown>): Promise<WireTask> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await alice.request<WireTask>('tools/call', params);
    } catch (err) {
      if (!(err instanceof McpRpcError && err.code === -32603 && /retry the same call/.test(err.message)) || attempt >= 10) throw err;
    }
  }
}

/**
 * {@link waitForTerminal} as a client following the retryable-error contract: a 503 with a
 * retryable JSON-RPC error (the task store or a worker did not answer yet) is retried after its
 * `retryAfterSeconds`, up to 60 times.
 */
async function terminalRetrying(taskId: string): Promise<WireTask> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await waitForTerminal(alice, taskId);
    } catch (err) {
      const data = err instanceof McpRpcError ? (err.data as { retryable?: boolean; retryAfterSeconds?: number } | undefined) : undefined;
      if (!data?.retryable || attempt >= 60) throw err;
      await new Promise((r) => setTimeout(r, (data.retryAfterSeconds ?? 1) * 1000));
    }
  }
}

/** Start a worker (`worker`, or the second one, `workerB`); `fault`: a fault point at which it SIGKILLs itself (first hit). */
async function startWorker(name: 'worker' | 'workerB', fault?: string): Promise<void> {
  const env = { ...common, COUNTERSIGN_WORKER_PORT: String(ports[name]), ...(fault ? { COUNTERSIGN_FAULT: fault } : {}) };
  await serve(name, 'worker', env, ['--workflow-bundle', bundlePath], fault ? ['--import', FAULT_HOOK] : []);
}

/** Stop `name` as an orchestrator does in a rolling restart (SIGTERM); resolves with its exit code once it is gone. */
async function stopGracefully(name: string): Promise<number | null> {
  const child = procs.get(name)!;
  procs.delete(name);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

/** A refused `tasks/get`: 503 with Retry-After and a retryable -32603 saying the same. */
function expectRetryableRefusal(r: Awaited<ReturnType<typeof rawTasksGet>>): void {
  expect(r.status).toBe(503);
  expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(r.body.error?.code).toBe(-32603);
  expect(r.body.error?.data).toMatchObject({ retryable: true, retryAfterSeconds: Number(r.retryAfter) });
}

/**
 * `tools/call` as a client following the retryable-error contract: any error whose data says
 * `retryable` is retried after its `retryAfterSeconds` (the same call joins the same task), up to 30
 * times; each such error is pushed to `refusals`. Any other error fails the call.
 */
async function callRetrying(params: Record<string, unknown>, refusals: McpRpcError[] = []): Promise<WireTask> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await alice.request<WireTask>('tools/call', params);
    } catch (err) {
      const data = err instanceof McpRpcError ? (err.data as { retryable?: boolean; retryAfterSeconds?: number } | undefined) : undefined;
      if (!data?.retryable || attempt >= 30) throw err;
      refusals.push(err as McpRpcError);
      await new Promise((r) => setTimeout(r, (data.retryAfterSeconds ?? 1) * 1000));
    }
  }
}

/** One part of the cluster that a row SIGKILLs and starts again. */
interface Outage {
  label: string;
  kill(): Promise<void>;
  start(): Promise<void>;
  /**
   * True when the front cannot answer any task read during the outage (it cannot reach Temporal at
   * all); otherwise a read may also be answered as before (a part that a read does not need).
   */
  refusesEveryRead: boolean;
}

/**
 * Two tasks wait for approval; the part is killed. Every `tasks/get` of them is either answered
 * (`working`, unless `refusesEveryRead`) or refused with 503 and a retryable error; a new gated call
 * becomes a task or is refused retryably; one task is approved at the approval service. The part is
 * started again: both tasks execute exactly once, and the call made during the outage, repeated,
 * is one task (the same one if it had become a task) with one request, executed once.
 */
async function outageRow(outage: Outage): Promise<void> {
  const run = randomUUID().slice(0, 8);
  const memo = (what: string) => `${outage.label} ${run} ${what}`;
  const waiting = await callRetrying(transfer(memo('waiting')));
  const approvedDuring = await callRetrying(transfer(memo('approved-during')));
  const waitingRequest = await pendingRequest(memo('waiting'));
  const approvedDuringRequest = await pendingRequest(memo('approved-during'));

  await outage.kill();

  for (const task of [waiting, approvedDuring, waiting]) {
    const r = await rawTasksGet(task.taskId);
    if (outage.refusesEveryRead || r.status !== 200) expectRetryableRefusal(r);
    else expect(r.body.result?.status).toBe('working');
  }
  const during = await alice.request<WireTask>('tools/call', transfer(memo('during'))).then(
    (task) => task,
    (e: unknown) => e,
  );
  if (outage.refusesEveryRead || during instanceof Error) {
    // never a task id with nothing behind it
    expect(during).toBeInstanceOf(McpRpcError);
    expect((during as McpRpcError).data).toMatchObject({ retryable: true });
  }
  // the approval service keeps its own store: the decision is taken now and reaches the workflow later
  expect(await approve(approvedDuringRequest)).toBe(200);

  await outage.start();

  // the first reads after a restart can fail with a non-retryable -32603 (docs/TESTING.md, cluster tests)
  await eventually(() => alice.request<WireTask>('tasks/get', { taskId: waiting.taskId }));
  expect(await approve(waitingRequest)).toBe(200);
  for (const task of [waiting, approvedDuring]) {
    const done = await terminalRetrying(task.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(task.taskId)).toBe(1);
  }
  const retried = await eventually(() => callRetrying(transfer(memo('during'))));
  if (!(during instanceof Error)) expect(retried.taskId).toBe((during as WireTask).taskId);
  const retriedRequest = await pendingRequest(memo('during'));
  expect(await pendingWith(memo('during'))).toEqual([retriedRequest]);
  expect(await approve(retriedRequest)).toBe(200);
  const retriedDone = await terminalRetrying(retried.taskId);
  expect(retriedDone.result?._meta?.[DISPOSITION]).toBe('approved-executed');
  expect(ledger.countByTask(retried.taskId)).toBe(1);
}

/** SIGKILL `name` (if still running) and wait until it is gone. */
async function kill(name: string): Promise<void> {
  const child = procs.get(name)!;
  procs.delete(name);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

beforeAll(async () => {
  temporal = await startPostgresTemporal({ namespace: 'countersign', retention: '48h', processes: 'per-service' });
  dataDir = mkdtempSync(join(tmpdir(), 'countersign-temporal-outage-'));
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  bundlePath = join(dataDir, 'workflow-bundle.json');
  writeFileSync(bundlePath, JSON.stringify(await bundleWorkflows()));
  const publicMcp = `http://127.0.0.1:${ports.mcp}`;
  common = {
    COUNTERSIGN_DATA_DIR: dataDir,
    COUNTERSIGN_HOST: '127.0.0.1',
    COUNTERSIGN_APPROVALS_PORT: String(ports.approvals),
    COUNTERSIGN_ISSUER_PORT: String(ports.issuer),
    COUNTERSIGN_PORT: String(ports.mcp),
    COUNTERSIGN_MCP_URL: publicMcp,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    COUNTERSIGN_TASK_QUEUE: `outage-${randomUUID().slice(0, 8)}`,
    COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'fail',
    COUNTERSIGN_STATUS_POLL_INITIAL_MS: '1000',
    COUNTERSIGN_STATUS_POLL_MAX_MS: '2000',
    COUNTERSIGN_POLL_INTERVAL_MS: '200',
    COUNTERSIGN_TEMPORAL_CALL_TIMEOUT_MS: '1500',
    COUNTERSIGN_TEMPORAL_CIRCUIT_FAILURES: '2',
    COUNTERSIGN_TEMPORAL_CIRCUIT_OPEN_MS: '2000',
    COUNTERSIGN_CREATE_WAIT_MS: '3000',
    // the rows open more tasks for one principal than the default 20 an hour
    COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: '1000',
    LOG_LEVEL: 'warn',
  };
  await serve('approvals', 'approvals', common);
  await serve('issuer', 'issuer', common);
  await startWorker('worker');
  await serve('mcp', 'mcp', common, ['--callback-base-url', `http://127.0.0.1:${ports.mcp}/callbacks/arap`]);
  const issuer = await loadOrCreateDevIssuer({
    keyFile: join(dataDir, 'dev-issuer-key.json'),
    issuer: `http://127.0.0.1:${ports.issuer}`,
    audience: `${publicMcp}/mcp`,
  });
  token = await issuer.mintToken({ sub: 'alice' });
  alice = new WireClient({
    url: `http://127.0.0.1:${ports.mcp}/mcp`,
    token,
    capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  });
  bob = loadOrCreateSecrets(dataDir).approvers.find((a) => a.id === 'bob')!;
  ledger = openLedger(join(dataDir, 'ledger.db'));
}, 300_000);

afterAll(async () => {
  for (const name of [...procs.keys()]) await kill(name);
  ledger?.close();
  await temporal?.stop();
});

describe('the Temporal history service killed and restarted on the same PostgreSQL database', () => {
  it('while history is down the front answers tasks/get with 503 and a retryable error and refuses new gated calls retryably; after the restart every pending task, including one approved during the outage, executes exactly once and the refused call retried becomes one task', async () => {
    const run = randomUUID().slice(0, 8);
    const memos = { waiting: `outage ${run} waiting`, approvedDuring: `outage ${run} approved-during`, refused: `outage ${run} refused` };
    const waiting = await alice.request<WireTask>('tools/call', transfer(memos.waiting));
    const approvedDuring = await alice.request<WireTask>('tools/call', transfer(memos.approvedDuring));
    expect([waiting.status, approvedDuring.status]).toEqual(['working', 'working']);
    const waitingRequest = await pendingRequest(memos.waiting);
    const approvedDuringRequest = await pendingRequest(memos.approvedDuring);

    await temporal.kill('history');

    for (const task of [waiting, approvedDuring, waiting]) {
      const r = await rawTasksGet(task.taskId);
      expect(r.status).toBe(503);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(r.body.error?.code).toBe(-32603);
      expect(r.body.error?.data).toMatchObject({ retryable: true, retryAfterSeconds: Number(r.retryAfter) });
    }
    // a new gated call cannot become a task now: a retryable error, never a task id with nothing behind it
    const refused = await alice.request('tools/call', transfer(memos.refused)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(McpRpcError);
    expect((refused as McpRpcError).data).toMatchObject({ retryable: true });
    // the approval service keeps its own store: the decision is taken now and reaches the workflow later
    expect(await approve(approvedDuringRequest)).toBe(200);

    await temporal.start('history');

    const back = await eventually(() => alice.request<WireTask>('tasks/get', { taskId: waiting.taskId }));
    expect(back.status).toBe('working');
    expect(await approve(waitingRequest)).toBe(200);
    for (const task of [waiting, approvedDuring]) {
      const done = await terminalRetrying(task.taskId);
      expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
      expect(ledger.countByTask(task.taskId)).toBe(1);
    }

    // the client retries the refused call (its error said retryable): one task, one request, one execution
    const retried = await eventually(() => alice.request<WireTask>('tools/call', transfer(memos.refused)));
    expect(retried.resultType).toBe('task');
    const retriedRequest = await pendingRequest(memos.refused);
    expect(await pendingWith(memos.refused)).toEqual([retriedRequest]);
    expect(await approve(retriedRequest)).toBe(200);
    const retriedDone = await terminalRetrying(retried.taskId);
    expect(retriedDone.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(retried.taskId)).toBe(1);
  });

  it('with history killed while an approved task is about to execute (re-evaluation allowed it, its worker died before the execution claim), after the restart a new worker executes it exactly once', async () => {
    const memo = `outage ${randomUUID().slice(0, 8)} about-to-execute`;
    // the worker that dies between the approval's re-evaluation and the execution claim (fault point
    // worker.evaluate.after, docs/RELIABILITY.md), so the task is approved and not yet executed
    await kill('worker');
    await startWorker('worker', 'worker.evaluate.after');
    const worker = procs.get('worker')!;
    const died = new Promise<void>((r) => worker.once('exit', () => r()));
    const created = await callJoining(transfer(memo));
    expect(await approve(await pendingRequest(memo))).toBe(200);
    await died;
    expect(stderrOf.get('worker')).toContain('countersign-fault-hit worker.evaluate.after 1');
    expect(ledger.countByTask(created.taskId)).toBe(0);

    await temporal.kill('history');
    const r = await rawTasksGet(created.taskId);
    expect([r.status, r.body.error?.data?.retryable]).toEqual([503, true]);
    // a worker started during the outage picks the task up once history is back
    await kill('worker');
    await startWorker('worker');
    await temporal.start('history');
    // the first reads after the restart can fail with a non-retryable -32603 (docs/TESTING.md, cluster tests)
    await eventually(() => alice.request<WireTask>('tasks/get', { taskId: created.taskId }));

    const done = await terminalRetrying(created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(created.taskId)).toBe(1);
  });
});

describe('the Temporal frontend, matching, or PostgreSQL killed and restarted while tasks wait', () => {
  it('with the frontend killed, every tasks/get is refused with 503 and a retryable error and a new gated call retryably; after the restart every pending task, including one approved during the outage, executes exactly once and the refused call retried becomes one task', async () => {
    await outageRow({
      label: 'frontend',
      kill: () => temporal.kill('frontend'),
      start: () => temporal.start('frontend'),
      refusesEveryRead: true,
    });
  });

  it('with matching killed, reads and a new gated call are answered or refused retryably; after the restart every pending task, including one approved during the outage, executes exactly once and the call made during the outage becomes one task', async () => {
    await outageRow({
      label: 'matching',
      kill: () => temporal.kill('matching'),
      start: () => temporal.start('matching'),
      refusesEveryRead: false,
    });
  });

  it('with PostgreSQL killed (postmaster and backends), reads and a new gated call are answered or refused retryably; after it restarts every pending task, including one approved during the outage, executes exactly once and the call made during the outage becomes one task', async () => {
    await outageRow({
      label: 'postgres',
      kill: () => temporal.killPostgres(),
      start: () => temporal.startPostgres(),
      refusesEveryRead: false,
    });
  });
});

describe('both Countersign workers restarted one after the other under traffic', () => {
  it('every task created and approved while each worker in turn is stopped (SIGTERM) and started again executes exactly once, and every call refused meanwhile was told to retry', async () => {
    await startWorker('workerB');
    const run = randomUUID().slice(0, 8);
    const created: string[] = [];
    // calls answered with a retryable error and retried (callRetrying fails on any other error)
    const refusals: McpRpcError[] = [];
    let finished = 0;
    let steps = 0;
    let restarting = true;
    // one client calling, approving and waiting for each result in turn until the restart is over
    const traffic = (async () => {
      for (let i = 0; restarting; i++) {
        const memo = `rolling ${run} ${i}`;
        const task = await callRetrying(transfer(memo), refusals);
        expect(task.taskId).toEqual(expect.any(String));
        created.push(task.taskId);
        expect(await approve(await pendingRequest(memo))).toBe(200);
        const done = await terminalRetrying(task.taskId);
        expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
        finished++;
      }
    })();
    // rejects when the traffic ends, which before the restart is over means it failed: the wait ends at once
    const trafficFailed = traffic.then(() => {
      throw new Error('the traffic stopped before the restart was over');
    });
    trafficFailed.catch(() => {}); // raced below; a failure must not go unhandled meanwhile
    // each step of the restart waits until the traffic has finished one more task after the last step
    const afterMoreTraffic = async () => {
      const seen = finished;
      await Promise.race([
        trafficFailed,
        eventually(async () => {
          if (finished <= seen) throw new Error(`no task finished since step ${steps}`);
        }),
      ]);
      steps++;
    };
    for (const name of ['worker', 'workerB'] as const) {
      await afterMoreTraffic();
      expect(await stopGracefully(name)).toBe(0);
      await afterMoreTraffic();
      await startWorker(name);
    }
    await afterMoreTraffic();
    restarting = false;
    await traffic;

    expect(finished).toBeGreaterThanOrEqual(5);
    expect(new Set(created).size).toBe(created.length);
    for (const taskId of created) expect(ledger.countByTask(taskId)).toBe(1);
    for (const refusal of refusals) expect(refusal.data).toMatchObject({ retryable: true });
  });
});
