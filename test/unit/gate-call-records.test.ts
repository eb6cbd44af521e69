// Scope: which calls the gate (src/mcp/gate.ts, gate-outcomes.ts) hands to the call records
// (src/policy/call-records.ts), without Temporal: every call that ends without a task is recorded
// exactly once — allowed, plainly denied, an in-band confirmation answered (run inline or refused),
// a requestable call from a client without tasks, a submission limit — and a call still at an
// input round is not. Real Cedar over policies written here, a real recorder with the real payload
// codec in a temporary folder; the task service stands in only where a test names what it answers.
// That a call with a task is not recorded is proved end to end (test/e2e/policy-replay-call-records.test.ts).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '@countersign/http/log';
import type { Principal } from '../../src/auth/principal.js';
import { approvalWorkflowId, type CallBinding } from '../../src/binding/call-binding.js';
import { gateToolCall, type GateCall, type GateDeps } from '../../src/mcp/gate.js';
import type { SubmissionState } from '../../src/mcp/submission-input.js';
import { SubmissionLimitedError } from '../../src/mcp/submission-limiter.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import { createCallRecorder, readCallRecords, type CallRecorder } from '../../src/policy/call-records.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { AesGcmPayloadCodec } from '../../src/temporal/payload-codec.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import type { Tool } from '../../src/tools/tool.js';

const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice' };
const codec = new AesGcmPayloadCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });

const POLICIES = `
@id("permit-runs")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"runs");

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

/** A native tool over `{n: number}` that answers `ran` and counts its runs. */
function tool(name: string): Tool & { runs: number } {
  const t = {
    name,
    description: name,
    version: '1',
    inputSchema: z.object({ n: z.number() }),
    runs: 0,
    execute: async () => {
      t.runs++;
      return { content: [{ type: 'text' as const, text: 'ran' }] };
    },
  };
  return t;
}

/** A task service that answers only `referenceOf` and what `over` gives; anything else fails the test. */
function tasksWith(over: Partial<TaskService> = {}): TaskService {
  return new Proxy({} as TaskService, {
    get: (_t, name: keyof TaskService) => {
      if (name === 'referenceOf') return (b: CallBinding) => approvalWorkflowId('gate-call-records-test', b.digest);
      const given = over[name];
      if (given) return given;
      return () => {
        throw new Error(`the task service must not be used here (${String(name)})`);
      };
    },
  });
}

/** A gate over the tools `runs`, `confirmed`, `approved` and `blocked` (no permit: denied), recording into a fresh folder. */
async function gateWith(
  over: { tasks?: TaskService; noTasksResponse?: GateDeps['noTasksResponse'] } = {},
): Promise<{ deps: GateDeps; records: CallRecorder; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-gate-call-records-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'test.cedar'), POLICIES);
  const logger = createLogger({ level: 'silent' });
  const records = createCallRecorder({ dir: join(dir, 'records'), codec, instance: 'front-1', logger });
  return {
    deps: {
      tools: createToolRegistry(['runs', 'confirmed', 'approved', 'blocked'].map(tool)),
      pdp: await createCedarPdp({ policyDir: dir }),
      tasks: over.tasks ?? tasksWith(),
      logger,
      noTasksResponse: over.noTasksResponse ?? 'approval-tools',
      callRecords: records,
    },
    records,
    dir,
  };
}

function call(name: string, over: Partial<GateCall['mrtr']> = {}, clientSupportsTasks = true): GateCall & { minted: SubmissionState[] } {
  const minted: SubmissionState[] = [];
  return {
    principal: ALICE,
    name,
    arguments: { n: 7 },
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

/** The recorded [tool, outcome] pairs, in order, once every record is written. */
async function recorded(g: { records: CallRecorder; dir: string }): Promise<Array<[string, string]>> {
  await g.records.idle();
  const dir = join(g.dir, 'records');
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((f) =>
    readFileSync(join(dir, f), 'utf8')
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => {
        const r = JSON.parse(l) as { tool: string; outcome: string };
        return [r.tool, r.outcome] as [string, string];
      }),
  );
}

/** Two rounds of an in-band call: the first asks, the second answers with `answer`. */
async function confirmInBand(deps: GateDeps, answer: Record<string, unknown>): Promise<unknown> {
  const first = call('confirmed');
  expect(await gateToolCall(deps, first)).toMatchObject({ resultType: 'input_required' });
  const [sealed] = first.minted;
  return gateToolCall(deps, call('confirmed', { state: sealed, inputResponses: { confirmation: answer } }));
}

describe('the gate and the call records', () => {
  it('an allowed call and a plainly denied call are recorded once each, at the decision', async () => {
    const g = await gateWith();
    await gateToolCall(g.deps, call('runs'));
    await gateToolCall(g.deps, call('blocked'));
    expect(await recorded(g)).toEqual([
      ['runs', 'allowed'],
      ['blocked', 'denied'],
    ]);
  });

  it('an in-band call confirmed and run inline is recorded once, as in-band, over its two rounds; its first round alone records nothing', async () => {
    const g = await gateWith();
    const first = call('confirmed');
    await gateToolCall(g.deps, first);
    expect(await recorded(g)).toEqual([]);
    const out = await gateToolCall(
      g.deps,
      call('confirmed', {
        state: first.minted[0],
        inputResponses: { confirmation: { action: 'accept', content: { decision: 'approve' } } },
      }),
    );
    expect(out).toMatchObject({ content: [{ type: 'text', text: 'ran' }] });
    expect(await recorded(g)).toEqual([['confirmed', 'in-band']]);
  });

  it.each([
    ['rejected', { action: 'accept', content: { decision: 'reject' } }],
    ['declined', { action: 'decline' }],
    ['cancelled', { action: 'cancel' }],
  ])('an in-band confirmation %s ends the call without a task: recorded once, as in-band', async (_how, answer) => {
    const g = await gateWith();
    expect(await confirmInBand(g.deps, answer)).toMatchObject({ isError: true });
    expect(await recorded(g)).toEqual([['confirmed', 'in-band']]);
  });

  it.each(['degraded-result', 'error'] as const)(
    'a requestable call from a client without tasks answered with %s opens no task: recorded as requestable',
    async (noTasksResponse) => {
      const g = await gateWith({ noTasksResponse });
      await gateToolCall(g.deps, call('approved', {}, false)).catch(() => undefined);
      expect(await recorded(g)).toEqual([['approved', 'requestable']]);
    },
  );

  it('a requestable call refused by a submission limit opens no task: recorded as requestable, and replay reads it back', async () => {
    const tasks = tasksWith({
      createOrJoin: async () => {
        throw new SubmissionLimitedError('too-many-pending');
      },
    });
    const g = await gateWith({ tasks });
    await gateToolCall(g.deps, call('approved'));
    expect(await recorded(g)).toEqual([['approved', 'requestable']]);
    const read = await readCallRecords(join(g.dir, 'records'), codec, 0);
    expect(read.calls.map((c) => [c.tool, c.arguments])).toEqual([['approved', { n: 7 }]]);
  });
});
