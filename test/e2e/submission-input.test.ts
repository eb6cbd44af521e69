// Scope: pre-task submission input over MRTR on the real stack: input_required with a sealed
// requestState, the retry that creates the task, and hostile retries (tampered, other principal,
// altered arguments, too many rounds), none of which submits or creates anything.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpRpcError, type WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { clientFor, decide, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { JUSTIFY_POLICY, SECOND_APPROVAL_POLICY } from '../support/test-policies.js';

// Extra rules (test/support/test-policies.ts): 88,888 needs a justification before the task;
// 66,666 needs, after bob's approval, a second justified approval (by carol) asked for in-task.

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig({}, { 'a-justify.cedar': JUSTIFY_POLICY, 'b-second-approval.cedar': SECOND_APPROVAL_POLICY }));
});
afterAll(async () => {
  await stack?.stop();
});

interface InputRequired {
  resultType: string;
  inputRequests: Record<
    string,
    { method: string; params: { mode: string; message: string; requestedSchema: { properties: Record<string, unknown> } } }
  >;
  requestState: string;
}

const call = (memo: string, amount = 88_888) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo } });
const answer = (text: string, key = 'justification') => ({ [key]: { action: 'accept', content: { justification: text } } });

async function rpcError(p: Promise<unknown>): Promise<McpRpcError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
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
    const created = await alice.request<WireTask>('tools/call', {
      ...call(m),
      inputResponses: answer('Quarterly supplier settlement, ticket FIN-1234.'),
      requestState: r.requestState,
    });
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
    const err = await rpcError(
      alice.request('tools/call', {
        ...call(`${m} changed`),
        inputResponses: answer('A perfectly good reason here.'),
        requestState: r.requestState,
      }),
    );
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
    const tampered = await rpcError(
      alice.request('tools/call', { ...call(m), inputResponses: answer('A perfectly good reason here.'), requestState: flipped }),
    );
    expect(tampered.code).toBe(-32602);
    const replayed = await rpcError(
      mallory.request('tools/call', { ...call(m), inputResponses: answer('A perfectly good reason here.'), requestState: r.requestState }),
    );
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
      const again = await alice.request<InputRequired>('tools/call', {
        ...call(m),
        inputResponses: answer('too short'),
        requestState: state,
      });
      expect(again.resultType).toBe('input_required');
      state = again.requestState;
    }
    const err = await rpcError(alice.request('tools/call', { ...call(m), inputResponses: answer('too short'), requestState: state }));
    expect(err.code).toBe(-32602);
    expect(err.message).toMatch(/too many input rounds/);
  });

  it('a declined or cancelled justification ends the call: an isError result saying nothing was submitted and the tool did not run, never -32602 or another form', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    for (const action of ['decline', 'cancel'] as const) {
      const m = `mrtr-${action} ${randomUUID().slice(0, 8)}`;
      const r = await firstRound(alice, m);
      const out = await alice.request<{
        isError?: boolean;
        resultType?: string;
        content: Array<{ text: string }>;
        _meta?: Record<string, unknown>;
      }>('tools/call', {
        ...call(m),
        inputResponses: { justification: { action } },
        requestState: r.requestState,
      });
      expect(out.resultType).not.toBe('input_required');
      expect(out.isError).toBe(true);
      expect(out.content[0]?.text).toMatch(
        action === 'decline'
          ? /was declined, so no approval request was submitted and the tool did not run/
          : /was cancelled, so no approval request was submitted/,
      );
      expect(out._meta?.['io.modelcontextprotocol/authorization']).toMatchObject({ remediation: 'unavailable' });
      expect((await pendingFor(stack, 'bob')).some((p) => p.arguments.memo === m)).toBe(false);
    }
  });

  it('in-task input declined with tasks/update ends the task at once as denied-not-executed; no further request is submitted', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `in-task-decline ${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', call(m, 66_666));
    expect(await decide(stack, m, 'approve', 'bob')).toBe(200);
    let t = await alice.request<WireTask & { inputRequests?: Record<string, unknown> }>('tasks/get', { taskId: created.taskId });
    for (let i = 0; i < 100 && t.status !== 'input_required'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      t = await alice.request('tasks/get', { taskId: created.taskId });
    }
    const [key] = Object.keys(t.inputRequests ?? {});
    expect(
      await alice.request('tasks/update', { taskId: created.taskId, inputResponses: { [key!]: { action: 'decline' } } }),
    ).toMatchObject({ resultType: 'complete' });
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('denied-not-executed');
    expect(done.result?.content[0]?.text).toMatch(/declined/);
    expect((await pendingFor(stack, 'carol')).some((p) => p.arguments.memo === m)).toBe(false);
    expect(stack.ledger.countByTask(created.taskId)).toBe(0);
  });

  it('in-task input: a chained request asks for a justification via input_required, tasks/update answers it, and the second approval executes once', async () => {
    const alice = await clientFor(stack, 'alice', { elicitation: true });
    const m = `in-task ${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', call(m, 66_666));
    expect(created.resultType).toBe('task');
    expect(await decide(stack, m, 'approve', 'bob')).toBe(200);
    let t = await alice.request<WireTask & { inputRequests?: Record<string, { method: string }> }>('tasks/get', { taskId: created.taskId });
    for (let i = 0; i < 100 && t.status !== 'input_required'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      t = await alice.request('tasks/get', { taskId: created.taskId });
    }
    expect(t.status).toBe('input_required');
    expect(Object.keys(t.inputRequests ?? {})).toEqual(['justification-2']);
    expect(t.inputRequests?.['justification-2']?.method).toBe('elicitation/create');
    expect(t._meta?.['io.modelcontextprotocol/authorization']).toMatchObject({ remediation: 'available' });
    const short = await rpcError(
      alice.request('tasks/update', { taskId: created.taskId, inputResponses: answer('short', 'justification-2') }),
    );
    expect(short.code).toBe(-32602);
    expect(short.message).toBe(
      'Invalid params: inputResponses must answer the outstanding key: accept with a justification of 10 to 1000 characters, or decline or cancel',
    );
    const wrongKey = await rpcError(
      alice.request('tasks/update', { taskId: created.taskId, inputResponses: answer('Carol owns this supplier relationship.') }),
    );
    expect(wrongKey.message).toBe('Invalid params: inputResponses names a key that is not outstanding; read inputRequests from tasks/get');
    expect(
      await alice.request('tasks/update', {
        taskId: created.taskId,
        inputResponses: answer('Carol owns this supplier relationship.', 'justification-2'),
      }),
    ).toMatchObject({ resultType: 'complete' });
    let second: Array<{ arguments: Record<string, unknown>; justification?: string }> = [];
    for (let i = 0; i < 100 && second.length === 0; i++) {
      second = (await pendingFor(stack, 'carol')).filter((p) => p.arguments.memo === m) as typeof second;
      if (second.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(second[0]?.justification).toBe('Carol owns this supplier relationship.');
    expect(await decide(stack, m, 'approve', 'carol')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    // a task that is not waiting for input refuses tasks/update, a replay of the answered round included
    const late = await rpcError(
      alice.request('tasks/update', {
        taskId: created.taskId,
        inputResponses: answer('Carol owns this supplier relationship.', 'justification-2'),
      }),
    );
    expect(late.code).toBe(-32602);
    expect(late.message).toBe('Invalid params: the task has no outstanding input request');
  });
});
