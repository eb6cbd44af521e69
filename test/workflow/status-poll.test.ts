// Scope: the fallback status poll of the approval workflow (awaitDecision in workflows/approval.ts) on
// the time-skipping test server, with an activity that keeps the poll contract of
// `fetchApprovalStatus(handle, poll)`: the attempts are the polls (Temporal's retries with the
// poll's backoff), a week of waiting costs a few dozen attempts and one timer, a decision found by
// the poll is acted on, and a callback is answered at once while the poll backs off.
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { Worker } from '@temporalio/worker';
import type { WorkflowHandle } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { approvalWorkflowEnv, DAY, HOUR, workflowTestConfig } from '../support/workflow-env.js';
import type { ApprovalActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { backendCallbackUpdate, taskCreatedUpdate } from '../../workflows/messages.js';
import { FAILURE, type BackendStatus } from '../../workflows/types.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';

const t = approvalWorkflowEnv();
const MINUTE = 60_000;
/** 15 s doubling to 12 h: the production defaults (src/config.ts). */
const config = workflowTestConfig({ statusPollInitialMs: 15_000, statusPollMaxMs: 12 * HOUR });

/** A backend whose status is `decided()` once it returns a status, else pending; counts poll attempts and plain reads apart. */
function backend(decided: (serverNowMs: number) => BackendStatus | undefined) {
  const calls = { pollAttempts: 0, reads: 0, executed: 0 };
  const acts: ApprovalActivities = {
    async submitApprovalRequest({ body }) {
      return { requestId: 'req-1', statusUrl: 'http://backend/req-1', cancelUrl: 'http://backend/req-1/cancel', expiresAt: body.expiresAt };
    },
    async fetchApprovalStatus(handle, poll) {
      const status = decided(await t.env.currentTimeMs()) ?? { state: 'pending', expiresAt: handle.expiresAt };
      if (!poll) {
        calls.reads++;
        return status;
      }
      calls.pollAttempts++;
      if (status.state === 'pending') throw ApplicationFailure.retryable('still pending', FAILURE.approvalPending);
      return status;
    },
    async cancelApprovalRequest() {
      return true;
    },
    async evaluatePolicy() {
      return { outcome: 'allow' };
    },
    async executeTool() {
      calls.executed++;
      return { content: [{ type: 'text', text: 'Transfer done.' }] };
    },
  };
  return { acts, calls };
}

const approval = (untilMs: number): BackendStatus => ({
  state: 'approved',
  approval: {
    id: 'apv',
    approvedAt: new Date(untilMs - DAY).toISOString(),
    approvedUntil: new Date(untilMs).toISOString(),
    state: 'approved',
    approvers: ['bob'],
  },
});

async function run<T>(acts: ApprovalActivities, body: (handle: WorkflowHandle<typeof approvalWorkflow>) => Promise<T>): Promise<T> {
  const taskQueue = `tq-${randomUUID()}`;
  const worker = await Worker.create({ connection: t.env.nativeConnection, taskQueue, workflowBundle: t.bundle, activities: acts });
  return worker.runUntil(async () => {
    const handle = await t.env.client.workflow.start(approvalWorkflow, {
      taskQueue,
      workflowId: `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`,
      args: [
        {
          binding: createCallBinding({
            tool: 'wire_transfer',
            arguments: { to: 'acct-991', amount: 50_000 },
            principal: { iss: 'https://issuer.test', sub: 'alice' },
            toolDescriptorDigest: 'd1',
          }),
          ownerKey: 'o',
          config,
          accessRequest: { approverGroup: 'treasury', requestTtlMs: 7 * DAY, reason: 'Over $25,000.', policyId: 'p' },
        },
      ],
    });
    await handle.executeUpdate(taskCreatedUpdate);
    return body(handle);
  });
}

async function timersOf(handle: WorkflowHandle): Promise<number> {
  return ((await handle.fetchHistory()).events ?? []).filter((e) => e.timerStartedEventAttributes).length;
}

describe('the fallback status poll', () => {
  it('a request nobody decides for 7 days is polled a few dozen times with two timers (the first wait, the last stretch to the deadline), and expires denied-not-executed', async () => {
    const { acts, calls } = backend(() => undefined);
    await run(acts, async (handle) => {
      const out = await handle.result();
      expect(out.disposition).toBe('denied-not-executed');
      expect(await timersOf(handle)).toBe(2);
    });
    // 15 s doubling to 12 h over 7 days: 12 attempts up to about 17 h, then one per 12 h
    expect(calls.pollAttempts).toBeGreaterThanOrEqual(20);
    expect(calls.pollAttempts).toBeLessThanOrEqual(30);
    expect(calls.executed).toBe(0);
  });

  it('a decision the poll finds (no callback ever comes) is acted on: approved and executed once', async () => {
    let startMs = 0;
    const { acts, calls } = backend((now) => {
      startMs ||= now;
      return now - startMs > 3 * HOUR ? approval(now + DAY) : undefined;
    });
    await run(acts, async (handle) => {
      const out = await handle.result();
      expect(out.disposition).toBe('approved-executed');
      expect(Date.parse(out.lastUpdatedAt) - Date.parse(out.createdAt)).toBeLessThan(8 * HOUR);
    });
    expect(calls.executed).toBe(1);
    expect(calls.pollAttempts).toBeLessThan(15);
  });

  it('a callback while the poll backs off is answered at once by one status read; the poll makes no further attempt', async () => {
    let decided = false;
    const { acts, calls } = backend((now) => (decided ? approval(now + DAY) : undefined));
    await run(acts, async (handle) => {
      // let the poll start and back off: the first timer (15 s) has fired and the second attempt waits 30 s
      await t.env.sleep(20_000);
      const attempts = calls.pollAttempts;
      expect(attempts).toBeGreaterThanOrEqual(1);
      decided = true;
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      const out = await handle.result();
      expect(out.disposition).toBe('approved-executed');
      expect(calls.reads).toBe(1);
      await t.env.sleep(10 * MINUTE);
      expect(calls.pollAttempts).toBeLessThanOrEqual(attempts + 1);
    });
    expect(calls.executed).toBe(1);
  });
});
