// Scope: operating the stack over real HTTP on a real Temporal dev server: /livez and /readyz on
// every role (the MCP front answering for Temporal, the worker and its approval backend; the worker
// run as its own role on its own port), and Prometheus /metrics with the application metrics and the
// Temporal SDK runtime's, with no principal or argument in any label.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startRole } from '../../src/stack-roles.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack;
let origin: string;
beforeAll(async () => {
  stack = await startTestStack(testConfig({ COUNTERSIGN_TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${await freePort()}` }));
  origin = new URL(stack.urls.mcp).origin;
});
afterAll(async () => {
  await stack?.stop();
});

async function getJson(url: string): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as { status: string; checks: Record<string, string> } };
}

async function metricsText(url: string): Promise<string> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return res.text();
}

/** The value of the first sample line of `name` whose labels include every `labels` pair; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('health endpoints', () => {
  it('every role answers /livez, and /readyz once its dependencies answer: the MCP front checks Temporal, the worker and the approval backend', async () => {
    for (const base of [origin, stack.urls.approvals, stack.urls.issuer]) {
      const live = await fetch(`${base}/livez`);
      expect(live.status).toBe(200);
      expect(await live.text()).toBe('ok\n');
      expect((await getJson(`${base}/readyz`)).status).toBe(200);
    }
    expect(await getJson(`${origin}/readyz`)).toEqual({
      status: 200,
      body: { status: 'ready', checks: { temporal: 'ok', worker: 'ok', 'approval-backend': 'ok' } },
    });
  });

  it('with the worker stopped the MCP front is live but not ready (503, the worker named), and ready again once it polls', async () => {
    await stack.stopWorker();
    try {
      expect((await fetch(`${origin}/livez`)).status).toBe(200);
      const down = await getJson(`${origin}/readyz`);
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('not-ready');
      expect(down.body.checks.temporal).toBe('ok');
      expect(down.body.checks.worker).not.toBe('ok');
    } finally {
      await stack.startWorker();
    }
    expect((await getJson(`${origin}/readyz`)).status).toBe(200);
  });

  it('the worker run as its own role serves /livez, /readyz and /metrics on COUNTERSIGN_WORKER_PORT', async () => {
    const port = await freePort();
    const config = {
      ...stack.config,
      TEMPORAL_ADDRESS: stack.urls.temporal,
      COUNTERSIGN_PORT: Number(new URL(origin).port),
      COUNTERSIGN_APPROVALS_PORT: Number(new URL(stack.urls.approvals).port),
      COUNTERSIGN_ISSUER_PORT: Number(new URL(stack.urls.issuer).port),
      COUNTERSIGN_WORKER_PORT: port,
      COUNTERSIGN_TASK_QUEUE: `ops-${randomUUID()}`, // polls a queue of its own, so it takes no task of the stack's
    };
    const role = await startRole('worker', config, { logger: stack.logger });
    try {
      expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
      expect(await getJson(`http://127.0.0.1:${port}/readyz`)).toEqual({
        status: 200,
        body: { status: 'ready', checks: { worker: 'ok', 'approval-backend': 'ok' } },
      });
      expect(await metricsText(`http://127.0.0.1:${port}/metrics`)).toContain('# TYPE countersign_approval_decision_seconds histogram');
      expect((await fetch(`http://127.0.0.1:${port}/mcp`)).status).toBe(404);
    } finally {
      await role.stop();
    }
  });
});

describe('Prometheus metrics', () => {
  it('count decisions, dispositions, open tasks and refused callbacks, and include the Temporal SDK runtime metrics; no label names a principal or an argument', async () => {
    const alice = await clientFor(stack, 'alice');
    const approvedMemo = `ops ${randomUUID().slice(0, 12)}`;
    const approved = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: approvedMemo },
    });
    const pendingMemo = `ops ${randomUUID().slice(0, 12)}`;
    const pending = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: pendingMemo },
    });
    expect(await decide(stack, approvedMemo, 'approve')).toBe(200);
    expect((await waitForTerminal(alice, approved.taskId)).status).toBe('completed');
    // a callback with no valid signature is refused (401) and counted
    const forged = await fetch(`${origin}/callbacks/arap/approval-x/1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(forged.status).toBe(401);

    const text = await metricsText(`${origin}/metrics`);
    expect(
      sample(text, 'countersign_approval_tasks_terminal_total', { status: 'completed', disposition: 'approved-executed' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'countersign_approval_decision_seconds_count', { outcome: 'approved' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'countersign_callback_refusals_total', { reason: 'unauthorized' })).toBe(1);
    expect(sample(text, 'countersign_open_approval_tasks')).toBeGreaterThanOrEqual(1); // the pending one
    // the approval's callback reached the MCP front through the approval service's outbox
    expect(sample(text, 'countersign_callback_outbox', { state: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'countersign_callback_outbox', { state: 'gave-up' })).toBe(0);
    expect(text).toMatch(/^# TYPE countersign_submissions_refused_total counter$/m);
    // the approved task was followed from its record or this front's watch, never by a query
    expect(
      (sample(text, 'countersign_task_reads_total', { source: 'record' }) ?? 0) +
        (sample(text, 'countersign_task_reads_total', { source: 'feed' }) ?? 0),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'countersign_task_reads_total', { source: 'query' }) ?? 0).toBe(0);
    expect(sample(text, 'countersign_subscription_streams')).toBe(0);
    expect(text).toMatch(/^temporal_\w+/m); // the SDK runtime's exporter, appended
    expect(text).not.toMatch(/alice|acct-991|ops [0-9a-f]{12}|[0-9a-f]{64}/);

    await alice.request('tasks/cancel', { taskId: pending.taskId });
    const after = await metricsText(`${origin}/metrics`);
    expect(sample(after, 'countersign_approval_tasks_terminal_total', { status: 'cancelled', disposition: 'none' })).toBeGreaterThanOrEqual(
      1,
    );
  });
});
