// Scope: src/mcp/gate.ts and gate-outcomes.ts without Temporal: the branches of the gate's outcome
// handlers that no end-to-end test reaches — an allowed tool that throws (also a value that is not
// an Error), a tool whose `own` refuses, an in-band confirmation answered off its form, the fourth
// in-band round, and a submission limit that gives the tool's key back — and which calls the gate
// hands to the call records (src/policy/call-records.ts, a real recorder with the real payload
// codec): every call that ends without a task, exactly once. Real Cedar over policies written here, native tools defined
// here; the task service stands in only where a test names what it answers (else it must not be used).
// That a call with a task is not recorded is proved end to end (test/e2e/policy-replay-call-records.test.ts).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Principal } from '../../src/auth/principal.js';
import { approvalWorkflowId, type CallBinding } from '../../src/binding/call-binding.js';
import { createLogger } from '@countersign/http/log';
import { gateToolCall, type GateCall, type GateDeps } from '../../src/mcp/gate.js';
import type { SubmissionState } from '../../src/mcp/submission-input.js';
import { SubmissionLimitedError } from '../../src/mcp/submission-limiter.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import { createCallRecorder, readCallRecords, type CallRecorder } from '../../src/policy/call-records.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { AesGcmPayloadCodec } from '../../src/temporal/payload-codec.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { ToolAnswerDiscardedError, ToolNotExecutedError, ToolOutcomeUnknownError, type Tool } from '../../src/tools/tool.js';
import { META } from '../../workflows/types.js';

const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice' };
const Args = z.object({ n: z.number() });

const POLICIES = `
@id("permit-allowed")
permit (principal, action == Countersign::Action::"tools/call", resource)
when { resource == Countersign::Tool::"throws" || resource == Countersign::Tool::"refuses_own" };

@id("confirm-first")
@requestable("true")
@approval_mode("in-band")
@request_ttl("PT10M")
@reason("Confirm this first.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"confirmed");
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"confirmed");

@id("treasury-approves")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Treasury approves this.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"approved");
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"approved");
`;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A native tool over `Args`: `execute` as given, and a record of what the gate asked of it. */
function tool(name: string, over: Partial<Tool> = {}): Tool & { calls: string[] } {
  const calls: string[] = [];
  return {
    name,
    description: name,
    version: '1',
    inputSchema: Args,
    execute: async () => {
      calls.push('execute');
      return { content: [{ type: 'text', text: 'ran' }] };
    },
    ...over,
    calls,
  };
}

/** A task service that answers only `referenceOf` and what `over` gives; anything else fails the test. */
function tasksWith(over: Partial<TaskService> = {}): TaskService {
  return new Proxy({} as TaskService, {
    get: (_t, name: keyof TaskService) => {
      if (name === 'referenceOf') return (b: CallBinding) => approvalWorkflowId('gate-outcomes-test', b.digest);
      const given = over[name];
      if (given) return given;
      return () => {
        throw new Error(`the task service must not be used here (${String(name)})`);
      };
    },
  });
}

async function gateWith(
  tools: Tool[],
  tasks: TaskService = tasksWith(),
  over: Pick<Partial<GateDeps>, 'noTasksResponse' | 'callRecords'> = {},
): Promise<GateDeps> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-gate-outcomes-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'test.cedar'), POLICIES);
  return {
    tools: createToolRegistry(tools),
    pdp: await createCedarPdp({ policyDir: dir }),
    tasks,
    logger: createLogger({ level: 'silent' }),
    noTasksResponse: 'approval-tools',
    ...over,
  };
}

function call(name: string, over: Partial<GateCall['mrtr']> = {}, clientSupportsTasks = true): GateCall & { minted: SubmissionState[] } {
  const minted: SubmissionState[] = [];
  return {
    principal: ALICE,
    name,
    arguments: { n: 1 },
    clientSupportsTasks,
    mrtr: {
      state: undefined,
      inputResponses: undefined,
      mint: async (s) => {
        minted.push(s);
        return `state-${s.round}`;
      },
      ...over,
    },
    minted,
  };
}

async function protocolError(p: Promise<unknown>): Promise<ProtocolError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProtocolError);
  return err as ProtocolError;
}

