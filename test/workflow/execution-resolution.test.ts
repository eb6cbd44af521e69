// Scope: the lost-execution resolution of the approval workflow on the time-skipping
// test server with typed fakes: a lost attempt is resolved by the tool's idempotency hook, the tool
// is never invoked twice; a long-running tool's
// own timeout and heartbeat timeout (docs/CHANGE-GATE.md); a run started from an in-band confirmation.
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { approvalWorkflowEnv, DAY, workflowTestConfig } from '../support/workflow-env.js';
import type { ApprovalActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { EXECUTION_LOST_FENCED_TEXT, type ExecutionResolution } from '../../workflows/execution-resolution.js';
import { statusMessage } from '../../src/mcp/status-text.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { FAILURE, type ApprovalWorkflowInput, type TaskSnapshot } from '../../workflows/types.js';

const t = approvalWorkflowEnv();

const config = workflowTestConfig({ executionTimeoutMs: 1500 });

/** The (time-skipped) server clock; a local activity's scheduled time is the worker's clock, not it. */
const serverNowMs = () => t.env.currentTimeMs();
/** The tool's attempt is lost: it never reports, and the worker gives up at the execution timeout. */
const lost = () =>
  new Promise<never>((_, reject) => Context.current().cancellationSignal.addEventListener('abort', () => reject(new Error('lost'))));

/** Approve at once, allow at re-evaluation; `execute` and `resolve` are the scripted tool side. */
function fakes(execute: () => Promise<unknown>, resolve?: () => Promise<ExecutionResolution>) {
  const calls = { execute: 0, resolve: 0, executionIds: [] as string[] };
  const acts: ApprovalActivities = {
    submitApprovalRequest: async ({ body }) => ({
      requestId: 'req-1',
      statusUrl: 'http://backend/req-1',
      cancelUrl: 'http://backend/req-1/cancel',
      expiresAt: body.expiresAt,
    }),
    fetchApprovalStatus: async () => {
      const now = await serverNowMs();
      return {
        state: 'approved',
        approval: {
          id: 'apv-1',
          approvedAt: new Date(now).toISOString(),
          approvedUntil: new Date(now + DAY).toISOString(),
          state: 'approved',
          approvers: ['bob'],
        },
      };
    },
    cancelApprovalRequest: async () => true,
    evaluatePolicy: async () => ({ outcome: 'allow' }),
    executeTool: async ({ executionId }) => {
      calls.execute++;
      calls.executionIds.push(executionId);
      return (await execute()) as never;
    },
    ...(resolve
      ? {
          resolveExecution: async ({ executionId }: { executionId: string }) => {
            calls.resolve++;
            calls.executionIds.push(executionId);
            return resolve();
          },
        }
      : {}),
  };
  return { acts, calls };
}

async function runToEnd(acts: ApprovalActivities, extra: Partial<ApprovalWorkflowInput> = {}): Promise<TaskSnapshot> {
  const taskQueue = `tq-${randomUUID()}`;
  const worker = await Worker.create({ connection: t.env.nativeConnection, taskQueue, workflowBundle: t.bundle, activities: acts });
  const binding = createCallBinding({
    tool: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50000 },
    principal: { iss: 'https://issuer.test', sub: 'alice' },
    toolDescriptorDigest: 'd1',
  });
  return worker.runUntil(
    t.env.client.workflow.execute(approvalWorkflow, {
      taskQueue,
      workflowId: `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`,
      args: [
        {
          binding,
          ownerKey: 'owner',
          config,
          accessRequest: {
            approverGroup: 'treasury',
            requestTtlMs: 7 * DAY,
            reason: 'Transfers over $25,000 require treasury approval.',
            policyId: 'p',
          },
          ...extra,
        },
      ],
    }),
  );
}

const recorded = {
  content: [{ type: 'text' as const, text: 'Transfer of $50,000.00 to acct-991 completed (ledger entry 7).' }],
  structuredContent: { entryId: 7 },
};

