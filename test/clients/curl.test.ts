// Scope: the curl recipe of docs/CLIENTS.md, run as written: its first shell block (the `mcp`,
// `poll` and `listen` functions; the test supplies TOKEN and MCP) is sourced by bash and driven
// against a locally started Countersign (real Temporal dev server, real HTTP, the reference approval
// service deciding out of band). `poll` reads tasks/get at each answer's pollIntervalMs to the end;
// `listen` (`curl -N`, subscriptions/listen) prints the raw SSE stream: the acknowledgement naming
// the task, notifications/tasks up to the completed task, then the listen result; another caller's
// id is acknowledged as nothing. Needs bash, curl and jq on PATH (skipped otherwise).
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const tools = ['bash', 'curl', 'jq'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);

/** The shell blocks of the `### curl` section of docs/CLIENTS.md, in order. */
function curlBlocks(): string[] {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs', 'CLIENTS.md'), 'utf8');
  const start = doc.indexOf('\n### curl\n');
  if (start < 0) throw new Error('docs/CLIENTS.md has no ### curl section');
  const rest = doc.slice(start + 1);
  const end = rest.slice(1).search(/\n#{2,3} /);
  const section = end < 0 ? rest : rest.slice(0, end + 1);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** The recipe's definitions: the first block without its TOKEN= and MCP= lines (the test sets both). */
function definitions(): string {
  const block = curlBlocks()[0] ?? '';
  for (const fn of ['mcp()', 'poll()', 'listen()']) if (!block.includes(fn)) throw new Error(`the first curl block defines no ${fn}`);
  return block
    .split('\n')
    .filter((l) => !/^(TOKEN|MCP)=/.test(l))
    .join('\n');
}

let stack: Stack;
beforeAll(async () => {
  if (tools) stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

/** Run `script` after the recipe's definitions as `sub`; `onLine` sees stdout line by line. */
async function sh(
  sub: string,
  script: string,
  onLine: (line: string) => void = () => {},
): Promise<{ code: number | null; stdout: string }> {
  const token = await stack.issuer.mintToken({ sub });
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', `${definitions()}\n${script}`], {
      env: { ...process.env, TOKEN: token, MCP: stack.urls.mcp },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) onLine(l);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

/** The recipe's tools/call line (the second block) for `memo`: prints the new task's id. */
function createTask(memo: string): string {
  const line = (curlBlocks()[1] ?? '').split('\n').find((l) => l.startsWith('TASK=$(mcp tools/call'));
  if (!line) throw new Error('the second curl block has no TASK=$(mcp tools/call ...) line');
  return `${line.replace('invoice 4411', memo)}\necho "$TASK"`;
}

/** Approve `memo` once the approver sees it. */
async function approveWhenPending(memo: string): Promise<number> {
  for (let i = 0; i < 200 && !(await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === memo); i++)
    await new Promise((r) => setTimeout(r, 100));
  return decide(stack, memo, 'approve');
}

/** The JSON-RPC messages in the `data:` lines of an SSE transcript, and its `event:` lines. */
function frames(transcript: string) {
  const lines = transcript.split('\n');
  return {
    messages: lines.filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>),
    events: lines.filter((l) => l.startsWith('event: ')),
  };
}

describe.skipIf(!tools)('the curl recipe of docs/CLIENTS.md', () => {
  it('poll (the tasks/get loop) ends with the completed task once it is approved (approved-executed, one ledger row)', async () => {
    const memo = `curl ${randomUUID().slice(0, 12)}`;
    const approving = approveWhenPending(memo);
    const r = await sh('alice', `${createTask(memo)}\npoll "$TASK"`);
    expect(r.code).toBe(0);
    expect(await approving).toBe(200);
    const [taskId, last] = r.stdout.trim().split('\n');
    const answer = JSON.parse(last!) as { result: { taskId: string; status: string; result: { _meta: Record<string, unknown> } } };
    expect(answer.result).toMatchObject({ taskId, status: 'completed' });
    expect(answer.result.result._meta[DISPOSITION]).toBe('approved-executed');
    expect(stack.ledger.countByTask(taskId!)).toBe(1);
  });

  it('listen (curl -N, subscriptions/listen) prints the acknowledgement naming the task, notifications/tasks up to completed, then the listen result', async () => {
    const memo = `curl ${randomUUID().slice(0, 12)}`;
    let approving: Promise<number> | undefined;
    const r = await sh('alice', `${createTask(memo)}\nlisten "$TASK"`, (line) => {
      // decide only once the stream shows the current state: the decision reaches curl by push
      if (!approving && line.includes('"method":"notifications/tasks"')) approving = approveWhenPending(memo);
    });
    expect(r.code).toBe(0);
    expect(await approving).toBe(200);
    const taskId = r.stdout.split('\n')[0]!;
    const { messages, events } = frames(r.stdout);
    expect(events.every((e) => e === 'event: message')).toBe(true);
    expect(messages[0]).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [taskId] } },
    });
    const tasks = messages.filter((m) => m.method === 'notifications/tasks') as unknown as Array<{
      params: { taskId: string; status: string; result?: { _meta: Record<string, unknown> }; _meta: Record<string, unknown> };
    }>;
    expect(tasks[0]?.params).toMatchObject({ taskId, status: 'working' });
    expect(tasks.at(-1)?.params).toMatchObject({ taskId, status: 'completed' });
    expect(tasks.at(-1)?.params.result?._meta[DISPOSITION]).toBe('approved-executed');
    expect(tasks.every((t) => t.params._meta['io.modelcontextprotocol/subscriptionId'] === 2)).toBe(true);
    expect(messages.at(-1)).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 2 } },
    });
    expect(stack.ledger.countByTask(taskId)).toBe(1);
  });

  it("listen with another caller's task id: the acknowledgement lists no id and the stream ends at once with the listen result", async () => {
    const memo = `curl ${randomUUID().slice(0, 12)}`;
    const created = await sh('alice', createTask(memo));
    const taskId = created.stdout.trim();
    const r = await sh('mallory', `listen ${taskId}`);
    expect(r.code).toBe(0);
    const { messages } = frames(r.stdout);
    expect(messages.map((m) => m.method ?? 'result')).toEqual(['notifications/subscriptions/acknowledged', 'result']);
    expect(messages[0]).toMatchObject({ params: { notifications: { taskIds: [] } } });
    await sh('alice', `mcp tasks/cancel ${taskId} '"taskId":"${taskId}"' >/dev/null`);
  });
});
