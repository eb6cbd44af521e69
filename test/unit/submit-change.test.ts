// Scope: seed 004's change gate without Temporal: the submit_change argument rules, idempotency by
// change_id in its register, paced steps with progress, the idempotency hook, the tiers of
// policies/submit_change.cedar, the @approval_mode annotation, and the reading of an in-band confirmation answer.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { openChangeStore } from '../../src/tools/change-store.js';
import { ChangeRequestSchema, createSubmitChangeTool } from '../../src/tools/submit-change.js';
import { ToolOutcomeUnknownError, type TaskView, type ToolProgress } from '../../src/tools/tool.js';
import { createCedarPdp, PolicyLoadError } from '../../src/policy/cedar-pdp.js';
import { readConfirmation } from '../../src/mcp/in-band-confirmation.js';
import type { ApprovalMaterial } from '../../src/policy/pdp.js';

const POLICY_DIR = fileURLToPath(new URL('../../policies', import.meta.url));
const alice = { iss: 'https://issuer.example', sub: 'alice' };
const change = (over: Record<string, unknown> = {}) => ({ change_id: 'chg_abcd1234', kind: 'db_migration', title: 'Add index', ...over });
const noWait = async () => undefined;

async function decide(args: Record<string, unknown>, approval?: ApprovalMaterial) {
  const pdp = await createCedarPdp({ policyDir: POLICY_DIR });
  const parsed = ChangeRequestSchema.parse(args);
  return pdp.evaluate({
    subject: alice,
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 'submit_change' },
    context: { arguments: parsed, ...(approval ? { approval } : {}) },
  });
}

