// Scope: which requests the tasks/get fast path (src/mcp/task-get-fast-path.ts) serves itself — only
// the clean, well-formed one with agreeing routing headers — and which it hands to the SDK (null),
// over a task service double; what it answers for the ones it serves (the e2e test compares those
// answers with the SDK path's).
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createTaskGetFastPath } from '../../src/mcp/task-get-fast-path.js';
import { PollRateLimiter } from '../../src/mcp/poll-interval.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import type { TaskSnapshot } from '../../workflows/types.js';

const TASK = 'abc.def';
const snapshot: TaskSnapshot = {
  status: 'working',
  phase: 'awaiting-approval',
  ownerKey: 'o',
  policyReason: 'Needs treasury.',
  createdAt: '2026-12-01T10:00:00.000Z',
  lastUpdatedAt: '2026-12-01T10:00:00.000Z',
  ttlMs: 1000,
  pollIntervalMs: 2000,
  generation: 1,
  claimed: false,
};
const tasks = { get: async (id: unknown) => (id === TASK ? snapshot : null) } as unknown as TaskService;
const caller = { iss: 'https://issuer.test', sub: 'alice' };
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const clean = () => ({ jsonrpc: '2.0', id: 7, method: 'tasks/get', params: { taskId: TASK, _meta: structuredClone(meta) } });
const headers = (over: Record<string, string | null> = {}) => {
  const h = new Headers({
    'content-type': 'application/json; charset=utf-8',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tasks/get',
    'mcp-name': TASK,
  });
  for (const [k, v] of Object.entries(over))
    if (v === null) h.delete(k);
    else h.set(k, v);
  return new Request('http://mcp.test/mcp', { method: 'POST', headers: h });
};
const fastPath = createTaskGetFastPath({ tasks, serverInfo: { name: 'countersign', version: '0.1.0' }, logger: pino({ level: 'silent' }) });

describe('the tasks/get fast path', () => {
  it('serves a clean tasks/get itself: the task with the SDK-style serverInfo stamp, result before jsonrpc and id', async () => {
    const res = await fastPath(clean(), caller, headers());
    expect(res).not.toBeNull();
    const body = (await res!.json()) as { result: Record<string, unknown>; id: number };
    expect(body.id).toBe(7);
    expect(body.result).toMatchObject({ resultType: 'complete', taskId: TASK, status: 'working' });
    expect((body.result._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toEqual({
      name: 'countersign',
      version: '0.1.0',
    });
  });

  it('answers an id it cannot read with the one unknown-task error (-32602), HTTP 200', async () => {
    const body = clean();
    body.params.taskId = 'nope';
    const res = await fastPath(body, caller, headers({ 'mcp-name': 'nope' }));
    expect(res?.status).toBe(200);
    expect(await res!.json()).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params: unknown task' } });
  });

  it('past the poll limit answers -32000 with HTTP 429 and Retry-After', async () => {
    const limited = createTaskGetFastPath({
      tasks,
      pollLimiter: new PollRateLimiter({ burst: 1, refillMs: 60_000, now: () => 0 }),
      serverInfo: { name: 'countersign', version: '0.1.0' },
      logger: pino({ level: 'silent' }),
    });
    expect((await limited(clean(), caller, headers()))?.status).toBe(200);
    const res = await limited(clean(), caller, headers());
    expect([res?.status, res?.headers.get('retry-after')]).toEqual([429, '60']);
    expect(((await res!.json()) as { error: { code: number } }).error.code).toBe(-32000);
  });

  const handedOn: Array<[string, () => unknown, Record<string, string | null>]> = [
    ['a batch', () => [clean()], {}],
    ['another method', () => ({ ...clean(), method: 'tasks/cancel' }), {}],
    ['a notification (no id)', () => ({ jsonrpc: '2.0', method: 'tasks/get', params: clean().params }), {}],
    ['an id that is not a string or number', () => ({ ...clean(), id: null }), {}],
    ['a taskId that is not a string', () => ({ ...clean(), params: { ...clean().params, taskId: 42 } }), {}],
    ['another params key', () => ({ ...clean(), params: { ...clean().params, inputResponses: {} } }), {}],
    ['an unknown envelope key', () => ({ ...clean(), params: { taskId: TASK, _meta: { ...meta, 'x/y': 1 } } }), {}],
    [
      'another protocol version',
      () => ({ ...clean(), params: { taskId: TASK, _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2025-11-25' } } }),
      {},
    ],
    [
      'no tasks capability',
      () => ({ ...clean(), params: { taskId: TASK, _meta: { ...meta, 'io.modelcontextprotocol/clientCapabilities': {} } } }),
      {},
    ],
    ['no Content-Type header (the SDK answers 415)', clean, { 'content-type': null }],
    ['a Content-Type other than application/json (the SDK answers 415)', clean, { 'content-type': 'text/plain' }],
    ['no MCP-Protocol-Version header', clean, { 'mcp-protocol-version': null }],
    ['an Mcp-Method header naming another method', clean, { 'mcp-method': 'tasks/cancel' }],
    ['no Mcp-Name header', clean, { 'mcp-name': null }],
    ['an Mcp-Name header naming another task', clean, { 'mcp-name': 'other' }],
  ];
  it.each(handedOn)('hands %s to the SDK (null)', async (_what, body, over) => {
    expect(await fastPath(body(), caller, headers(over))).toBeNull();
  });
});
