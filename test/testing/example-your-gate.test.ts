// Scope: the complete example of docs/TESTING-YOUR-GATE.md, run as written (a test below checks the
// document still shows exactly this file): a team's own tool module and policy, tested with
// countersign/testing on the time-skipping test server.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateTest, type GateTest, type Tool } from 'countersign/testing';

const DAY = 86_400_000;

// The team's tool module: deletes a customer record (here, from a Set).
const customers = new Set(['cus-1', 'cus-2', 'cus-3', 'cus-vip']);
const deleteCustomer: Tool = {
  name: 'delete_customer',
  title: 'Delete customer',
  description: 'Delete a customer record and all its data.',
  inputSchema: z.strictObject({ customerId: z.string().regex(/^cus-[a-z0-9]+$/) }),
  version: '1',
  async execute(args) {
    customers.delete(String(args['customerId']));
    return { content: [{ type: 'text', text: `Deleted ${String(args['customerId'])}.` }] };
  },
};

// The team's policy: any deletion needs a support lead within 2 days; VIP customers are never deleted.
const POLICY = `
@id("delete-customer-permit")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"delete_customer");

@id("delete-customer-needs-lead")
@requestable("true")
@approver_group("support-leads")
@request_ttl("P2D")
@reason("Deleting a customer needs a support lead's approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"delete_customer")
unless { context has approval && context.approval.state == "approved" };

@id("delete-customer-never-vip")
@reason("VIP customers are never deleted by an agent.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"delete_customer")
when { context.arguments.customerId == "cus-vip" };
`;

let gate: GateTest;

beforeAll(async () => {
  gate = await startGateTest({
    policies: { 'customers.cedar': POLICY },
    tools: [deleteCustomer],
    approver: [
      { when: (r) => r.arguments['customerId'] === 'cus-1', decide: 'approve', afterMs: 3 * 3_600_000 },
      { when: (r) => r.arguments['customerId'] === 'cus-2', decide: 'deny' },
      { decide: 'never' }, // everything else: nobody answers
    ],
  });
});
afterAll(() => gate.close());

it('deleting a customer needs a support lead, and runs once after approval', async () => {
  const call = await gate.call('delete_customer', { customerId: 'cus-1' });
  if (call.kind !== 'task') throw new Error(`expected an approval task, got ${call.kind}`);
  expect(call.requests()[0]?.approverGroup).toBe('support-leads');
  const done = await call.outcome();
  expect(done.disposition).toBe('approved-executed');
  expect(customers.has('cus-1')).toBe(false);
  expect(gate.executions.filter((e) => e.arguments['customerId'] === 'cus-1')).toHaveLength(1);
});

it('a denied deletion does not run', async () => {
  const call = await gate.call('delete_customer', { customerId: 'cus-2' });
  if (call.kind !== 'task') throw new Error(`expected an approval task, got ${call.kind}`);
  expect((await call.outcome()).disposition).toBe('denied-not-executed');
  expect(customers.has('cus-2')).toBe(true);
});

it('a deletion nobody approves expires after 2 days and does not run', async () => {
  const call = await gate.call('delete_customer', { customerId: 'cus-3' });
  if (call.kind !== 'task') throw new Error(`expected an approval task, got ${call.kind}`);
  const done = await call.outcome(); // the test server skips the 2 days
  expect(done.disposition).toBe('denied-not-executed');
  expect(done.elapsedMs).toBeGreaterThanOrEqual(2 * DAY);
  expect(customers.has('cus-3')).toBe(true);
});

it('a VIP customer is denied outright: no approval can be requested', async () => {
  const call = await gate.call('delete_customer', { customerId: 'cus-vip' });
  expect(call.kind).toBe('denied');
  expect(gate.requests.filter((r) => r.arguments['customerId'] === 'cus-vip')).toHaveLength(0);
});

// Not part of a team's file: keeps docs/TESTING-YOUR-GATE.md showing exactly this example.
it('docs/TESTING-YOUR-GATE.md shows this file as its complete example', async () => {
  const { readFileSync } = await import('node:fs');
  const doc = readFileSync(new URL('../../docs/TESTING-YOUR-GATE.md', import.meta.url), 'utf8');
  const self = readFileSync(new URL(import.meta.url), 'utf8');
  const example = self.slice(self.indexOf('import {'), self.indexOf('// Not part of a team'));
  expect(doc).toContain(example.trimEnd());
});