describe('submit_change arguments (seed 004 ChangeRequest)', () => {
  it('accepts a minimal request and fills description "" and risk "medium"', () => {
    expect(ChangeRequestSchema.parse(change())).toMatchObject({ description: '', risk: 'medium' });
  });

  it('refuses a change_id off the chg_ pattern, an unknown kind, a too short or too long title, an unknown risk and unknown keys', () => {
    for (const bad of [
      change({ change_id: 'chg_abc' }),
      change({ change_id: 'CHG_ABCD1234' }),
      change({ kind: 'rename_table' }),
      change({ title: 'ab' }),
      change({ title: 'x'.repeat(121) }),
      change({ risk: 'critical' }),
      change({ extra: 1 }),
    ]) {
      expect(ChangeRequestSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('idempotency by change_id', () => {
  const noTask = async (): Promise<TaskView> => ({ open: false });
  const alice = { callerKey: 'a'.repeat(64), taskOf: noTask };
  const bob = { callerKey: 'b'.repeat(64), taskOf: noTask };
  const parse = (over: Record<string, unknown> = {}) => ChangeRequestSchema.parse(change(over));

  it('once a call proceeds and owns a change_id, the same body from the same caller is admitted again and a different body is refused at change_id', async () => {
    const tool = createSubmitChangeTool(openChangeStore(':memory:'), { stepMs: 0, sleep: noWait });
    expect(await tool.own!(parse(), alice)).toEqual({ ok: true, created: true });
    expect(await tool.admit!(parse({ risk: 'medium', description: '' }), alice)).toEqual({ ok: true });
    expect(await tool.admit!(parse({ title: 'Drop index' }), alice)).toMatchObject({ ok: false, path: 'change_id' });
  });

  it('the same body under an owned change_id from another caller is refused: it would be another task and a second execution', async () => {
    const tool = createSubmitChangeTool(openChangeStore(':memory:'), { stepMs: 0, sleep: noWait });
    await tool.own!(parse(), alice);
    expect(await tool.admit!(parse(), bob)).toMatchObject({ ok: false, path: 'change_id' });
    expect(await tool.own!(parse(), bob)).toMatchObject({ ok: false, path: 'change_id' });
  });

  it('admit records nothing: a caller whose call went no further leaves the change_id to the next caller', async () => {
    const tool = createSubmitChangeTool(openChangeStore(':memory:'), { stepMs: 0, sleep: noWait });
    expect(await tool.admit!(parse(), bob)).toEqual({ ok: true });
    expect(await tool.admit!(parse(), alice)).toEqual({ ok: true });
    expect(await tool.own!(parse(), alice)).toEqual({ ok: true, created: true });
    expect(await tool.admit!(parse(), bob)).toMatchObject({ ok: false });
  });

  it('an ownership nothing came of is given back, while one with a task or a claimed execution is kept', async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    await tool.own!(parse(), alice);
    await tool.disown!(parse(), bob); // not bob's to give back
    expect(await tool.admit!(parse(), bob)).toMatchObject({ ok: false });
    await tool.disown!(parse(), alice);
    expect(await tool.own!(parse(), bob)).toEqual({ ok: true, created: true });

    const withTask = parse({ change_id: 'chg_withtask1' });
    await tool.own!(withTask, alice);
    expect(await tool.own!(withTask, { callerKey: alice.callerKey, taskId: 'task-1' })).toEqual({ ok: true, created: false });
    await tool.disown!(withTask, alice);
    expect(await tool.admit!(withTask, bob)).toMatchObject({ ok: false });

    const withRun = parse({ change_id: 'chg_withrun01' });
    await tool.own!(withRun, alice);
    await tool.execute(withRun, { executionId: 'inline/1' });
    await tool.disown!(withRun, alice);
    expect(await tool.admit!(withRun, bob)).toMatchObject({ ok: false });
  });

  it('a second execution of one change_id applies no step and says the change was already applied', async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    const first = await tool.execute(parse(), { executionId: 'inline/1' });
    const seen: ToolProgress[] = [];
    const second = await tool.execute(parse(), { executionId: 't2/execution', taskId: 't2', progress: (p) => seen.push(p) });
    expect(first.isError).toBeUndefined();
    expect(second.isError).toBe(true);
    expect(second.content[0]?.text).toMatch(/^Not run again: change chg_abcd1234 was already applied under this change_id/);
    expect(seen).toEqual([]);
    expect(store.executionsOf('chg_abcd1234')).toBe(1);
  });

  it('a repeat after an inline run is answered with the recorded result, and after a failed run with an isError naming the failure', async () => {
    const store = openChangeStore(':memory:');
    let failing = false;
    const tool = createSubmitChangeTool(store, {
      stepMs: 0,
      sleep: async () => {
        if (failing) throw new Error('disk full');
      },
    });
    await tool.own!(parse(), alice);
    const out = await tool.execute(parse(), { executionId: 'inline/1' });
    expect(await tool.admit!(parse(), alice)).toEqual({ ok: 'answered', result: out });

    failing = true;
    const other = parse({ change_id: 'chg_failing01' });
    await tool.own!(other, alice);
    await expect(tool.execute(other, { executionId: 'inline/2' })).rejects.toThrow('disk full');
    const again = await tool.admit!(other, alice);
    expect(again).toMatchObject({ ok: 'answered', result: { isError: true, structuredContent: { outcome: 'failed', steps: 0 } } });
    if (again.ok === 'answered')
      expect(again.result.content[0]?.text).toMatch(/already ran under this change_id .* and failed after 0 of 5 steps/);
  });

  it('a claim left without an outcome by a stopped process is answered as running or outcome-unknown after a restart, and never run again', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-changes-')), 'changes.db');
    const before = openChangeStore(file);
    await createSubmitChangeTool(before, { stepMs: 0, sleep: noWait }).own!(parse(), alice);
    expect(before.begin('inline/crashed', 'chg_abcd1234', undefined)).toEqual({ claimed: true, stepsDone: 0 });
    before.stepApplied('inline/crashed', 2);
    before.close(); // the process stops here: claimed, two steps applied, no outcome

    const store = openChangeStore(file);
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    const answer = await tool.admit!(parse(), alice);
    expect(answer).toMatchObject({
      ok: 'answered',
      result: { isError: true, structuredContent: { outcome: 'running-or-unknown', steps: 2 } },
    });
    if (answer.ok === 'answered')
      expect(answer.result.content[0]?.text).toMatch(
        /no recorded outcome yet \(2 of 5 steps recorded\): it is still running, or it was interrupted/,
      );
    const rerun = await tool.execute(parse(), { executionId: 'inline/retry' });
    expect(rerun).toMatchObject({ isError: true, structuredContent: { outcome: 'running-or-unknown' } });
    expect(store.executionsOf('chg_abcd1234')).toBe(1);

    // past the tool's own time limit (at least five minutes) the claim is an interrupted run: outcome-unknown
    const later = new Date(Date.now() + 301_000);
    const afterLimit = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait, now: () => later });
    const late = await afterLimit.admit!(parse(), alice);
    expect(late).toMatchObject({ ok: 'answered', result: { isError: true, structuredContent: { outcome: 'outcome-unknown', steps: 2 } } });
    if (late.ok === 'answered')
      expect(late.result.content[0]?.text).toMatch(/was interrupted before it recorded an outcome .*: its outcome is unknown/);
    store.close();
  });
});

describe('paced execution with progress', () => {
  it('a database migration runs five steps, reports each as progress, and records the result', async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    const seen: ToolProgress[] = [];
    const out = await tool.execute(ChangeRequestSchema.parse(change()), { executionId: 'e1', taskId: 't1', progress: (p) => seen.push(p) });
    expect(seen.map((p) => `${p.step}/${p.of}`)).toEqual(['1/5', '2/5', '3/5', '4/5', '5/5']);
    expect(out.structuredContent).toEqual({ change_id: 'chg_abcd1234', kind: 'db_migration', steps: 5 });
    expect(store.executionsOf('chg_abcd1234')).toBe(1);
    expect(await tool.resolveExecution!('e1')).toEqual({ executed: true, result: out });
  });

  it('an aborted attempt applies no further step and ends outcome-unknown, not an execution error', async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    const abort = new AbortController();
    const seen: number[] = [];
    const run = tool.execute(ChangeRequestSchema.parse(change()), {
      executionId: 'e2',
      progress: (p) => {
        seen.push(p.step);
        if (p.step === 2) abort.abort();
      },
      signal: abort.signal,
    });
    await expect(run).rejects.toBeInstanceOf(ToolOutcomeUnknownError);
    expect(seen).toEqual([1, 2]);
    await expect(tool.resolveExecution!('e2')).rejects.toThrow(/partly applied/);
    await expect(tool.resolveExecution!('e2')).rejects.toBeInstanceOf(ToolOutcomeUnknownError);
  });

  it('the idempotency hook fences an execution that never began, and cannot tell for one begun and not completed', async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    expect(await tool.resolveExecution!('never')).toEqual({ executed: false });
    await expect(tool.execute(ChangeRequestSchema.parse(change()), { executionId: 'never' })).rejects.toMatchObject({ code: 'fenced' });
    store.begin('half', 'chg_abcd1234', undefined);
    await expect(tool.resolveExecution!('half')).rejects.toBeInstanceOf(ToolOutcomeUnknownError);
  });

  it("a run begun and not completed makes the resolution activity answer unknown at once, not a retried failure (the task ends outcome-unknown, never 'running' for the retry window)", async () => {
    const store = openChangeStore(':memory:');
    const tool = createSubmitChangeTool(store, { stepMs: 0, sleep: noWait });
    const acts = createActivities({ backend: undefined as never, pdp: undefined as never, tools: createToolRegistry([tool]) });
    const binding = createCallBinding({
      tool: 'submit_change',
      arguments: change(),
      principal: { iss: 'https://issuer.test', sub: 'alice' },
      toolDescriptorDigest: 'sha256:test',
    });
    const env = new MockActivityEnvironment();
    store.begin('half', 'chg_abcd1234', undefined);
    expect(await env.run(acts.resolveExecution, { binding, executionId: 'half' })).toEqual({ state: 'unknown' });
    expect(await env.run(acts.resolveExecution, { binding, executionId: 'never' })).toEqual({ state: 'not-executed' });
  });
});

