// Scope: the approval workflow's state machine on the time-skipping test server, with typed fake
// activities (no network): expiry, retry backoff, request chains, cancel vs claim, stale callbacks;
// (replay of recorded runs: replay-corpus.test.ts).
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { approvalWorkflowEnv, DAY, HOUR, JUSTIFIED_REQUEST, workflowTestConfig } from '../support/workflow-env.js';
import type { ApprovalActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { backendCallbackUpdate, cancelUpdate, provideInputUpdate, taskCreatedUpdate, taskQuery } from '../../workflows/messages.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { REFUSAL, REFUSAL_TEXT, refusalOf } from '../../workflows/refusals.js';
import { FAILURE, type ApprovalWorkflowConfig, type BackendHandle, type BackendStatus, type ReEvaluation } from '../../workflows/types.js';

const t = approvalWorkflowEnv();

const config = workflowTestConfig();

/** A scripted backend + PDP + tool, recording every call. */
function fakes(script: {
  status: (h: BackendHandle, n: number) => BackendStatus;
  evaluate?: (n: number) => ReEvaluation;
  execute?: () => Promise<void>;
}) {
  const calls = {
    submit: [] as Array<{ key: string; generation: number; justification?: string }>,
    status: [] as string[],
    cancel: [] as string[],
    evaluate: [] as number[],
    execute: 0,
    executeStartedAt: [] as number[],
  };
  let statusN = 0;
  const acts: ApprovalActivities = {
    async submitApprovalRequest({ body, idempotencyKey }) {
      calls.submit.push({
        key: idempotencyKey,
        generation: body.generation,
        ...(body.justification ? { justification: body.justification } : {}),
      });
      return {
        requestId: `req-${body.generation}`,
        statusUrl: `http://backend/req-${body.generation}`,
        cancelUrl: `http://backend/req-${body.generation}/cancel`,
        expiresAt: body.expiresAt,
      };
    },
    async fetchApprovalStatus(h) {
      clockMs = await t.env.currentTimeMs();
      calls.status.push(h.requestId);
      return script.status(h, ++statusN);
    },
    async cancelApprovalRequest(h) {
      calls.cancel.push(h.requestId);
      return true;
    },
    async evaluatePolicy() {
      clockMs = await t.env.currentTimeMs();
      calls.evaluate.push(serverNow());
      return script.evaluate ? script.evaluate(calls.evaluate.length) : { outcome: 'allow' };
    },
    async executeTool() {
      calls.execute++;
      if (script.execute) await script.execute();
      return { content: [{ type: 'text', text: 'Transfer done.' }] };
    },
  };
  return { acts, calls };
}

/**
 * The (time-skipped) server clock, read by the fake status fetch and policy check when they start;
 * wall-clock Date.now() is not it, and neither is a local activity's scheduled time (the worker's clock).
 */
let clockMs = 0;
function serverNow(): number {
  return clockMs;
}

function approved(validForMs: number): BackendStatus {
  const now = serverNow();
  return {
    state: 'approved',
    approval: {
      id: 'apv-1',
      approvedAt: new Date(now).toISOString(),
      approvedUntil: new Date(now + validForMs).toISOString(),
      state: 'approved',
      approvers: ['bob'],
    },
  };
}

async function run<T>(acts: ApprovalActivities, body: (taskQueue: string, workflowId: string) => Promise<T>): Promise<T> {
  const taskQueue = `tq-${randomUUID()}`;
  const worker = await Worker.create({ connection: t.env.nativeConnection, taskQueue, workflowBundle: t.bundle, activities: acts });
  return worker.runUntil(body(taskQueue, `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`));
}

function input() {
  const binding = createCallBinding({
    tool: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50000 },
    principal: { iss: 'https://issuer.test', sub: 'alice' },
    toolDescriptorDigest: 'd1',
  });
  return {
    binding,
    ownerKey: 'owner',
    config,
    accessRequest: {
      approverGroup: 'treasury',
      requestTtlMs: 7 * DAY,
      reason: 'Transfers over $25,000 require treasury approval.',
      policyId: 'p',
    },
  };
}

/** The refusal type of an update its validator refused (asserting the error's class and sentence); fails if it was accepted. */
async function refusalFrom(update: Promise<unknown>): Promise<string | undefined> {
  const err = await update.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  const type = refusalOf((err as WorkflowUpdateFailedError).cause);
  expect((err as WorkflowUpdateFailedError).cause?.message).toBe(type && REFUSAL_TEXT[type]);
  return type;
}

