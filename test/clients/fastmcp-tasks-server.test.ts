// Scope: Countersign's tasks-only client (packages/client TasksClient) against a tasks server it
// was not written with: FastMCP 4.1.4 on the official Python MCP SDK (`mcp` 2.3.0) with
// fastmcp-tasks 4.1.4, its io.modelcontextprotocol/tasks (SEP-2663) runtime (no official SDK ships
// a server-side tasks runtime: docs/CONFORMANCE.md §The tasks-only client against other servers),
// serving test/clients/fastmcp_tasks_server.py over real HTTP. fastmcp-tasks 4.1.4 and its
// dependencies come from PyPI into .tools/py-fastmcp-tasks (scripts/install-python-packages.mjs,
// run by the global setup; FASTMCP_TASKS_PATH overrides the folder).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TasksClient, type AnswerInput, type CallOutcome, type Task, type TasksClientOptions } from '@countersign/client';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { FASTMCP_TASKS_PATH } from './python-harness.js';

let server: ChildProcess | undefined;
let url: string;

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}/mcp`;
  server = spawn('python3', [join(PROJECT_ROOT, 'test', 'clients', 'fastmcp_tasks_server.py'), String(port)], {
    env: { ...process.env, PYTHONPATH: FASTMCP_TASKS_PATH, FASTMCP_CHECK_FOR_UPDATES: 'off' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // ready once uvicorn says it listens (it logs to stderr)
  await new Promise<void>((resolve, reject) => {
    let log = '';
    const onData = (d: Buffer) => {
      log += d.toString();
      if (log.includes(`Uvicorn running on http://127.0.0.1:${port}`)) resolve();
    };
    server!.stderr!.on('data', onData);
    server!.stdout!.on('data', onData);
    server!.on('exit', (code) => reject(new Error(`fastmcp_tasks_server.py exited ${code}: ${log.slice(-500)}`)));
  });
}, 60_000);
afterAll(() => {
  server?.kill('SIGTERM');
});

/** A client of the fixture, recording every message; polls at most every 100 ms (the server suggests 5 s). */
function clientFor(extra: Partial<TasksClientOptions> = {}) {
  const messages: Array<{ dir: string; m: Record<string, unknown> }> = [];
  const client = new TasksClient({
    url,
    maxPollIntervalMs: 100,
    onMessage: (dir, m) => messages.push({ dir, m: m as Record<string, unknown> }),
    ...extra,
  });
  const sent = (method: string) => messages.filter((x) => x.dir === '>' && x.m.method === method).length;
  return { client, messages, sent };
}

const bodyText = (t: Task) => (t.result?.content ?? []).map((c) => c.text ?? '').join('\n');
const taskOf = (o: CallOutcome): Task => {
  expect(o.kind).toBe('task');
  return (o as { task: Task }).task;
};

describe('the tasks-only client against fastmcp-tasks 4.1.4', () => {
  it('a background task: the server answers a CreateTaskResult, the client follows it (subscriptions/listen is -32601 there, so by tasks/get) to completed with the tool’s text', async () => {
    const { client, messages, sent } = clientFor();
    const task = taskOf(await client.callTool('slow_echo', { text: 'hello', seconds: 0.3 }));
    expect(task.status).toBe('completed');
    expect(task.result?.isError).not.toBe(true);
    expect(bodyText(task)).toBe('echo: hello');
    const listen = messages.find((x) => x.dir === '<' && (x.m.error as { code?: number } | undefined)?.code === -32601);
    expect(listen?.m.error).toMatchObject({ code: -32601, data: 'subscriptions/listen' });
    expect(sent('tasks/get')).toBeGreaterThan(0);
    expect(sent('tools/call')).toBe(1);
  });

  it('a tool that raises is a completed task whose result is isError (not failed), its text the error', async () => {
    const { client } = clientFor({ push: false });
    const task = taskOf(await client.callTool('failing_job', { text: 'x' }));
    expect(task.status).toBe('completed');
    expect(task.result?.isError).toBe(true);
    expect(bodyText(task)).toMatch(/failing on purpose: x/);
  });

  it('tasks/cancel while the client follows the task: the wait ends with the task cancelled and no result', async () => {
    let cancelled: Promise<void> | undefined;
    const { client } = clientFor({
      push: false,
      onTask: (t) => {
        cancelled ??= client.cancel(t.taskId);
      },
    });
    const task = taskOf(await client.callTool('slow_echo', { text: 'never', seconds: 60 }));
    await cancelled;
    expect(task.status).toBe('cancelled');
    expect(task.result).toBeUndefined();
  });

  it('input inside the task: input_required with an elicitation, the answer callback fills it, tasks/update delivers it, the task completes with it', async () => {
    const answered: string[] = [];
    const answer: AnswerInput = (requests, context) => {
      expect(context.phase).toBe('task');
      answered.push(...Object.values(requests).map((r) => r.method));
      return Object.fromEntries(Object.keys(requests).map((k) => [k, { action: 'accept', content: { proceed: true } }]));
    };
    const { client, sent } = clientFor({ push: false, capabilities: { elicitation: { form: {} } }, answer });
    const task = taskOf(await client.callTool('confirm', { text: 'the report' }));
    expect(answered).toEqual(['elicitation/create']);
    expect(sent('tasks/update')).toBe(1);
    expect(task.status).toBe('completed');
    expect(bodyText(task)).toBe("accept: {'proceed': True}");
  });
});
