// Scope: src/mcp/task-projection.ts — workflow TaskSnapshot → SEP-2663 wire task (CreateTaskResult, tasks/get), the SEP-2643 envelope and the terminal results of workflows/results.ts.
import { DENIAL_REASONS } from '../support/snapshot-fixture.js';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createTaskResult, getTaskResult } from '../../src/mcp/task-projection.js';
import { deniedResult, executedResult, executionErrorResult, outcomeUnknownResult } from '../../workflows/results.js';
import type { Disposition, Phase, StoredCallToolResult, TaskSnapshot } from '../../workflows/types.js';
import { workingSnapshot } from '../support/snapshot-fixture.js';

// `_meta` keys as the SEP spells them (not imported, so a renamed constant is caught).
const AUTHZ = 'io.modelcontextprotocol/authorization';
const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const MIR = 'io.modelcontextprotocol/model-immediate-response';

const PENDING = { reason: 'insufficient_authorization', remediation: 'available', remediationHints: [{ type: 'task' }] };
const DENIED = { reason: 'insufficient_authorization', remediation: 'unavailable' };

const TASK_ID = '0123456789abcdef0123456789abcdef.786512e2-9e0d-44bd-8f29-789f320fe840';
const OWNER_KEY = createHash('sha256').update('https://issuer.test\u0000alice').digest('hex');
/** A raw reason the sanitizer must change, so its verbatim presence would be a leak. */
const RAW_REASON = 'Treasury <b>approval</b> "required" {policy:wire-7}';

const PHASES: Phase[] = ['submitting', 'awaiting-approval', 're-evaluating', 'retry-wait', 'resubmitting', 'executing'];

function snapshot(over: Partial<TaskSnapshot> = {}): TaskSnapshot {
  return workingSnapshot({ ownerKey: OWNER_KEY, policyReason: RAW_REASON, ...over });
}

function completed(result: StoredCallToolResult): TaskSnapshot {
  return snapshot({
    status: 'completed',
    phase: 'terminal',
    lastUpdatedAt: '2026-06-03T09:05:00.000Z',
    result,
    disposition: result._meta[DISPOSITION] as Disposition,
    claimed: result._meta[DISPOSITION] !== 'denied-not-executed',
  });
}

const meta = (o: Record<string, unknown>): Record<string, unknown> | undefined => o._meta as Record<string, unknown> | undefined;
const resultOf = (o: Record<string, unknown>): StoredCallToolResult => o.result as StoredCallToolResult;
const bodyText = (r: StoredCallToolResult): string => r.content.map((c) => c.text).join('\n');

/** Every terminal result kind, with what the SEP says it must be (written here, not read from the code). */
const TERMINAL_CASES: Array<{
  name: string;
  result: StoredCallToolResult;
  disposition: Disposition;
  envelope: boolean;
  isError: boolean;
  ran: 'yes' | 'no' | 'maybe';
}> = [
  {
    name: 'executed ok',
    result: executedResult({ content: [{ type: 'text', text: 'Transfer of $50,000 to acct-991 posted.' }] }),
    disposition: 'approved-executed',
    envelope: false,
    isError: false,
    ran: 'yes',
  },
  {
    name: 'executed, tool reported an error',
    result: executedResult({ content: [{ type: 'text', text: 'Insufficient funds.' }], isError: true }),
    disposition: 'execution-error',
    envelope: false,
    isError: true,
    ran: 'maybe',
  },
  { name: 'execution threw', result: executionErrorResult(), disposition: 'execution-error', envelope: false, isError: true, ran: 'maybe' },
  { name: 'outcome unknown', result: outcomeUnknownResult(), disposition: 'outcome-unknown', envelope: false, isError: true, ran: 'maybe' },
  ...DENIAL_REASONS.map((r) => ({
    name: `denied (${r})`,
    result: deniedResult(r),
    disposition: 'denied-not-executed' as const,
    envelope: true,
    isError: true,
    ran: 'no' as const,
  })),
];

