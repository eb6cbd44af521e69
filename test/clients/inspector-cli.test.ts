// Scope: the MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12.0, `--cli`, default protocol
// era: legacy, i.e. `initialize` with 2025-11-25) run as a child process against the real stack:
// tools/list and an allowed call exit 0, and a requestable denial opens the approval
// (COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools, the default), which further CLI runs follow with
// the approval_status tool to approved-executed or denied-not-executed (docs/DESIGN.md §3;
// src/mcp/legacy-server.ts, src/mcp/approval-tools.ts).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { decide, startTestStack, testConfig } from '../support/stack-harness.js';

const inspectorBin = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json')),
  'clients',
  'launcher',
  'build',
  'index.js',
);

let stack: Stack;
let home: string;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
  home = mkdtempSync(join(tmpdir(), 'countersign-inspector-')); // its catalog and client config live under $HOME
});
afterAll(async () => {
  await stack?.stop();
});

/** Run the inspector CLI (asynchronously: the stack answers from this same process); resolves with exit code and output. */
function inspector(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [inspectorBin, '--cli', ...args],
      { env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') }, timeout: 90_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

type ToolResult = { content: Array<{ type: string; text?: string }>; isError?: boolean; structuredContent?: Record<string, unknown> };
type ApprovalState = { approvalId: string; status: string; outcome: string; disposition?: string; checkAgainAfterMs?: number };

/**
 * One `tools/call` through the CLI as `sub`; resolves with the printed result. The CLI prints an
 * `isError` result too, then exits 5 (its TOOL_ERROR); any other result exits 0.
 */
async function callTool(sub: string, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const token = await stack.issuer.mintToken({ sub });
  const r = await inspector([
    stack.urls.mcp,
    '--header',
    `Authorization: Bearer ${token}`,
    '--method',
    'tools/call',
    '--tool-name',
    name,
    '--tool-args-json',
    JSON.stringify(args),
    '--format',
    'json',
  ]);
  const { result } = JSON.parse(r.stdout) as { result: ToolResult };
  expect(r.code, r.stderr).toBe(result.isError === true ? 5 : 0);
  return result;
}

/** `approval_status` through the CLI until the approval leaves pending, at its suggested pace; at most `limit` runs. */
async function statusUntilDone(sub: string, approvalId: string, limit = 60): Promise<{ result: ToolResult; state: ApprovalState }> {
  for (let i = 0; i < limit; i++) {
    const result = await callTool(sub, 'approval_status', { approvalId });
    const state = result.structuredContent as unknown as ApprovalState;
    if (state.outcome !== 'pending') return { result, state };
    await new Promise((r) => setTimeout(r, state.checkAgainAfterMs ?? 200));
  }
  throw new Error(`approval ${approvalId} did not end`);
}

const transfer = (memo: string) => ({ to: 'acct-991', amount: 50_000, memo });
const text = (r: ToolResult) => r.content.map((c) => c.text ?? '').join('\n');

describe('MCP Inspector 2.12.0 --cli with default options against Countersign', () => {
  it('tools/list exits 0 and lists wire_transfer', async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const r = await inspector([stack.urls.mcp, '--header', `Authorization: Bearer ${token}`, '--method', 'tools/list', '--format', 'json']);
    expect(r.stderr).not.toMatch(/-32022/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).result.tools.map((t: { name: string }) => t.name)).toContain('wire_transfer');
  });

  it('an allowed call ($100 transfer) exits 0 with a non-error result', async () => {
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const args = JSON.stringify({ to: 'acct-100', amount: 100, memo: `inspector ${randomUUID().slice(0, 12)}` });
    const r = await inspector([
      stack.urls.mcp,
      '--header',
      `Authorization: Bearer ${token}`,
      '--method',
      'tools/call',
      '--tool-name',
      'wire_transfer',
      '--tool-args-json',
      args,
      '--format',
      'json',
    ]);
    expect(r.code).toBe(0);
    const { result } = JSON.parse(r.stdout); // --format json: {result}
    expect(result.isError).toBe(false);
    expect(result.content.length).toBeGreaterThan(0);
  });

  it('$50,000 transfer → an isError result (exit 5) naming the approval id; approved → approval_status shows approved-executed and exactly one ledger row', async () => {
    const memo = `inspector ${randomUUID().slice(0, 12)}`;
    const opened = await callTool('alice', 'wire_transfer', transfer(memo));
    expect(opened.isError).toBe(true);
    const { approvalId } = opened.structuredContent as unknown as ApprovalState;
    expect(text(opened)).toContain(approvalId);
    expect(text(opened)).toMatch(/approval_status/);
    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await statusUntilDone('alice', approvalId);
    expect(done.result.isError).toBe(false);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'executed', disposition: 'approved-executed' });
    expect(stack.ledger.countByTask(approvalId)).toBe(1);
  });

  it('denied → approval_status shows denied-not-executed, the tool did not run, no ledger row', async () => {
    const memo = `inspector ${randomUUID().slice(0, 12)}`;
    const { approvalId } = (await callTool('alice', 'wire_transfer', transfer(memo))).structuredContent as unknown as ApprovalState;
    expect(await decide(stack, memo, 'deny', 'carol')).toBe(200);
    const done = await statusUntilDone('alice', approvalId);
    expect(done.state).toMatchObject({ status: 'completed', outcome: 'not-executed', disposition: 'denied-not-executed' });
    expect(text(done.result)).toMatch(/did not run/);
    expect(stack.ledger.countByTask(approvalId)).toBe(0);
  });
});
