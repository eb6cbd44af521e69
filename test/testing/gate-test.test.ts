// Scope: `countersign/testing` from a consumer's side (imported by its package name): this
// repository's own policies, wire_transfer and the example filesystem upstream, on the
// time-skipping test server with a scripted approver. Proves the sentences teams will write.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateTest, type GateTest } from 'countersign/testing';
import { openLedger } from '../../src/tools/ledger.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';

const DAY = 86_400_000;
let gate: GateTest;

beforeAll(async () => {
  gate = await startGateTest({
    policies: 'policies',
    tools: [createWireTransferTool(openLedger(':memory:'))],
    gatewayConfig: 'countersign.example.json',
    // Rules by what the request says: first match decides; a request no rule matches is never answered.
    approver: [
      { when: (r) => r.arguments['memo'] === 'approve', decide: 'approve', approvers: ['bob'] },
      { when: (r) => r.arguments['memo'] === 'deny', decide: 'deny' },
      { when: (r) => r.arguments['memo'] === 'approve-in-8-days', decide: 'approve', afterMs: 8 * DAY },
      { when: (r) => r.tool === 'fs__write_file', decide: 'approve' },
      { decide: 'never' },
    ],
  });
});
afterAll(async () => {
  await gate?.close();
});

describe('countersign/testing: a gate tested with time-skipping', () => {
  it('a transfer of 20,000 is allowed and runs inline, with no approval request', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-101', amount: 20_000, memo: 'inline' });
    expect(out.kind).toBe('allowed');
    expect(gate.executions.filter((e) => e.arguments['to'] === 'acct-101')).toHaveLength(1);
  });

  it('a transfer over 25,000 needs treasury, and expires unapproved after 7 days', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-102', amount: 30_000, memo: 'nobody answers' });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect(out.requests().map((r) => [r.approverGroup, r.reason])).toEqual([
      ['treasury', 'Transfers over $25,000 require treasury approval.'],
    ]);
    const done = await out.outcome();
    expect(done.disposition).toBe('denied-not-executed');
    expect(done.elapsedMs).toBeGreaterThanOrEqual(7 * DAY);
    expect(done.elapsedMs).toBeLessThan(8 * DAY);
    expect(gate.executions.filter((e) => e.arguments['to'] === 'acct-102')).toHaveLength(0);
  });

  it('an approved transfer over 25,000 runs once, under its task', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-103', amount: 50_000, memo: 'approve' });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    const done = await out.outcome();
    expect(done.disposition).toBe('approved-executed');
    expect(gate.executions.filter((e) => e.arguments['to'] === 'acct-103')).toEqual([
      { tool: 'wire_transfer', arguments: { to: 'acct-103', amount: 50_000, memo: 'approve' }, taskId: out.taskId },
    ]);
  });

  it('a denied transfer does not run', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-104', amount: 50_000, memo: 'deny' });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect((await out.outcome()).disposition).toBe('denied-not-executed');
    expect(gate.executions.filter((e) => e.arguments['to'] === 'acct-104')).toHaveLength(0);
  });

  it('an approval given after the 7-day deadline is too late: the request has expired', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-105', amount: 50_000, memo: 'approve-in-8-days' });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect((await out.outcome()).disposition).toBe('denied-not-executed');
    expect(gate.executions.filter((e) => e.arguments['to'] === 'acct-105')).toHaveLength(0);
  });

  it('a transfer to a blocked account is denied and cannot be approved', async () => {
    const out = await gate.call('wire_transfer', { to: 'acct-666', amount: 10, memo: 'approve' });
    expect(out.kind).toBe('denied');
    if (out.kind === 'denied') expect(out.text).toContain('Transfers to this account are blocked.');
    expect(gate.requests.filter((r) => r.arguments['to'] === 'acct-666')).toHaveLength(0);
  });

  it('arguments the tool schema refuses are the isError result naming the path a client would get (SEP-1303), unknown tools the -32602 error', async () => {
    const refused = await gate.call('wire_transfer', { to: 'not-an-account', amount: 1 });
    expect(refused).toMatchObject({ kind: 'invalid-arguments', result: { isError: true } });
    expect(refused.kind === 'invalid-arguments' && refused.text).toMatch(
      /^Invalid arguments for wire_transfer; the tool did not run\.[^]*\n- to: /,
    );
    await expect(gate.call('no_such_tool', {})).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('unknown tool') });
  });

  it('the same call twice while pending is one task (dedup), from another caller a second one', async () => {
    const args = { to: 'acct-106', amount: 40_000, memo: 'pending' };
    const a = await gate.call('wire_transfer', args);
    const b = await gate.call('wire_transfer', args);
    const c = await gate.call('wire_transfer', args, { as: 'carol' });
    if (a.kind !== 'task' || b.kind !== 'task' || c.kind !== 'task') throw new Error('expected tasks');
    expect(b.taskId).toBe(a.taskId);
    expect(c.taskId).not.toBe(a.taskId);
    expect(await a.cancel()).toBe('cancelled');
    expect((await c.cancel()) as string).toBe('cancelled');
    expect((await a.outcome()).status).toBe('cancelled');
  });

  it('a destructive upstream tool (fs__write_file into the protected folder) runs once after approval', async () => {
    const path = join(gate.dataDir, 'files', 'protected', 'approved.txt');
    const out = await gate.call('fs__write_file', { path, content: 'written once' });
    if (out.kind !== 'task') throw new Error(`expected a task, got ${out.kind}`);
    expect(existsSync(path)).toBe(false);
    expect(out.requests()[0]?.toolInfo).toMatchObject({ upstream: 'fs', upstreamTool: 'write_file', hints: { destructiveHint: true } });
    const done = await out.outcome();
    expect(done.disposition).toBe('approved-executed');
    expect(readFileSync(path, 'utf8')).toBe('written once');
    expect(gate.executions.filter((e) => e.tool === 'fs__write_file' && e.arguments['path'] === path)).toHaveLength(1);
  });
});