describe('the gate, allowed calls', () => {
  it('an allowed tool that throws is answered with an isError result saying it ran and failed, never as an error', async () => {
    const throws = tool('throws', {
      execute: async () => {
        throw new Error('boom');
      },
    });
    const out = await gateToolCall(await gateWith([throws]), call('throws'));
    expect(out).toEqual({
      content: [{ type: 'text', text: 'The tool ran and failed; a side effect may have occurred.' }],
      isError: true,
    });
  });

  it('a tool that throws something other than an Error (undefined) gets the same answer; before, its log line threw and the call failed', async () => {
    const throwsUndefined = tool('throws', {
      execute: async () => {
        throw undefined;
      },
    });
    const out = await gateToolCall(await gateWith([throwsUndefined]), call('throws'));
    expect(out).toMatchObject({ isError: true, content: [{ type: 'text', text: expect.stringContaining('ran and failed') }] });
  });

  it.each<[Error, string]>([
    [
      new ToolNotExecutedError('Not executed: the server is unreachable, so throws did not run.'),
      'Not executed: the server is unreachable, so throws did not run.',
    ],
    [new ToolAnswerDiscardedError('throws ran, but its answer was discarded.', 20, 10), 'throws ran, but its answer was discarded.'],
    [
      new ToolOutcomeUnknownError('no answer'),
      'The tool may or may not have run: no answer came, so whether it took effect is unknown and a side effect may have occurred.',
    ],
  ])(
    'an allowed tool that throws %s is answered with what happened: did not run, ran with its answer discarded, may have run',
    async (thrown, text) => {
      const throws = tool('throws', {
        execute: async () => {
          throw thrown;
        },
      });
      expect(await gateToolCall(await gateWith([throws]), call('throws'))).toEqual({ content: [{ type: 'text', text }], isError: true });
    },
  );

  it("an allowed call whose tool refuses to own it is an isError result naming the tool's path and reason (an input validation error, SEP-1303), and the tool does not run", async () => {
    const refuses = tool('refuses_own', { own: async () => ({ ok: false, path: 'n', message: 'already taken' }) });
    const out = await gateToolCall(await gateWith([refuses]), call('refuses_own'));
    expect(out).toEqual({
      isError: true,
      content: [
        {
          type: 'text',
          text: 'Invalid arguments for refuses_own; the tool did not run. Correct these and call it again:\n- n: already taken',
        },
      ],
    });
    expect(refuses.calls).toEqual([]);
  });
});

describe('the gate, in-band confirmation', () => {
  const state = (round: number): SubmissionState => ({ v: 1, digest: '', round });

  it('accepted content off the form is -32602 naming the path under confirmation, and the tool does not run', async () => {
    const confirmed = tool('confirmed');
    const deps = await gateWith([confirmed]);
    const first = await gateToolCall(deps, call('confirmed'));
    expect(first).toMatchObject({ resultType: 'input_required', requestState: 'state-1' });
    const c = call('confirmed');
    const sealed = { ...state(1), digest: (await firstRound(deps)).digest };
    const err = await protocolError(
      gateToolCall(deps, {
        ...c,
        mrtr: { ...c.mrtr, state: sealed, inputResponses: { confirmation: { action: 'accept', content: { decision: 'maybe' } } } },
      }),
    );
    expect(err.code).toBe(-32602);
    expect(JSON.stringify(err.data)).toContain('confirmation.decision');
    expect(confirmed.calls).toEqual([]);
  });

  it('an answer that never comes is asked for three rounds; the fourth is -32602', async () => {
    const deps = await gateWith([tool('confirmed')]);
    const { digest } = await firstRound(deps);
    for (const round of [1, 2]) {
      const c = call('confirmed', { state: { ...state(round), digest } });
      expect(await gateToolCall(deps, c)).toMatchObject({ resultType: 'input_required' });
      expect(c.minted).toEqual([{ v: 1, digest, round: round + 1 }]);
    }
    const err = await protocolError(gateToolCall(deps, call('confirmed', { state: { ...state(3), digest } })));
    expect(err.code).toBe(-32602);
  });
});

describe('the gate, a submission limit', () => {
  it("a new task refused by a limit is a non-requestable denial and gives the tool's key back", async () => {
    const events: string[] = [];
    const approved = tool('approved', {
      own: async (_args, ctx) => {
        events.push(ctx.taskId ? `own ${ctx.taskId}` : 'own');
        return { ok: true, created: true };
      },
      disown: async () => {
        events.push('disown');
      },
    });
    const tasks = tasksWith({
      createOrJoin: async () => {
        events.push('createOrJoin');
        throw new SubmissionLimitedError('too-many-pending');
      },
    });
    const out = await gateToolCall(await gateWith([approved], tasks), call('approved'));
    expect(out).toMatchObject({
      isError: true,
      _meta: { [META.authorization]: { remediation: 'unavailable' } },
    });
    expect(events).toEqual(['own', 'createOrJoin', 'disown']);
    expect(approved.calls).toEqual([]);
  });
});

