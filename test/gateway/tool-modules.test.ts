// Scope: a team's own tool modules named in the gateway configuration file (src/gateway/tool-modules.ts):
// listed and gated like native tools; a module that is not a usable tool stops start-up with every
// problem listed; and, on the real stack, a worker stops within its configured grace even while such a
// tool hangs, after which the approved task ends outcome-unknown and the tool is never run again.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayConfigError } from '../../src/gateway/config-file.js';
import { loadToolModules } from '../../src/gateway/tool-modules.js';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { HANG_STARTED } from './fixtures/hang-tool.js';

const HANG_MODULE = resolve(PROJECT_ROOT, 'test/gateway/fixtures/hang-tool.ts');

const HANG_POLICY = `
@id("hang-permit")
permit (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"hang_forever");

@id("hang-needs-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("This test tool needs treasury approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"hang_forever")
unless { context has approval && context.approval.state == "approved" };
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-tool-modules-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('tool modules', () => {
  it('a module whose default export is not a usable tool is refused with every problem and its path', async () => {
    const bad = join(dir, 'bad-tool.mjs');
    writeFileSync(bad, 'export default { name: "x__y", description: "", execute: 1 };\n');
    const missing = join(dir, 'missing.mjs');
    const err = await loadToolModules([bad, missing], { dataDir: dir }, 'countersign.json').then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GatewayConfigError);
    const issues = (err as GatewayConfigError).issues;
    expect(issues).toEqual(
      expect.arrayContaining([
        '$.toolModules[0]: name must not contain "__" (reserved for upstream tools)',
        '$.toolModules[0]: description must be a non-empty string',
        '$.toolModules[0]: execute must be a function',
        '$.toolModules[0]: inputSchema must be a zod schema',
      ]),
    );
    expect(issues.some((i) => i.startsWith('$.toolModules[1]: cannot import'))).toBe(true);
  });

  it('a factory module becomes a tool the gateway lists, and two modules with one tool name are refused', async () => {
    const [tool] = await loadToolModules([HANG_MODULE], { dataDir: dir }, 'countersign.json');
    expect(tool?.name).toBe('hang_forever');
    const twice = await loadToolModules([HANG_MODULE, HANG_MODULE], { dataDir: dir }, 'countersign.json').then(
      () => null,
      (e: unknown) => e as GatewayConfigError,
    );
    expect(twice?.issues).toEqual(['$.toolModules[1]: tool name hang_forever is used twice']);
  });
});

describe('a hung tool and a stopping worker', () => {
  let stack: Stack;
  beforeAll(async () => {
    const file = join(dir, 'countersign.json');
    writeFileSync(file, JSON.stringify({ toolModules: [HANG_MODULE], upstreams: [] }));
    stack = await startTestStack(
      testConfig(
        { COUNTERSIGN_CONFIG: file, COUNTERSIGN_EXECUTION_TIMEOUT_MS: 3_000, COUNTERSIGN_WORKER_SHUTDOWN_GRACE_MS: 1_000 },
        { 'a-hang.cedar': HANG_POLICY },
      ),
    );
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('the worker stops within its grace while the approved tool hangs; the task then ends outcome-unknown and the tool ran exactly once', async () => {
    const alice = await clientFor(stack, 'alice');
    const { tools } = await alice.request<{ tools: Array<{ name: string }> }>('tools/list');
    expect(tools.map((t) => t.name)).toContain('hang_forever');
    const m = `hang ${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', { name: 'hang_forever', arguments: { memo: m } });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const started = () =>
      ((globalThis as unknown as Record<string, string[] | undefined>)[HANG_STARTED] ?? []).filter((id) => id.startsWith(created.taskId));
    for (let i = 0; i < 200 && started().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(started()).toHaveLength(1);
    // without the grace this never resolves: the hung activity would hold the worker forever
    await stack.stopWorker();
    await stack.startWorker();
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('outcome-unknown');
    expect(started()).toHaveLength(1);
  });
});
