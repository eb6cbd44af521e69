// Scope: what the gateway's answers say happened upstream (docs/GATEWAY.md §2, §5), end to end
// with real upstreams: an approved call whose stdio upstream cannot start, or whose HTTP upstream's
// port is closed, or that the upstream refuses (-32602), did not run; one the upstream took and then
// died on may have run (outcome-unknown); a JSON-RPC error other than a refusal may have run; a
// timed-out call may have run, and an upstream that then misses a ping is restarted; `null` for an
// optional argument is decided by policy and reaches the upstream as sent; an answer over the
// gateway's stdio limit is reported as run-and-discarded, and never costs another caller's approved
// call on the same upstream.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPSTREAM_MAX_ANSWER_BYTES } from '../../src/gateway/bounded-read-buffer.js';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { clientFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { decideWhere, startJsonHttpUpstream, writeGatewayConfig } from './gateway-support.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const AUTHORIZATION = 'io.modelcontextprotocol/authorization';

const POLICY = ['ans', 'big', 'gone', 'hung', 'web', 'rpc']
  .map(
    (u) => `
@id("${u}-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"${u}");

@id("${u}-destructive-needs-approval")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Destructive tools need approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"${u}")
when { resource.destructiveHint }
unless { context has approval && context.approval.state == "approved" };
`,
  )
  .join('\n');

const stateDir = (name: string) => mkdtempSync(join(tmpdir(), `countersign-answers-${name}-`));
const dirs = { ans: stateDir('ans'), big: stateDir('big'), gone: stateDir('gone'), hung: stateDir('hung') };
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
const lines = (file: string) => read(file).split('\n').filter(Boolean);
const calls = (dir: string) => lines(join(dir, 'calls.log')).map((l) => JSON.parse(l) as { name: string; args: Record<string, unknown> });

/** Resolves once `file` satisfies `pred`: woken by file-system events, no timer. */
async function untilFile(file: string, pred: (text: string) => boolean): Promise<void> {
  await new Promise<void>((resolve) => {
    const w = watch(join(file, '..'), () => {
      if (pred(read(file))) {
        w.close();
        resolve();
      }
    });
    if (pred(read(file))) {
      w.close();
      resolve();
    }
  });
}

function killIfAlive(pid: number): void {
  try {
    process.kill(pid);
  } catch {
    // already gone (a version-negotiation probe sibling exits by itself)
  }
}

let stack: Stack;
let web: Awaited<ReturnType<typeof startJsonHttpUpstream>>;
let rpc: Awaited<ReturnType<typeof startJsonHttpUpstream>>;

beforeAll(async () => {
  web = await startJsonHttpUpstream({
    name: 'web',
    tools: [{ name: 'post', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } }],
    callText: 'posted',
  });
  rpc = await startJsonHttpUpstream({
    name: 'rpc',
    tools: [
      { name: 'lookup', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true, destructiveHint: false } },
      { name: 'post', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } },
    ],
    callText: 'done',
  });
  const fixture = (name: keyof typeof dirs) => ({
    name,
    transport: 'stdio',
    command: process.execPath,
    args: ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'test/gateway/fixtures/answers-server.ts')],
    cwd: PROJECT_ROOT,
    env: { ANSWERS_STATE_DIR: { fromEnv: `COUNTERSIGN_TEST_ANSWERS_${name.toUpperCase()}` } },
  });
  for (const [name, dir] of Object.entries(dirs)) process.env[`COUNTERSIGN_TEST_ANSWERS_${name.toUpperCase()}`] = dir;
  const configFile = writeGatewayConfig([
    fixture('ans'),
    fixture('big'),
    fixture('gone'),
    { ...fixture('hung'), callTimeoutMs: 1000 },
    { name: 'web', transport: 'http', url: web.url },
    { name: 'rpc', transport: 'http', url: rpc.url },
  ]);
  stack = await startTestStack(testConfig({ COUNTERSIGN_CONFIG: configFile }, { 'a-answers.cedar': POLICY }));
});
afterAll(async () => {
  await stack?.stop();
  for (const u of [web, rpc]) {
    u?.server.closeAllConnections();
    await new Promise((r) => u?.server.close(r));
  }
});

