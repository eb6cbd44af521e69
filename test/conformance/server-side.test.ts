// Scope: SEP-2848 server-side MUSTs that no wire observation can show and no other test covered
// (traced from conformance/sep-2848.yaml): crash-consistent submission, fresh keys, ttl growth and
// the window bound, the claim as the enforcement point, local cancellation without backend support
// (approval workflow on the time-skipping server, typed fake activities); and re-evaluation against
// current policy, tools and binding (the real activities over the real Cedar PDP, no Temporal).
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { approvalWorkflowEnv, DAY, workflowTestConfig } from '../support/workflow-env.js';
import { createActivities, type ApprovalActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { approvalWorkflow } from '../../workflows/approval.js';
import { backendCallbackUpdate, cancelUpdate, taskCreatedUpdate, taskQuery } from '../../workflows/messages.js';
import type { ApprovalMaterial, BackendHandle, BackendStatus, ReEvaluation, SubmissionBody } from '../../workflows/types.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';

const t = approvalWorkflowEnv();

const config = workflowTestConfig();

const alice = { iss: 'https://issuer.test', sub: 'alice' };
const binding = () =>
  createCallBinding({ tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 50000 }, principal: alice, toolDescriptorDigest: 'd1' });
const input = (overrides: { requestTtlMs?: number } = {}) => ({
  binding: binding(),
  ownerKey: 'owner',
  config,
  accessRequest: {
    approverGroup: 'treasury',
    requestTtlMs: overrides.requestTtlMs ?? 7 * DAY,
    reason: 'Transfers over $25,000 require treasury approval.',
    policyId: 'p',
  },
});

/**
 * The time-skipped server clock, read by the fake status fetch and policy check when they start
 * (both run as local activities, whose scheduled time is the worker's clock, not the server's).
 */
let clockMs = 0;
const serverNow = () => clockMs;
const approvedFor = (ms: number): BackendStatus => {
  const now = serverNow();
  return {
    state: 'approved',
    approval: {
      id: 'apv-1',
      approvedAt: new Date(now).toISOString(),
      approvedUntil: new Date(now + ms).toISOString(),
      state: 'approved',
      approvers: ['bob'],
    },
  };
};

interface Script {
  submit?: (body: SubmissionBody, key: string, attempt: number) => BackendHandle;
  status?: (h: BackendHandle) => BackendStatus;
  cancel?: () => boolean;
  evaluate?: (approval: ApprovalMaterial) => Promise<ReEvaluation> | ReEvaluation;
  execute?: () => Promise<void>;
}

/** Typed fake activities recording every call. */
function fakes(script: Script) {
  const calls = {
    submit: [] as Array<{ key: string; body: SubmissionBody; attempt: number }>,
    cancel: 0,
    evaluate: [] as ApprovalMaterial[],
    execute: 0,
  };
  const acts: ApprovalActivities = {
    async submitApprovalRequest({ body, idempotencyKey }) {
      const attempt = Context.current().info.attempt;
      calls.submit.push({ key: idempotencyKey, body, attempt });
      if (script.submit) return script.submit(body, idempotencyKey, attempt);
      return {
        requestId: `req-${body.generation}`,
        statusUrl: `http://backend/req-${body.generation}`,
        cancelUrl: 'http://backend/cancel',
        expiresAt: body.expiresAt,
      };
    },
    async fetchApprovalStatus(h) {
      clockMs = await t.env.currentTimeMs();
      return script.status ? script.status(h) : { state: 'pending', expiresAt: h.expiresAt };
    },
    async cancelApprovalRequest() {
      calls.cancel++;
      return script.cancel ? script.cancel() : true;
    },
    async evaluatePolicy({ approval }) {
      clockMs = await t.env.currentTimeMs();
      calls.evaluate.push(approval);
      return script.evaluate ? script.evaluate(approval) : { outcome: 'allow' };
    },
    async executeTool() {
      calls.execute++;
      if (script.execute) await script.execute();
      return { content: [{ type: 'text', text: 'Transfer done.' }] };
    },
  };
  return { acts, calls };
}

async function run<T>(acts: ApprovalActivities, body: (taskQueue: string) => Promise<T>): Promise<T> {
  const taskQueue = `tq-${randomUUID()}`;
  const worker = await Worker.create({ connection: t.env.nativeConnection, taskQueue, workflowBundle: t.bundle, activities: acts });
  return worker.runUntil(body(taskQueue));
}

