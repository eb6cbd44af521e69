// Scope: seed 004's change gate end to end on the real stack (dev server, worker, approval
// service, HTTP): submit_change tiers (in-band confirmation, out-of-band approval), idempotency by
// change_id, and a long-running execution whose progress tasks/get shows.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, type WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { basic, clientFor, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
/** A denial nobody can lift, for calls titled "Forbidden change" (so a denied call can be sent under any change_id). */
const FORBIDDEN_CHANGE_POLICY = `
@id("test-forbidden-change")
@reason("This change is forbidden.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"submit_change")
when { context.arguments.title == "Forbidden change" };
`;
const PROGRESS = 'dev.countersign/progress';

let stack: Stack;
beforeAll(async () => {
  // steps slow enough for several polls per step, fast enough for a test
  stack = await startTestStack(
    testConfig({ COUNTERSIGN_CHANGE_STEP_MS: 1_500 }, { 'a-test-forbidden-change.cedar': FORBIDDEN_CHANGE_POLICY }),
  );
});
afterAll(async () => {
  await stack?.stop();
});

const changeId = () => `chg_${randomBytes(6).toString('hex')}`;
const submit = (args: Record<string, unknown>) => ({
  name: 'submit_change',
  arguments: { kind: 'db_migration', title: 'Add orders index', ...args },
});

interface InputRequired {
  resultType: string;
  inputRequests: Record<
    string,
    { method: string; params: { mode: string; message: string; requestedSchema: { properties: Record<string, unknown> } } }
  >;
  requestState: string;
}
interface ToolResult {
  resultType?: string;
  isError?: boolean;
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
}

async function rpcError(p: Promise<unknown>): Promise<McpRpcError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpRpcError);
  return err as McpRpcError;
}

/** Decide the pending change request `id` as `approverId`; returns the HTTP status. */
async function decideChange(id: string, decision: 'approve' | 'deny', approverId = 'bob'): Promise<number> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const req = (await pendingFor(stack, approverId)).find((r) => r.arguments.change_id === id);
  if (!req) throw new Error(`no pending request for ${id}`);
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${req.id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
  return res.status;
}

/** Poll tasks/get until the task leaves `working`, keeping every answer. */
async function pollAll(client: WireClient, taskId: string, limit = 400): Promise<WireTask[]> {
  const seen: WireTask[] = [];
  for (let i = 0; i < limit; i++) {
    const t = await client.request<WireTask & { pollIntervalMs?: number }>('tasks/get', { taskId });
    seen.push(t);
    if (t.status !== 'working') return seen;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`task ${taskId} did not terminalize`);
}

describe('submit_change: high risk, out of band, long-running', () => {
  it('a high-risk migration approved by the change-advisory group runs once, and tasks/get shows its progress in three or more successive answers', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const created = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'high', impact_scope: 'staging' }));
    expect(created.resultType).toBe('task');
    expect(stack.changes.executionsOf(id)).toBe(0);
    expect(await decideChange(id, 'approve')).toBe(200);

    const answers = await pollAll(alice, created.taskId);
    const running = answers.filter((t) => t.status === 'working' && /step \d of 5/.test(t.statusMessage ?? ''));
    const distinct = [...new Set(running.map((t) => t.statusMessage))];
    expect(distinct.length).toBeGreaterThanOrEqual(3);
    for (const t of running) {
      expect(t.statusMessage).toMatch(/^Approved; the tool is running, step [1-5] of 5: [a-z ]+\. It has not finished\.$/);
      expect(t._meta?.[PROGRESS]).toMatchObject({ total: 5 });
    }
    // progress only moves forward
    const steps = running.map((t) => (t._meta?.[PROGRESS] as { progress: number }).progress);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));

    const done = answers.at(-1)!;
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(done.result?.content.map((c) => c.text).join(' ')).toMatch(/5 of 5 steps done/);
    expect(done._meta?.[PROGRESS]).toBeUndefined();
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('a production database migration needs two people of the change-advisory group: one approval leaves it pending', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const created = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'low', impact_scope: 'production' }));
    expect(created.resultType).toBe('task');
    expect(await decideChange(id, 'approve', 'bob')).toBe(200);
    expect((await pendingFor(stack, 'carol')).some((r) => r.arguments.change_id === id)).toBe(true);
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
    expect(await decideChange(id, 'approve', 'carol')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.changes.executionsOf(id)).toBe(1);
  });
});