describe('policies/submit_change.cedar tiers', () => {
  const approval: ApprovalMaterial = {
    id: 'a',
    approvedAt: '2026-01-01T00:00:00Z',
    approvedUntil: '2026-01-02T00:00:00Z',
    state: 'approved',
    approvers: ['bob'],
  };

  it('low risk is allowed', async () => {
    expect((await decide(change({ risk: 'low' }))).decision).toBe('allow');
  });

  it('medium risk is a requestable denial in band (the requester confirms)', async () => {
    const d = await decide(change({ risk: 'medium' }));
    expect(d).toMatchObject({ decision: 'deny', accessRequest: { approvalMode: 'in-band', policyId: 'submit-change-medium-risk' } });
  });

  it('high risk is a requestable denial for the change-advisory group, lifted by an approval', async () => {
    expect(await decide(change({ risk: 'high' }))).toMatchObject({
      decision: 'deny',
      accessRequest: { approverGroup: 'change-advisory', policyId: 'submit-change-high-risk' },
    });
    expect((await decide(change({ risk: 'high' }), approval)).decision).toBe('allow');
  });

  it('a production database migration goes out of band even at medium or low risk: the requester alone never lifts it', async () => {
    for (const risk of ['low', 'medium']) {
      const d = await decide(change({ risk, impact_scope: 'production' }));
      expect(d.decision).toBe('deny');
      if (d.decision === 'deny') {
        expect(d.accessRequest?.approvalMode).toBeUndefined();
        expect(d.accessRequest?.policyId).toBe('submit-change-production-migration');
      }
    }
  });
});

