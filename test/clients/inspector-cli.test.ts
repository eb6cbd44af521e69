// Scope: the MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12.0, `--cli`, default protocol
// era: legacy, i.e. `initialize` with 2025-11-25) run as a child process against the real stack:
// tools/list and an allowed call exit 0 (DESIGN.md §8; src/mcp/legacy-server.ts).
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';

const inspectorBin = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector/package.json')), 'clients', 'launcher', 'build', 'index.js');

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
    execFile(process.execPath, [inspectorBin, '--cli', ...args], { env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json') }, timeout: 90_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

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
    const r = await inspector([stack.urls.mcp, '--header', `Authorization: Bearer ${token}`, '--method', 'tools/call', '--tool-name', 'wire_transfer', '--tool-args-json', args, '--format', 'json']);
    expect(r.code).toBe(0);
    const { result } = JSON.parse(r.stdout); // --format json: {result}
    expect(result.isError).toBe(false);
    expect(result.content.length).toBeGreaterThan(0);
  });
});
