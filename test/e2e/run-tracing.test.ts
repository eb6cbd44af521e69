// Scope: which approval and limiter runs their workflow interceptors trace
// (workflows/tracing-interceptors.ts): a process that does not trace starts runs marked
// `tracing: 'off'`, which carry no trace context and replay with the worker's bundle; a run without
// the marker (started before it existed) is still traced. The stack runs with tracing off (no
// OTEL_* settings), the real worker bundle and a real gated call.
import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../../src/stack.js';
import { bundleWorkflows } from '../../src/worker.js';
import { dataConverterOf } from '../../src/compose.js';
import { createLogger } from '@countersign/http/log';
import { parseTaskId } from '../../workflows/task-id.js';
import { APPROVAL_WORKFLOW_ID_PREFIX, RUN_TRACING_MEMO_KEY } from '../../workflows/wire.js';
import type { ApprovalWorkflowInput } from '../../workflows/types.js';
import { clientFor, testConfig, type WireTask } from '../support/stack-harness.js';

/** The header key Temporal's OpenTelemetry interceptors put the trace context under. */
const TRACE_HEADER = '_tracer-data';

let stack: Stack;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  bundle = await bundleWorkflows();
  stack = await startStack(testConfig(), { workflowBundle: bundle, logger: createLogger({ level: process.env.LOG_LEVEL ?? 'warn' }) });
});
afterAll(async () => {
  await stack?.stop();
});

/** The run's history once `predicate` holds for one of its events (polled; fails after 30 s). */
async function historyWith(workflowId: string, predicate: (e: temporal.api.history.v1.IHistoryEvent) => boolean) {
  for (let i = 0; i < 150; i++) {
    const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
    if ((history.events ?? []).some(predicate)) return history;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no such event in ${workflowId}`);
}

const isSubmitScheduled = (e: temporal.api.history.v1.IHistoryEvent) =>
  e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitApprovalRequest';

/** Header keys of the run's scheduled submit activity. */
function submitHeaderKeys(history: temporal.api.history.v1.IHistory): string[] {
  const scheduled = (history.events ?? []).find(isSubmitScheduled);
  return Object.keys(scheduled?.activityTaskScheduledEventAttributes?.header?.fields ?? {});
}

/** The approval workflow input of a run, decoded through the stack's data converter (the payload codec). */
async function inputOf(history: temporal.api.history.v1.IHistory): Promise<ApprovalWorkflowInput> {
  let payloads = (history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? []) as Payload[];
  const converter = stack.temporal.options.loadedDataConverter;
  for (const codec of [...converter.payloadCodecs].reverse()) payloads = await codec.decode(payloads);
  return converter.payloadConverter.fromPayload(payloads[0]!) as ApprovalWorkflowInput;
}

describe('runs started by a process that does not trace', () => {
  let workflowId: string;
  let history: temporal.api.history.v1.IHistory;

  it("are marked tracing 'off' in their memo, the approval run and its caller's limiter run alike", async () => {
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-8101', amount: 50_000, memo: `untraced ${randomBytes(4).toString('hex')}` },
    });
    expect(created.resultType).toBe('task');
    workflowId = parseTaskId(created.taskId)!.workflowId;
    history = await historyWith(workflowId, isSubmitScheduled);

    const desc = await stack.temporal.workflow.getHandle(workflowId).describe();
    expect(desc.memo?.[RUN_TRACING_MEMO_KEY]).toBe('off');
    const limiter = (await inputOf(history)).limiter;
    expect(limiter).toBeDefined();
    const limiterDesc = await stack.temporal.workflow.getHandle(limiter!.limiterWorkflowId).describe();
    expect(limiterDesc.memo?.[RUN_TRACING_MEMO_KEY]).toBe('off');
  });

  it('carry no trace context: their scheduled activities have no trace header, and the run replays with the worker bundle', async () => {
    expect(submitHeaderKeys(history)).not.toContain(TRACE_HEADER);
    const dataConverter = dataConverterOf(stack.config, stack.secrets);
    await expect(Worker.runReplayHistory({ workflowBundle: bundle, dataConverter }, history)).resolves.toBeUndefined();
    await stack.temporal.workflow.getHandle(workflowId).terminate('test done');
  });
});

describe('a run without the marker (started before it existed)', () => {
  it('is traced by its workflow interceptors as before: its scheduled activity carries their trace header', async () => {
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-8102', amount: 50_000, memo: `template ${randomBytes(4).toString('hex')}` },
    });
    const template = await historyWith(parseTaskId(created.taskId)!.workflowId, isSubmitScheduled);
    // the same input, started the way runs were started before the marker: memo { owner } only
    const { limiter: _limiter, ...input } = await inputOf(template);
    const legacyId = `${APPROVAL_WORKFLOW_ID_PREFIX}${randomBytes(16).toString('hex')}`;
    await stack.temporal.workflow.start('approvalWorkflow', {
      workflowId: legacyId,
      taskQueue: stack.config.COUNTERSIGN_TASK_QUEUE,
      args: [input],
      memo: { owner: input.ownerKey },
    });
    const legacy = await historyWith(legacyId, isSubmitScheduled);
    expect(submitHeaderKeys(legacy)).toContain(TRACE_HEADER);
    await stack.temporal.workflow.getHandle(legacyId).terminate('test done');
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });
});
