// Scope: SEP-2848's interoperability claim, shown with `packages/client/src/tasks-client.ts`, a client that
// knows only the tasks extension (SEP-2663) and MRTR (SEP-2322): against a locally started
// Countersign (real Temporal dev server, real HTTP, the reference approval service deciding out of
// band while the client follows the task: by subscriptions/listen by default, by polling where a test
// says so; test/clients/tasks-client-push.test.ts is about the difference) it drives approval tasks
// to their end and reads the outcome from the CallToolResult body text alone; against the conformance profile (same Temporal) it answers
// in-task input with tasks/update. The client's SEP-2848 obligations (task ids kept durably, an
// unreadable outcome treated as possibly executed and never retried on its own) are shown with
// its file task id store (packages/client/src/task-id-store.ts) and packages/client/src/execution-outcome.ts.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executionOutcome } from '@countersign/client';
import { FileTaskIdStore } from '@countersign/client';
import { PROTOCOL_VERSION } from '@countersign/client';
import {
  TasksClient,
  type AnswerInput,
  type CallOutcome,
  type InputContext,
  type InputRequest,
  type Task,
  type TasksClientOptions,
} from '@countersign/client';
import { startConformanceProfile, type ConformanceProfile } from '../../conformance/profile/profile.js';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { decide, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';
import { JUSTIFY_POLICY, QUICK_EXPIRY_POLICY, SECOND_APPROVAL_POLICY } from '../support/test-policies.js';

// Transfers of 88,888 need a justification before the task is created (MRTR on the call).

/** The server's suggested poll interval in the test configuration (COUNTERSIGN_POLL_INTERVAL_MS). */
const POLL_MS = 200;

let stack: Stack;
let profile: ConformanceProfile;
beforeAll(async () => {
  stack = await startTestStack(
    testConfig(
      {},
      {
        'a-tasks-client-justify.cedar': JUSTIFY_POLICY,
        'a-quick-expiry.cedar': QUICK_EXPIRY_POLICY,
        'b-second-approval.cedar': SECOND_APPROVAL_POLICY,
      },
    ),
  );
  profile = await startConformanceProfile({
    temporalAddress: stack.urls.temporal,
    taskQueue: `conformance-${randomUUID()}`,
    ...(process.env.LOG_LEVEL ? { logLevel: process.env.LOG_LEVEL } : {}),
  });
});
afterAll(async () => {
  await profile?.stop();
  await stack?.stop();
});

const memo = () => `tasks-only ${randomUUID().slice(0, 12)}`;
const transfer = (m: string, amount = 50_000) => ({ to: 'acct-991', amount, memo: m });
/** Everything a person or model would read: the text of the result body. */
const bodyText = (t: Task) => (t.result?.content ?? []).map((c) => c.text ?? '').join('\n');

/** A generic form filler: accepts every elicitation, filling strings with `text` and booleans with true. */
function formFiller(text: string): AnswerInput & { calls: Array<{ requests: Record<string, InputRequest>; context: InputContext }> } {
  const calls: Array<{ requests: Record<string, InputRequest>; context: InputContext }> = [];
  const answer = (requests: Record<string, InputRequest>, context: InputContext) => {
    calls.push({ requests, context });
    const out: Record<string, unknown> = {};
    for (const [key, req] of Object.entries(requests)) {
      if (req.method !== 'elicitation/create') continue;
      const props = ((req.params?.requestedSchema as { properties?: Record<string, { type?: string }> } | undefined)?.properties ??
        {}) as Record<string, { type?: string }>;
      out[key] = {
        action: 'accept',
        content: Object.fromEntries(Object.entries(props).map(([p, s]) => [p, s.type === 'boolean' ? true : text])),
      };
    }
    return out;
  };
  return Object.assign(answer, { calls });
}

/** A client for `sub` on the Countersign endpoint, recording the tasks it sees and the delays it sleeps. */
async function clientFor(sub: string, extra: Partial<TasksClientOptions> = {}) {
  const seen: Task[] = [];
  const delays: number[] = [];
  let firstPoll!: () => void;
  const polled = new Promise<void>((r) => (firstPoll = r));
  const client = new TasksClient({
    url: stack.urls.mcp,
    token: await stack.issuer.mintToken({ sub }),
    onTask: (t) => {
      seen.push(t);
      if (seen.length === 2) firstPoll(); // the CreateTaskResult, then the first tasks/get or notifications/tasks
    },
    sleep: (ms, signal) => {
      delays.push(ms);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
      });
    },
    ...extra,
  });
  return { client, seen, delays, polled };
}

