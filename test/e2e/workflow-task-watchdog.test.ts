// Scope: the workflow-task watchdog (src/temporal/workflow-task-watchdog.ts) and worker replacement
// (src/worker.ts `replace`), against a real Temporal dev server started the way the stack starts it.
// A run whose workflow task is held is made real, not simulated: a raw poller takes each attempt of
// the run's workflow task and never answers, so Temporal times it out again and again and lists the
// run under TemporalReportedProblems, exactly as it does for a run a wedged SDK worker holds
// (docs/OPERATIONS.md §A workflow task nobody answers). With two workers on one queue (a raw poller
// that holds, an SDK worker that does not), the decision is the one docs/DESIGN.md §6.1 argues: only
// the worker history names acts, it waits while another may hold the attempt, and the run completes
// once. The replacement is proven on the stack: a task created before the worker is replaced is
// approved and executed once by the fresh worker.
import { Client, Connection } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { startApprovalWorker } from '../../src/worker.js';
import { startWorkflowTaskWatchdog, type HeldRun, type HoldAction } from '../../src/temporal/workflow-task-watchdog.js';
import { createLogger } from '@countersign/http/log';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const logger = createLogger({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A "worker" that holds every workflow task it takes: polls `queue` as `identity`, answers nothing,
 * until `stop()` (which resolves once its last poll has ended by its deadline).
 */
function holdQueue(connection: Connection, queue: string, identity: string): { stop(): Promise<void> } {
  let polling = true;
  const loop = (async () => {
    while (polling) {
      await connection
        .withDeadline(Date.now() + 5_000, () =>
          connection.workflowService.pollWorkflowTaskQueue({ namespace: 'default', taskQueue: { name: queue, kind: 1 }, identity }),
        )
        .catch(() => sleep(100));
    }
  })();
  return {
    async stop() {
      polling = false;
      await loop;
    },
  };
}

describe('the workflow-task watchdog on a real Temporal server', () => {
  let server: DevServer;
  let connection: Connection;
  let client: Client;
  let holder: { stop(): Promise<void> } | undefined;
  let countedBundle: WorkflowBundleWithSourceMap;
  const taskQueue = `held-${Date.now()}`;
  const workflowId = `held-run-${Date.now()}`;

  beforeAll(async () => {
    // From its 4th attempt the server adds 5 s, 10 s, 20 s … (up to 10 min) to a held workflow task's
    // timeout; capped here at 1 s so a streak of attempts takes seconds, not minutes: the watchdog
    // decides by attempt counts, never by their spacing.
    server = await startDevServer({ dynamicConfig: { 'history.workflowTaskRetryMaxInterval': '1s' } });
    connection = await Connection.connect({ address: server.address });
    client = new Client({ connection });
    await client.workflow.start('anyWorkflow', { taskQueue, workflowId, workflowTaskTimeout: '1s' });
    // the "worker" that holds the run: takes every workflow task of the queue and answers none
    holder = holdQueue(connection, taskQueue, 'held-here');
    countedBundle = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('../support/workflows/counted-workflow.ts', import.meta.url)),
      logger: { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} } as never,
    });
  }, 90_000);

  afterAll(async () => {
    await holder?.stop(); // its last poll ends by its deadline; only then may the channel close
    await connection?.close();
    await server?.stop();
  });

  /** Resolves once the run is listed under TemporalReportedProblems as timed out, at attempt ≥ `attempt`. */
  async function heldAt(id: string, attempt: number): Promise<void> {
    for (;;) {
      const d = await client.workflow.getHandle(id).describe();
      const problems = d.raw.workflowExecutionInfo?.searchAttributes?.indexedFields?.TemporalReportedProblems?.data;
      const pending = d.raw.pendingWorkflowTask;
      if (problems && Buffer.from(problems).toString().includes('category=WorkflowTaskTimedOut') && Number(pending?.attempt) >= attempt)
        return;
      await sleep(500);
    }
  }

  /** Resolves once the queue lists `identity` among its workflow pollers. */
  async function listedPoller(queue: string, identity: string): Promise<void> {
    for (;;) {
      const d = await connection.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: queue, kind: 1 },
        taskQueueType: 1,
      });
      if ((d.pollers ?? []).some((p) => p.identity === identity)) return;
      await sleep(200);
    }
  }

  /** A real SDK worker on `queue` running countedWorkflow; `counts` records its activity's calls by key. */
  async function countingWorker(queue: string, identity: string, counts: Map<string, number>) {
    const native = await NativeConnection.connect({ address: server.address });
    const worker = await Worker.create({
      connection: native,
      taskQueue: queue,
      identity,
      workflowBundle: countedBundle,
      activities: {
        countRun: async (key: string) => {
          counts.set(key, (counts.get(key) ?? 0) + 1);
          return counts.get(key)!;
        },
      },
    });
    const running = worker.run();
    return {
      async stop() {
        worker.shutdown();
        await running;
        await native.close();
      },
    };
  }

  /** A watchdog of `identity` on `queue` checked by hand, recording its actions and replacements. */
  function watchdogOf(queue: string, identity: () => string, replace: (held: HeldRun) => Promise<void>) {
    const actions: HoldAction[] = [];
    const replaced: HeldRun[] = [];
    const watchdog = startWorkflowTaskWatchdog({
      connection,
      namespace: 'default',
      taskQueue: queue,
      identity,
      replace: async (held) => {
        replaced.push(held);
        await replace(held);
      },
      onAction: (action) => actions.push(action),
      status: () => ({ probe: true }),
      logger,
      intervalMs: 3_600_000, // checks are run by hand
      cooldownMs: 0,
      minAttempts: 3,
    });
    return { watchdog, actions, replaced };
  }

  /** A `countedWorkflow` run on a queue of its own (`<prefix>-<now>`), with a 1 s workflow task timeout. */
  async function startCounted(prefix: string) {
    const queue = `${prefix}-${Date.now()}`;
    const id = `${prefix}-run-${Date.now()}`;
    const counts = new Map<string, number>();
    const handle = await client.workflow.start('countedWorkflow', {
      taskQueue: queue,
      workflowId: id,
      args: [id],
      workflowTaskTimeout: '1s',
    });
    return { queue, id, counts, handle };
  }

  /** The watchdog of `worker-b`, a worker history never names: replacing it fails the test. */
  function bystanderWatchdog(queue: string) {
    return watchdogOf(
      queue,
      () => 'worker-b',
      async () => {
        throw new Error('must not replace a worker history does not name');
      },
    );
  }

  it('with a second worker polling the queue, the worker history names does not replace itself while the other may hold the attempt, the other never acts, and the run completes exactly once on the other', async () => {
    const { queue, id, counts, handle } = await startCounted('two');
    const a = holdQueue(connection, queue, 'worker-a');
    const here = watchdogOf(
      queue,
      () => 'worker-a',
      async () => undefined,
    );
    const other = bystanderWatchdog(queue);
    let b: { stop(): Promise<void> } | undefined;
    try {
      await heldAt(id, 3);
      b = await countingWorker(queue, 'worker-b', counts);
      await listedPoller(queue, 'worker-b');
      // checked until the run completes: the worker that is not held takes an attempt and answers it
      let done = false;
      const result = handle.result().finally(() => (done = true));
      while (!done) {
        expect(await here.watchdog.check()).toBeNull();
        expect(await other.watchdog.check()).toBeNull();
        await sleep(300);
      }
      expect(await result).toBe(1);
      expect(counts.get(id)).toBe(1);
      expect(here.replaced).toEqual([]);
      expect(other.replaced).toEqual([]);
      expect(other.actions).toEqual([]);
      // seen held while worker-b polled: left to the queue, once
      expect(here.actions.every((x) => x === 'shared')).toBe(true);
      expect(here.actions.length).toBeLessThanOrEqual(1);
      const history = await handle.fetchHistory();
      const completedBy = (history.events ?? []).flatMap((e) =>
        e.workflowTaskCompletedEventAttributes?.identity ? [e.workflowTaskCompletedEventAttributes.identity] : [],
      );
      expect(completedBy.length).toBeGreaterThan(0);
      expect(new Set(completedBy)).toEqual(new Set(['worker-b']));
    } finally {
      here.watchdog.stop();
      other.watchdog.stop();
      await a.stop();
      await b?.stop();
    }
  }, 120_000);

  it('with two workers that both leave the attempts unanswered, the worker history names is replaced once, after the other had its turns; the other is not; the fresh worker completes the run exactly once', async () => {
    const { queue, id, counts, handle } = await startCounted('both');
    let identityA = 'worker-a';
    let a: { stop(): Promise<void> } = holdQueue(connection, queue, identityA);
    const here = watchdogOf(
      queue,
      () => identityA,
      async () => {
        // what RunningWorker.replace does: a fresh worker polls, then the old one stops
        const fresh = await countingWorker(queue, 'worker-a-r1', counts);
        await a.stop();
        a = fresh;
        identityA = 'worker-a-r1';
      },
    );
    const other = bystanderWatchdog(queue);
    let b: { stop(): Promise<void> } | undefined;
    try {
      await heldAt(id, 3);
      b = holdQueue(connection, queue, 'worker-b');
      await listedPoller(queue, 'worker-b');
      let held: HeldRun | null = null;
      while (!held) {
        expect(await other.watchdog.check()).toBeNull();
        held = await here.watchdog.check();
        if (!held) await sleep(500);
      }
      expect(held.workflowId).toBe(id);
      expect(here.actions).toEqual(['shared', 'replaced']);
      expect(other.actions).toEqual([]);
      expect(other.replaced).toEqual([]);
      expect(await handle.result()).toBe(1);
      expect(counts.get(id)).toBe(1);
    } finally {
      here.watchdog.stop();
      other.watchdog.stop();
      await a.stop();
      await b?.stop();
    }
  }, 120_000);

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

  it('a worker replaced while a tool runs lets it run past the shutdown grace, uncancelled, and its result completes the run once', async () => {
    const queue = `drain-${Date.now()}`;
    const id = `drain-run-${Date.now()}`;
    const graceMs = 500;
    const calls: Array<{ cancelledAtEnd: boolean }> = [];
    let started = false;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const running = await startApprovalWorker({
      connection: { address: server.address },
      namespace: 'default',
      taskQueue: queue,
      workflowBundle: countedBundle,
      shutdownGraceMs: graceMs,
      activities: {
        countRun: async () => {
          started = true;
          await released;
          calls.push({ cancelledAtEnd: Context.current().cancellationSignal.aborted });
          return calls.length;
        },
      },
    });
    try {
      const handle = await client.workflow.start('countedWorkflow', { taskQueue: queue, workflowId: id, args: [id] });
      while (!started) await sleep(100);
      const old = running.worker;
      await running.replace();
      // not a timing assertion: the old worker's deploy grace must have passed for this test to mean
      // anything (before, its activities were cancelled at 80% of it and abandoned at its end)
      await sleep(4 * graceMs);
      expect(old.getState()).not.toBe('STOPPED');
      expect(running.status().draining).toBe(1);
      release();
      expect(await handle.result()).toBe(1);
      expect(calls).toEqual([{ cancelledAtEnd: false }]);
      const history = await handle.fetchHistory();
      const startedBy = (history.events ?? []).flatMap((e) =>
        e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.identity] : [],
      );
      expect(startedBy).toHaveLength(1);
      expect(startedBy[0]).not.toMatch(/-r1$/); // the old worker ran it and reported it
      expect((history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes)).toHaveLength(1);
    } finally {
      release();
      await running.stop();
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
