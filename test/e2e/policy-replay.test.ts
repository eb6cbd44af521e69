// Scope: `countersign policy validate | replay` as real processes (tsx src/cli.ts) against a real
// Temporal dev server and the whole stack over HTTP: the recorded traffic is made in the test by
// the official MCP SDK client (`@modelcontextprotocol/client`) calling the demo's wire_transfer;
// the candidate policies are real Cedar files, validated by Cedar against the shipped schema.
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { loadPolicySet } from '../../src/policy/cedar-pdp.js';
import type { ReplayReport } from '../../src/policy/replay.js';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { countersignCli, startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
let config: Config;
const closers: Array<() => Promise<void>> = [];
// every recorded call: 30,000 and 60,000 by alice, 40,000 by dave; all over the live 25,000 limit (requestable, treasury)
const CALLS: Array<{ sub: string; amount: number }> = [
  { sub: 'alice', amount: 30_000 },
  { sub: 'alice', amount: 60_000 },
  { sub: 'dave', amount: 40_000 },
];

/** A candidate folder: the live policies with `edit` applied to wire_transfer.cedar, and `extra` files. */
function candidate(edit: (text: string) => string, extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-candidate-'));
  for (const f of readdirSync(config.COUNTERSIGN_POLICY_DIR)) copyFileSync(join(config.COUNTERSIGN_POLICY_DIR, f), join(dir, f));
  const file = join(dir, 'wire_transfer.cedar');
  writeFileSync(file, edit(readFileSync(file, 'utf8')));
  for (const [name, text] of Object.entries(extra)) writeFileSync(join(dir, name), text);
  return dir;
}

// the limit raised to 45,000 (the 30,000 and 40,000 calls run) and transfers over 50,000 refused outright (the 60,000 call)
const raisedLimit = (t: string) => t.replace('amount.greaterThan(decimal("25000.00"))', 'amount.greaterThan(decimal("45000.00"))');
const HARD_CAP = `@id("wire-transfer-hard-cap")
@reason("Transfers over $50,000 are not made by agents.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount.greaterThan(decimal("50000.00")) };
`;

const cli = (args: string[]) =>
  countersignCli(['policy', ...args], {
    COUNTERSIGN_DATA_DIR: config.COUNTERSIGN_DATA_DIR,
    COUNTERSIGN_POLICY_DIR: config.COUNTERSIGN_POLICY_DIR,
    TEMPORAL_ADDRESS: stack.urls.temporal,
  });

beforeAll(async () => {
  config = testConfig();
  stack = await startTestStack(config);
  for (const c of CALLS) {
    const token = await stack.issuer.mintToken({ sub: c.sub });
    const client = new Client({ name: 'policy-replay-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    );
    closers.push(() => client.close());
    // without the tasks extension the approval is opened and followed through approval_status (an isError result naming it)
    const r = await client.callTool({
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: c.amount, memo: `replay ${randomUUID()}` },
    });
    expect(JSON.stringify(r.content)).toContain('approval');
  }
  // the runs are in Temporal's visibility store a moment after they start
  for (let i = 0; i < 100; i++) {
    let n = 0;
    for await (const _ of stack.temporal.workflow.list({ query: "WorkflowType = 'approvalWorkflow'" })) n++;
    if (n >= CALLS.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
}, 120_000);
afterAll(async () => {
  for (const c of closers) await c();
  await stack?.stop();
});

describe('policy replay over traffic recorded by the real stack', () => {
  it('a candidate that raises the limit and caps large transfers reports alice requestable→allowed and requestable→denied, dave requestable→allowed, as JSON', async () => {
    const r = await cli(['replay', '--policies', candidate(raisedLimit, { 'hard_cap.cedar': HARD_CAP }), '--since', '1h', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as ReplayReport;
    expect(report.calls).toBe(3);
    expect(report.changed).toBe(3);
    expect(report.changes.map((c) => [c.tool, c.principal.split('|')[1], `${c.from}→${c.to}`, c.count])).toEqual([
      ['wire_transfer', 'alice', 'requestable→allowed', 1],
      ['wire_transfer', 'alice', 'requestable→denied', 1],
      ['wire_transfer', 'dave', 'requestable→allowed', 1],
    ]);
    const denied = report.changes[1]!.examples[0]!;
    expect(denied.live).toEqual({ outcome: 'requestable', approverGroup: 'treasury', policyIds: ['wire-transfer-over-limit'] });
    expect(denied.candidate).toEqual({ outcome: 'denied', policyIds: ['wire-transfer-hard-cap', 'wire-transfer-over-limit'] });
    expect(denied.ref).toMatch(/\S/);
    expect(denied).not.toHaveProperty('bindingDigest');
    // the report names calls, never their arguments
    expect(r.stdout).not.toContain('acct-991');
    expect(r.stdout).not.toContain('replay ');
  });

  it('the table lists each change per tool and principal with an example, the totals and the schema the candidate was validated with', async () => {
    const r = await cli(['replay', '--policies', candidate(raisedLimit, { 'hard_cap.cedar': HARD_CAP }), '--since', '1h']);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^TOOL\s+PRINCIPAL\s+CHANGE\s+CALLS$/);
    expect(lines.filter((l) => /^wire_transfer\s/.test(l)).map((l) => l.replace(/\S+\|/, '').split(/\s+/))).toEqual([
      ['wire_transfer', 'alice', 'requestable→allowed', '1'],
      ['wire_transfer', 'alice', 'requestable→denied', '1'],
      ['wire_transfer', 'dave', 'requestable→allowed', '1'],
    ]);
    expect(r.stdout).toContain(
      'requestable (treasury) [wire-transfer-over-limit] → denied [wire-transfer-hard-cap, wire-transfer-over-limit]',
    );
    expect(r.stdout).toContain('3 call(s) replayed, 3 would change, 0 unchanged.');
    // neither the candidate nor this live folder has a schema of its own: the product's is used, and named
    expect(lines).toContain(
      `The candidate validated against ${join(PROJECT_ROOT, 'policies', 'countersign.cedarschema')} (the product's schema).`,
    );
  });

  it('--fail-on requestable→denied and --max-changes below the count exit 4 naming the breach; a threshold not crossed exits 0', async () => {
    const dir = candidate(raisedLimit, { 'hard_cap.cedar': HARD_CAP });
    const failOn = await cli(['replay', '--policies', dir, '--since', '1h', '--fail-on', 'requestable→denied']);
    expect(failOn.code).toBe(4);
    expect(failOn.stderr).toContain('threshold crossed: 1 call(s) change requestable→denied (--fail-on)');
    const max = await cli(['replay', '--policies', dir, '--since', '1h', '--max-changes', '2']);
    expect(max.code).toBe(4);
    expect(max.stderr).toContain('threshold crossed: 3 call(s) change, more than --max-changes 2');
    const fine = await cli([
      'replay',
      '--policies',
      candidate(raisedLimit),
      '--since',
      '1h',
      '--fail-on',
      '*->denied',
      '--max-changes',
      '2',
    ]);
    expect(fine.stderr).toBe('');
    expect(fine.code).toBe(0);
    expect(fine.stdout).toContain('3 call(s) replayed, 2 would change, 1 unchanged.');
  });

  it('an unchanged candidate reports no change; --since after the calls replays none', async () => {
    const same = await cli(['replay', '--policies', config.COUNTERSIGN_POLICY_DIR, '--since', '1h', '--max-changes', '0']);
    expect(same.code).toBe(0);
    expect(same.stdout.split('\n')[0]).toBe('3 call(s) replayed, 0 would change, 3 unchanged.');
    // this stack keeps no call records: the tally says where the calls came from and what is not seen
    expect(same.stdout).toContain('Read 3 call(s) from workflow histories (calls that opened a task) and 0 from call records (none:');
    // now, after the calls (a time in the future is refused: exit 2, test/unit/policy-command.test.ts)
    const later = await cli(['replay', '--policies', config.COUNTERSIGN_POLICY_DIR, '--since', new Date().toISOString()]);
    expect(later.code).toBe(0);
    expect(later.stdout.split('\n')[0]).toBe('0 call(s) replayed, 0 would change, 0 unchanged.');
  });

  it("a candidate that does not validate against the schema exits 3 with Cedar's own message, before anything is replayed", async () => {
    const dir = candidate((t) => t.replace('context.arguments.amount.greaterThan', 'context.arguments.amout.greaterThan'));
    // Cedar's message for the same folder and schema, straight from the library
    const set = await loadPolicySet(dir);
    const schema = readFileSync(join(PROJECT_ROOT, 'policies', 'countersign.cedarschema'), 'utf8');
    const answer = cedar.validate({ validationSettings: { mode: 'strict' }, schema, policies: { staticPolicies: set.policies } });
    if (answer.type !== 'success') throw new Error('the schema does not parse');
    expect(answer.validationErrors).toHaveLength(1);
    const message = answer.validationErrors[0]!.error.message;
    expect(message).toContain('amout');

    for (const args of [
      ['replay', '--policies', dir, '--since', '1h', '--json'],
      ['validate', '--policies', dir],
    ]) {
      const r = await cli(args);
      expect(r.code).toBe(3);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`error: wire_transfer.cedar: policy "wire-transfer-over-limit": ${message}`);
    }
  });

  it('a Cedar parse error of the candidate is shown with its line and column and exits 3', async () => {
    const r = await cli(['replay', '--policies', candidate((t) => `${t}\nforbid (principal, action, resource) when { ;`), '--since', '1h']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/Cedar parse error in wire_transfer\.cedar: .* at \d+:\d+/);
  });

  it('the live folder validates against the shipped schema', async () => {
    const r = await cli(['validate', '--policies', join(PROJECT_ROOT, 'policies')]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
  });
});
