// Scope: the per-principal submission limiter workflow on the time-skipping test server (SEP-2848
// "deployments MUST rate-limit submission per caller and SHOULD bound outstanding pending tasks"):
// sliding-window rate limit, pending bound, joins that consume nothing, releases from the approval
// workflow, the leak-guard audit, continue-as-new and idle close. Typed fake activities, no network.
import { randomUUID } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalActivities } from '../../activities/activities.js';
import type { LimiterActivities } from '../../activities/limiter-activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { temporalTestServerPath } from '../../src/temporal/binaries.js';
import { WORKFLOWS_PATH } from '../../src/worker.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { cancelUpdate, taskCreatedUpdate } from '../../workflows/messages.js';
import {
  limiterCountsQuery,
  limiterWorkflowIdOf,
  releaseSignal,
  reserveUpdate,
  claimSignal,
  type LimiterInput,
  type ReserveResult,
  type SubmissionLimits,
} from '../../workflows/limiter-messages.js';
import { submissionLimiterWorkflow } from '../../workflows/submission-limiter.js';
import type { ApprovalWorkflowConfig } from '../../workflows/types.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
  });
  // the worker's own entry module: every workflow, as in production
  bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH });
});
afterAll(async () => {
  await env?.teardown();
});

const limits: SubmissionLimits = { maxSubmissionsPerWindow: 3, submissionWindowMs: HOUR, maxPendingPerPrincipal: 10 };

/** Audit fake: the ids it is told are closed, and every call it got. */
function limiterFakes(closed: (ids: string[]) => string[] = () => []) {
  const audits: string[][] = [];
  const acts: LimiterActivities = {
    async closedWorkflowIds(ids) {
      audits.push(ids);
      return closed(ids);
    },
  };
  return { acts, audits };
}

