// Scope: the tasks/get fast path (src/mcp/task-get-fast-path.ts) against the SDK path it stands in
// for, end to end on a real dev server and real HTTP: the same request, sent once clean (served
// before the SDK) and once with an extra envelope key (handed to the SDK), gets the same answer —
// working, completed, unknown, another principal's — and requests the fast path must not serve
// (a missing or disagreeing routing header, wrong-type params, no tasks capability) are answered by
// the SDK exactly as before.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

const CAPS = { extensions: { [TASKS_EXTENSION]: {} } };

/**
 * POST one tasks/get as `sub`; `extraMeta` adds envelope keys (any key the fast path does not know
 * hands the request to the SDK); `headers` overrides the routing headers.
 */
async function tasksGet(
  sub: string,
  taskId: unknown,
  opts: { extraMeta?: Record<string, unknown>; headers?: Record<string, string | null>; caps?: unknown } = {},
): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
  const token = await stack.issuer.mintToken({ sub });
  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tasks/get',
    ...(typeof taskId === 'string' ? { 'mcp-name': taskId } : {}),
  };
  for (const [k, v] of Object.entries(opts.headers ?? {})) {
    if (v === null) delete headers[k];
    else headers[k] = v;
  }
  const res = await fetch(stack.urls.mcp, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'r1',
      method: 'tasks/get',
      params: {
        taskId,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': opts.caps ?? CAPS,
          'io.modelcontextprotocol/clientInfo': { name: 'fast-path-test', version: '1' },
          ...opts.extraMeta,
        },
      },
    }),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
}

/** The same read through the fast path and through the SDK (an envelope key only the SDK path takes). */
async function bothPaths(sub: string, taskId: unknown) {
  const fast = await tasksGet(sub, taskId);
  const sdk = await tasksGet(sub, taskId, { extraMeta: { 'dev.countersign/test-route': 'sdk' } });
  return { fast, sdk };
}

/** A task's answer without the interval, which follows the task's age between the two reads. */
const withoutInterval = (body: Record<string, unknown>) => {
  const result = body.result as Record<string, unknown> | undefined;
  if (!result) return body;
  const { pollIntervalMs: _interval, ...rest } = result;
  return { ...body, result: rest };
};

describe('tasks/get served before the SDK answers as the SDK path does', () => {
  it('a working task, a completed task, an unknown id and another principal’s task read the same through both paths', async () => {
    const alice = await clientFor(stack, 'alice');
    const m = `fast ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: m },
    });
    const working = await bothPaths('alice', created.taskId);
    expect(working.fast.status).toBe(200);
    expect((working.fast.body.result as WireTask).status).toBe('working');
    expect(withoutInterval(working.fast.body)).toEqual(withoutInterval(working.sdk.body));
    expect((working.fast.body.result as { _meta?: Record<string, unknown> })._meta?.['io.modelcontextprotocol/serverInfo']).toEqual({
      name: 'countersign',
      version: '0.1.0',
    });

    const foreign = await bothPaths('mallory', created.taskId);
    const unknown = await bothPaths('alice', `${created.taskId.split('.')[0]}.${randomUUID()}`);
    for (const r of [foreign, unknown]) {
      expect(r.fast).toEqual(r.sdk);
      expect((r.fast.body.error as { code: number; message: string }).code).toBe(-32602);
    }
    expect(foreign.fast.body.error).toEqual(unknown.fast.body.error);

    expect(await decide(stack, m, 'approve')).toBe(200);
    await waitForTerminal(alice, created.taskId);
    const done = await bothPaths('alice', created.taskId);
    expect((done.fast.body.result as WireTask).status).toBe('completed');
    expect(done.fast).toEqual(done.sdk);
  });

  it('requests the fast path does not serve are answered by the SDK as before: a missing or disagreeing Mcp-Name, wrong-type params, no tasks capability, a body not sent as application/json', async () => {
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo: `fast ${randomUUID().slice(0, 12)}` },
    });
    const noName = await tasksGet('alice', created.taskId, { headers: { 'mcp-name': null } });
    const otherName = await tasksGet('alice', created.taskId, { headers: { 'mcp-name': 'another-task' } });
    for (const r of [noName, otherName]) {
      expect(r.status).toBe(400);
      expect((r.body.error as { code: number }).code).toBe(-32020);
    }
    const wrongType = await tasksGet('alice', 42);
    expect((wrongType.body.error as { code: number; message: string }).code).toBe(-32602);
    expect((wrongType.body.error as { message: string }).message).toMatch(/^Invalid params for tasks\/get: \$\.params\.taskId/);
    const noTasks = await tasksGet('alice', created.taskId, { caps: {} });
    expect((noTasks.body.error as { code: number }).code).toBe(-32021);
    for (const contentType of [null, 'text/plain']) {
      const r = await tasksGet('alice', created.taskId, { headers: { 'content-type': contentType } });
      expect(r.status).toBe(415);
      expect(r.body.error).toMatchObject({ code: -32000, message: expect.stringMatching(/^Unsupported Media Type/) });
    }
  });
});