async function start(taskQueue: string, wfInput = input()) {
  const handle = await t.env.client.workflow.start(approvalWorkflow, {
    taskQueue,
    workflowId: `${APPROVAL_WORKFLOW_ID_PREFIX}${randomUUID().replace(/-/g, '')}`,
    args: [wfInput],
  });
  const created = await handle.executeUpdate(taskCreatedUpdate);
  return { handle, created };
}

const callback = { generation: 1, requestId: 'req-1', callbackId: 'cb-1' };

describe('crash-consistent creation (SEP-2848 §Denied-but-requestable, Crash-consistent creation)', () => {
  it('the submission-intent (key and exact body) is in history before the backend is contacted, and a submit retried after a crash reuses it: one backend request', async () => {
    const backendRequests = new Map<string, BackendHandle>(); // the backend deduplicates on the key
    const { acts, calls } = fakes({
      submit: (body, key, attempt) => {
        const handle = backendRequests.get(key) ?? {
          requestId: `req-${backendRequests.size + 1}`,
          statusUrl: 'http://backend/s',
          expiresAt: body.expiresAt,
        };
        backendRequests.set(key, handle);
        // the backend accepted, then the worker "crashed" before the handle reached the workflow
        if (attempt === 1) throw ApplicationFailure.retryable('lost the reply', 'BackendUnavailable');
        return handle;
      },
    });
    const history = await run(acts, async (tq) => {
      const { handle, created } = await start(tq);
      expect(created.snapshot.status).toBe('working');
      await handle.executeUpdate(cancelUpdate);
      await handle.result();
      return handle.fetchHistory();
    });
    expect(calls.submit.map((s) => s.attempt)).toEqual([1, 2]);
    expect(calls.submit[1]!.key).toBe(calls.submit[0]!.key);
    expect(calls.submit[1]!.body).toEqual(calls.submit[0]!.body);
    expect(backendRequests.size).toBe(1);
    // the scheduled event (persisted before any attempt runs) holds the key and the body
    const scheduled = (history.events ?? []).find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitApprovalRequest',
    );
    const payload = scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.[0]?.data;
    const recorded = JSON.parse(Buffer.from(payload!).toString('utf8')) as { idempotencyKey: string; body: SubmissionBody };
    expect(recorded.idempotencyKey).toBe(calls.submit[0]!.key);
    expect(recorded.body).toEqual(calls.submit[0]!.body);
    expect(recorded.body.arguments).toEqual({ to: 'acct-991', amount: 50000 });
  });

  it('each submission gets a fresh, opaque, high-entropy key: two tasks for the identical call never share one', async () => {
    const { acts, calls } = fakes({});
    await run(acts, async (tq) => {
      for (let i = 0; i < 2; i++) {
        const { handle } = await start(tq);
        await handle.executeUpdate(cancelUpdate);
        await handle.result();
      }
    });
    const [a, b] = calls.submit.map((s) => s.key);
    expect(a).not.toBe(b);
    for (const k of [a!, b!]) {
      expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/); // UUID v4: 122 random bits
      expect(k).not.toContain(binding().digest.slice(0, 8));
    }
  });
});

describe('retention (SEP-2848 §Retention)', () => {
  it('when the backend reports a later deadline while pending, ttlMs grows to cover it plus result retention', async () => {
    const { acts } = fakes({ status: (h) => ({ state: 'pending', expiresAt: new Date(Date.parse(h.expiresAt) + 3 * DAY).toISOString() }) });
    const [before, after, deadline] = await run(acts, async (tq) => {
      const { handle, created } = await start(tq);
      const submittedDeadline = Date.parse(created.snapshot.createdAt) + 7 * DAY;
      await handle.executeUpdate(backendCallbackUpdate, { args: [callback] });
      let snap = await handle.query(taskQuery);
      for (let i = 0; i < 200 && snap.ttlMs === created.snapshot.ttlMs; i++) snap = await handle.query(taskQuery);
      await handle.executeUpdate(cancelUpdate);
      await handle.result();
      return [created.snapshot, snap, submittedDeadline + 3 * DAY] as const;
    });
    expect(after.ttlMs!).toBeGreaterThan(before.ttlMs!);
    expect(Date.parse(after.createdAt) + after.ttlMs!).toBeGreaterThanOrEqual(deadline + DAY);
    expect(after.createdAt).toBe(before.createdAt);
  });

  it('the request window is bounded: a policy asking for a year is cut to maxRequestWindowMs', async () => {
    const { acts, calls } = fakes({});
    const snap = await run(acts, async (tq) => {
      const { handle, created } = await start(tq, input({ requestTtlMs: 365 * DAY }));
      await handle.executeUpdate(cancelUpdate);
      await handle.result();
      return created.snapshot;
    });
    const window = Date.parse(calls.submit[0]!.body.expiresAt) - Date.parse(snap.createdAt);
    expect(window).toBeLessThanOrEqual(30 * DAY);
    expect(snap.ttlMs!).toBeLessThanOrEqual(30 * DAY + DAY);
  });
});

