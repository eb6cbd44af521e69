// Scope: the scripted approver and the call outcomes of countersign/testing beyond the basics: a
// policy that asks for a justification, decisions after a delay on the skipped clock, approval
// material that policies read (`context.approval.approvers`), and cancel from the caller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateTest, type GateTest, type Tool } from 'countersign/testing';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

const rotateKey: Tool = {
  name: 'rotate_key',
  description: 'Rotate a signing key.',
  inputSchema: z.strictObject({ keyId: z.string() }),
  version: '1',
  async execute(args) {
    return { content: [{ type: 'text', text: `rotated ${String(args['keyId'])}` }] };
  },
};

// A justification is asked for before the request is submitted; after an approval, only one by
// "lead" lets the call run (otherwise the re-evaluation denies: SEP-2848 §Completion).
const POLICY = `
@id("rotate-permit")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"rotate_key");

@id("rotate-needs-security")
@requestable("true")
@approver_group("security")
@request_ttl("P3D")
@submission_input("justification")
@reason("Key rotation needs security approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"rotate_key")
unless { context has approval && context.approval.state == "approved" };

@id("rotate-only-by-lead")
@reason("Only the security lead's approval counts.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"rotate_key")
when { context has approval && !context.approval.approvers.contains("lead") };
`;

let gate: GateTest;

beforeAll(async () => {
  gate = await startGateTest({
    policies: { 'keys.cedar': POLICY },
    tools: [rotateKey],
    approver: [
      { when: (r) => r.arguments['keyId'] === 'k-lead', decide: 'approve', afterMs: 2 * DAY, approvers: ['lead'] },
      { when: (r) => r.arguments['keyId'] === 'k-intern', decide: 'approve', approvers: ['intern'] },
      { when: (r) => r.arguments['keyId'] === 'k-late-deny', decide: 'deny', afterMs: 1 * DAY },
    ],
  });
});
afterAll(() => gate.close());

const justification = 'quarterly rotation, ticket SEC-42';

describe('countersign/testing: scripted decisions', () => {
  it('a policy that asks for a justification ends the call input-required without one, and nothing is submitted', async () => {
    const out = await gate.call('rotate_key', { keyId: 'k-none' });
    expect(out.kind).toBe('input-required');
    expect(gate.requests.filter((r) => r.arguments['keyId'] === 'k-none')).toHaveLength(0);
  });

  it('with a justification the request carries it; approved by the lead after 2 days, the key is rotated once', async () => {
    const out = await gate.call('rotate_key', { keyId: 'k-lead' }, { justification });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect(out.requests().map((r) => [r.approverGroup, r.justification])).toEqual([['security', justification]]);
    const done = await out.outcome();
    expect(done.disposition).toBe('approved-executed');
    expect(done.elapsedMs).toBeGreaterThanOrEqual(2 * DAY);
    expect(done.elapsedMs).toBeLessThan(3 * DAY);
    expect(gate.executions.filter((e) => e.arguments['keyId'] === 'k-lead')).toHaveLength(1);
  });

  it('an approval by someone the policy does not accept is re-evaluated to a denial and the tool does not run', async () => {
    const out = await gate.call('rotate_key', { keyId: 'k-intern' }, { justification });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect((await out.outcome()).disposition).toBe('denied-not-executed');
    expect(gate.executions.filter((e) => e.arguments['keyId'] === 'k-intern')).toHaveLength(0);
  });

  it('a denial after a day ends the task after a day, not before', async () => {
    const out = await gate.call('rotate_key', { keyId: 'k-late-deny' }, { justification });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    const done = await out.outcome();
    expect(done.disposition).toBe('denied-not-executed');
    expect(done.elapsedMs).toBeGreaterThanOrEqual(DAY);
    expect(done.elapsedMs).toBeLessThan(3 * DAY);
  });

  it('a request no rule matches is never answered: the caller cancels it, and the approver sees it cancelled', async () => {
    const out = await gate.call('rotate_key', { keyId: 'k-unmatched' }, { justification });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    await gate.sleep(HOUR);
    expect(await out.cancel()).toBe('cancelled');
    expect((await out.outcome()).status).toBe('cancelled');
    expect(out.requests().map((r) => [r.decision, r.state])).toEqual([['never', 'cancelled']]);
  });
});