describe('@approval_mode annotation', () => {
  const forbid = (annotations: string) =>
    `@id("p") permit (principal, action, resource);\n${annotations}\nforbid (principal, action, resource) when { context.arguments.x == "y" };\n`;
  const load = (text: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-mode-'));
    fs.writeFileSync(path.join(dir, 'p.cedar'), text);
    return createCedarPdp({ policyDir: dir });
  };

  it('an in-band requestable forbid needs only @reason', async () => {
    await expect(load(forbid('@id("f") @requestable("true") @approval_mode("in-band") @reason("Confirm it.")'))).resolves.toBeDefined();
  });

  it('an unknown mode, a mode on a non-requestable forbid, and @submission_input with in-band are refused at load', async () => {
    await expect(load(forbid('@id("f") @requestable("true") @approval_mode("sideways") @reason("r")'))).rejects.toBeInstanceOf(
      PolicyLoadError,
    );
    await expect(load(forbid('@id("f") @approval_mode("in-band") @reason("r")'))).rejects.toThrow(/needs @requestable/);
    await expect(
      load(forbid('@id("f") @requestable("true") @approval_mode("in-band") @submission_input("justification") @reason("r")')),
    ).rejects.toThrow(/do not apply/);
  });
});

describe('in-band confirmation answers', () => {
  const accept = (content: unknown) => ({ confirmation: { action: 'accept', content } });

  it('an accepted answer off the form is invalid at the failing path: an unknown field, a decision other than approve / reject, a reason over 500 characters', () => {
    expect(readConfirmation(accept({ decision: 'approve', approver: 'bob' }))).toMatchObject({
      kind: 'invalid',
      issues: [{ path: 'confirmation', message: expect.stringMatching(/approver/) }],
    });
    expect(readConfirmation(accept({ decision: 'maybe' }))).toMatchObject({ kind: 'invalid', issues: [{ path: 'confirmation.decision' }] });
    expect(readConfirmation(accept({ decision: 'reject', reason: 'x'.repeat(501) }))).toMatchObject({
      kind: 'invalid',
      issues: [{ path: 'confirmation.reason' }],
    });
  });

  it('a well-formed answer is read as approve or reject with its reason; no answer is none', () => {
    expect(readConfirmation(accept({ decision: 'approve', reason: 'checked' }))).toEqual({ kind: 'approve', reason: 'checked' });
    expect(readConfirmation(accept({ decision: 'reject' }))).toEqual({ kind: 'reject' });
    expect(readConfirmation({})).toEqual({ kind: 'none' });
    expect(readConfirmation({ confirmation: { action: 'decline' } })).toEqual({ kind: 'refused', action: 'decline' });
  });
});