describe('CreateTaskResult for a requestable denial (SEP-2848 §Denied-but-requestable returns a task)', () => {
  it('returns resultType "task", status working and a human-readable statusMessage', () => {
    const out = createTaskResult(TASK_ID, snapshot());
    expect(out.resultType).toBe('task');
    expect(out.taskId).toBe(TASK_ID);
    expect(out.status).toBe('working');
    expect(typeof out.statusMessage).toBe('string');
    expect((out.statusMessage as string).length).toBeGreaterThan(10);
    expect(out.statusMessage).toMatch(/has not run/);
  });

  it('includes the SEP-2643 envelope {insufficient_authorization, available, task hint} in _meta', () => {
    const out = createTaskResult(TASK_ID, snapshot());
    expect(meta(out)?.[AUTHZ]).toEqual(PENDING);
  });

  it('MAY include a model-immediate-response string in _meta; here it says the call is pending', () => {
    const mir = meta(createTaskResult(TASK_ID, snapshot()))?.[MIR];
    expect(typeof mir).toBe('string');
    expect(mir).toMatch(/pending/);
    expect(mir).not.toMatch(/completed|executed|done|succeeded/i);
  });

  it('suggests a poll interval and carries the task timestamps and retention', () => {
    const out = createTaskResult(TASK_ID, snapshot());
    expect(out).toMatchObject({ createdAt: '2026-06-02T10:30:00.000Z', lastUpdatedAt: '2026-06-02T10:30:00.000Z', ttlMs: 604_800_000 });
    expect(out.pollIntervalMs).toBeTypeOf('number');
    expect(out).not.toHaveProperty('result');
    expect(out).not.toHaveProperty('error');
  });

  it('a null ttlMs (unlimited, SEP-2663) is kept as null, not dropped', () => {
    const out = createTaskResult(TASK_ID, snapshot({ ttlMs: null }));
    expect(out).toHaveProperty('ttlMs', null);
  });

  it('a dedup hit on an already-terminal task carries neither the pending envelope nor a model-immediate-response', () => {
    const out = createTaskResult(TASK_ID, completed(deniedResult('backend-denied')));
    expect(out.resultType).toBe('task');
    expect(out.status).toBe('completed');
    expect(out).not.toHaveProperty('_meta');
    expect(out).not.toHaveProperty('pollIntervalMs');
  });
});

describe('tasks/get: the envelope is repeated while the task is non-terminal', () => {
  it('MUST repeat that envelope on every tasks/get result while the task is non-terminal (every phase, working and input_required)', () => {
    for (const status of ['working', 'input_required'] as const) {
      for (const phase of PHASES) {
        const out = getTaskResult(TASK_ID, snapshot({ status, phase, generation: 2 }));
        expect(out.status, `${status}/${phase}`).toBe(status);
        expect(meta(out)?.[AUTHZ], `${status}/${phase}`).toEqual(PENDING);
        expect(out.pollIntervalMs, `${status}/${phase}`).toBeTypeOf('number');
        expect(out, `${status}/${phase}`).not.toHaveProperty('result');
      }
    }
  });

  it('a client resuming with only the taskId reads the same classification as CreateTaskResult gave', () => {
    const s = snapshot();
    expect(meta(getTaskResult(TASK_ID, s))?.[AUTHZ]).toEqual(meta(createTaskResult(TASK_ID, s))?.[AUTHZ]);
  });

  it('projections do not share the envelope object: mutating one result cannot change another task', () => {
    const a = getTaskResult(TASK_ID, snapshot());
    const envA = meta(a)?.[AUTHZ] as { remediation: string };
    try {
      envA.remediation = 'tampered';
    } catch {
      // A frozen envelope is fine too.
    }
    expect(meta(getTaskResult(TASK_ID, snapshot()))?.[AUTHZ]).toEqual(PENDING);
  });
});