describe('a tasks-only client drives an approval task (SEP-2848 interoperability)', () => {
  it('the client source has no approval-specific code', () => {
    const source = readFileSync(join(PROJECT_ROOT, 'packages', 'client', 'src', 'tasks-client.ts'), 'utf8');
    expect(source).not.toMatch(/approv|disposition|2643|2848|authorization|remediation/i);
  });

  it('approval decided out of band while the client polls → completed, and the body text says it executed', async () => {
    const { client, seen, delays, polled } = await clientFor('alice', { push: false });
    const m = memo();
    let settled = false;
    const outcome = client.callTool('wire_transfer', transfer(m)).finally(() => (settled = true));
    await polled;
    expect(settled).toBe(false); // still polling: nothing has been decided
    expect(seen[0]?.status).toBe('working');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done: CallOutcome = await outcome;
    expect(done.kind).toBe('task');
    if (done.kind !== 'task') return;
    expect(done.task.status).toBe('completed');
    expect(bodyText(done.task)).toMatch(/executed once/i);
    expect(bodyText(done.task)).not.toMatch(/not executed|did not run/i);
    // it polled at the server's pace: every sleep was the suggested pollIntervalMs
    expect(delays.length).toBeGreaterThan(0);
    expect(new Set(delays)).toEqual(new Set([POLL_MS]));
    expect(seen.every((t) => t.pollIntervalMs === undefined || t.pollIntervalMs === POLL_MS)).toBe(true);
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(1);
  });

  it('denial → completed, isError, and the body text says the tool did not run', async () => {
    const { client, polled } = await clientFor('alice');
    const m = memo();
    const outcome = client.callTool('wire_transfer', transfer(m));
    await polled;
    expect(await decide(stack, m, 'deny', 'carol')).toBe(200);
    const done = await outcome;
    expect(done.kind).toBe('task');
    if (done.kind !== 'task') return;
    expect(done.task.status).toBe('completed');
    expect(done.task.result?.isError).toBe(true);
    expect(bodyText(done.task)).toMatch(/did not run/i);
    expect(bodyText(done.task)).not.toMatch(/ran and failed|executed once/i); // not an execution error
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(0);
  });

  it('cancel while the client follows the task → the wait ends cancelled, the tool never runs, the approver can no longer see it', async () => {
    const { client, seen, polled } = await clientFor('alice');
    const m = memo();
    const outcome = client.callTool('wire_transfer', transfer(m));
    await polled;
    const taskId = seen[0]!.taskId;
    await client.cancel(taskId);
    const done = await outcome;
    expect(done.kind).toBe('task');
    if (done.kind !== 'task') return;
    expect(done.task.status).toBe('cancelled');
    expect(done.task.result).toBeUndefined();
    expect((await client.getTask(taskId)).status).toBe('cancelled');
    expect(stack.ledger.countByTask(taskId)).toBe(0);
    // the backend request is withdrawn (asynchronously): it leaves the approver's pending list
    for (let i = 0; i < 100 && (await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === m)).toBe(false);
  });

  it('input before the task (MRTR): the answer callback fills the form, the retry creates the task, approval completes it', async () => {
    const answer = formFiller('Quarterly supplier payment, invoice 4411.');
    const { client, polled } = await clientFor('alice', { answer, capabilities: { elicitation: { form: {} } } });
    const m = memo();
    const outcome = client.callTool('wire_transfer', transfer(m, 88_888));
    await polled;
    expect(answer.calls).toHaveLength(1);
    expect(answer.calls[0]?.context).toMatchObject({ phase: 'call', tool: 'wire_transfer', round: 1 });
    expect(Object.values(answer.calls[0]!.requests).map((r) => r.method)).toEqual(['elicitation/create']);
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind === 'task') expect(bodyText(done.task)).toMatch(/executed once/i);
  });

  it('an aborted wait leaves the task alone; another client resumes it by taskId and sees the decision', async () => {
    const { client, seen, polled } = await clientFor('alice');
    const m = memo();
    const abort = new AbortController();
    const first = client.callTool('wire_transfer', transfer(m), { signal: abort.signal });
    await polled;
    abort.abort(new Error('client went away'));
    await expect(first).rejects.toThrow('client went away');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const later = (await clientFor('alice')).client;
    const task = await later.waitForTask(seen[0]!.taskId);
    expect(task.status).toBe('completed');
    expect(bodyText(task)).toMatch(/executed once/i);
  });

  it("another principal's client cannot read the task (-32602)", async () => {
    const { client, seen, polled } = await clientFor('alice');
    const outcome = client.callTool('wire_transfer', transfer(memo()));
    await polled;
    const mallory = (await clientFor('mallory')).client;
    await expect(mallory.getTask(seen[0]!.taskId)).rejects.toMatchObject({ name: 'McpRpcError', code: -32602 });
    await client.cancel(seen[0]!.taskId);
    await outcome;
  });
});