const unique = () => randomUUID().slice(0, 12);
type Block = { type: string; text?: string };
interface CallResult {
  content: Block[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** Open an approval task for `tool` with `args`, approve it, and wait for its result. */
async function approved(
  tool: string,
  args: Record<string, unknown>,
  pred: (a: Record<string, unknown>) => boolean,
  before?: () => Promise<void>,
) {
  const alice = await clientFor(stack, 'alice');
  const created = await alice.request<WireTask>('tools/call', { name: tool, arguments: args });
  expect(created.resultType).toBe('task');
  await before?.();
  expect(await decideWhere(stack, pred, 'approve')).toBe(200);
  const done = await waitForTerminal(alice, created.taskId);
  expect(done.status).toBe('completed');
  return done.result as CallResult;
}

/** Body, `_meta` and (absent) envelope of an approved call that provably never reached the tool. */
function expectDidNotRun(r: CallResult) {
  expect(r.isError).toBe(true);
  expect(r._meta?.[DISPOSITION]).toBe('execution-error');
  expect(r._meta?.[AUTHORIZATION]).toBeUndefined(); // authorization succeeded; no denial envelope
  expect(r.structuredContent).toBeUndefined();
  expect(r.content).toHaveLength(1);
  expect(r.content[0]?.text).toMatch(/the tool did not run and no side effect occurred/);
  expect(r.content[0]?.text).not.toMatch(/the tool ran/);
}

describe('gateway: an approved call says whether it ran', () => {
  it('an approved call whose stdio upstream cannot start did not run, and says so in body and disposition', async () => {
    const label = `gone-${unique()}`;
    const r = await approved(
      'gone__note',
      { text: label },
      (a) => a.text === label,
      async () => {
        // the upstream stops and cannot start again: wait until the gateway has tried (a new pid line)
        const pids = lines(join(dirs.gone, 'pids.log'));
        writeFileSync(join(dirs.gone, 'refuse-start'), '');
        for (const pid of pids) killIfAlive(Number(pid));
        await untilFile(join(dirs.gone, 'pids.log'), (t) => t.split('\n').filter(Boolean).length > pids.length);
      },
    );
    expectDidNotRun(r);
    expect(calls(dirs.gone).filter((c) => c.args.text === label)).toHaveLength(0);
  });

  it('an approved call whose Streamable HTTP upstream is on a closed port did not run', async () => {
    const label = `web-${unique()}`;
    const r = await approved(
      'web__post',
      { label },
      (a) => a.label === label,
      async () => {
        web.server.closeAllConnections();
        await new Promise((resolve) => web.server.close(resolve));
      },
    );
    expectDidNotRun(r);
    expect(web.calls()).toBe(0);
  });

  it('an approved call the upstream took and then died on may have run: outcome-unknown, never sent again', async () => {
    const label = `die-${unique()}`;
    const r = await approved('ans__note', { text: label }, (a) => a.text === label);
    expect(r._meta?.[DISPOSITION]).toBe('outcome-unknown');
    expect(r.content[0]?.text).toMatch(/may or may not have run/);
    expect(calls(dirs.ans).filter((c) => c.args.text === label)).toHaveLength(1);
  });
});

describe('gateway: a JSON-RPC error answer', () => {
  it('a refusal (-32602, invalid params) did not run; any other error code (-32603) may have run', async () => {
    const alice = await clientFor(stack, 'alice');
    const refused = await alice.request<CallResult>('tools/call', { name: 'rpc__lookup', arguments: { errorCode: -32602 } });
    expect(refused.isError).toBe(true);
    expect(refused.content).toEqual([
      {
        type: 'text',
        text: 'Not executed: the upstream MCP server "rpc" refused the call (JSON-RPC error -32602), so rpc__lookup did not run.',
      },
    ]);
    const failed = await alice.request<CallResult>('tools/call', { name: 'rpc__lookup', arguments: { errorCode: -32603 } });
    expect(failed.isError).toBe(true);
    expect(failed.content).toEqual([
      {
        type: 'text',
        text: 'The upstream MCP server "rpc" answered rpc__lookup with an error (JSON-RPC error -32603): it may have run, and a side effect may have occurred.',
      },
    ]);
  });

  it('an approved call the upstream refuses (-32602) did not run', async () => {
    const label = unique();
    const r = await approved('rpc__post', { errorCode: -32602, label }, (a) => a.label === label);
    expectDidNotRun(r);
    expect(rpc.calls()).toBe(3); // the two inline calls above and this one, each sent once
  });
});

describe('gateway: a call that times out', () => {
  it('may have run; an upstream that then does not answer a ping (5 s) either is taken as hung and started afresh', async () => {
    const alice = await clientFor(stack, 'alice');
    const pids = lines(join(dirs.hung, 'pids.log'));
    const r = await alice.request<CallResult>('tools/call', { name: 'hung__freeze', arguments: {} });
    expect(r.isError).toBe(true);
    expect(r.content[0]?.text).toMatch(/^The tool may or may not have run/);
    await untilFile(join(dirs.hung, 'pids.log'), (t) => t.split('\n').filter(Boolean).length > pids.length);
    const after = await alice.request<CallResult>('tools/call', { name: 'hung__release', arguments: {} });
    expect(after.content).toEqual([{ type: 'text', text: 'released' }]);
  });
});

describe('gateway: null for an optional argument', () => {
  it('a Python-style optional argument sent as null is decided by policy (requestable here) and reaches the upstream as sent', async () => {
    const label = `null-${unique()}`;
    const r = await approved('ans__note', { text: label, tag: null }, (a) => a.text === label);
    expect(r._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(r.content.map((c) => c.text)).toContain(JSON.stringify({ text: label, tag: null }));
    expect(calls(dirs.ans).filter((c) => c.args.text === label)).toEqual([{ name: 'note', args: { text: label, tag: null } }]);
  });
});

describe('gateway: an answer over the stdio limit', () => {
  it('an inline 12 MiB answer is reported as run and discarded, and a concurrent approved write on that upstream ends approved-executed, once', async () => {
    const alice = await clientFor(stack, 'alice');
    const label = `write-${unique()}`;
    const pidsBefore = lines(join(dirs.big, 'pids.log'));
    const created = await alice.request<WireTask>('tools/call', { name: 'big__slow_write', arguments: { label } });
    expect(created.resultType).toBe('task');
    expect(await decideWhere(stack, (a) => a.label === label, 'approve')).toBe(200);
    // the upstream answers the read only once the approved write is in flight on the same process,
    // and the write only when released there, after the caller has had the read's answer
    const read = await alice.request<CallResult>('tools/call', { name: 'big__big_read', arguments: { megabytes: 12 } });
    const release = await alice.request<CallResult>('tools/call', { name: 'big__release', arguments: {} });
    expect(release.content).toEqual([{ type: 'text', text: 'released' }]);
    expect(read.isError).toBe(true);
    expect(read.content).toHaveLength(1);
    expect(read.content[0]?.text).toMatch(
      new RegExp(
        `^The upstream MCP server "big" ran big__big_read, but its answer \\((\\d+) bytes\\) exceeded the gateway's limit of ${UPSTREAM_MAX_ANSWER_BYTES} bytes and was discarded\\.`,
      ),
    );
    const size = Number(/\((\d+) bytes\)/.exec(read.content[0]!.text!)![1]);
    expect(size).toBeGreaterThan(12 * 1024 * 1024);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(done.result?.content.map((c) => c.text)).toContain(`wrote ${label}`);
    expect(calls(dirs.big).filter((c) => c.name === 'slow_write' && c.args.label === label)).toHaveLength(1);
    expect(lines(join(dirs.big, 'pids.log'))).toEqual(pidsBefore); // the upstream was never restarted
  });

  it('an approved call whose answer is over the limit ran once: execution-error, saying the answer was discarded', async () => {
    const label = `big-${unique()}`;
    const r = await approved('ans__note', { text: label }, (a) => a.text === label);
    expect(r.isError).toBe(true);
    expect(r._meta?.[DISPOSITION]).toBe('execution-error');
    expect(r.content).toHaveLength(1);
    expect(r.content[0]?.text).toMatch(
      new RegExp(
        `^Approved; the tool ran once, but its answer \\(\\d+ bytes\\) exceeded the gateway's limit of ${UPSTREAM_MAX_ANSWER_BYTES} bytes`,
      ),
    );
    expect(calls(dirs.ans).filter((c) => c.args.text === label)).toHaveLength(1);
  });
});