describe('the claim is the enforcement point (SEP-2848 §Completion)', () => {
  it('the re-evaluation receives the approval material as its input', async () => {
    const { acts, calls } = fakes({ status: () => approvedFor(DAY) });
    const out = await run(acts, async (tq) => {
      const { handle } = await start(tq);
      await handle.executeUpdate(backendCallbackUpdate, { args: [callback] });
      return handle.result();
    });
    expect(calls.evaluate).toHaveLength(1);
    expect(calls.evaluate[0]).toMatchObject({ id: 'apv-1', state: 'approved', approvers: ['bob'] });
    expect(out.disposition).toBe('approved-executed');
  });

  // The time-skipping server does not skip time while an activity runs, so these two move the
  // clock with short real waits inside the fake activity (1.5 s and 3 s).
  it('an approval that expires before the claim is not honoured even though re-evaluation allowed: denied-not-executed, nothing runs', async () => {
    const { acts, calls } = fakes({
      status: () => approvedFor(1_000),
      evaluate: async () => {
        await new Promise((r) => setTimeout(r, 1_500)); // the validity ends while the decision is being made
        return { outcome: 'allow' };
      },
    });
    const out = await run(acts, async (tq) => {
      const { handle } = await start(tq);
      await handle.executeUpdate(backendCallbackUpdate, { args: [callback] });
      return handle.result();
    });
    expect(calls.evaluate).toHaveLength(1);
    expect(out.disposition).toBe('denied-not-executed');
    expect(out.result?.content[0]?.text).toMatch(/approval expired/);
    expect(calls.execute).toBe(0);
  });

  it('an approval whose validity ends during the invocation still completes approved-executed: authorization was enforced at the claim', async () => {
    let approvedUntil = 0;
    let claimedAt = 0;
    const { acts, calls } = fakes({
      status: () => {
        const s = approvedFor(2_000);
        approvedUntil = Date.parse((s as { approval: ApprovalMaterial }).approval.approvedUntil);
        return s;
      },
      execute: async () => {
        claimedAt = await t.env.currentTimeMs();
        await new Promise((r) => setTimeout(r, 3_000)); // the approval's validity ends meanwhile
      },
    });
    const out = await run(acts, async (tq) => {
      const { handle } = await start(tq);
      await handle.executeUpdate(backendCallbackUpdate, { args: [callback] });
      return handle.result();
    });
    expect(claimedAt).toBeLessThan(approvedUntil);
    expect(out.disposition).toBe('approved-executed');
    expect(Date.parse(out.lastUpdatedAt)).toBeGreaterThan(approvedUntil);
    expect(calls.execute).toBe(1);
  });

  it('an execution-claimed task is retained through its execution deadline: ttlMs covers claim + execution timeout + retention', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let executing!: () => void;
    const inExecution = new Promise<void>((r) => (executing = r));
    const { acts } = fakes({
      status: () => approvedFor(DAY),
      execute: async () => {
        executing();
        await released;
      },
    });
    const snap = await run(acts, async (tq) => {
      const { handle } = await start(tq);
      await handle.executeUpdate(backendCallbackUpdate, { args: [callback] });
      await inExecution;
      const s = await handle.query(taskQuery);
      release();
      await handle.result();
      return s;
    });
    expect(snap.claimed).toBe(true);
    expect(snap.phase).toBe('executing');
    expect(Date.parse(snap.createdAt) + snap.ttlMs!).toBeGreaterThanOrEqual(
      Date.parse(snap.lastUpdatedAt) + config.executionTimeoutMs + config.resultRetentionMs,
    );
  });
});