/** The state the first in-band round seals for `confirmed` (its binding digest). */
async function firstRound(deps: GateDeps): Promise<SubmissionState> {
  const c = call('confirmed');
  await gateToolCall(deps, c);
  const [sealed] = c.minted;
  if (!sealed) throw new Error('the first round minted no requestState');
  return sealed;
}

describe('the gate and the call records', () => {
  const codec = new AesGcmPayloadCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });
  const tools = () => ['throws', 'confirmed', 'approved', 'blocked'].map((n) => tool(n));

  /** A recorder into a fresh folder, and what it has written as [tool, outcome] pairs once idle. */
  function recorder(): { records: CallRecorder; dir: string; written(): Promise<Array<[string, string]>> } {
    const dir = join(mkdtempSync(join(tmpdir(), 'countersign-gate-records-')), 'records');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const records = createCallRecorder({ dir, codec, instance: 'front-1', logger: createLogger({ level: 'silent' }) });
    return {
      records,
      dir,
      async written() {
        await records.idle();
        const files = (() => {
          try {
            return readdirSync(dir);
          } catch {
            return [];
          }
        })();
        return files.flatMap((f) =>
          readFileSync(join(dir, f), 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => {
              const r = JSON.parse(l) as { tool: string; outcome: string };
              return [r.tool, r.outcome] as [string, string];
            }),
        );
      },
    };
  }

  /** Two rounds of an in-band call: the first asks, the second answers with `answer`. */
  async function confirmInBand(deps: GateDeps, answer: Record<string, unknown>): Promise<unknown> {
    const first = call('confirmed');
    expect(await gateToolCall(deps, first)).toMatchObject({ resultType: 'input_required' });
    return gateToolCall(deps, call('confirmed', { state: first.minted[0], inputResponses: { confirmation: answer } }));
  }

  it('an allowed call and a plainly denied call are recorded once each, at the decision', async () => {
    const r = recorder();
    const deps = await gateWith(tools(), tasksWith(), { callRecords: r.records });
    await gateToolCall(deps, call('throws'));
    await gateToolCall(deps, call('blocked'));
    expect(await r.written()).toEqual([
      ['throws', 'allowed'],
      ['blocked', 'denied'],
    ]);
  });

  it('an in-band call confirmed and run inline is recorded once, as in-band, over its two rounds; its first round alone records nothing', async () => {
    const r = recorder();
    const deps = await gateWith(tools(), tasksWith(), { callRecords: r.records });
    const first = call('confirmed');
    await gateToolCall(deps, first);
    expect(await r.written()).toEqual([]);
    const out = await gateToolCall(
      deps,
      call('confirmed', {
        state: first.minted[0],
        inputResponses: { confirmation: { action: 'accept', content: { decision: 'approve' } } },
      }),
    );
    expect(out).toMatchObject({ content: [{ type: 'text', text: 'ran' }] });
    expect(await r.written()).toEqual([['confirmed', 'in-band']]);
  });

  it.each([
    ['rejected', { action: 'accept', content: { decision: 'reject' } }],
    ['declined', { action: 'decline' }],
    ['cancelled', { action: 'cancel' }],
  ])('an in-band confirmation %s ends the call without a task: recorded once, as in-band', async (_how, answer) => {
    const r = recorder();
    const deps = await gateWith(tools(), tasksWith(), { callRecords: r.records });
    expect(await confirmInBand(deps, answer)).toMatchObject({ isError: true });
    expect(await r.written()).toEqual([['confirmed', 'in-band']]);
  });

  it.each(['degraded-result', 'error'] as const)(
    'a requestable call from a client without tasks answered with %s opens no task: recorded as requestable',
    async (noTasksResponse) => {
      const r = recorder();
      const deps = await gateWith(tools(), tasksWith(), { callRecords: r.records, noTasksResponse });
      await gateToolCall(deps, call('approved', {}, false)).catch(() => undefined);
      expect(await r.written()).toEqual([['approved', 'requestable']]);
    },
  );

  it('a requestable call refused by a submission limit opens no task: recorded as requestable, and replay reads it back', async () => {
    const r = recorder();
    const tasks = tasksWith({
      createOrJoin: async () => {
        throw new SubmissionLimitedError('too-many-pending');
      },
    });
    const deps = await gateWith(tools(), tasks, { callRecords: r.records });
    await gateToolCall(deps, call('approved'));
    expect(await r.written()).toEqual([['approved', 'requestable']]);
    const read = await readCallRecords(r.dir, codec, 0);
    expect(read.calls.map((c) => [c.tool, c.arguments])).toEqual([['approved', { n: 1 }]]);
  });
});
