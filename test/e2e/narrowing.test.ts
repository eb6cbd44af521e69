// Scope: counter-proposals that narrow (docs/APPROVERS.md §Narrowing a request) end to end against
// a real stack, with the official requester stack (`@modelcontextprotocol/client` + ext-tasks) and
// the shipped client (`@countersign/client` WireClient): an approver answers a $50,000 transfer
// with $20,000; the first task ends denied-not-executed stating the narrower call and carrying
// `structuredContent.counterProposal`; the client's new call with those arguments is evaluated
// fresh (still a requestable denial here), approved at submission by the proposal, and runs once;
// an identical call after it is an ordinary request (single use); an expired proposal does
// nothing; a widening proposal is refused 400.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { jcsSha256 } from '@countersign/receipts';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient } from '@modelcontextprotocol/ext-tasks/client';
import { createRawDispatch, v2RequestFraming } from '@countersign/client/ext-tasks';
import type { Stack } from '../../src/stack.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { CHARGES } from './fixtures/card-charge-tool.js';
import { basic, clientFor, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

/**
 * Besides the default policies, treasury reviews every transfer over $10,000 (narrowable on its
 * amount too), so the narrowed $20,000 call is itself a requestable denial, evaluated fresh.
 */
const REVIEW_POLICY = `
@id("wire-transfer-review")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Transfers over $10,000 are reviewed by treasury.")
@narrowable("amount:max")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount.greaterThan(decimal("10000.00")) }
unless { context has approval && context.approval.state == "approved" };
`;

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const stacks: Stack[] = [];
let stack: Stack;
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => undefined);
  for (const s of stacks) await s.stop();
});

async function start(overrides: Record<string, unknown> = {}): Promise<Stack> {
  const s = await startTestStack(testConfig(overrides, { 'zz_review.cedar': REVIEW_POLICY }));
  stacks.push(s);
  return s;
}

const memo = () => `narrow ${randomUUID().slice(0, 12)}`;

/** The pending request whose memo is `m`, as bob (treasury) sees it (bounded wait). */
async function requestFor(m: string): Promise<{ id: string; arguments: Record<string, unknown> }> {
  for (let i = 0; i < 200; i++) {
    const found = (await pendingFor(stack, 'bob')).find((r) => r.arguments.memo === m);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no pending request for ${m}`);
}

/** Bob's decision on `id` through the approval API. */
async function decideById(id: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** `GET /access/v1/approvals/:id` as bob. */
async function detail(id: string): Promise<Record<string, unknown>> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/${id}`, { headers: { authorization: basic(bob.id, bob.secret) } });
  return (await res.json()) as Record<string, unknown>;
}

interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}
interface Proposal {
  tool: string;
  arguments: Record<string, unknown>;
  expiresAt: string;
}

/** `countersign approvals <args>` as bob, a real process against the stack's approval service. */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'src', 'cli.ts'), 'approvals', ...args],
      {
        cwd: PROJECT_ROOT,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          COUNTERSIGN_APPROVALS_URL: stack.urls.approvals,
          COUNTERSIGN_APPROVER: `bob:${bob.secret}`,
        },
      },
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
  });
}

/** The ledger's rows of task `taskId` (amounts in cents). */
const ledgerRows = (taskId: string) => stack.ledger.list().filter((e) => e.taskId === taskId);

/** A $50,000 wire_transfer by alice through the shipped client, pending approval: the client, its memo, the task, the request. */
async function pendingTransfer() {
  const alice = await clientFor(stack, 'alice');
  const m = memo();
  const created = await alice.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50_000, memo: m },
  });
  return { alice, m, created, original: await requestFor(m) };
}

/** Bob narrows `original` to amount 20,000 over the API; the original task (`taskId`) as it ends. */
async function narrowTo20000(
  alice: Awaited<ReturnType<typeof clientFor>>,
  original: Awaited<ReturnType<typeof requestFor>>,
  taskId: string,
) {
  await decideById(original.id, { decision: 'narrow', proposed_arguments: { ...original.arguments, amount: 20_000 } });
  return waitForTerminal(alice, taskId);
}