describe('cancellation (SEP-2848 §Cancellation)', () => {
  it('a winning cancel with a backend that cannot cancel is recorded locally: a later approval callback is refused and the tool never runs', async () => {
    const { acts, calls } = fakes({ cancel: () => false, status: () => approvedFor(DAY) });
    const out = await run(acts, async (tq) => {
      const { handle } = await start(tq);
      expect(await handle.executeUpdate(cancelUpdate)).toBe('cancelled');
      const late = await handle.executeUpdate(backendCallbackUpdate, { args: [callback] }).then(
        () => 'accepted',
        () => 'refused',
      );
      expect(late).toBe('refused');
      return handle.result();
    });
    expect(out.status).toBe('cancelled');
    expect(calls.cancel).toBe(1);
    expect(calls.evaluate).toHaveLength(0);
    expect(calls.execute).toBe(0);
  });
});

describe('re-evaluation reads current policy, tools and binding (real activities, real Cedar PDP)', () => {
  const approval: ApprovalMaterial = {
    id: 'apv-9',
    approvedAt: new Date().toISOString(),
    approvedUntil: new Date(Date.now() + DAY).toISOString(),
    state: 'approved',
    approvers: ['bob'],
  };
  let dir: string;
  let ledgerDir: string;

  async function realActivities() {
    dir = mkdtempSync(join(tmpdir(), 'countersign-conf-policies-'));
    ledgerDir = mkdtempSync(join(tmpdir(), 'countersign-conf-ledger-'));
    copyFileSync(join(PROJECT_ROOT, 'policies', 'wire_transfer.cedar'), join(dir, 'wire_transfer.cedar'));
    const pdp = await createCedarPdp({ policyDir: dir });
    const ledger = openLedger(join(ledgerDir, 'ledger.db'));
    const tools = createToolRegistry([createWireTransferTool(ledger)]);
    const acts = createActivities({ backend: undefined as never, pdp, tools });
    const bind = (args: Record<string, unknown> = { to: 'acct-991', amount: 50000 }) =>
      createCallBinding({
        tool: 'wire_transfer',
        arguments: args,
        principal: alice,
        toolDescriptorDigest: tools.descriptorDigest('wire_transfer'),
      });
    const cleanup = () => {
      ledger.close();
      rmSync(dir, { recursive: true, force: true });
      rmSync(ledgerDir, { recursive: true, force: true });
    };
    return { pdp, acts, bind, cleanup };
  }

  it('the approval is an input to a new decision: allowed with it, and a rule added while pending (the principal no longer allowed) denies at re-evaluation', async () => {
    const { pdp, acts, bind, cleanup } = await realActivities();
    try {
      const b = bind();
      const without = await pdp.evaluate({
        subject: alice,
        action: { name: 'tools/call' },
        resource: b.resource,
        context: { arguments: b.arguments },
      });
      expect(without.decision).toBe('deny');
      expect(await acts.evaluatePolicy({ binding: b, approval })).toEqual({ outcome: 'allow', policyIds: ['wire-transfer-permit'] });
      writeFileSync(
        join(dir, 'suspended.cedar'),
        '@id("alice-suspended")\n@reason("This requester is suspended.")\nforbid (principal, action, resource) when { principal.sub == "alice" };\n',
      );
      await pdp.reload();
      expect(await acts.evaluatePolicy({ binding: b, approval })).toEqual({
        outcome: 'deny',
        reason: 'policy-denied',
        policyIds: ['alice-suspended'],
      });
    } finally {
      cleanup();
    }
  });

  it('a tool that changed while the task was pending fails closed (tool-changed), and a tampered stored binding is refused (binding-invalid)', async () => {
    const { acts, bind, cleanup } = await realActivities();
    try {
      const stale = { ...bind(), toolDescriptorDigest: '0'.repeat(64) };
      expect(await acts.evaluatePolicy({ binding: stale, approval })).toEqual({ outcome: 'deny', reason: 'tool-changed' });
      const tampered = { ...bind(), arguments: { to: 'acct-991', amount: 5_000_000 } };
      expect(await acts.evaluatePolicy({ binding: tampered, approval })).toEqual({ outcome: 'deny', reason: 'binding-invalid' });
    } finally {
      cleanup();
    }
  });
});
