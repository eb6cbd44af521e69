/**
 * The conformance profile's side of Temporal for fixture tasks, the same shape as the approval
 * task service (`src/mcp/task-service.ts`):
 *
 * - create: Update-with-Start of `fixtureTaskWorkflow`, waiting on `fixtureCreated`, so
 *   `CreateTaskResult` is only returned once `tasks/get` can see the task (SEP-2663 durable create);
 * - get: the query while the run is open, the stored workflow result once closed, answered until
 *   `createdAt + ttlMs`;
 * - cancel / input: updates that change the task before they return.
 * Every access checks the caller against the owner in the run's memo; a mismatch is
 * indistinguishable from an unknown task (null).
 *
 * Holds no task state itself: any instance serves any task.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../../src/temporal/not-found.js';
import { fixtureCancelUpdate, fixtureCreatedUpdate, fixtureInputUpdate, fixtureTaskQuery } from './fixture-messages.js';
import type { FixtureCancelOutcome, FixtureTaskSnapshot, FixtureTaskTool } from './fixture-types.js';
import type { fixtureTaskWorkflow } from './fixture-workflow.js';

/** Workflow id prefix; the task id is the workflow id. */
const PREFIX = 'conformance-task-';
const TASK_ID = /^conformance-task-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Options. Durations in milliseconds. */
export interface FixtureTaskServiceOptions {
  client: Client;
  taskQueue: string;
  /** Minimum lifetime of a task from `createdAt`. */
  ttlMs: number;
  /** How long a terminal task stays retrievable after it ends. */
  retentionMs: number;
  /** `pollIntervalMs` suggested to clients. */
  pollIntervalMs: number;
}

/** The fixture task service. */
export interface FixtureTaskService {
  /** Start a fixture task; resolves once it is durable and visible to `get`. */
  create(
    tool: FixtureTaskTool,
    args: Record<string, unknown>,
    ownerKey: string,
  ): Promise<{ taskId: string; snapshot: FixtureTaskSnapshot }>;
  /** The caller's task, or null if unknown, expired, or someone else's. */
  get(taskId: unknown, ownerKey: string): Promise<FixtureTaskSnapshot | null>;
  /** Cancel; null if the task is not the caller's or has expired (same as unknown). */
  cancel(taskId: unknown, ownerKey: string): Promise<FixtureCancelOutcome | null>;
  /** Deliver `inputResponses`; resolves with the number of outstanding keys answered, null if not the caller's or expired. */
  provideInput(taskId: unknown, ownerKey: string, responses: Record<string, unknown>): Promise<number | null>;
}

/** Build the service over a Temporal client. */
export function createFixtureTaskService(opts: FixtureTaskServiceOptions): FixtureTaskService {
  const { client } = opts;

  const owned = async (taskId: unknown, ownerKey: string) => {
    if (typeof taskId !== 'string' || !TASK_ID.test(taskId)) return null;
    const handle = client.workflow.getHandle<typeof fixtureTaskWorkflow>(taskId);
    try {
      const desc = await handle.describe();
      if (desc.type !== 'fixtureTaskWorkflow' || desc.memo?.owner !== ownerKey) return null;
      return { handle, desc };
    } catch (err) {
      if (isWorkflowNotFound(err)) return null;
      throw err;
    }
  };

  const service: FixtureTaskService = {
    async create(tool, args, ownerKey) {
      const workflowId = `${PREFIX}${randomUUID()}`;
      const startWorkflowOperation = new WithStartWorkflowOperation<typeof fixtureTaskWorkflow>('fixtureTaskWorkflow', {
        workflowId,
        taskQueue: opts.taskQueue,
        args: [{ tool, arguments: args, ownerKey, ttlMs: opts.ttlMs, retentionMs: opts.retentionMs, pollIntervalMs: opts.pollIntervalMs }],
        workflowIdConflictPolicy: 'FAIL',
        memo: { owner: ownerKey },
      });
      const snapshot = await client.workflow.executeUpdateWithStart(fixtureCreatedUpdate, { startWorkflowOperation });
      return { taskId: workflowId, snapshot };
    },

    async get(taskId, ownerKey) {
      const o = await owned(taskId, ownerKey);
      if (!o) return null;
      const snap =
        o.desc.status.name === 'RUNNING'
          ? await o.handle.query(fixtureTaskQuery)
          : o.desc.status.name === 'COMPLETED'
            ? ((await o.handle.result()) as FixtureTaskSnapshot)
            : null;
      if (!snap) return null; // terminated or failed by an operator: treated as gone
      if (Date.now() > Date.parse(snap.createdAt) + snap.ttlMs) return null; // expired exactly at createdAt + ttlMs
      return snap;
    },

    async cancel(taskId, ownerKey) {
      const o = await owned(taskId, ownerKey);
      if (!o) return null;
      // a closed run: terminal while tasks/get answers it, unknown once expired (every method alike)
      if (o.desc.status.name !== 'RUNNING') return (await service.get(taskId, ownerKey)) ? 'already-terminal' : null;
      try {
        return await o.handle.executeUpdate(fixtureCancelUpdate);
      } catch (err) {
        if (isWorkflowNotFound(err)) return (await service.get(taskId, ownerKey)) ? 'already-terminal' : null; // closed between describe and update
        throw err;
      }
    },

    async provideInput(taskId, ownerKey, responses) {
      const o = await owned(taskId, ownerKey);
      if (!o) return null;
      if (o.desc.status.name !== 'RUNNING') return (await service.get(taskId, ownerKey)) ? 0 : null;
      try {
        return await o.handle.executeUpdate(fixtureInputUpdate, { args: [responses] });
      } catch (err) {
        if (isWorkflowNotFound(err)) return (await service.get(taskId, ownerKey)) ? 0 : null;
        throw err;
      }
    },
  };
  return service;
}
