// Scope: the task record (workflows/task-record.ts) on the time-skipping test server: the memo the
// approval run keeps holds exactly what the `task` query answers, read right after each answer the
// front acts on (creation, tasks/update, tasks/cancel, the end of the run), and a large result is
// left out of it (then read from the run's result).
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { approvalWorkflowEnv, DAY, JUSTIFIED_REQUEST, workflowTestConfig } from '../support/workflow-env.js';
import type { ApprovalActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { backendCallbackUpdate, cancelUpdate, provideInputUpdate, taskCreatedUpdate, taskQuery } from '../../workflows/messages.js';
import { RECORD_RESULT_MAX_BYTES, readTaskRecord, TASK_RECORD_MEMO_KEY, type TaskRecord } from '../../workflows/task-record.js';
import type { BackendStatus, ReEvaluation, TaskSnapshot } from '../../workflows/types.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';

const t = approvalWorkflowEnv();

function acts(script: { status: () => BackendStatus; evaluate?: (n: number) => ReEvaluation; output?: string; gate?: Promise<void> }) {
  let evaluations = 0;
  const a: ApprovalActivities = {
    async submitApprovalRequest({ body }) {
      return {
        requestId: `req-${body.generation}`,
        statusUrl: `http://backend/req-${body.generation}`,
        cancelUrl: `http://backend/req-${body.generation}/cancel`,
        expiresAt: body.expiresAt,
      };
    },
    async fetchApprovalStatus() {
      return script.status();
    },
    async cancelApprovalRequest() {
      return true;
    },
    async evaluatePolicy() {
      return script.evaluate ? script.evaluate(++evaluations) : { outcome: 'allow' };
    },
    async executeTool() {
      await script.gate;
      return { content: [{ type: 'text', text: script.output ?? 'Transfer done.' }] };
    },
  };
  return a;
}

// the time-skipping server's clock runs ahead of the wall clock: an approval valid far into the future
const approvedNow = (): BackendStatus => ({
  state: 'approved',
  approval: {
    id: 'apv-1',
    approvedAt: new Date().toISOString(),
    approvedUntil: '2100-01-01T00:00:00.000Z',
    state: 'approved',
    approvers: ['bob'],
  },
});

async function run<T>(
  a: ApprovalActivities,
  body: (handle: () => Promise<WorkflowHandle<typeof approvalWorkflow>>) => Promise<T>,
): Promise<T> {
  const taskQueue = `tq-${randomUUID()}`;
  const workflowId = `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`;
  const worker = await Worker.create({ connection: t.env.nativeConnection, taskQueue, workflowBundle: t.bundle, activities: a });
  const start = async () => {
    const binding = createCallBinding({
      tool: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000 },
      principal: { iss: 'https://issuer.test', sub: 'alice' },
      toolDescriptorDigest: 'd1',
    });
    const handle = await t.env.client.workflow.start(approvalWorkflow, {
      taskQueue,
      workflowId,
      args: [
        {
          binding,
          ownerKey: 'owner-of-alice',
          config: workflowTestConfig(),
          accessRequest: { approverGroup: 'treasury', requestTtlMs: 7 * DAY, reason: 'Over $25,000 needs treasury.', policyId: 'p' },
        },
      ],
    });
    await handle.executeUpdate(taskCreatedUpdate);
    return handle;
  };
  return worker.runUntil(body(start));
}

/** The run's task record, as the MCP front reads it (describe → memo). */
async function recordOf(handle: WorkflowHandle): Promise<TaskRecord | undefined> {
  return readTaskRecord((await handle.describe()).memo?.[TASK_RECORD_MEMO_KEY]);
}

/** The record and the query at the same moment must agree; returns the snapshot. */
async function expectRecordEqualsQuery(handle: WorkflowHandle<typeof approvalWorkflow>): Promise<TaskSnapshot> {
  const queried = await handle.query(taskQuery);
  const record = await recordOf(handle);
  expect(record?.snapshot).toEqual(queried);
  return queried;
}

/** Until `pred` holds for the queried snapshot, queried every 20 ms, for at most 10 s. */
async function until(handle: WorkflowHandle<typeof approvalWorkflow>, pred: (s: TaskSnapshot) => boolean): Promise<void> {
  for (let i = 0; i < 500 && !pred(await handle.query(taskQuery)); i++) await new Promise((r) => setTimeout(r, 20));
}

