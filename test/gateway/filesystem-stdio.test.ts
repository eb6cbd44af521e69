// Scope: the gateway end to end with the reference filesystem MCP server over stdio (and a tiny
// stdio server of our own for a tool that changes while a task is pending): tools/list, inline
// reads, approval-gated writes into the protected folder (approve, deny, changed arguments),
// argument validation, an unanswered approved call (outcome-unknown), and descriptor drift.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { clientFor, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideWhere, pendingForTool, writeGatewayConfig } from './gateway-support.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

const DRIFT_POLICY = `
@id("drift-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"drift");

@id("drift-destructive-needs-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Every destructive tool of the drift upstream needs approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"drift")
when { resource.destructiveHint }
unless { context has approval && context.approval.state == "approved" };
`;

let stack: Stack;
let files: string;
const driftDir = mkdtempSync(join(tmpdir(), 'countersign-drift-'));

beforeAll(async () => {
  const configFile = writeGatewayConfig([
    {
      name: 'fs',
      transport: 'stdio',
      command: process.execPath,
      args: [join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'), '${dataDir}/files'],
      createDirs: ['${dataDir}/files/protected'],
      tools: 'all',
    },
    {
      name: 'drift',
      transport: 'stdio',
      command: process.execPath,
      args: ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'test/gateway/fixtures/drift-server.ts')],
      cwd: PROJECT_ROOT,
      env: { DRIFT_STATE_DIR: { fromEnv: 'COUNTERSIGN_TEST_DRIFT_DIR' } },
      callTimeoutMs: 1500,
    },
  ]);
  process.env.COUNTERSIGN_TEST_DRIFT_DIR = driftDir;
  const config = testConfig({ COUNTERSIGN_CONFIG: configFile }, { 'a-drift.cedar': DRIFT_POLICY });
  files = join(config.COUNTERSIGN_DATA_DIR, 'files');
  stack = await startTestStack(config);
});
afterAll(async () => {
  await stack?.stop();
});

const unique = () => randomUUID().slice(0, 12);

interface ListedTool {
  name: string;
  title?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}