async function run<T>(acts: object, body: (taskQueue: string, ownerKey: string) => Promise<T>): Promise<T> {
  const taskQueue = `tq-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: bundle, activities: acts });
  return worker.runUntil(body(taskQueue, randomUUID().replace(/-/g, '')));
}

async function startLimiter(taskQueue: string, ownerKey: string, tuning: LimiterInput['tuning'] = {}) {
  const handle = await env.client.workflow.start(submissionLimiterWorkflow, {
    taskQueue,
    workflowId: limiterWorkflowIdOf(ownerKey),
    args: [{ ownerKey, tuning }],
  });
  const reserve = (approvalWorkflowId: string, l: SubmissionLimits = limits): Promise<ReserveResult> =>
    handle.executeUpdate(reserveUpdate, { args: [{ approvalWorkflowId, limits: l }] });
  const release = (approvalWorkflowId: string, r: ReserveResult) =>
    handle.signal(releaseSignal, { approvalWorkflowId, reservationId: r.admitted ? r.reservationId : 'none' });
  return { handle, reserve, release };
}

describe('submission limiter (time-skipping)', () => {
  it('admits N new approval tasks per window, refuses the next with rate-limited, and admits again once the window has passed', async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner);
      const admitted = [await reserve('wf-1'), await reserve('wf-2'), await reserve('wf-3')];
      expect(admitted.every((r) => r.admitted && !r.joined)).toBe(true);
      // freeing pending slots does not give back rate budget (wf-3 stays pending, so this run stays open)
      await release('wf-1', admitted[0]!);
      await release('wf-2', admitted[1]!);
      expect(await reserve('wf-4')).toEqual({ admitted: false, reason: 'rate-limited' });
      expect(await handle.query(limiterCountsQuery)).toEqual({ pending: 1, admissionsInWindow: 3 });
      await env.sleep(HOUR);
      const again = await reserve('wf-4');
      expect(again).toMatchObject({ admitted: true, joined: false });
      expect(await handle.query(limiterCountsQuery)).toEqual({ pending: 2, admissionsInWindow: 1 });
      await release('wf-3', admitted[2]!);
      await release('wf-4', again);
      await handle.result(); // idle: nothing pending, window empty → the run closes itself
    });
  });

  it('a repeat for an approval workflow that already holds a reservation joins it: same reservation, nothing counted, even at the limits', async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner);
      const tight: SubmissionLimits = { maxSubmissionsPerWindow: 1, submissionWindowMs: HOUR, maxPendingPerPrincipal: 1 };
      const first = await reserve('wf-a', tight);
      expect(first).toMatchObject({ admitted: true, joined: false });
      const joins = await Promise.all(Array.from({ length: 5 }, () => reserve('wf-a', tight)));
      for (const j of joins) expect(j).toEqual({ admitted: true, joined: true, reservationId: first.admitted ? first.reservationId : '' });
      expect(await handle.query(limiterCountsQuery)).toEqual({ pending: 1, admissionsInWindow: 1 });
      expect(await reserve('wf-b', tight)).toEqual({ admitted: false, reason: 'too-many-pending' });
      await release('wf-a', first);
      await handle.result();
    });
  });

  it('the pending bound refuses with too-many-pending and admits again after a release; a stale release frees nothing', async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner);
      const l: SubmissionLimits = { maxSubmissionsPerWindow: 100, submissionWindowMs: HOUR, maxPendingPerPrincipal: 2 };
      const r1 = await reserve('wf-1', l);
      const r2 = await reserve('wf-2', l);
      expect(await reserve('wf-3', l)).toEqual({ admitted: false, reason: 'too-many-pending' });
      await handle.signal(releaseSignal, { approvalWorkflowId: 'wf-1', reservationId: 'not-the-reservation' });
      expect(await reserve('wf-3', l)).toEqual({ admitted: false, reason: 'too-many-pending' });
      await release('wf-1', r1);
      const r3 = await reserve('wf-3', l);
      expect(r3).toMatchObject({ admitted: true, joined: false });
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 2 });
      await release('wf-2', r2);
      await release('wf-3', r3);
      await handle.result();
    });
  });

  it("a repeat that joined a closing task cannot open an uncounted one: the old run's release spares a slot the new run claimed, and a late claim re-counts it", async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve } = await startLimiter(tq, owner);
      const l: SubmissionLimits = { maxSubmissionsPerWindow: 100, submissionWindowMs: HOUR, maxPendingPerPrincipal: 1 };
      const r = await reserve('wf-1', l);
      if (!r.admitted) throw new Error('expected admission');
      await handle.signal(claimSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-old' });
      // a repeat joins while the old run is closing; the new run claims before the old run's release lands
      expect(await reserve('wf-1', l)).toMatchObject({ admitted: true, joined: true, reservationId: r.reservationId });
      await handle.signal(claimSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-new' });
      await handle.signal(releaseSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-old' });
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 1 });
      expect(await reserve('wf-2', l)).toEqual({ admitted: false, reason: 'too-many-pending' });
      // the other order: the old run's release lands first, then the new run's claim counts the slot again
      await handle.signal(releaseSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-new' });
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 0 });
      await handle.signal(claimSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-newer' });
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 1 });
      expect(await reserve('wf-2', l)).toEqual({ admitted: false, reason: 'too-many-pending' });
      await handle.signal(releaseSignal, { approvalWorkflowId: 'wf-1', reservationId: r.reservationId, runId: 'run-newer' });
      await handle.result();
    });
  });

  it('a slot whose approval workflow died without releasing is dropped by the audit; a young reservation is kept', async () => {
    const { acts, audits } = limiterFakes((ids) => ids.filter((id) => id === 'wf-dead'));
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner, { auditGraceMs: 60_000, auditMinIntervalMs: 1 });
      const l: SubmissionLimits = { maxSubmissionsPerWindow: 100, submissionWindowMs: HOUR, maxPendingPerPrincipal: 2 };
      await reserve('wf-dead', l);
      const live = await reserve('wf-live', l);
      // both reservations are younger than the grace: no audit candidates, refused
      expect(await reserve('wf-new', l)).toEqual({ admitted: false, reason: 'too-many-pending' });
      expect(audits).toEqual([]);
      await env.sleep(2 * 60_000);
      const admitted = await reserve('wf-new', l);
      expect(admitted).toMatchObject({ admitted: true, joined: false });
      expect(audits).toEqual([['wf-dead', 'wf-live']]);
      await release('wf-live', live);
      await release('wf-new', admitted);
      await handle.result();
    });
  });

  it('tasks that come and go one after another within the window start one idle timer, not one each, and the run still closes itself once idle', async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner);
      const tasks = 4;
      for (let i = 0; i < tasks; i++) {
        const r = await reserve(`wf-${i}`, { ...limits, maxSubmissionsPerWindow: 10 });
        await release(`wf-${i}`, r);
        // the release is in (nothing pending) before the next task reserves: an idle spell each time
        while ((await handle.query(limiterCountsQuery)).pending > 0);
      }
      await handle.result(); // idle: nothing pending, window empty → the run closes itself
      const timers = ((await handle.fetchHistory()).events ?? []).filter((e) => e.timerStartedEventAttributes).length;
      expect(timers).toBeGreaterThanOrEqual(1);
      expect(timers).toBeLessThan(tasks);
    });
  });

  it('keeps its state across continue-as-new', async () => {
    const { acts } = limiterFakes();
    await run(acts, async (tq, owner) => {
      const { handle, reserve, release } = await startLimiter(tq, owner, { maxHistoryEvents: 20 });
      const l: SubmissionLimits = { maxSubmissionsPerWindow: 4, submissionWindowMs: HOUR, maxPendingPerPrincipal: 10 };
      const firstRunId = (await handle.describe()).runId;
      const held = [];
      for (let i = 0; i < 4; i++) held.push(await reserve(`wf-${i}`, l));
      expect(await reserve('wf-x', l)).toEqual({ admitted: false, reason: 'rate-limited' });
      const latest = env.client.workflow.getHandle(limiterWorkflowIdOf(owner));
      expect((await latest.describe()).runId).not.toBe(firstRunId);
      expect(await latest.query(limiterCountsQuery)).toEqual({ pending: 4, admissionsInWindow: 4 });
      for (const [i, r] of held.entries()) await release(`wf-${i}`, r);
      await latest.result();
    });
  });

  it.each([
    ['claims a reservation that may be shared (joined, or a front that does not say) and releases it', undefined, ['claim', 'release']],
    ['sends no claim for a reservation its own reserve created (joined: false), and still releases it', false, ['release']],
  ] as const)('the approval workflow %s when it terminalizes (cancel answers after the release)', async (_name, joined, signalsSent) => {
    const limiter = limiterFakes();
    const approvals: ApprovalActivities = {
      async submitApprovalRequest({ body }) {
        return {
          requestId: `req-${body.generation}`,
          statusUrl: 'http://backend/s',
          cancelUrl: 'http://backend/c',
          expiresAt: body.expiresAt,
        };
      },
      async fetchApprovalStatus(h) {
        return { state: 'pending', expiresAt: h.expiresAt };
      },
      async cancelApprovalRequest() {
        return true;
      },
      async evaluatePolicy() {
        return { outcome: 'allow' };
      },
      async executeTool() {
        throw new Error('must not run');
      },
    };
    await run({ ...approvals, ...limiter.acts }, async (tq, owner) => {
      const { handle, reserve } = await startLimiter(tq, owner);
      const approvalId = `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`;
      const r = await reserve(approvalId);
      if (!r.admitted) throw new Error('not admitted');
      const config: ApprovalWorkflowConfig = {
        resultRetentionMs: DAY,
        clientPollIntervalMs: 5000,
        statusPollInitialMs: HOUR,
        statusPollMaxMs: HOUR,
        maxGenerations: 3,
        retryBaseMs: 60_000,
        retryMaxMs: 600_000,
        executionTimeoutMs: 60_000,
        maxRequestWindowMs: 30 * DAY,
      };
      const binding = createCallBinding({
        tool: 'wire_transfer',
        arguments: { to: 'acct-991', amount: 50000 },
        principal: { iss: 'https://issuer.test', sub: 'alice' },
        toolDescriptorDigest: 'd1',
      });
      const approval = await env.client.workflow.start(approvalWorkflow, {
        taskQueue: tq,
        workflowId: approvalId,
        args: [
          {
            binding,
            ownerKey: owner,
            config,
            accessRequest: { approverGroup: 'treasury', requestTtlMs: 7 * DAY, reason: 'Needs approval.', policyId: 'p' },
            limiter: {
              limiterWorkflowId: limiterWorkflowIdOf(owner),
              reservationId: r.reservationId,
              ...(joined === undefined ? {} : { joined }),
            },
          },
        ],
      });
      await approval.executeUpdate(taskCreatedUpdate);
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 1 });
      expect(await approval.executeUpdate(cancelUpdate)).toBe('cancelled');
      expect(await handle.query(limiterCountsQuery)).toMatchObject({ pending: 0 });
      expect((await approval.result()).status).toBe('cancelled');
      await handle.result();
      const sent = ((await approval.fetchHistory()).events ?? []).flatMap(
        (e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName ?? [],
      );
      expect(sent).toEqual(signalsSent);
    });
  });
});