async function start(taskQueue: string, workflowId: string, overrides: Partial<ApprovalWorkflowConfig> = {}) {
  const handle = await t.env.client.workflow.start(approvalWorkflow, {
    taskQueue,
    workflowId,
    args: [{ ...input(), config: { ...config, ...overrides } }],
  });
  const created = await handle.executeUpdate(taskCreatedUpdate);
  return { handle, created };
}

/** Deliver generation 1's callback, then query until the task asks for input (at most 200 turns); returns that snapshot. */
async function approveUntilInputRequired(handle: Awaited<ReturnType<typeof start>>['handle']) {
  await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
  let snap = await handle.query(taskQuery);
  for (let i = 0; i < 200 && snap.status !== 'input_required'; i++) {
    await new Promise((r) => setImmediate(r));
    snap = await handle.query(taskQuery);
  }
  return snap;
}

describe('approval workflow (time-skipping)', () => {
  it('a request nobody decides expires after 7 days and completes denied-not-executed', async () => {
    const { acts, calls } = fakes({ status: (h) => ({ state: 'pending', expiresAt: h.expiresAt }) });
    const out = await run(acts, async (tq, id) => {
      const { handle, created } = await start(tq, id);
      expect(created.snapshot.status).toBe('working');
      return handle.result();
    });
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('denied-not-executed');
    expect(out.result?.content[0]?.text).toMatch(/expired.*did not run/);
    expect(Date.parse(out.lastUpdatedAt) - Date.parse(out.createdAt)).toBeGreaterThanOrEqual(7 * DAY);
    expect(calls.execute).toBe(0);
    expect(calls.evaluate).toHaveLength(0);
  });

  it('ttlMs covers the pending deadline plus result retention while working', async () => {
    const { acts } = fakes({ status: () => ({ state: 'denied' }) });
    const snap = await run(acts, async (tq, id) => {
      const { handle, created } = await start(tq, id);
      // close the run: an open workflow without a worker would hold the test server's clock
      await handle.executeUpdate(cancelUpdate);
      await handle.result();
      return created.snapshot;
    });
    expect(snap.ttlMs).toBeGreaterThanOrEqual(7 * DAY + DAY);
  });

  it('retry backoff stops at approval expiry and never executes', async () => {
    const validFor = 2 * HOUR;
    let approvedUntil = 0;
    const { acts, calls } = fakes({
      status: () => {
        const s = approved(validFor);
        approvedUntil = Date.parse((s as { approval: { approvedUntil: string } }).approval.approvedUntil);
        return s;
      },
      evaluate: () => ({ outcome: 'retry' }),
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      return handle.result();
    });
    expect(out.disposition).toBe('denied-not-executed');
    expect(out.result?.content[0]?.text).toMatch(/approval expired/);
    expect(calls.execute).toBe(0);
    expect(calls.evaluate.length).toBeGreaterThan(2);
    expect(Math.max(...calls.evaluate)).toBeLessThan(approvedUntil);
    // backoff grows: the gaps between re-evaluations are not all equal
    const gaps = calls.evaluate.slice(1).map((t, i) => t - calls.evaluate[i]!);
    expect(gaps[gaps.length - 1]!).toBeGreaterThan(gaps[0]!);
  });

  it('a request chain stops at its bound with a terminal denial, each generation under a fresh key', async () => {
    const { acts, calls } = fakes({
      status: () => approved(DAY),
      evaluate: () => ({
        outcome: 'request',
        accessRequest: { approverGroup: 'risk', requestTtlMs: DAY, reason: 'A second approval is required.', policyId: 'p2' },
      }),
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      return handle.result();
    });
    expect(out.disposition).toBe('denied-not-executed');
    expect(out.result?.content[0]?.text).toMatch(/request limit/);
    expect(calls.submit.map((s) => s.generation)).toEqual([1, 2, 3]);
    expect(new Set(calls.submit.map((s) => s.key)).size).toBe(3);
    expect(calls.execute).toBe(0);
  });

  it('a cancel before the claim wins: cancelled, backend request cancelled, tool never runs', async () => {
    const { acts, calls } = fakes({ status: () => approved(DAY) });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      expect(await handle.executeUpdate(cancelUpdate)).toBe('cancelled');
      expect(await handle.executeUpdate(cancelUpdate).catch(() => 'closed')).toMatch(/already-terminal|closed/);
      return handle.result();
    });
    expect(out.status).toBe('cancelled');
    expect(out.disposition).toBeUndefined();
    expect(calls.cancel).toEqual(['req-1']);
    expect(calls.execute).toBe(0);
  });

  it('a cancel after the claim is a no-op and the task completes approved-executed', async () => {
    let started!: () => void;
    const executing = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const { acts, calls } = fakes({
      status: () => approved(DAY),
      execute: async () => {
        started();
        await released;
      },
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      await executing;
      expect(await handle.executeUpdate(cancelUpdate)).toBe('already-claimed');
      expect((await handle.query(taskQuery)).status).toBe('working');
      release();
      return handle.result();
    });
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('approved-executed');
    expect(calls.execute).toBe(1);
    expect(calls.cancel).toEqual([]);
  });

  it('a callback for a consumed generation causes no status fetch and no re-evaluation', async () => {
    const { acts, calls } = fakes({
      status: (h) => (h.requestId === 'req-1' ? approved(DAY) : { state: 'denied' }),
      evaluate: (n) =>
        n === 1
          ? { outcome: 'request', accessRequest: { approverGroup: 'risk', requestTtlMs: DAY, reason: 'Second approval.', policyId: 'p2' } }
          : { outcome: 'allow' },
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-1' }] });
      for (let i = 0; i < 200 && (await handle.query(taskQuery)).generation < 2; i++) await new Promise((r) => setImmediate(r));
      expect((await handle.query(taskQuery)).generation).toBe(2);
      // authentic but stale: generation 1 is consumed, its approval must not act again
      await expect(
        handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 1, requestId: 'req-1', callbackId: 'cb-2' }] }),
      ).rejects.toThrow();
      await handle.executeUpdate(backendCallbackUpdate, { args: [{ generation: 2, requestId: 'req-2', callbackId: 'cb-3' }] });
      return handle.result();
    });
    expect(calls.status).toEqual(['req-1', 'req-2']);
    expect(calls.evaluate).toHaveLength(1);
    expect(out.disposition).toBe('denied-not-executed');
    expect(calls.execute).toBe(0);
  });

  it('a callback that arrives while its submission is in flight is refused as early (retryable), then accepted once the handle is recorded', async () => {
    let release!: () => void;
    const submitted = new Promise<void>((r) => (release = r));
    let submitStarted!: () => void;
    const submitting = new Promise<void>((r) => (submitStarted = r));
    const { acts, calls } = fakes({ status: (h) => ({ state: 'pending', expiresAt: h.expiresAt }) });
    const submit = acts.submitApprovalRequest;
    acts.submitApprovalRequest = async (req) => {
      submitStarted();
      await submitted; // the backend has the request (and may decide) before the workflow records its handle
      return submit(req);
    };
    await run(acts, async (tq, id) => {
      const handle = await t.env.client.workflow.start(approvalWorkflow, { taskQueue: tq, workflowId: id, args: [{ ...input(), config }] });
      await submitting;
      const cb = { generation: 1, requestId: 'req-1', callbackId: 'early-delivery' };
      expect(await refusalFrom(handle.executeUpdate(backendCallbackUpdate, { args: [cb] }))).toBe(REFUSAL.earlyCallback);
      release();
      await handle.executeUpdate(taskCreatedUpdate);
      // the same delivery, retried by the backend, now lands
      expect(await handle.executeUpdate(backendCallbackUpdate, { args: [cb] })).toBe('accepted');
      await handle.executeUpdate(cancelUpdate);
      return handle.result();
    });
    expect(calls.status).toEqual(['req-1']);
  });

  it('a replayed callback is refused by the update validator: no second status fetch', async () => {
    const { acts, calls } = fakes({ status: (h) => ({ state: 'pending', expiresAt: h.expiresAt }) });
    await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      const cb = { generation: 1, requestId: 'req-1', callbackId: 'same-delivery' };
      expect(await handle.executeUpdate(backendCallbackUpdate, { args: [cb] })).toBe('accepted');
      expect(await refusalFrom(handle.executeUpdate(backendCallbackUpdate, { args: [cb] }))).toBe(REFUSAL.replayedCallback);
      expect(
        await refusalFrom(handle.executeUpdate(backendCallbackUpdate, { args: [{ ...cb, requestId: 'req-forged', callbackId: 'other' }] })),
      ).toBe(REFUSAL.staleCallback);
      await handle.executeUpdate(cancelUpdate);
      return handle.result();
    });
    expect(calls.status).toEqual(['req-1']);
  });

  it('a chained request that needs a justification waits in input_required until tasks/update answers it, then submits with it', async () => {
    const { acts, calls } = fakes({
      status: (h) => (h.requestId === 'req-1' ? approved(DAY) : { state: 'denied' }),
      evaluate: () => JUSTIFIED_REQUEST,
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      expect(
        await refusalFrom(
          handle.executeUpdate(provideInputUpdate, {
            args: [{ justification: { action: 'accept', content: { justification: 'not asked for yet' } } }],
          }),
        ),
      ).toBe(REFUSAL.noInputRequested);
      const snap = await approveUntilInputRequired(handle);
      expect(snap.status).toBe('input_required');
      expect(Object.keys(snap.inputRequests ?? {})).toEqual(['justification-2']);
      expect(calls.submit).toHaveLength(1);
      // an unusable answer, or one to a key that is not outstanding, is refused and changes nothing
      expect(
        await refusalFrom(
          handle.executeUpdate(provideInputUpdate, {
            args: [{ 'justification-2': { action: 'accept', content: { justification: 'short' } } }],
          }),
        ),
      ).toBe(REFUSAL.invalidInput);
      expect(
        await refusalFrom(
          handle.executeUpdate(provideInputUpdate, {
            args: [{ justification: { action: 'accept', content: { justification: 'Risk asked for the supplier contract id.' } } }],
          }),
        ),
      ).toBe(REFUSAL.unknownInputKey);
      expect((await handle.query(taskQuery)).status).toBe('input_required');
      expect(
        await handle.executeUpdate(provideInputUpdate, {
          args: [{ 'justification-2': { action: 'accept', content: { justification: 'Risk asked for the supplier contract id.' } } }],
        }),
      ).toBe('accepted');
      return handle.result();
    });
    expect(calls.submit.map((s) => [s.generation, s.justification])).toEqual([
      [1, undefined],
      [2, 'Risk asked for the supplier contract id.'],
    ]);
    expect(out.disposition).toBe('denied-not-executed');
    expect(calls.execute).toBe(0);
  });

  it('a declined in-task input request ends the task as denied-not-executed at once: no further request is submitted and the tool does not run', async () => {
    const { acts, calls } = fakes({
      status: () => approved(DAY),
      evaluate: () => JUSTIFIED_REQUEST,
    });
    const out = await run(acts, async (tq, id) => {
      const { handle } = await start(tq, id);
      const snap = await approveUntilInputRequired(handle);
      expect(snap.status).toBe('input_required');
      expect(await handle.executeUpdate(provideInputUpdate, { args: [{ 'justification-2': { action: 'decline' } }] })).toBe('accepted');
      return handle.result();
    });
    expect(out).toMatchObject({ status: 'completed', disposition: 'denied-not-executed', claimed: false });
    expect(out.result?.content[0]?.text).toMatch(/declined/);
    expect(calls.submit).toHaveLength(1);
    expect(calls.execute).toBe(0);
  });

  it('an input request nobody answers ends as a denial when its window passes, and is never submitted', async () => {
    const { acts, calls } = fakes({
      status: () => approved(DAY),
      evaluate: () => JUSTIFIED_REQUEST,
    });
    const out = await run(acts, async (tq, id) => (await start(tq, id)).handle.result());
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('denied-not-executed');
    expect(out.inputRequests).toBeUndefined();
    expect(calls.submit).toHaveLength(1);
  });

  it('a tool error after the claim completes as execution-error, never failed', async () => {
    const { acts, calls } = fakes({
      status: () => approved(DAY),
      execute: async () => {
        throw ApplicationFailure.nonRetryable('boom', FAILURE.toolExecutionError);
      },
    });
    const out = await run(acts, async (tq, id) => (await start(tq, id)).handle.result());
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('execution-error');
    expect(out.result?._meta['io.modelcontextprotocol/authorization']).toBeUndefined();
    expect(calls.execute).toBe(1);
  });

  it('an execution that times out completes as outcome-unknown and is not re-run', async () => {
    // the fake tool never finishes on its own; it returns only once the worker cancels it at the timeout
    const hang = () => new Promise<void>((resolve) => Context.current().cancellationSignal.addEventListener('abort', () => resolve()));
    const { acts, calls } = fakes({ status: () => approved(DAY), execute: hang });
    const out = await run(acts, async (tq, id) => (await start(tq, id, { executionTimeoutMs: 1500 })).handle.result());
    expect(out.status).toBe('completed');
    expect(out.disposition).toBe('outcome-unknown');
    expect(calls.execute).toBe(1);
  });

  // Recorded (historyToJSON) from this file's scenarios run against the workflow as it was before
  // its state moved into ApprovalState (workflows/approval-state.ts): the refactor must keep the
  // same commands in the same order, or these runs would fail to replay.
});
