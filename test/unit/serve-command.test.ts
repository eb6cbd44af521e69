// Scope: `countersign serve` refuses bad invocations clearly (exit 2: missing or unknown role, an
// option of another role) and says in one line, naming the address, when a worker or MCP server
// cannot reach Temporal (exit 1), instead of a raw transport error.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serveOptionProblem } from '../../src/cli/serve-command.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { freePort } from '../../src/temporal/dev-server.js';

const dataDir = mkdtempSync(join(tmpdir(), 'countersign-serve-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function serve(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const { TEMPORAL_ADDRESS: _t, ...env } = process.env;
  const child = spawn(
    process.execPath,
    ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'src/cli.ts'), 'serve', ...args],
    {
      cwd: PROJECT_ROOT,
      env: {
        ...env,
        COUNTERSIGN_DATA_DIR: dataDir,
        COUNTERSIGN_PORT: String(await freePort()),
        COUNTERSIGN_APPROVALS_PORT: String(await freePort()),
        COUNTERSIGN_ISSUER_PORT: String(await freePort()),
        TEMPORAL_PORT: String(await freePort()), // nothing listens there
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stderr };
}

describe('countersign serve: option errors', () => {
  it('refuses a missing role, an unknown role, an option of another role and a bad timeout (pure check)', () => {
    expect(serveOptionProblem({})).toMatch(/--role is required: one of temporal, worker, mcp, approvals, issuer/);
    expect(serveOptionProblem({ role: 'workr' })).toBe('unknown role "workr": use one of temporal, worker, mcp, approvals, issuer');
    expect(serveOptionProblem({ role: 'mcp', approvalsUrl: 'http://x' })).toBe(
      '--approvals-url applies only to --role worker, not --role mcp',
    );
    expect(serveOptionProblem({ role: 'temporal', workflowBundle: 'b.json' })).toBe(
      '--workflow-bundle applies only to --role worker, not --role temporal',
    );
    expect(serveOptionProblem({ role: 'worker', callbackBaseUrl: 'http://x' })).toBe(
      '--callback-base-url applies only to --role mcp, not --role worker',
    );
    expect(serveOptionProblem({ role: 'approvals', backendCallTimeoutMs: '5000' })).toBe(
      '--backend-call-timeout-ms applies only to --role mcp, not --role approvals',
    );
    expect(serveOptionProblem({ role: 'mcp', backendCallTimeoutMs: '10' })).toMatch(/whole number >= 1000/);
    expect(serveOptionProblem({ role: 'worker', approvalsUrl: 'http://x', workflowBundle: 'b.json' })).toBeUndefined();
  });

  it('exits 2 with one clear line for a missing role, an unknown role and an option that does not apply', async () => {
    const results = await Promise.all([
      serve([]),
      serve(['--role', 'nope']),
      serve(['--role', 'issuer', '--approvals-url', 'http://127.0.0.1:1']),
    ]);
    expect(results.map((r) => r.code)).toEqual([2, 2, 2]);
    expect(results[0]!.stderr.trim()).toBe('countersign serve: --role is required: one of temporal, worker, mcp, approvals, issuer');
    expect(results[1]!.stderr.trim()).toBe('countersign serve: unknown role "nope": use one of temporal, worker, mcp, approvals, issuer');
    expect(results[2]!.stderr.trim()).toBe('countersign serve: --approvals-url applies only to --role worker, not --role issuer');
  }, 60_000);

  it('a worker or MCP server with Temporal down exits 1 with one line naming the address and hinting to start --role temporal, no raw transport error', async () => {
    for (const role of ['worker', 'mcp']) {
      const r = await serve(['--role', role]);
      expect(r.code, role).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines, role).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^countersign serve --role ${role}: cannot reach Temporal at 127\\.0\\.0\\.1:\\d+; start it first \\(countersign serve --role temporal\\)`,
        ),
      );
      expect(r.stderr).not.toMatch(/tonic|TransportError/i);
    }
  }, 60_000);
});