describe('gateway: the reference filesystem server over stdio', () => {
  it('tools/list serves native and upstream tools, namespaced, with the upstream descriptors whole', async () => {
    const alice = await clientFor(stack, 'alice');
    const { tools } = await alice.request<{ tools: ListedTool[] }>('tools/list');
    const names = tools.map((t) => t.name);
    expect(names).toContain('wire_transfer');
    expect(names).toEqual(expect.arrayContaining(['fs__read_text_file', 'fs__write_file', 'fs__move_file', 'drift__op']));
    const write = tools.find((t) => t.name === 'fs__write_file')!;
    expect(write.title).toBe('Write File');
    expect(write.annotations).toEqual({ readOnlyHint: false, idempotentHint: true, destructiveHint: true, openWorldHint: false });
    expect(write.inputSchema).toMatchObject({ type: 'object', required: ['path', 'content'] });
    expect(write.outputSchema).toMatchObject({ type: 'object', required: ['content'] });
    expect(write).not.toHaveProperty('execution'); // task support is Countersign's, not the upstream's
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_.-]{1,128}$/);
  });

  it('a read that policy allows runs inline and its result passes through whole', async () => {
    const alice = await clientFor(stack, 'alice');
    const text = `hello ${unique()}`;
    writeFileSync(join(files, 'readme.txt'), text);
    const r = await alice.request<{
      content: Array<{ type: string; text: string }>;
      structuredContent?: Record<string, unknown>;
      isError?: boolean;
    }>('tools/call', {
      name: 'fs__read_text_file',
      arguments: { path: join(files, 'readme.txt') },
    });
    expect(r.isError).toBe(false);
    expect(r.content).toEqual([{ type: 'text', text }]);
    expect(r.structuredContent).toEqual({ content: text });
  });

  it('a write outside the protected folder is allowed inline', async () => {
    const alice = await clientFor(stack, 'alice');
    const path = join(files, `open-${unique()}.txt`);
    const r = await alice.request<{ isError?: boolean }>('tools/call', { name: 'fs__write_file', arguments: { path, content: 'x' } });
    expect(r.isError).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('x');
  });

  it('write_file into the protected folder opens a task; once approved the file exists exactly once, with the content asked for', async () => {
    const alice = await clientFor(stack, 'alice');
    const name = `approved-${unique()}.txt`;
    const path = join(files, 'protected', name);
    const created = await alice.request<WireTask>('tools/call', {
      name: 'fs__write_file',
      arguments: { path, content: 'approved content' },
    });
    expect(created.resultType).toBe('task');
    expect(existsSync(path)).toBe(false); // a requestable denial does not execute
    // The approver is shown the tool's title, its upstream and its annotation hints (docs/GATEWAY.md §6).
    const [pending] = (await pendingFor(stack, 'bob')).filter((r) => r.arguments.path === path) as Array<Record<string, unknown>>;
    // ... and display hints the gateway reads from its schema (docs/GATEWAY.md §6, What approvers read).
    expect(pending?.tool_info).toMatchObject({
      title: 'Write File',
      upstream: 'fs',
      upstream_tool: 'write_file',
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      display: { title: 'Write File' },
    });
    expect(await decideWhere(stack, (a) => a.path === path, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(done.result?.content.map((c) => c.text)).toContain(`Successfully wrote to ${path}`);
    expect(readFileSync(path, 'utf8')).toBe('approved content');
    expect(readdirSync(join(files, 'protected')).filter((f) => f === name)).toHaveLength(1);
  });

  it('a denied write into the protected folder is not written', async () => {
    const alice = await clientFor(stack, 'alice');
    const path = join(files, 'protected', `denied-${unique()}.txt`);
    const created = await alice.request<WireTask>('tools/call', { name: 'fs__write_file', arguments: { path, content: 'nope' } });
    expect(await decideWhere(stack, (a) => a.path === path, 'deny', 'carol')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(existsSync(path)).toBe(false);
  });

  it('move_file into the protected folder needs approval too (every destructive fs tool)', async () => {
    const alice = await clientFor(stack, 'alice');
    const source = join(files, `to-move-${unique()}.txt`);
    writeFileSync(source, 'm');
    const destination = join(files, 'protected', `moved-${unique()}.txt`);
    const created = await alice.request<WireTask>('tools/call', { name: 'fs__move_file', arguments: { source, destination } });
    expect(created.resultType).toBe('task');
    expect(existsSync(source)).toBe(true);
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });

  it('changed arguments are a new binding: a second approval request, and approving the first writes only the first', async () => {
    const alice = await clientFor(stack, 'alice');
    const path = join(files, 'protected', `changed-${unique()}.txt`);
    const a = await alice.request<WireTask>('tools/call', { name: 'fs__write_file', arguments: { path, content: 'one' } });
    const b = await alice.request<WireTask>('tools/call', { name: 'fs__write_file', arguments: { path, content: 'two' } });
    expect(b.taskId).not.toBe(a.taskId);
    expect(await pendingForTool(stack, (x) => x.path === path)).toHaveLength(2);
    expect(await decideWhere(stack, (x) => x.path === path && x.content === 'one', 'approve')).toBe(200);
    expect((await waitForTerminal(alice, a.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(readFileSync(path, 'utf8')).toBe('one');
    await alice.request('tasks/cancel', { taskId: b.taskId });
    expect(readFileSync(path, 'utf8')).toBe('one');
  });

  it('arguments the upstream schema refuses are an isError result naming the failing paths (SEP-1303), as for native tools', async () => {
    const alice = await clientFor(stack, 'alice');
    const refused = await alice.request<{ isError?: boolean; content: Array<{ text: string }> }>('tools/call', {
      name: 'fs__write_file',
      arguments: { path: 42 },
    });
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/^Invalid arguments for fs__write_file; the tool did not run\./);
    expect(refused.content[0]?.text).toContain('\n- content: ');
  });

  it('an unchanged upstream tool runs once after approval', async () => {
    const alice = await clientFor(stack, 'alice');
    const label = `same-${unique()}`;
    writeFileSync(join(driftDir, 'variant'), 'a');
    const created = await alice.request<WireTask>('tools/call', { name: 'drift__op', arguments: { label } });
    expect(await decideWhere(stack, (x) => x.label === label, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(
      readFileSync(join(driftDir, 'calls.log'), 'utf8')
        .split('\n')
        .filter((l) => l === label),
    ).toHaveLength(1);
  });
  it('an approved upstream call that was sent but never answered completes outcome-unknown and is not sent again', async () => {
    const alice = await clientFor(stack, 'alice');
    const label = `hang-${unique()}`;
    writeFileSync(join(driftDir, 'variant'), 'a');
    const created = await alice.request<WireTask>('tools/call', { name: 'drift__op', arguments: { label } });
    expect(await decideWhere(stack, (x) => x.label === label, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('outcome-unknown');
    expect(
      readFileSync(join(driftDir, 'calls.log'), 'utf8')
        .split('\n')
        .filter((l) => l === label),
    ).toHaveLength(1);
  });

  it('an upstream tool whose descriptor changed while its task was pending is not executed', async () => {
    const alice = await clientFor(stack, 'alice');
    const label = `drift-${unique()}`;
    writeFileSync(join(driftDir, 'variant'), 'a');
    const created = await alice.request<WireTask>('tools/call', { name: 'drift__op', arguments: { label } });
    expect(created.resultType).toBe('task');
    writeFileSync(join(driftDir, 'variant'), 'b'); // idempotentHint flips upstream
    expect(await decideWhere(stack, (x) => x.label === label, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
    expect(done.result?.content[0]?.text).toMatch(/tool changed/);
    const calls = existsSync(join(driftDir, 'calls.log')) ? readFileSync(join(driftDir, 'calls.log'), 'utf8') : '';
    expect(calls).not.toContain(label);
  });
});
