// Scope: src/temporal/availability.ts — the deadline and circuit breaker in front of every Temporal
// call the MCP front makes, against a real Temporal client whose server is not there (a lazy
// connection to a closed local port), on a fake clock for the circuit's open window; and against a
// real dev server with no worker, where calls that wait for a worker miss their deadline.
import { Client, Connection, ServiceError, WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTemporalGuard, TemporalUnavailableError } from '../../src/temporal/availability.js';
import { freePort, startDevServer, type DevServer } from '../../src/temporal/dev-server.js';

let connection: Connection;
let client: Client;
beforeAll(async () => {
  // nothing listens on this port: every RPC fails the way a stopped Temporal server makes it fail
  connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}` });
  client = new Client({ connection });
});
afterAll(async () => {
  await connection.close();
});

async function unavailable(p: Promise<unknown>): Promise<TemporalUnavailableError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(TemporalUnavailableError);
  return err as TemporalUnavailableError;
}

const describeSome = () => client.workflow.getHandle('approval-0123456789abcdef0123456789abcdef').describe();

describe('Temporal guard', () => {
  it('a call Temporal does not answer ends at its deadline as TemporalUnavailableError with a retry hint, not as an SDK error', async () => {
    const guard = createTemporalGuard({ client, callTimeoutMs: 300, failureThreshold: 10 });
    const err = await unavailable(guard.run(describeSome));
    expect(['no-answer', 'unreachable']).toContain(err.reason);
    expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('after failureThreshold unanswered calls the circuit opens: the next call fails as circuit-open without reaching Temporal, with Retry-After covering the open window', async () => {
    const clock = { ms: 1_000_000 };
    let reached = 0;
    const guard = createTemporalGuard({ client, callTimeoutMs: 300, failureThreshold: 2, openMs: 10_000, now: () => clock.ms });
    const counted = () => {
      reached++;
      return describeSome();
    };
    await unavailable(guard.run(counted));
    expect(guard.isOpen()).toBe(false);
    await unavailable(guard.run(counted));
    expect(guard.isOpen()).toBe(true);
    const open = await unavailable(guard.run(counted));
    expect(open.reason).toBe('circuit-open');
    expect(open.retryAfterSeconds).toBe(10);
    expect(reached).toBe(2);
    clock.ms += 4_000;
    expect((await unavailable(guard.run(counted))).retryAfterSeconds).toBe(6);
    expect(reached).toBe(2);
  });

  it('a wait that runs out with tripsCircuit false (the creation wait) is still TemporalUnavailableError but never opens the circuit; the same misses on ordinary calls do', async () => {
    const guard = createTemporalGuard({ client, callTimeoutMs: 300, failureThreshold: 2, openMs: 10_000 });
    // what the SDK throws when an update's wait for a worker ran out (the update RPC timed out)
    const updateWaitRanOut = () => Promise.reject(new WorkflowUpdateRPCTimeoutOrCancelledError('update timed out'));
    for (let i = 0; i < 5; i++) {
      const err = await unavailable(guard.run(updateWaitRanOut, 300, { tripsCircuit: false }));
      expect(err.reason).toBe('no-answer');
    }
    expect(guard.isOpen()).toBe(false);
    await unavailable(guard.run(updateWaitRanOut));
    await unavailable(guard.run(updateWaitRanOut));
    expect(guard.isOpen()).toBe(true);
  });

  it('past the open window one call is let through (half-open); a success closes the circuit and resets the count', async () => {
    const clock = { ms: 2_000_000 };
    const guard = createTemporalGuard({ client, callTimeoutMs: 300, failureThreshold: 1, openMs: 5_000, now: () => clock.ms });
    await unavailable(guard.run(describeSome));
    expect(guard.isOpen()).toBe(true);
    clock.ms += 5_001;
    expect(await guard.run(async () => 'answered')).toBe('answered');
    expect(guard.isOpen()).toBe(false);
  });

  it('Temporal answering RESOURCE_EXHAUSTED (a rate limit, a full query buffer), as the SDK wraps it, is retryable "overloaded" and never opens the circuit', async () => {
    const guard = createTemporalGuard({ client, failureThreshold: 1 });
    // the shape of a query refused by the server's limits: the SDK's ServiceError around the gRPC status
    const limited = Object.assign(new Error('8 RESOURCE_EXHAUSTED: consistent query buffer is full'), { code: 8 });
    const refused = () => Promise.reject(new ServiceError('Failed to query workflow', { cause: limited }));
    for (let i = 0; i < 3; i++) {
      const err = await unavailable(guard.run(refused));
      expect(err.reason).toBe('overloaded');
      expect(err.retryAfterSeconds).toBe(1);
    }
    expect(guard.isOpen()).toBe(false);
  });

  it('a call cut off as gRPC CANCELLED (how a deadline sometimes ends a query), as the SDK wraps it, is retryable "no-answer", not an internal error', async () => {
    const guard = createTemporalGuard({ client, failureThreshold: 10 });
    const cut = Object.assign(new Error('1 CANCELLED: Cancelled on client'), { code: 1 });
    const err = await unavailable(guard.run(() => Promise.reject(new ServiceError('Failed to query workflow', { cause: cut }))));
    expect(err.reason).toBe('no-answer');
    expect(err.detail).toBeUndefined();
  });

  it('a query refused because the run\'s workflow task is failing (FAILED_PRECONDITION), as the SDK wraps it, is retryable "no-answer" and never opens the circuit; another FAILED_PRECONDITION passes through', async () => {
    const guard = createTemporalGuard({ client, failureThreshold: 1 });
    const failing = Object.assign(new Error('9 FAILED_PRECONDITION: Query has failed due to a failing workflow task'), { code: 9 });
    const err = await unavailable(guard.run(() => Promise.reject(new ServiceError('Failed to query workflow', { cause: failing }))));
    expect(err.reason).toBe('no-answer');
    expect(err.detail).toBe('workflow-task-failing');
    expect(guard.isOpen()).toBe(false);
    const other = new ServiceError('Failed', {
      cause: Object.assign(new Error('9 FAILED_PRECONDITION: namespace is not active'), { code: 9 }),
    });
    await expect(guard.run(() => Promise.reject(other))).rejects.toBe(other);
  });

  it('errors that are not about availability pass through unchanged and do not count', async () => {
    const guard = createTemporalGuard({ client, failureThreshold: 1 });
    const own = new RangeError('not about Temporal');
    await expect(guard.run(async () => Promise.reject(own))).rejects.toBe(own);
    expect(guard.isOpen()).toBe(false);
  });
});

describe('Temporal guard, server up and no worker', () => {
  let dev: DevServer;
  let liveConnection: Connection;
  let live: Client;
  beforeAll(async () => {
    dev = await startDevServer();
    liveConnection = await Connection.connect({ address: dev.address });
    live = new Client({ connection: liveConnection });
  });
  afterAll(async () => {
    await liveConnection?.close();
    await dev?.stop();
  });

  it('updates no worker answers miss their deadline as no-answer, but while the server itself answers they never open the circuit', async () => {
    // a workflow on a task queue nobody polls: the server holds every update for a worker
    const handle = await live.workflow.start('nobodyRunsThis', { workflowId: `no-worker-${Date.now()}`, taskQueue: 'no-worker-here' });
    const guard = createTemporalGuard({ client: live, callTimeoutMs: 300, failureThreshold: 2, openMs: 10_000 });
    for (let i = 0; i < 4; i++) {
      const err = await unavailable(guard.run(() => handle.executeUpdate('poke')));
      expect(err.reason).toBe('no-answer');
    }
    expect(guard.isOpen()).toBe(false);
    expect(await guard.run(() => handle.describe().then((d) => d.status.name))).toBe('RUNNING');
    await handle.terminate();
  });
});