describe('completed tasks (SEP-2848 §Execution disposition, §Completion)', () => {
  it('a completed task has no outer envelope and no pollIntervalMs, and carries result whose _meta has the disposition', () => {
    for (const c of TERMINAL_CASES) {
      const out = getTaskResult(TASK_ID, completed(c.result));
      expect(out.status, c.name).toBe('completed');
      expect(out, c.name).not.toHaveProperty('_meta');
      expect(out, c.name).not.toHaveProperty('pollIntervalMs');
      expect(out, c.name).not.toHaveProperty('error');
      expect(resultOf(out)._meta[DISPOSITION], c.name).toBe(c.disposition);
    }
  });

  it('a terminal denied-not-executed carries remediation "unavailable" and its content says the tool did not run', () => {
    for (const reason of DENIAL_REASONS) {
      const r = resultOf(getTaskResult(TASK_ID, completed(deniedResult(reason))));
      expect(r.isError, reason).toBe(true);
      expect(r._meta[AUTHZ], reason).toEqual(DENIED);
      expect(r._meta[AUTHZ], reason).not.toHaveProperty('remediationHints');
      expect(bodyText(r), reason).toMatch(/did not run/);
      expect(bodyText(r), reason).toMatch(/no side effect/);
    }
  });

  it('the envelope MUST NOT appear on an execution-error or outcome-unknown result; the body says the tool may have run', () => {
    for (const c of TERMINAL_CASES.filter((x) => x.ran === 'maybe')) {
      const out = getTaskResult(TASK_ID, completed(c.result));
      const r = resultOf(out);
      expect(r._meta, c.name).not.toHaveProperty([AUTHZ]);
      expect(JSON.stringify(out), c.name).not.toContain('insufficient_authorization');
      expect(bodyText(r), c.name).toMatch(/may have occurred|may or may not have run/);
      expect(bodyText(r), c.name).not.toMatch(/did not run|not executed|no side effect/i);
    }
  });

  it('body, disposition and envelope MUST agree for each disposition', () => {
    for (const c of TERMINAL_CASES) {
      const s = completed(c.result);
      const r = resultOf(getTaskResult(TASK_ID, s));
      const body = bodyText(r);
      expect(r._meta[DISPOSITION], c.name).toBe(c.disposition);
      expect(r.isError, c.name).toBe(c.isError);
      expect(body, c.name).toContain(`Outcome: ${c.disposition}.`);
      if (c.envelope) expect(r._meta[AUTHZ], c.name).toEqual(DENIED);
      else expect(r._meta, c.name).not.toHaveProperty([AUTHZ]);
      switch (c.ran) {
        case 'yes':
          expect(body, c.name).toMatch(/executed once/);
          expect(body, c.name).not.toMatch(/did not run|may have|error/);
          break;
        case 'no':
          expect(body, c.name).toMatch(/^Not executed:/);
          expect(body, c.name).toMatch(/did not run/);
          break;
        case 'maybe':
          expect(body, c.name).toMatch(/\bran\b|may or may not have run/);
          expect(body, c.name).not.toMatch(/did not run/);
          break;
      }
      // The statusMessage agrees with the disposition too.
      const msg = getTaskResult(TASK_ID, s).statusMessage as string;
      if (c.ran === 'no') expect(msg, c.name).toMatch(/did not run/);
      else expect(msg, c.name).not.toMatch(/did not run/);
    }
  });

  it("an executed result leads with the fixed sentence and keeps the tool's own content after it", () => {
    const tool = {
      content: [{ type: 'text' as const, text: 'Transfer of $50,000 to acct-991 posted.' }],
      structuredContent: { ledgerId: 'L-1' },
    };
    const r = resultOf(getTaskResult(TASK_ID, completed(executedResult(tool))));
    expect(r.content).toHaveLength(2);
    expect(r.content[0]?.text).toMatch(/^Approved and executed once\./);
    expect(r.content[1]).toEqual({ type: 'text', text: 'Transfer of $50,000 to acct-991 posted.' });
    expect(r.structuredContent).toEqual({ ledgerId: 'L-1' });
  });
});

describe('failed and cancelled tasks', () => {
  it('a failed task carries the SEP-2663 error object and no result, disposition or envelope', () => {
    const out = getTaskResult(
      TASK_ID,
      snapshot({ status: 'failed', phase: 'terminal', error: { code: -32603, message: 'Approval backend unavailable' } }),
    );
    expect(out.status).toBe('failed');
    expect(out.error).toEqual({ code: -32603, message: 'Approval backend unavailable' });
    expect(out).not.toHaveProperty('result');
    expect(out).not.toHaveProperty('_meta');
    expect(out).not.toHaveProperty('pollIntervalMs');
    expect(JSON.stringify(out)).not.toContain(DISPOSITION);
  });

  it('a failed task without a recorded error still carries a JSON-RPC internal error (-32603)', () => {
    const out = getTaskResult(TASK_ID, snapshot({ status: 'failed', phase: 'terminal' }));
    expect(out.error).toMatchObject({ code: -32603 });
    expect((out.error as { message: unknown }).message).toBeTypeOf('string');
  });

  it('a failed snapshot never exposes a result, even if one was stored', () => {
    const out = getTaskResult(TASK_ID, snapshot({ status: 'failed', phase: 'terminal', result: executionErrorResult() }));
    expect(out).not.toHaveProperty('result');
  });

  it('a cancelled task carries neither error nor result nor envelope', () => {
    const out = getTaskResult(TASK_ID, snapshot({ status: 'cancelled', phase: 'terminal' }));
    expect(out.status).toBe('cancelled');
    expect(out).not.toHaveProperty('error');
    expect(out).not.toHaveProperty('result');
    expect(out).not.toHaveProperty('_meta');
    expect(out).not.toHaveProperty('pollIntervalMs');
    expect(out.statusMessage).toMatch(/did not run/);
  });
});

