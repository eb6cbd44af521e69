// Scope: several Countersign instances against one production-shaped Temporal (four services on
// PostgreSQL, set up by docker-compose.yml's scripts; test/support/postgres-temporal.ts): two workers
// and two MCP fronts as separate `countersign serve` processes on one task queue and data folder,
// behind one public MCP URL as a load balancer would present them. An approval created through one
// front is read through the other; a worker killed (SIGKILL) while a task waits leaves the other to
// execute it; a front killed leaves the other to serve the task and its result. Every approved task
// is executed exactly once (the ledger counts executions per task). The tests share the processes
// and run in order: the kills accumulate.
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
const ports = { approvals: 0, issuer: 0, mcpA: 0, mcpB: 0, workerA: 0, workerB: 0 };
let viaA: WireClient;
let viaB: WireClient;
let bob: { id: string; secret: string };

/** Start `countersign serve --role <role> …args` with `env` only (no inherited TEMPORAL_* or profile); resolves once it prints countersign-ready. */
async function serve(name: string, role: string, env: Record<string, string>, args: string[] = []): Promise<void> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/countersign.mjs'), 'serve', '--role', role, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.set(name, child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-3000)));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('countersign-ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`${name} exited ${code} before it was ready:\n${stderr}`)));
  });
}

/** SIGKILL `name` and wait until it is gone. */
async function kill(name: string): Promise<void> {
  const child = procs.get(name)!;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
  procs.delete(name);
}

/**
 * `tools/call` as a client following the contract of a retryable create error (-32603 "retry the
 * same call to join it", after COUNTERSIGN_CREATE_WAIT_MS): the same call again, which joins the
 * same task. Seen here right after a worker was killed: the first new workflow task can go to the
 * dead worker's last poll and wait out its timeout.
 */
async function callJoining(client: WireClient, params: Record<string, unknown>): Promise<WireTask> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.request<WireTask>('tools/call', params);
    } catch (err) {
      if (!(err instanceof McpRpcError && err.code === -32603 && /retry the same call/.test(err.message)) || attempt >= 5) throw err;
    }
  }
}

const transfer = (memo: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });

/** Wait until the approval service lists the request of `memo` as pending; returns its id. */
async function pendingRequest(memo: string): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const res = await fetch(`http://127.0.0.1:${ports.approvals}/access/v1/approvals/pending`, {
      headers: { authorization: basic(bob.id, bob.secret) },
    });
    const body = (await res.json()) as { items: Array<{ id: string; arguments: { memo?: string } }> };
    const found = body.items.find((r) => r.arguments.memo === memo);
    if (found) return found.id;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no pending request for ${memo}`);
}

async function approve(requestId: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${ports.approvals}/access/v1/requests/${requestId}/decision`, {
    method: 'POST',
    headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision: 'approve' }),
  });
  await res.body?.cancel();
  return res.status;
}

beforeAll(async () => {
  temporal = await startPostgresTemporal({ namespace: 'countersign', retention: '48h' });
  dataDir = mkdtempSync(join(tmpdir(), 'countersign-multi-'));
  for (const k of Object.keys(ports) as Array<keyof typeof ports>) ports[k] = await freePort();
  const bundlePath = join(dataDir, 'workflow-bundle.json');
  writeFileSync(bundlePath, JSON.stringify(await bundleWorkflows()));
  const publicMcp = `http://127.0.0.1:${ports.mcpA}`;
  const common = {
    COUNTERSIGN_DATA_DIR: dataDir,
    COUNTERSIGN_HOST: '127.0.0.1',
    COUNTERSIGN_APPROVALS_PORT: String(ports.approvals),
    COUNTERSIGN_ISSUER_PORT: String(ports.issuer),
    COUNTERSIGN_PORT: String(ports.mcpA),
    // both fronts are one resource (one audience) to clients, as behind a load balancer
    COUNTERSIGN_MCP_URL: publicMcp,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: temporal.namespace,
    COUNTERSIGN_TASK_QUEUE: `multi-${randomUUID().slice(0, 8)}`,
    COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'fail',
    COUNTERSIGN_STATUS_POLL_INITIAL_MS: '1000',
    COUNTERSIGN_STATUS_POLL_MAX_MS: '2000',
    COUNTERSIGN_POLL_INTERVAL_MS: '200',
    LOG_LEVEL: 'warn',
  };
  await serve('approvals', 'approvals', common);
  await serve('issuer', 'issuer', common);
  for (const w of ['A', 'B'] as const)
    await serve(`worker${w}`, 'worker', { ...common, COUNTERSIGN_WORKER_PORT: String(ports[`worker${w}`]) }, [
      '--workflow-bundle',
      bundlePath,
    ]);
  for (const m of ['A', 'B'] as const) {
    const port = ports[`mcp${m}`];
    // each front receives the callbacks of the tasks it creates; the status poll covers a dead one
    await serve(`mcp${m}`, 'mcp', { ...common, COUNTERSIGN_PORT: String(port) }, [
      '--callback-base-url',
      `http://127.0.0.1:${port}/callbacks/arap`,
    ]);
  }
  const issuer = await loadOrCreateDevIssuer({
    keyFile: join(dataDir, 'dev-issuer-key.json'),
    issuer: `http://127.0.0.1:${ports.issuer}`,
    audience: `${publicMcp}/mcp`,
  });
  const token = await issuer.mintToken({ sub: 'alice' });
  const client = (port: number) =>
    new WireClient({ url: `http://127.0.0.1:${port}/mcp`, token, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
  viaA = client(ports.mcpA);
  viaB = client(ports.mcpB);
  bob = loadOrCreateSecrets(dataDir).approvers.find((a) => a.id === 'bob')!;
  ledger = openLedger(join(dataDir, 'ledger.db'));
}, 300_000);

afterAll(async () => {
  for (const name of [...procs.keys()]) await kill(name);
  ledger?.close();
  await temporal?.stop();
});

describe('two workers and two MCP fronts on one Temporal cluster on PostgreSQL', () => {
  it('a task created through front A is seen working through front B, and once approved is executed once and its result read through B', async () => {
    const memo = `multi ${randomUUID().slice(0, 12)}`;
    const created = await callJoining(viaA, transfer(memo));
    expect(created.resultType).toBe('task');
    const requestId = await pendingRequest(memo);
    const seen = await viaB.request<WireTask>('tasks/get', { taskId: created.taskId });
    expect(seen.status).toBe('working');
    expect(await approve(requestId)).toBe(200);
    const done = await waitForTerminal(viaB, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(created.taskId)).toBe(1);
  });

  it('with worker A killed while a task waits for approval, worker B executes it exactly once', async () => {
    const memo = `multi ${randomUUID().slice(0, 12)}`;
    const created = await callJoining(viaA, transfer(memo));
    const requestId = await pendingRequest(memo);
    await kill('workerA');
    expect(await approve(requestId)).toBe(200);
    const done = await waitForTerminal(viaB, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(created.taskId)).toBe(1);
  });

  it('with front A killed after creating a task, front B serves the task and its result, executed exactly once', async () => {
    const memo = `multi ${randomUUID().slice(0, 12)}`;
    const created = await callJoining(viaA, transfer(memo));
    const requestId = await pendingRequest(memo);
    await kill('mcpA');
    await expect(viaA.request('tasks/get', { taskId: created.taskId })).rejects.toThrow();
    expect(await approve(requestId)).toBe(200);
    const done = await waitForTerminal(viaB, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledger.countByTask(created.taskId)).toBe(1);
    const again = await viaB.request<WireTask>('tasks/get', { taskId: created.taskId });
    expect(again.status).toBe('completed');
  });
});
