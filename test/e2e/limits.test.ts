// Scope: approval floods (SEP-2848 §Security Implications), end to end on a real Temporal dev server and real HTTP:
// per-principal pending bound and submission rate limit (SEP-2848 "deployments MUST rate-limit
// submission per caller and SHOULD bound outstanding pending tasks, returning a non-requestable
// denial on a limit"), joins that never count, other principals unaffected, and one limit shared by
// two MCP front instances over the same Temporal.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WireClient } from '@countersign/client';
import { createLimiterActivities } from '../../activities/limiter-activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { SubmissionLimitedError } from '../../src/mcp/submission-limiter.js';
import { createTaskService, type TaskService } from '../../src/mcp/task-service.js';
import type { Stack } from '../../src/stack.js';
import { payloadCodecFromKeyList } from '../../src/temporal/payload-codec.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { clientFor, pendingFor, startTestStack, testConfig, type WireTask } from '../support/stack-harness.js';

const AUTHZ = 'io.modelcontextprotocol/authorization';
const LIMITS = {
  COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: 2,
  COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: 3,
  COUNTERSIGN_SUBMISSION_WINDOW_MS: 3_600_000,
};

interface CallResult {
  resultType?: string;
  taskId?: string;
  isError?: boolean;
  content?: Array<{ type: string; text: string }>;
  _meta?: Record<string, unknown>;
}

let stack: Stack;
let connection: Connection | undefined;
beforeAll(async () => {
  stack = await startTestStack(testConfig(LIMITS));
});
afterAll(async () => {
  await connection?.close();
  await stack?.stop();
});