describe('the tasks-only client: expiry and in-task input on the approval stack', () => {
  it('a request nobody decides expires → completed, isError, and the body text says it expired and did not run', async () => {
    const { client } = await clientFor('alice');
    const done = await client.callTool('wire_transfer', transfer(memo(), 77_777));
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind !== 'task') return;
    expect(done.task.result?.isError).toBe(true);
    expect(bodyText(done.task)).toMatch(/expired/i);
    expect(bodyText(done.task)).toMatch(/did not run/i);
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(0);
  });

  it('input inside the approval task: the callback answers the justification form with tasks/update, the second approval executes it once', async () => {
    const answer = formFiller('Carol owns this supplier relationship.');
    const { client, polled } = await clientFor('alice', { answer, capabilities: { elicitation: { form: {} } } });
    const m = memo();
    const outcome = client.callTool('wire_transfer', transfer(m, 66_666));
    await polled;
    expect(await decide(stack, m, 'approve', 'bob')).toBe(200);
    let second: Array<{ arguments: Record<string, unknown>; justification?: string }> = [];
    for (let i = 0; i < 200 && second.length === 0; i++) {
      second = (await pendingFor(stack, 'carol')).filter((p) => p.arguments.memo === m) as typeof second;
      if (second.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(second[0]?.justification).toBe('Carol owns this supplier relationship.');
    expect(answer.calls.map((c) => c.context.phase)).toEqual(['task']);
    expect(await decide(stack, m, 'approve', 'carol')).toBe(200);
    const done = await outcome;
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind !== 'task') return;
    expect(bodyText(done.task)).toMatch(/executed once/i);
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(1);
  });
});