describe('a counter-proposal through the official SDK client', () => {
  beforeAll(async () => {
    stack = await start();
  });

  it('the first task ends denied-not-executed with the counter-proposal; the narrowed call is evaluated fresh, permitted by it, and runs once', async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const info = { name: 'narrowing-e2e', version: '1.0.0' };
    const capabilities = { extensions: { [TASKS_EXTENSION]: {} } };
    const client = new Client(info, { versionNegotiation: { mode: 'auto' }, capabilities });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    const session = createTaskSessionFromClient(client, {
      endpointId: 'countersign-e2e',
      rawDispatch: createRawDispatch({ url: stack.urls.mcp, token }),
      v2RequestFraming: v2RequestFraming(info, capabilities),
    });
    closers.push(
      () => session.close(),
      () => client.close(),
    );
    const m = memo();
    const first = await session.callTool('wire_transfer', { to: 'acct-991', amount: 50_000, memo: m });
    if (first.kind !== 'task') throw new Error('expected a task');
    const original = await requestFor(m);
    expect(
      (await decideById(original.id, { decision: 'narrow', proposed_arguments: { ...original.arguments, amount: 20_000 } })).status,
    ).toBe(200);

    const denied = await first.result();
    expect(denied.status).toBe('completed');
    if (denied.status !== 'completed') return;
    const result = denied.result as ToolResult;
    expect(result._meta?.[DISPOSITION]).toBe('denied-not-executed');
    const text = result.content.map((c) => c.text ?? '').join('\n');
    expect(text).toContain('The approver would accept wire_transfer with amount 20000 (requested 50000)');
    const proposal = result.structuredContent?.['counterProposal'] as Proposal;
    expect(proposal).toMatchObject({ tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 20_000, memo: m } });
    expect(Date.parse(proposal.expiresAt)).toBeGreaterThan(Date.now());
    expect(stack.ledger.countByTask(first.handle.taskId)).toBe(0);

    const second = await session.callTool(proposal.tool, proposal.arguments as never);
    if (second.kind !== 'task') throw new Error('the narrowed call is a requestable denial of its own: expected a task');
    const ran = await second.result();
    expect(ran.status).toBe('completed');
    if (ran.status !== 'completed') return;
    expect((ran.result as ToolResult)._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledgerRows(second.handle.taskId).map((r) => r.amountCents)).toEqual([2_000_000]);

    // both requests' trails name each other
    const trail = (await detail(original.id))['counter_proposal'] as { proposed_by: string; used_by_request: string };
    expect(trail.proposed_by).toBe('bob');
    const permitted = (await detail(trail.used_by_request))['permitted_by'];
    expect(permitted).toEqual({ request_id: original.id, approver: 'bob' });
  });
});

describe('a counter-proposal through the shipped client', () => {
  beforeAll(async () => {
    stack = await start();
  });

  it('the narrowed call runs once; an identical call after it is an ordinary pending request (the permit is single use)', async () => {
    const { alice, m, created, original } = await pendingTransfer();
    const done = await narrowTo20000(alice, original, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    const proposal = (done.result as unknown as ToolResult).structuredContent?.['counterProposal'] as Proposal;
    expect(proposal.arguments).toEqual({ to: 'acct-991', amount: 20_000, memo: m });

    const narrowed = await alice.request<WireTask>('tools/call', { name: proposal.tool, arguments: proposal.arguments });
    expect(narrowed.resultType).toBe('task');
    const ran = await waitForTerminal(alice, narrowed.taskId);
    expect(ran.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(ledgerRows(narrowed.taskId).map((r) => r.amountCents)).toEqual([2_000_000]);

    const again = await alice.request<WireTask>('tools/call', { name: proposal.tool, arguments: proposal.arguments });
    expect(again.resultType).toBe('task');
    expect(again.taskId).not.toBe(narrowed.taskId);
    const pending = await requestFor(m);
    expect(pending.arguments['amount']).toBe(20_000);
    expect((await alice.request<WireTask>('tasks/get', { taskId: again.taskId })).status).toBe('working');
    await alice.request('tasks/cancel', { taskId: again.taskId });
    expect(stack.ledger.countByTask(again.taskId)).toBe(0);
  });

  it('a proposal widening the amount is refused 400 naming the field, and the request stays pending', async () => {
    const { alice, m, created, original } = await pendingTransfer();
    const refused = await decideById(original.id, { decision: 'narrow', proposed_arguments: { ...original.arguments, amount: 60_000 } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ type: 'urn:countersign:problem:invalid-narrowing' });
    expect(String(refused.body['detail'])).toContain('"amount" may only be lowered');
    expect((await requestFor(m)).id).toBe(original.id);
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });
});

describe('countersign approvals narrow', () => {
  it('proposes with --set amount=20000 (exit 0, the counter-proposal in words); a widening is exit 2 naming the field; show prints the trail', async () => {
    const { alice, created, original } = await pendingTransfer();
    const widened = await cli(['narrow', original.id, '--set', 'amount=60000']);
    expect(widened.code).toBe(2);
    expect(widened.stderr).toContain('"amount" may only be lowered');
    const narrowed = await cli(['narrow', original.id, '--set', 'amount=20000', '--comment', 'half now']);
    expect(narrowed.code).toBe(0);
    expect(narrowed.stdout).toMatch(
      new RegExp(`^${original.id} is now denied; counter-proposal: wire_transfer with amount 20000 \\(requested 50000\\), until `),
    );
    expect((await waitForTerminal(alice, created.taskId)).result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    const show = await cli(['show', original.id]);
    expect(show.stdout).toMatch(/ {2}narrowed {6}by bob: wire_transfer with amount 20000 \(requested 50000\) until .*; not taken up/);
    expect((await cli(['narrow', original.id, '--set', 'amount=10000'])).code).toBe(6);
  });
});

describe('an expired counter-proposal', () => {
  beforeAll(async () => {
    stack = await start({ COUNTERSIGN_PERMIT_TTL_MS: 1000 });
  });

  it('does nothing: the narrowed call made after it expired is an ordinary pending request', async () => {
    const { alice, m, created, original } = await pendingTransfer();
    const done = await narrowTo20000(alice, original, created.taskId);
    const proposal = (done.result as unknown as ToolResult).structuredContent?.['counterProposal'] as Proposal;
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(proposal.expiresAt) - Date.now()) + 200));
    const late = await alice.request<WireTask>('tools/call', { name: proposal.tool, arguments: proposal.arguments });
    expect((await requestFor(m)).arguments['amount']).toBe(20_000);
    expect((await alice.request<WireTask>('tasks/get', { taskId: late.taskId })).status).toBe('working');
    expect(((await detail(original.id))['counter_proposal'] as { used_by_request: string | null }).used_by_request).toBeNull();
    await alice.request('tasks/cancel', { taskId: late.taskId });
  });
});