const memo = () => `limits ${randomUUID().slice(0, 12)}`;
const call = (client: WireClient, m: string) =>
  client.request<CallResult>('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: m } });

/** A second MCP front instance: its own Temporal connection and task service, the same secrets and limits. */
async function secondInstance(): Promise<{ tasks: TaskService; open: (sub: string, m: string) => Promise<{ taskId: string }> }> {
  connection = await Connection.connect({ address: stack.urls.temporal });
  const client = new Client({
    connection,
    namespace: stack.config.TEMPORAL_NAMESPACE,
    dataConverter: { payloadCodecs: [payloadCodecFromKeyList(stack.config.COUNTERSIGN_PAYLOAD_KEYS ?? stack.secrets.payloadKeys)] },
  });
  const c = stack.config;
  const tasks = createTaskService({
    client,
    taskQueue: c.COUNTERSIGN_TASK_QUEUE,
    dedupKey: stack.secrets.dedupKey,
    createWaitMs: c.COUNTERSIGN_CREATE_WAIT_MS,
    workflowConfig: {
      resultRetentionMs: c.COUNTERSIGN_RESULT_RETENTION_MS,
      clientPollIntervalMs: c.COUNTERSIGN_POLL_INTERVAL_MS,
      statusPollInitialMs: c.COUNTERSIGN_STATUS_POLL_INITIAL_MS,
      statusPollMaxMs: c.COUNTERSIGN_STATUS_POLL_MAX_MS,
      maxGenerations: c.COUNTERSIGN_MAX_GENERATIONS,
      retryBaseMs: c.COUNTERSIGN_RETRY_BASE_MS,
      retryMaxMs: c.COUNTERSIGN_RETRY_MAX_MS,
      executionTimeoutMs: c.COUNTERSIGN_EXECUTION_TIMEOUT_MS,
      maxRequestWindowMs: c.COUNTERSIGN_MAX_REQUEST_WINDOW_MS,
    },
    submissionLimits: {
      maxSubmissionsPerWindow: c.COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW,
      submissionWindowMs: c.COUNTERSIGN_SUBMISSION_WINDOW_MS,
      maxPendingPerPrincipal: c.COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL,
    },
  });
  const tools = createToolRegistry([createWireTransferTool(stack.ledger)]);
  const tool = tools.get('wire_transfer')!;
  // the binding exactly as the gate builds it, so a call on the first instance joins the same task
  const open = (sub: string, m: string) =>
    tasks.createOrJoin(
      createCallBinding({
        tool: tool.name,
        arguments: tool.inputSchema.parse({ to: 'acct-991', amount: 50_000, memo: m }) as Record<string, unknown>,
        principal: { iss: stack.urls.issuer, sub },
        toolDescriptorDigest: tools.descriptorDigest(tool.name),
      }),
      {
        approverGroup: 'treasury',
        requestTtlMs: 7 * 86_400_000,
        reason: 'Transfers over $25,000 require treasury approval.',
        policyId: 'test',
      },
    );
  return { tasks, open };
}

function expectLimitDenial(r: CallResult, text: RegExp): void {
  expect(r.resultType).not.toBe('task');
  expect(r.taskId).toBeUndefined();
  expect(r.isError).toBe(true);
  expect(r.content?.[0]?.text).toMatch(text);
  expect(r.content?.[0]?.text).toMatch(/cannot be approved and the tool did not run/);
  expect(r._meta?.[AUTHZ]).toEqual({ reason: 'insufficient_authorization', remediation: 'unavailable' });
}

describe('per-principal submission limits, end to end', () => {
  it('past the pending bound a new call gets a non-requestable too-many-pending denial and reaches no approver; a repeat still joins, bob is unaffected, a cancel frees a slot, and the window limit then applies', async () => {
    const alice = await clientFor(stack, 'alice');
    const [m1, m2, m3, m4] = [memo(), memo(), memo(), memo()];
    const t1 = await call(alice, m1);
    const t2 = await call(alice, m2);
    expect([t1.resultType, t2.resultType]).toEqual(['task', 'task']);

    const refused = await call(alice, m3);
    expectLimitDenial(refused, /too many approval requests pending/);
    const memos = (await pendingFor(stack, 'carol')).map((r) => r.arguments.memo);
    expect(memos).toEqual(expect.arrayContaining([m1, m2]));
    expect(memos).not.toContain(m3);

    // joining a pending task is not a new submission: neither refused nor counted
    const again = await call(alice, m1);
    expect(again.resultType).toBe('task');
    expect(again.taskId).toBe(t1.taskId);

    const bob = await clientFor(stack, 'bob');
    expect((await call(bob, memo())).resultType).toBe('task');

    await alice.request('tasks/cancel', { taskId: t1.taskId });
    const t3 = await call(alice, m3);
    expect(t3.resultType).toBe('task'); // third new task in the window: still allowed
    expect((await pendingFor(stack, 'carol')).map((r) => r.arguments.memo)).toContain(m3);

    // a slot is free again, but 3 new tasks were opened this window
    await alice.request('tasks/cancel', { taskId: t2.taskId });
    expectLimitDenial(await call(alice, m4), /too many approval requests were opened for this caller recently/);
    expect((await pendingFor(stack, 'carol')).map((r) => r.arguments.memo)).not.toContain(m4);

    // both refusals are counted by limit, never by caller (docs/OPERATIONS.md §Metrics)
    const refusals = await stack.metrics.submissionsRefused.get();
    expect(Object.fromEntries(refusals.values.map((v) => [v.labels.limit, v.value]))).toEqual({ 'too-many-pending': 1, 'rate-limited': 1 });
  });

  it('two MCP server instances share one limit: tasks opened on either count against the same principal', async () => {
    const second = await secondInstance();
    const erin = await clientFor(stack, 'erin');
    const [m1, m2, m3, m4] = [memo(), memo(), memo(), memo()];

    const a = await second.open('erin', m1); // instance 2
    const b = await call(erin, m2); // instance 1
    expect(b.resultType).toBe('task');

    // both instances now refuse erin a third pending task
    expectLimitDenial(await call(erin, m3), /too many approval requests pending/);
    const err = await second.open('erin', m3).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SubmissionLimitedError);
    expect((err as SubmissionLimitedError).reason).toBe('too-many-pending');

    // the task instance 2 opened is joined on instance 1 without counting
    const joined = await call(erin, m1);
    expect(joined.taskId).toBe(a.taskId);

    // a cancel on instance 1 frees the slot for instance 2
    await erin.request('tasks/cancel', { taskId: a.taskId });
    const c = await second.open('erin', m4);
    expect((await erin.request<WireTask>('tasks/get', { taskId: c.taskId })).status).toBe('working');
  });

  it("the limiter's leak-guard audit sees a terminated or never-started approval workflow as closed and a pending one as running", async () => {
    const frank = await clientFor(stack, 'frank');
    const live = await call(frank, memo());
    const dead = await call(frank, memo());
    const liveId = parseTaskId(live.taskId)!.workflowId;
    const deadId = parseTaskId(dead.taskId)!.workflowId;
    await stack.temporal.workflow.getHandle(deadId).terminate('test: died without releasing its slot');
    const audit = createLimiterActivities({ client: stack.temporal });
    expect(await audit.closedWorkflowIds([liveId, deadId, 'approval-never-started'])).toEqual([deadId, 'approval-never-started']);
  });

  // Kept last: it adds a refusal to the metric the first test counts exactly.
  it('a submit_change refused by the pending bound leaves its change_id to the next caller (the refused call owns nothing)', async () => {
    const gina = await clientFor(stack, 'gina');
    const opened = [await call(gina, memo()), await call(gina, memo())];
    expect(opened.map((r) => r.resultType)).toEqual(['task', 'task']);
    const change = {
      name: 'submit_change',
      arguments: {
        change_id: `chg_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
        kind: 'infra_deploy',
        title: 'Roll out v2',
        risk: 'high',
      },
    };
    expectLimitDenial(await gina.request<CallResult>('tools/call', change), /too many approval requests pending/);
    const hank = await clientFor(stack, 'hank');
    const task = await hank.request<CallResult>('tools/call', change);
    expect(task.resultType).toBe('task');
    for (const t of [...opened, task]) await (t === task ? hank : gina).request('tasks/cancel', { taskId: t.taskId });
  });
});
