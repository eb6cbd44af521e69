// Scope: the workflow-task watchdog (src/temporal/workflow-task-watchdog.ts) and worker replacement
// (src/worker.ts `replace`), against a real Temporal dev server started the way the stack starts it.
// A run whose workflow task is held is made real, not simulated: a raw poller takes each attempt of
// the run's workflow task and never answers, so Temporal times it out again and again and lists the
// run under TemporalReportedProblems, exactly as it does for a run a wedged SDK worker holds
// (docs/OPERATIONS.md §A workflow task nobody answers). The replacement is proven on the stack: a
// task created before the worker is replaced is approved and executed once by the fresh worker.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { startWorkflowTaskWatchdog, type HeldRun } from '../../src/temporal/workflow-task-watchdog.js';
import { createLogger } from '@countersign/http/log';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const logger = createLogger({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the workflow-task watchdog on a real Temporal server', () => {
  let server: DevServer;
  let connection: Connection;
  let client: Client;
  let polling = true;
  let poller: Promise<void> = Promise.resolve();
  const taskQueue = `held-${Date.now()}`;
  const workflowId = `held-run-${Date.now()}`;

  beforeAll(async () => {
    server = await startDevServer();
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    await client.workflow.start('anyWorkflow', { taskQueue, workflowId, workflowTaskTimeout: '1s' });
    // the "worker" that holds the run: takes every workflow task of the queue and answers none
    poller = (async () => {
      while (polling) {
        await connection
          .withDeadline(Date.now() + 5_000, () =>
            connection.workflowService.pollWorkflowTaskQueue({
              namespace: 'default',
              taskQueue: { name: taskQueue, kind: 1 },
              identity: 'held-here',
            }),
          )
          .catch(() => sleep(100));
      }
    })();
  }, 90_000);

  afterAll(async () => {
    polling = false;
    await poller; // its last poll ends by its deadline; only then may the channel close
    await connection?.close();
    await server?.stop();
  });

  it('finds the run whose workflow task this worker identity took and keeps leaving unanswered, and replaces the worker once for it, never twice; another identity leaves it alone', async () => {
    const replaced: HeldRun[] = [];
    const here = startWorkflowTaskWatchdog({
      connection,
      namespace: 'default',
      taskQueue,
      identity: () => 'held-here',
      replace: async (held) => {
        replaced.push(held);
      },
      logger,
      intervalMs: 3_600_000, // checks are run by hand below
      cooldownMs: 0,
      minAttempts: 3,
    });
    const elsewhere = startWorkflowTaskWatchdog({
      connection,
      namespace: 'default',
      taskQueue,
      identity: () => 'another-worker',
      replace: async () => {
        throw new Error('must not replace a worker that holds nothing');
      },
      logger,
      intervalMs: 3_600_000,
    });
    try {
      let held: HeldRun | null = null;
      while (!held) {
        expect(await elsewhere.check()).toBeNull();
        held = await here.check();
        if (!held) await sleep(1_000);
      }
      expect(held.workflowId).toBe(workflowId);
      expect(held.attempt).toBeGreaterThanOrEqual(3);
      expect(replaced).toEqual([held]);
      // the run is still held (the raw poller is no SDK worker to replace): the watchdog does not
      // replace again for it, since a run a fresh worker cannot take is not held by a worker's state
      expect(await here.check()).toBeNull();
      expect(replaced).toHaveLength(1);
    } finally {
      here.stop();
      elsewhere.stop();
    }
  }, 120_000);

  it('leaves alone a run whose workflow task keeps failing (a nondeterminism error fails on every worker): only timeouts mean a worker holds it', async () => {
    const failingQueue = `failing-${Date.now()}`;
    const native = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({
      connection: native,
      taskQueue: failingQueue,
      identity: 'failing-here',
      workflowsPath: fileURLToPath(new URL('../support/workflows/failing-workflow.ts', import.meta.url)),
    });
    const running = worker.run();
    const replaced: HeldRun[] = [];
    const watchdog = startWorkflowTaskWatchdog({
      connection,
      namespace: 'default',
      taskQueue: failingQueue,
      identity: () => 'failing-here',
      replace: async (held) => {
        replaced.push(held);
      },
      logger,
      intervalMs: 3_600_000,
      cooldownMs: 0,
      minAttempts: 1,
    });
    try {
      const handle = await client.workflow.start('alwaysFailingWorkflow', { taskQueue: failingQueue, workflowId: `failing-${Date.now()}` });
      // wait until Temporal lists the run under TemporalReportedProblems (as a failure), then check
      for (;;) {
        const d = await handle.describe();
        const problems = d.raw.workflowExecutionInfo?.searchAttributes?.indexedFields?.TemporalReportedProblems?.data;
        if (problems && Buffer.from(problems).toString().includes('category=WorkflowTaskFailed')) break;
        await sleep(500);
      }
      for (let i = 0; i < 5; i++) expect(await watchdog.check()).toBeNull();
      expect(replaced).toEqual([]);
    } finally {
      watchdog.stop();
      worker.shutdown();
      await running;
      await native.close();
    }
  }, 120_000);
});

describe('replacing the worker', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startTestStack(testConfig({ COUNTERSIGN_WORKER_WATCHDOG_MS: 0 }));
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  });

  it('a task created before the worker is replaced is approved and executed exactly once by the fresh worker, under its new identity', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `replace-${Date.now()}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.status).toBe('working');
    const identity = await stack.replaceWorker();
    expect(identity).toMatch(/-r1$/);
    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    const ids = parseTaskId(created.taskId)!;
    const history = await stack.temporal.workflow.getHandle(ids.workflowId, ids.runId).fetchHistory();
    const starters = (history.events ?? []).flatMap((e) =>
      e.workflowTaskStartedEventAttributes?.identity ? [e.workflowTaskStartedEventAttributes.identity] : [],
    );
    expect(starters.at(-1)).toBe(identity);
    expect(starters[0]).not.toBe(identity);
  }, 120_000);
});
