// Scope: pre-task submission input over MRTR on the real stack: input_required with a sealed
// requestState, the retry that creates the task, and hostile retries (tampered, other principal,
// altered arguments, too many rounds), none of which submits or creates anything.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, type WireClient } from '../../src/client/wire-client.js';
import type { Stack } from '../../src/stack.js';
import { clientFor, pendingFor, startTestStack, testConfig, type WireTask } from '../support/stack-harness.js';

const JUSTIFY_POLICY = `
@id("justify-88888")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Transfers of 88,888 need a justified treasury approval.")
@submission_input("justification")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount == decimal("88888.0000") }
unless { context has approval && context.approval.state == "approved" };
`;

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig({}, { 'a-justify.cedar': JUSTIFY_POLICY }));
});
afterAll(async () => {
  await stack?.stop();
});

interface InputRequired {
  resultType: string;
  inputRequests: Record<string, { method: string; params: { mode: string; message: string; requestedSchema: { properties: Record<string, unknown> } } }>;
  requestState: string;
}

const call = (memo: string, amount = 88_888) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo } });
const answer = (text: string) => ({ justification: { action: 'accept', content: { justification: text } } });

async function rpcError(p: Promise<unknown>): Promise<McpRpcError> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(McpRpcError);
  return err as McpRpcError;
}

async function firstRound(client: WireClient, memo: string): Promise<InputRequired> {
  const r = await client.request<InputRequired>('tools/call', call(memo));
  expect(r.resultType).toBe('input_required');
  return r;
}

describe('submission input before the task (MRTR)', () => {
  it('a call needing a justification gets input_required with a form and a sealed requestState, and nothing is submitted', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    const r = await firstRound(alice, m);
    expect(r.inputRequests.justification?.method).toBe('elicitation/create');
    expect(r.inputRequests.justification?.params.mode).toBe('form');
    expect(Object.keys(r.inputRequests.justification?.params.requestedSchema.properties ?? {})).toEqual(['justification']);
    expect(r.requestState).toMatch(/^v1\./);
    expect(r.requestState).not.toContain('alice');
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
  });

  it('the retry with the requestState and a justification creates the task, and the approver sees the justification', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    const r = await firstRound(alice, m);
    const created = await alice.request<WireTask>('tools/call', { ...call(m), inputResponses: answer('Quarterly supplier settlement, ticket FIN-1234.'), requestState: r.requestState });
    expect(created.resultType).toBe('task');
    expect(created.status).toBe('working');
    const pending = (await pendingFor(stack, 'bob')).find((p) => p.arguments.memo === m) as { justification?: string } | undefined;
    expect(pending?.justification).toBe('Quarterly supplier settlement, ticket FIN-1234.');
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });

  it('a retry with altered arguments is refused with -32602 and creates no task', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    const r = await firstRound(alice, m);
    const err = await rpcError(alice.request('tools/call', { ...call(`${m} changed`), inputResponses: answer('A perfectly good reason here.'), requestState: r.requestState }));
    expect(err.code).toBe(-32602);
    expect(err.message).toMatch(/does not match the original call/);
    expect((await pendingFor(stack, 'bob')).some((p) => String(p.arguments.memo).startsWith(m))).toBe(false);
  });

  it('a tampered requestState and one replayed by another principal are refused with -32602', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const mallory = await clientFor(stack, 'mallory', { elicitation: true });
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    const r = await firstRound(alice, m);
    const flipped = r.requestState.slice(0, -2) + (r.requestState.endsWith('A') ? 'BB' : 'AA');
    const tampered = await rpcError(alice.request('tools/call', { ...call(m), inputResponses: answer('A perfectly good reason here.'), requestState: flipped }));
    expect(tampered.code).toBe(-32602);
    const replayed = await rpcError(mallory.request('tools/call', { ...call(m), inputResponses: answer('A perfectly good reason here.'), requestState: r.requestState }));
    expect(replayed.code).toBe(-32602);
    expect(replayed.message).toBe(tampered.message);
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
  });

  it('a client that cannot answer a form gets -32021 naming the elicitation capability, and nothing is submitted', async () => {
    const plain = await clientFor(stack, 'alice');
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    const err = await rpcError(plain.request('tools/call', call(m)));
    expect(err.code).toBe(-32021);
    expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
  });

  it('a retry without a usable answer asks again, and the fourth round is refused', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `mrtr ${randomUUID().slice(0, 8)}`;
    let state = (await firstRound(alice, m)).requestState;
    for (let round = 2; round <= 3; round++) {
      const again = await alice.request<InputRequired>('tools/call', { ...call(m), inputResponses: answer('too short'), requestState: state });
      expect(again.resultType).toBe('input_required');
      state = again.requestState;
    }
    const err = await rpcError(alice.request('tools/call', { ...call(m), inputResponses: answer('too short'), requestState: state }));
    expect(err.code).toBe(-32602);
    expect(err.message).toMatch(/too many input rounds/);
  });
});