describe('lost execution, resolved by the tool (time-skipping)', () => {
  it('a lost execution whose effect the tool recorded completes approved-executed with the recorded result, without a second invocation', async () => {
    const { acts, calls } = fakes(lost, async () => ({ state: 'executed', result: recorded }));
    const out = await runToEnd(acts);
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('approved-executed');
    expect(out.result?.content.map((c) => c.text)).toEqual([
      'Approved and executed once. Outcome: approved-executed.',
      recorded.content[0]!.text,
    ]);
    expect(out.result?.structuredContent).toEqual({ entryId: 7 });
    expect(calls).toMatchObject({ execute: 1, resolve: 1 });
    // the hook is asked about the very execution id the tool ran under
    expect(new Set(calls.executionIds).size).toBe(1);
  });

  it('a lost execution the tool proves did not happen (and fenced) completes execution-error, not a denial: no envelope, the body says it was lost and fenced, nothing happened, a new call is needed; never re-invoked', async () => {
    const { acts, calls } = fakes(lost, async () => ({ state: 'not-executed' }));
    const out = await runToEnd(acts);
    expect(out.status).toBe('completed');
    // after the claim a failure is execution-error or outcome-unknown, never denied-not-executed (SEP-2848 §Completion)
    expect(out.disposition).toBe('execution-error');
    expect(out.result?.isError).toBe(true);
    expect(out.result?._meta['io.modelcontextprotocol/tool-approval-disposition']).toBe('execution-error');
    expect(out.result?._meta['io.modelcontextprotocol/authorization']).toBeUndefined();
    expect(out.result?.content).toHaveLength(1);
    expect(out.result?.content[0]?.text).toBe(EXECUTION_LOST_FENCED_TEXT);
    expect(out.result?.content[0]?.text).toMatch(
      /execution of this call was lost before the tool took effect.*fenced so it can never take effect.*did not run and no side effect occurred.*new call.*Outcome: execution-error\.$/,
    );
    expect(statusMessage(out)).toMatch(/did not run/);
    expect(calls).toMatchObject({ execute: 1, resolve: 1 });
  });

  it('a lost execution of a tool without the hook, or whose hook cannot tell, completes outcome-unknown', async () => {
    const unknown = fakes(lost, async () => ({ state: 'unknown' }));
    expect((await runToEnd(unknown.acts)).disposition).toBe('outcome-unknown');
    const failing = fakes(lost, async () => {
      throw ApplicationFailure.nonRetryable('ledger unreachable', 'LedgerUnavailable');
    });
    const out = await runToEnd(failing.acts);
    expect(out.disposition).toBe('outcome-unknown');
    expect(out.result?._meta['io.modelcontextprotocol/authorization']).toBeUndefined();
    expect(failing.calls.execute).toBe(1);
  });

  it('a tool that ran and threw is execution-error: the hook is not asked', async () => {
    const { acts, calls } = fakes(
      async () => {
        throw ApplicationFailure.nonRetryable('boom', FAILURE.toolExecutionError);
      },
      async () => ({ state: 'not-executed' }),
    );
    expect((await runToEnd(acts)).disposition).toBe('execution-error');
    expect(calls).toMatchObject({ execute: 1, resolve: 0 });
  });
});

/** Heartbeat every 100 ms for `ms` (wall clock: the attempt is running), then return the result. */
const heartbeating = (ms: number) => async () => {
  const ctx = Context.current();
  for (let waited = 0; waited < ms; waited += 100) {
    ctx.heartbeat({ step: 1, of: 1, label: 'working' });
    await ctx.sleep(100);
  }
  return recorded;
};

/** Heartbeat once, then hang until the attempt is given up (its heartbeats stopped). */
const silentAfterOneBeat = async () => {
  Context.current().heartbeat({ step: 1, of: 5, label: 'taking a backup' });
  return lost();
};

describe('long-running execution (docs/CHANGE-GATE.md)', () => {
  it("a long-running tool gets its own timeout, not the installation's: an attempt longer than executionTimeoutMs completes approved-executed", async () => {
    const { acts, calls } = fakes(heartbeating(2_500));
    const out = await runToEnd(acts, { execution: { timeoutMs: 60_000, heartbeatMs: 1_000 } });
    expect(out.disposition).toBe('approved-executed');
    expect(calls).toMatchObject({ execute: 1, resolve: 0 });
  });

  it('a long-running attempt whose heartbeats stop is lost: the idempotency hook answers, and the tool is never re-run', async () => {
    const { acts, calls } = fakes(silentAfterOneBeat, async () => ({ state: 'executed', result: recorded }));
    const out = await runToEnd(acts, { execution: { timeoutMs: 60 * 60_000, heartbeatMs: 1_000 } });
    expect(out.disposition).toBe('approved-executed');
    expect(calls).toMatchObject({ execute: 1, resolve: 1 });
  });

  it('a long-running attempt whose heartbeats stop, of a tool whose hook cannot tell, completes outcome-unknown', async () => {
    const { acts, calls } = fakes(silentAfterOneBeat, async () => ({ state: 'unknown' }));
    const out = await runToEnd(acts, { execution: { timeoutMs: 60 * 60_000, heartbeatMs: 1_000 } });
    expect(out.disposition).toBe('outcome-unknown');
    expect(calls).toMatchObject({ execute: 1, resolve: 1 });
  });
});

describe('a run started from an in-band confirmation', () => {
  it('submits nothing to the backend, re-evaluates nothing, claims at once and runs the tool once', async () => {
    const { acts, calls } = fakes(async () => recorded);
    let submitted = 0;
    let evaluated = 0;
    const counted: ApprovalActivities = {
      ...acts,
      submitApprovalRequest: async (i) => {
        submitted++;
        return acts.submitApprovalRequest(i);
      },
      evaluatePolicy: async (i) => {
        evaluated++;
        return acts.evaluatePolicy(i);
      },
    };
    const confirmation = {
      mode: 'in-band' as const,
      confirmedBy: 'requester' as const,
      confirmedAt: new Date().toISOString(),
      policyId: 'submit-change-medium-risk',
    };
    const out = await runToEnd(counted, { confirmation });
    expect(out.disposition).toBe('approved-executed');
    expect(out.claimed).toBe(true);
    expect(out.generation).toBe(0);
    expect({ submitted, evaluated, execute: calls.execute }).toEqual({ submitted: 0, evaluated: 0, execute: 1 });
  });
});