describe('the task record (memo) of an approval run', () => {
  it('right after CreateTaskResult would be answered, the record holds the working snapshot the query answers', async () => {
    await run(acts({ status: () => ({ state: 'pending', expiresAt: new Date(Date.now() + DAY).toISOString() }) }), async (start) => {
      const handle = await start();
      const s = await expectRecordEqualsQuery(handle);
      expect([s.status, s.phase, s.ownerKey]).toEqual(['working', 'awaiting-approval', 'owner-of-alice']);
      await handle.executeUpdate(cancelUpdate);
      await handle.result();
    });
  });

  it('while the tool executes the record says executing, and once the run closes it holds the terminal snapshot the run returned', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await run(acts({ status: approvedNow, gate }), async (start) => {
      const handle = await start();
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      await until(handle, (s) => s.phase === 'executing');
      const executing = await expectRecordEqualsQuery(handle);
      expect([executing.claimed, executing.phase]).toEqual([true, 'executing']);
      release();
      const out = await handle.result();
      const record = await recordOf(handle);
      expect(record?.snapshot).toEqual(out);
      expect(record?.resultOmitted).toBeUndefined();
      expect(out.disposition).toBe('approved-executed');
    });
  });

  it('an in-task input request is in the record with the same key and form; right after the tasks/update ack the record no longer asks', async () => {
    await run(
      acts({
        status: approvedNow,
        evaluate: (n) => (n === 1 ? JUSTIFIED_REQUEST : { outcome: 'deny', reason: 'policy-denied' }),
      }),
      async (start) => {
        const handle = await start();
        await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
        await until(handle, (s) => s.status === 'input_required');
        const asking = await expectRecordEqualsQuery(handle);
        expect(Object.keys(asking.inputRequests ?? {})).toEqual(['justification-2']);
        await handle.executeUpdate(provideInputUpdate, {
          args: [{ 'justification-2': { action: 'accept', content: { justification: 'The invoice was checked twice.' } } }],
        });
        const answered = await expectRecordEqualsQuery(handle);
        expect(answered.status).toBe('working');
        expect(answered.inputRequests).toBeUndefined();
        await handle.executeUpdate(cancelUpdate);
        await handle.result();
      },
    );
  });

  it('right after the tasks/cancel update answers cancelled, the record says cancelled', async () => {
    await run(acts({ status: () => ({ state: 'pending', expiresAt: new Date(Date.now() + DAY).toISOString() }) }), async (start) => {
      const handle = await start();
      expect(await handle.executeUpdate(cancelUpdate)).toBe('cancelled');
      expect((await recordOf(handle))?.snapshot.status).toBe('cancelled');
      await handle.result();
      expect((await recordOf(handle))?.snapshot.status).toBe('cancelled');
    });
  });

  it(`a tool result over ${RECORD_RESULT_MAX_BYTES} bytes is left out of the record (resultOmitted) and read from the run's result`, async () => {
    const big = 'x'.repeat(RECORD_RESULT_MAX_BYTES + 1);
    await run(acts({ status: approvedNow, output: big }), async (start) => {
      const handle = await start();
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      const out = await handle.result();
      const record = await recordOf(handle);
      expect(record?.resultOmitted).toBe(true);
      expect(record?.snapshot.result).toBeUndefined();
      expect(record?.snapshot.status).toBe('completed');
      expect(out.result?.content[1]).toMatchObject({ type: 'text', text: big });
    });
  });

  it('each change is written once: no two consecutive records in history are the same', async () => {
    await run(acts({ status: approvedNow }), async (start) => {
      const handle = await start();
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      await handle.result();
      const history = await handle.fetchHistory();
      const records = (history.events ?? []).filter(
        (e) => e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.[TASK_RECORD_MEMO_KEY],
      );
      expect(records.length).toBeGreaterThanOrEqual(3);
      const texts = records.map((e) =>
        Buffer.from(e.workflowPropertiesModifiedEventAttributes!.upsertedMemo!.fields![TASK_RECORD_MEMO_KEY]!.data!).toString(),
      );
      for (let i = 1; i < texts.length; i++) expect(texts[i]).not.toBe(texts[i - 1]);
    });
  });
});
