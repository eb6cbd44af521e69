// Scope: the risk engine end to end (real Temporal dev server, real HTTP, the operator's rules file
// in the data folder): rules decide tasks with no human, on arrival and on the scheduled pass, and
// the audit trail names the rule that decided.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_RULES_FILE } from '@countersign/approvals';
import type { Stack } from '../../src/stack.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

const RULES = {
  riskIntervalMs: 1000,
  risk: [
    {
      id: 'small-known-destination',
      tool: 'wire_transfer',
      when: [
        { field: 'arguments.amount', lt: 30_000 },
        { field: 'arguments.to', in: ['acct-payroll', 'acct-rent'] },
      ],
      decision: 'approve',
      comment: 'under 30,000 to an allow-listed account',
    },
    {
      id: 'new-account',
      tool: 'wire_transfer',
      when: [{ field: 'arguments.to', in: ['acct-new-77'] }],
      decision: 'deny',
      comment: 'destination account is new',
    },
  ],
};

let stack: Stack;
let rulesFile: string;
beforeAll(async () => {
  const config = testConfig();
  rulesFile = join(config.COUNTERSIGN_DATA_DIR, APPROVAL_RULES_FILE);
  writeFileSync(rulesFile, JSON.stringify(RULES));
  stack = await startTestStack(config);
});
afterAll(async () => {
  await stack?.stop();
});

const memo = () => `risk-${randomUUID().slice(0, 8)}`;
const requestOf = async (m: string) =>
  (await stack.approvals.store.listResolved({}, 500)).find((r) => r.body.context.arguments['memo'] === m);

describe('risk engine', () => {
  it('a rule approving small transfers to allow-listed accounts resolves the task on arrival with no human: approved-executed, rule in the audit trail', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-payroll', amount: 28_000, memo: m },
    });
    expect(created.resultType).toBe('task'); // over 25,000: policy asked for approval
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
    const record = (await requestOf(m))!;
    expect(record.approval?.approvers).toEqual(['risk-engine']);
    expect((await stack.approvals.store.auditTrail(record.id)).map((e) => [e.event, e.actor, e.via, e.rule])).toEqual([
      ['submitted', 'alice', 'client', null],
      ['approved', 'risk-engine', 'risk-engine', 'small-known-destination'],
    ]);
  });

  it('a rule denying transfers to a new account resolves the task as denied-not-executed, recording the rule', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-new-77', amount: 50_000, memo: m },
    });
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(0);
    expect((await stack.approvals.store.auditTrail((await requestOf(m))!.id)).at(-1)).toMatchObject({
      event: 'denied',
      actor: 'risk-engine',
      rule: 'new-account',
      comment: 'destination account is new',
    });
  });

  it('a request no rule matches waits; a rule the operator adds later decides it on the scheduled pass', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-rent', amount: 45_000, memo: m },
    });
    expect((await alice.request<WireTask>('tasks/get', { taskId: created.taskId })).status).toBe('working');
    const pending = (await stack.approvals.store.listPending({})).find((r) => r.body.context.arguments['memo'] === m);
    expect(pending?.status).toBe('pending');
    writeFileSync(
      rulesFile,
      JSON.stringify({
        ...RULES,
        risk: [
          ...RULES.risk,
          {
            id: 'rent-up-to-50k',
            when: [
              { field: 'arguments.to', eq: 'acct-rent' },
              { field: 'arguments.amount', lte: 50_000 },
            ],
            decision: 'approve',
          },
        ],
      }),
    );
    // the stack's sweeper re-reads the file and re-evaluates pending requests (riskIntervalMs 1 s)
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect((await stack.approvals.store.auditTrail(pending!.id)).at(-1)).toMatchObject({
      event: 'approved',
      actor: 'risk-engine',
      rule: 'rent-up-to-50k',
    });
  });
});