describe('the client keeps its SEP-2848 obligations: durable task ids, no automatic retry', () => {
  const storePath = () => join(mkdtempSync(join(tmpdir(), 'countersign-task-ids-')), 'tasks.json');

  it('the task id is in the store file, whole, before the task is first followed (subscriptions/listen or tasks/get)', async () => {
    const path = storePath();
    const atFirstPoll: string[] = [];
    const following = new Set(['subscriptions/listen', 'tasks/get']);
    const { client } = await clientFor('alice', {
      store: new FileTaskIdStore(path),
      onMessage: (dir, msg) => {
        if (dir === '>' && following.has((msg as { method?: string }).method ?? '') && atFirstPoll.length === 0)
          atFirstPoll.push(readFileSync(path, 'utf8'));
      },
    });
    const m = memo();
    const abort = new AbortController();
    const call = client.callTool('wire_transfer', transfer(m), { callKey: `invoice ${m}`, signal: abort.signal });
    for (let i = 0; i < 200 && atFirstPoll.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    abort.abort(new Error('stop'));
    await call.catch(() => undefined);
    const stored = JSON.parse(atFirstPoll[0]!) as { version: number; calls: Record<string, { taskId: string; tool: string }> };
    expect(stored.version).toBe(1);
    const rec = stored.calls[`invoice ${m}`];
    expect(rec?.tool).toBe('wire_transfer');
    expect(rec?.taskId).toMatch(/\S/);
    // written through a temporary file and a rename: none is left behind
    expect(readdirSync(join(path, '..')).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    await client.cancel(rec!.taskId);
  });

  it('after a crash while following the task, a new client with the same store resumes it by its recorded id without calling the tool again; approval executes it once', async () => {
    const path = storePath();
    const first = await clientFor('alice', { store: new FileTaskIdStore(path) });
    const m = memo();
    const key = `invoice ${m}`;
    const abort = new AbortController();
    const crashed = first.client.callTool('wire_transfer', transfer(m), { callKey: key, signal: abort.signal });
    await first.polled;
    abort.abort(new Error('process died'));
    await expect(crashed).rejects.toThrow('process died');
    expect(await decide(stack, m, 'approve')).toBe(200);

    const sent: string[] = [];
    const restarted = await clientFor('alice', {
      store: new FileTaskIdStore(path),
      onMessage: (dir, msg) => dir === '>' && sent.push((msg as { method: string }).method),
    });
    const done = await restarted.client.callTool('wire_transfer', transfer(m), { callKey: key });
    expect(done.kind === 'task' && done.task.taskId).toBe(first.seen[0]!.taskId);
    expect(sent).not.toContain('tools/call');
    if (done.kind !== 'task') return;
    expect(executionOutcome(done.task)).toMatchObject({ outcome: 'executed', disposition: 'approved-executed' });
    expect(stack.ledger.countByTask(done.task.taskId)).toBe(1);
    expect((await new FileTaskIdStore(path).get(key))?.status).toBe('completed');
  });

  it('a recorded task the server no longer knows is recorded-task-unavailable, and the tool is not called again', async () => {
    const path = storePath();
    writeFileSync(
      path,
      JSON.stringify({
        version: 1,
        calls: { 'invoice 1': { taskId: 'no-such-task', tool: 'wire_transfer', recordedAt: new Date().toISOString() } },
      }),
    );
    const sent: string[] = [];
    const { client } = await clientFor('alice', {
      store: new FileTaskIdStore(path),
      onMessage: (dir, msg) => dir === '>' && sent.push((msg as { method: string }).method),
    });
    await expect(client.callTool('wire_transfer', transfer(memo()), { callKey: 'invoice 1' })).rejects.toMatchObject({
      name: 'TasksClientError',
      code: 'recorded-task-unavailable',
    });
    // the unknown id is left out of the acknowledgement, so the client polls: tasks/get answers -32602
    expect(sent).toEqual(['subscriptions/listen', 'tasks/get']);
  });
});

describe('the same client answers in-task input with tasks/update (conformance profile)', () => {
  const profileClient = (answer?: AnswerInput) =>
    new TasksClient({ url: profile.url, capabilities: { elicitation: {} }, ...(answer ? { answer } : {}) });

  it('input_required inside the task: the callback answers, tasks/update resumes it, it completes', async () => {
    const answer = formFiller('unused');
    const done = await profileClient(answer).callTool('confirm_delete', { filename: 'report.txt' });
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind === 'task') expect(bodyText(done.task)).toBe('Deleted report.txt.');
    expect(answer.calls).toHaveLength(1);
    expect(answer.calls[0]?.context).toMatchObject({ phase: 'task' });
    expect(answer.calls[0]?.requests.confirm?.method).toBe('elicitation/create');
  });

  it('two simultaneous input requests are answered and the task completes', async () => {
    const answer = formFiller('Ada');
    const done = await profileClient(answer).callTool('multi_input', {});
    expect(done.kind === 'task' && done.task.status).toBe('completed');
    if (done.kind === 'task') expect(bodyText(done.task)).toMatch(/name Ada/);
    expect(Object.keys(answer.calls[0]?.requests ?? {}).sort()).toEqual(['confirm', 'name']);
  });

  it('MRTR on the call, then a task whose result carries the answer', async () => {
    const answer = formFiller('Alice');
    const done = await profileClient(answer).callTool('test_tool_with_task', {});
    expect(answer.calls[0]?.context).toMatchObject({ phase: 'call' });
    expect(done.kind === 'task' && bodyText(done.task)).toMatch(/Hello, Alice!/);
  });

  it('a sync tool returns its CallToolResult directly; a tool error stays a completed task with isError', async () => {
    const client = profileClient();
    expect(await client.callTool('greet', { name: 'World' })).toEqual({
      kind: 'result',
      result: expect.objectContaining({ content: [{ type: 'text', text: 'Hello, World!' }] }),
    });
    const failed = await client.callTool('failing_job', {});
    expect(failed.kind === 'task' && failed.task.status).toBe('completed');
    if (failed.kind === 'task') expect(failed.task.result?.isError).toBe(true);
  });

  it('input asked for without an answer callback is a local input-unanswerable error carrying the task', async () => {
    const err = await profileClient()
      .callTool('confirm_delete', { filename: 'x' })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ name: 'TasksClientError', code: 'input-unanswerable' });
    expect((err as { task?: Task }).task?.status).toBe('input_required');
    await profileClient().cancel((err as { task: Task }).task.taskId);
  });
});