describe('submit_change: idempotency by change_id', () => {
  it('the same change_id with the same body joins the same task', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const first = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'high' }));
    const again = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'high', description: '' }));
    expect(again.taskId).toBe(first.taskId);
    await alice.request('tasks/cancel', { taskId: first.taskId });
  });

  it('the same change_id with a different body is refused as an input validation error at change_id (isError, SEP-1303), and nothing is submitted', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const first = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'high' }));
    const refused = await alice.request<ToolResult>('tools/call', submit({ change_id: id, risk: 'high', title: 'Drop orders index' }));
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/\n- change_id: .*different body/);
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.change_id === id)).toHaveLength(1);
    await alice.request('tasks/cancel', { taskId: first.taskId });
  });

  it('the same change_id and body from another caller is refused too, so one change never becomes two tasks', async () => {
    const alice = await clientFor(stack, 'alice');
    const dave = await clientFor(stack, 'dave');
    const id = changeId();
    const first = await alice.request<WireTask>('tools/call', submit({ change_id: id, risk: 'high' }));
    const refused = await dave.request<ToolResult>('tools/call', submit({ change_id: id, risk: 'high' }));
    expect(refused).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('\n- change_id: ') }] });
    expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.change_id === id)).toHaveLength(1);
    await alice.request('tasks/cancel', { taskId: first.taskId });
  });
});

describe('submit_change: medium risk, confirmed in band by the requester', () => {
  const confirm = (decision: 'approve' | 'reject', reason?: string) => ({
    confirmation: { action: 'accept', content: { decision, ...(reason ? { reason } : {}) } },
  });

  async function firstRound(client: WireClient, args: Record<string, unknown>): Promise<InputRequired> {
    const r = await client.request<InputRequired>('tools/call', submit(args));
    expect(r.resultType).toBe('input_required');
    return r;
  }

  it('the first call answers input_required with an approve / reject form and a sealed requestState, and opens no approval request', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const r = await firstRound(alice, { change_id: id, kind: 'finance_transfer', risk: 'medium' });
    expect(r.inputRequests.confirmation?.method).toBe('elicitation/create');
    expect(r.inputRequests.confirmation?.params.mode).toBe('form');
    expect(Object.keys(r.inputRequests.confirmation?.params.requestedSchema.properties ?? {}).sort()).toEqual(['decision', 'reason']);
    expect(r.inputRequests.confirmation?.params.message).toMatch(/need your confirmation.*has not run/);
    expect(r.requestState).toMatch(/^v1\./);
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.change_id === id)).toBe(false);
    expect(stack.changes.executionsOf(id)).toBe(0);
  });

  it('the re-sent call with approve runs the change as a task for a tasks client, which completes approved-executed once', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    const r = await firstRound(alice, args);
    const created = await alice.request<WireTask>('tools/call', {
      ...submit(args),
      inputResponses: confirm('approve', 'checked the runbook'),
      requestState: r.requestState,
    });
    expect(created.resultType).toBe('task');
    expect(created._meta?.['io.modelcontextprotocol/model-immediate-response']).toMatch(/running now and has not finished/);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.changes.executionsOf(id)).toBe(1);
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.change_id === id)).toBe(false); // nobody else was asked
  });

  it('the re-sent call with approve runs inline for a client without tasks', async () => {
    const plain = await clientFor(stack, 'alice', { tasks: false, elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    const r = await firstRound(plain, args);
    const out = await plain.request<ToolResult>('tools/call', {
      ...submit(args),
      inputResponses: confirm('approve'),
      requestState: r.requestState,
    });
    expect(out.isError).toBe(false);
    expect(out.content[0]?.text).toMatch(/applied: 2 of 2 steps done/);
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('reject, a declined and a cancelled form each end the call with an isError result saying the tool did not run', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const answers = [confirm('reject', 'wrong window'), { confirmation: { action: 'decline' } }, { confirmation: { action: 'cancel' } }];
    for (const inputResponses of answers) {
      const id = changeId();
      const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
      const r = await firstRound(alice, args);
      const out = await alice.request<ToolResult>('tools/call', { ...submit(args), inputResponses, requestState: r.requestState });
      expect(out.isError).toBe(true);
      expect(out.content[0]?.text).toMatch(/^Not executed: .*the tool did not run/);
      expect(stack.changes.executionsOf(id)).toBe(0);
    }
  });

  it('an approve under a requestState minted for other arguments is refused and runs nothing', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const r = await firstRound(alice, { change_id: id, kind: 'finance_transfer', risk: 'medium' });
    const other = changeId();
    const err = await rpcError(
      alice.request('tools/call', {
        ...submit({ change_id: other, kind: 'finance_transfer', risk: 'medium' }),
        inputResponses: confirm('approve'),
        requestState: r.requestState,
      }),
    );
    expect(err.code).toBe(-32602);
    expect(stack.changes.executionsOf(other)).toBe(0);
  });
});