/**
 * A card charge over 100 hides the merchant from approvers (`@sensitive`) and may be narrowed on its
 * amount; at most 100 another rule asks approval hiding nothing of it (the card number, writeOnly
 * in the tool's schema, is hidden by both).
 */
const CARD_POLICY = `
@id("card-charge-permit")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"card_charge");

@id("card-charge-large")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Card charges over 100 need treasury approval.")
@sensitive("/merchant")
@narrowable("amount:max")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"card_charge")
when { context.arguments.amount.greaterThan(decimal("100.00")) }
unless { context has approval && context.approval.state == "approved" };

@id("card-charge-small")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Card charges need treasury approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"card_charge")
when { context.arguments.amount.lessThanOrEqual(decimal("100.00")) }
unless { context has approval && context.approval.state == "approved" };
`;

describe('a counter-proposal on a call with a hidden field, whose narrower call falls under a rule that shows it', () => {
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-narrowing-'));
    const file = join(dir, 'countersign.json');
    writeFileSync(file, JSON.stringify({ toolModules: [resolve(PROJECT_ROOT, 'test/e2e/fixtures/card-charge-tool.ts')], upstreams: [] }));
    stack = await startTestStack(testConfig({ COUNTERSIGN_CONFIG: file }, { 'a-card.cedar': CARD_POLICY }));
    stacks.push(stack);
  });

  it('the call with the literal digest string in place of the hidden value does not consume the permit and does not run; the narrowed call with the real value is permitted and runs once', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = memo();
    const merchant = `Acme ${randomUUID().slice(0, 8)}`;
    const args = { merchant, amount: 120, card_number: '4111111111111111', memo: m };
    const created = await alice.request<WireTask>('tools/call', { name: 'card_charge', arguments: args });
    const original = await requestFor(m);
    expect(original.arguments['merchant']).toBe(`sha256:${jcsSha256(merchant)}`);
    expect((await decideById(original.id, { decision: 'narrow', proposed_arguments: { ...original.arguments, amount: 50 } })).status).toBe(
      200,
    );
    const done = await waitForTerminal(alice, created.taskId);
    const proposal = (done.result as unknown as ToolResult).structuredContent?.['counterProposal'] as Proposal;
    expect(proposal.arguments).toEqual({ ...args, amount: 50 });

    const charges = () =>
      (((globalThis as unknown as Record<string, unknown[] | undefined>)[CHARGES] ?? []) as Array<Record<string, unknown>>).filter(
        (c) => c['memo'] === m,
      );
    const forged = await alice.request<WireTask>('tools/call', {
      name: 'card_charge',
      arguments: { ...args, amount: 50, merchant: `sha256:${jcsSha256(merchant)}` },
    });
    expect(forged.resultType).toBe('task');
    const pendingForged = await requestFor(m);
    expect(pendingForged.arguments['amount']).toBe(50);
    expect((await alice.request<WireTask>('tasks/get', { taskId: forged.taskId })).status).toBe('working');
    expect(((await detail(original.id))['counter_proposal'] as { used_by_request: string | null }).used_by_request).toBeNull();
    await alice.request('tasks/cancel', { taskId: forged.taskId });

    const honest = await alice.request<WireTask>('tools/call', { name: proposal.tool, arguments: proposal.arguments });
    const ran = await waitForTerminal(alice, honest.taskId);
    expect(ran.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(charges()).toEqual([{ ...args, amount: 50 }]);
  });
});