describe('no internal state leaks to the client', () => {
  it('ownerKey and the raw policyReason never appear in any projected output', () => {
    const snaps: TaskSnapshot[] = [
      ...PHASES.map((phase) => snapshot({ phase })),
      snapshot({ status: 'input_required' }),
      ...TERMINAL_CASES.map((c) => completed(c.result)),
      snapshot({ status: 'failed', phase: 'terminal', error: { code: -32603, message: 'Internal error' } }),
      snapshot({ status: 'cancelled', phase: 'terminal' }),
    ];
    for (const s of snaps) {
      for (const out of [createTaskResult(TASK_ID, s), getTaskResult(TASK_ID, s)]) {
        const json = JSON.stringify(out);
        const label = `${s.status}/${s.phase}`;
        expect(json, label).not.toContain('ownerKey');
        expect(json, label).not.toContain(OWNER_KEY);
        expect(json, label).not.toContain('policyReason');
        expect(json, label).not.toContain(RAW_REASON);
        expect(json, label).not.toMatch(/<b>|\{policy:/);
      }
    }
  });
});

describe('progress of a long-running execution (docs/CHANGE-GATE.md §Progress)', () => {
  const PROGRESS = 'dev.countersign/progress';
  const executing = (label: string, step = 3, of = 5): TaskSnapshot => ({
    ...workingSnapshot({ phase: 'executing' }),
    claimed: true,
    progress: { step, of, label },
  });

  it('tasks/get of an executing task shows the step in statusMessage and in dev.countersign/progress, and says it has not finished', () => {
    const wire = getTaskResult(TASK_ID, executing('applying the migration'));
    expect(wire.statusMessage).toBe('Approved; the tool is running, step 3 of 5: applying the migration. It has not finished.');
    expect((wire._meta as Record<string, unknown>)[PROGRESS]).toEqual({
      progress: 3,
      total: 5,
      message: 'step 3 of 5: applying the migration',
    });
    expect((wire._meta as Record<string, unknown>)[AUTHZ]).toEqual(PENDING);
  });

  it('the last step still says the tool has not finished', () => {
    expect(getTaskResult(TASK_ID, executing('recording the change', 5, 5)).statusMessage).toMatch(
      /step 5 of 5: recording the change\. It has not finished\.$/,
    );
  });

  it('a tool label is sanitized: markup, quotes and periods are dropped and it is cut to 60 characters', () => {
    const wire = getTaskResult(TASK_ID, executing(`<b>done.</b> "completed" ${'x'.repeat(100)}`));
    const text = wire.statusMessage as string;
    expect(text).not.toMatch(/[<>"]/);
    expect(text).toMatch(/^Approved; the tool is running, step 3 of 5: b done \/b completed x+\. It has not finished\.$/);
    expect(((wire._meta as Record<string, { message: string }>)[PROGRESS]?.message.length ?? 0) <= 'step 3 of 5: '.length + 60).toBe(true);
  });

  it('no progress outside the executing phase or on a terminal task', () => {
    const waiting = { ...workingSnapshot(), progress: { step: 1, of: 5, label: 'x' } };
    expect((getTaskResult(TASK_ID, waiting)._meta as Record<string, unknown>)[PROGRESS]).toBeUndefined();
    const done: TaskSnapshot = {
      ...executing('x'),
      status: 'completed',
      phase: 'terminal',
      result: executedResult({ content: [{ type: 'text', text: 'ok' }] }),
      disposition: 'approved-executed',
    };
    expect(getTaskResult(TASK_ID, done)._meta).toBeUndefined();
  });
});

describe('a task created already executing (in-band confirmation, docs/CHANGE-GATE.md)', () => {
  it('its CreateTaskResult tells the model the call is running and has not finished, not that it awaits approval', () => {
    const created = createTaskResult(TASK_ID, { ...workingSnapshot({ phase: 'executing' }), claimed: true });
    const mir = (created._meta as Record<string, unknown>)[MIR] as string;
    expect(mir).toMatch(/running now and has not finished/);
    expect(mir).not.toMatch(/pending approval/);
  });
});
