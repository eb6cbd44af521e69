// Scope: call records (src/policy/call-records.ts) and `countersign policy replay` over them, as real
// processes against a real Temporal dev server and the whole stack over HTTP, with the official MCP
// SDK client making the traffic: an allowed call (runs inline), a plainly denied one and a
// requestable one; the allowed and denied ones are recorded in COUNTERSIGN_CALL_RECORD_DIR, the
// requestable one only in its workflow, and a candidate that lowers the limit shows the allowed call
// becoming requestable.
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { ReplayReport } from '../../src/policy/replay.js';
import type { Stack } from '../../src/stack.js';
import { countersignCli, startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
let config: Config;
let client: Client;
const recordDir = mkdtempSync(join(tmpdir(), 'countersign-call-records-'));
const memo = `records ${randomUUID()}`;

const cli = (args: string[]) =>
  countersignCli(['policy', ...args], {
    COUNTERSIGN_DATA_DIR: config.COUNTERSIGN_DATA_DIR,
    COUNTERSIGN_POLICY_DIR: config.COUNTERSIGN_POLICY_DIR,
    COUNTERSIGN_CALL_RECORD_DIR: recordDir,
    TEMPORAL_ADDRESS: stack.urls.temporal,
  });

/** `line`'s payload as if sealed under a key id no longer in the ring (`retired-key`). */
function foreignKey(line: Record<string, unknown>): Record<string, unknown> {
  const payload = line['payload'] as { metadata: Record<string, string>; data: string };
  return { payload: { ...payload, metadata: { ...payload.metadata, 'encryption-key-id': Buffer.from('retired-key').toString('base64') } } };
}

/** The live policies with the wire_transfer limit lowered from 25,000 to 500. */
function lowerLimit(): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-candidate-'));
  for (const f of readdirSync(config.COUNTERSIGN_POLICY_DIR)) copyFileSync(join(config.COUNTERSIGN_POLICY_DIR, f), join(dir, f));
  const file = join(dir, 'wire_transfer.cedar');
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace('amount.greaterThan(decimal("25000.00"))', 'amount.greaterThan(decimal("500.00"))'),
  );
  return dir;
}

beforeAll(async () => {
  config = testConfig({ COUNTERSIGN_CALL_RECORD_DIR: recordDir });
  stack = await startTestStack(config);
  const token = await stack.issuer.mintToken({ sub: 'alice' });
  client = new Client({ name: 'call-records-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const allowed = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-200', amount: 1_000, memo } });
  expect(allowed.isError).toBeFalsy();
  const denied = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-666', amount: 500, memo } });
  expect(denied.isError).toBe(true);
  const requestable = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 30_000, memo } });
  expect(JSON.stringify(requestable.content)).toContain('approval');
  for (let i = 0; i < 100; i++) {
    let n = 0;
    for await (const _ of stack.temporal.workflow.list({ query: "WorkflowType = 'approvalWorkflow'" })) n++;
    if (n >= 1) break;
    await new Promise((r) => setTimeout(r, 200));
  }
}, 120_000);
afterAll(async () => {
  await client?.close();
  await stack?.stop();
});

describe('call records and policy replay', () => {
  it('the allowed and the denied call are recorded with their arguments encrypted: no argument value is in the files', () => {
    const files = readdirSync(recordDir).filter((f) => f.endsWith('.jsonl'));
    expect(files).toHaveLength(1);
    const text = readFileSync(join(recordDir, files[0]!), 'utf8');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { tool: string; outcome: string });
    expect(lines.map((l) => [l.tool, l.outcome])).toEqual([
      ['wire_transfer', 'allowed'],
      ['wire_transfer', 'denied'],
    ]);
    for (const secret of ['acct-200', 'acct-666', memo]) expect(text).not.toContain(secret);
  });

  it('a candidate that lowers the limit shows the allowed call becoming requestable, read from the call records, and tallies each source', async () => {
    const r = await cli(['replay', '--policies', lowerLimit(), '--since', '1h', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as ReplayReport & { sources: Record<string, unknown> };
    expect(report.sources).toMatchObject({ workflowHistories: 1, callRecords: 2, unreadableCallRecords: 0 });
    expect(report.calls).toBe(3);
    expect(report.changes.map((c) => [c.principal.split('|')[1], `${c.from}→${c.to}`, c.count])).toEqual([
      ['alice', 'allowed→requestable', 1],
    ]);
    expect(report.transitions).toMatchObject({ 'allowed→requestable': 1, 'denied→denied': 1, 'requestable→requestable': 1 });
    expect(r.stdout).not.toContain('acct-200');
    const failing = await cli(['replay', '--policies', lowerLimit(), '--since', '1h', '--fail-on', 'allowed→*']);
    expect(failing.code).toBe(4);
    expect(failing.stdout).toContain('Read 1 call(s) from workflow histories (calls that opened a task) and 2 from call records');
  });
  it('a call record line the payload keys cannot read makes the replay exit 1, naming the count, unless --allow-unreadable covers it', async () => {
    const day = readdirSync(recordDir).find((f) => f.endsWith('.jsonl'));
    expect(day).toBeDefined();
    const file = join(recordDir, day!);
    const before = readFileSync(file, 'utf8');
    try {
      // a record sealed under a key that has since left the ring: its envelope names an unknown key id
      const line = JSON.parse(before.trim().split('\n')[0]!) as Record<string, unknown>;
      writeFileSync(file, `${before}${JSON.stringify({ ...line, ...foreignKey(line) })}\n`);
      const refused = await cli(['replay', '--policies', lowerLimit(), '--since', '1h']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/1 call record line\(s\) .* could not be read/);
      expect(refused.stdout).toContain('1 line(s) unreadable');
      const allowed = await cli(['replay', '--policies', lowerLimit(), '--since', '1h', '--allow-unreadable', '1']);
      expect(allowed.code).toBe(0);
    } finally {
      writeFileSync(file, before);
    }
  });
});