describe('submit_change: one execution per change_id', () => {
  const confirm = (decision: 'approve' | 'reject') => ({ confirmation: { action: 'accept', content: { decision } } });

  it('an identical low-risk call sent again is answered with the recorded result and does not run the change again', async () => {
    const plain = await clientFor(stack, 'alice', { tasks: false });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'low' };
    const first = await plain.request<ToolResult>('tools/call', submit(args));
    expect(first.isError).toBe(false);
    expect(first.content[0]?.text).toMatch(/applied: 2 of 2 steps done/);
    const again = await plain.request<ToolResult>('tools/call', submit(args));
    expect(again).toEqual(first);
    // a tasks client of the same caller gets the same answer: no task is opened for it
    const tasksClient = await clientFor(stack, 'alice');
    expect(await tasksClient.request<ToolResult>('tools/call', submit(args))).toEqual(first);
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('two identical low-risk calls sent at once run the change once', async () => {
    const plain = await clientFor(stack, 'alice', { tasks: false });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'low' };
    const answers = await Promise.all([
      plain.request<ToolResult>('tools/call', submit(args)),
      plain.request<ToolResult>('tools/call', submit(args)),
    ]);
    // whichever ran second (at admission or at the claim) says it did not run again
    for (const a of answers)
      expect(a.content[0]?.text).toMatch(
        /applied: 2 of 2 steps done|^Not run again: change chg_\w+ was (started|already applied) under this change_id/,
      );
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('a medium-risk change confirmed in band by a client without tasks, re-sent with its confirmation or afresh, is answered with the recorded result', async () => {
    const plain = await clientFor(stack, 'alice', { tasks: false, elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    const r = await plain.request<InputRequired>('tools/call', submit(args));
    const confirmed = { ...submit(args), inputResponses: confirm('approve'), requestState: r.requestState };
    const out = await plain.request<ToolResult>('tools/call', confirmed);
    expect(out.content[0]?.text).toMatch(/applied: 2 of 2 steps done/);
    expect(await plain.request<ToolResult>('tools/call', confirmed)).toEqual(out);
    // afresh: no confirmation is asked again, since the change already ran
    expect(await plain.request<ToolResult>('tools/call', submit(args))).toEqual(out);
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it("a confirmed medium-risk call re-sent after its task ended is answered with the task's result and opens no task", async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    const r = await alice.request<InputRequired>('tools/call', submit(args));
    const confirmed = { ...submit(args), inputResponses: confirm('approve'), requestState: r.requestState };
    const created = await alice.request<WireTask>('tools/call', confirmed);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');

    const again = await alice.request<ToolResult & { _meta?: Record<string, unknown> }>('tools/call', confirmed);
    expect(again.resultType).not.toBe('task');
    expect(again.content).toEqual(done.result?.content);
    expect(again._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('an approved high-risk change re-submitted after its task ended is answered with its outcome and opens no approval request', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'high' };
    const created = await alice.request<WireTask>('tools/call', submit(args));
    expect(await decideChange(id, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');

    const again = await alice.request<ToolResult & { _meta?: Record<string, unknown> }>('tools/call', submit(args));
    expect(again.resultType).not.toBe('task');
    expect(again.content).toEqual(done.result?.content);
    expect(again._meta?.[DISPOSITION]).toBe('approved-executed');
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.change_id === id)).toBe(false);
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('a rejected high-risk change re-submitted after its task ended is answered "not run; use a new change_id" and opens no approval request', async () => {
    const alice = await clientFor(stack, 'alice');
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'high' };
    const created = await alice.request<WireTask>('tools/call', submit(args));
    expect(await decideChange(id, 'deny')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');

    const again = await alice.request<ToolResult>('tools/call', submit(args));
    expect(again.isError).toBe(true);
    expect(again.content[0]?.text).toMatch(
      /^Not run: change chg_\w+ was submitted under this change_id and its task ended without running it \(completed, denied-not-executed\)\..*new change_id/,
    );
    expect(again.structuredContent).toEqual({ change_id: id, outcome: 'not-executed' });
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.change_id === id)).toBe(false);
    expect(stack.changes.executionsOf(id)).toBe(0);
  });

  it('a denied call does not claim its change_id: another caller then submits that change_id and it runs', async () => {
    const dave = await clientFor(stack, 'dave', { tasks: false });
    const alice = await clientFor(stack, 'alice', { tasks: false });
    const id = changeId();
    const denied = await dave.request<ToolResult>(
      'tools/call',
      submit({ change_id: id, kind: 'finance_transfer', risk: 'low', title: 'Forbidden change' }),
    );
    expect(denied.isError).toBe(true);
    expect(denied.content[0]?.text).toMatch(/cannot be approved/);
    const out = await alice.request<ToolResult>('tools/call', submit({ change_id: id, kind: 'finance_transfer', risk: 'low' }));
    expect(out.content[0]?.text).toMatch(/applied: 2 of 2 steps done/);
    expect(stack.changes.executionsOf(id)).toBe(1);
  });

  it('a call refused for lack of form elicitation does not claim its change_id either', async () => {
    const dave = await clientFor(stack, 'dave');
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    expect((await rpcError(dave.request('tools/call', submit(args)))).code).toBe(-32021);
    const r = await alice.request<InputRequired>('tools/call', submit(args));
    expect(r.resultType).toBe('input_required');
    // once alice's confirmed call has its task, the change_id is hers: dave is refused
    const created = await alice.request<WireTask>('tools/call', {
      ...submit(args),
      inputResponses: confirm('approve'),
      requestState: r.requestState,
    });
    expect(created.resultType).toBe('task');
    const daveWithForm = await clientFor(stack, 'dave', { elicitation: true });
    const refused = await daveWithForm.request<ToolResult>('tools/call', submit(args));
    expect(refused).toMatchObject({ isError: true, content: [{ text: expect.stringContaining('\n- change_id: ') }] });
    await waitForTerminal(alice, created.taskId);
  });

  it('a confirmation answer with a field the form did not ask for is refused with -32602 at that field, and nothing runs', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const id = changeId();
    const args = { change_id: id, kind: 'finance_transfer', risk: 'medium' };
    const r = await alice.request<InputRequired>('tools/call', submit(args));
    const err = await rpcError(
      alice.request('tools/call', {
        ...submit(args),
        inputResponses: { confirmation: { action: 'accept', content: { decision: 'approve', approver: 'bob' } } },
        requestState: r.requestState,
      }),
    );
    expect(err.code).toBe(-32602);
    expect(err.data).toMatchObject({ issues: [{ path: 'confirmation', message: expect.stringMatching(/approver/) }] });
    expect(stack.changes.executionsOf(id)).toBe(0);
  });
});