describe('tasks/* params of the wrong type on the conformance profile', () => {
  for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
    it(`${method} with a numeric taskId answers -32602 naming $.params.taskId with data.issues, as the front does`, async () => {
      const res = await fetch(profile.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': PROTOCOL_VERSION,
          'mcp-method': method,
          authorization: `Bearer ${profile.token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method,
          params: {
            taskId: 5,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
              'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
              'io.modelcontextprotocol/clientInfo': { name: 'params-test', version: '0.0.0' },
            },
          },
        }),
      });
      const body = (await res.json()) as { error?: unknown };
      expect(body.error).toEqual({
        code: -32602,
        message: `Invalid params for ${method}: $.params.taskId: expected string, received number`,
        data: { issues: [{ path: '$.params.taskId', message: 'expected string, received number' }] },
      });
    });
  }
});

describe('an outcome the client cannot read is possibly executed and never retried on its own (conformance profile)', () => {
  it('a completed task without a recognized disposition is possibly executed, may not be called again, and the same call key returns that task instead of re-running the tool', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'countersign-task-ids-')), 'tasks.json');
    const sent: string[] = [];
    const client = new TasksClient({
      url: profile.url,
      store: new FileTaskIdStore(path),
      onMessage: (dir, msg) => dir === '>' && sent.push((msg as { method: string }).method),
    });
    const first = await client.callTool('failing_job', {}, { callKey: 'nightly job' });
    expect(first.kind === 'task' && first.task.status).toBe('completed');
    if (first.kind !== 'task') return;
    expect(executionOutcome(first.task)).toEqual({ outcome: 'possibly-executed', disposition: undefined, mayCallAgain: false });
    expect(sent.filter((m) => m === 'tools/call')).toHaveLength(1);
    const again = await client.callTool('failing_job', {}, { callKey: 'nightly job' });
    expect(again.kind === 'task' && again.task.taskId).toBe(first.task.taskId);
    expect(sent.filter((m) => m === 'tools/call')).toHaveLength(1);
  });
});
