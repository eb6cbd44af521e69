// Scope: the extension's identifiers on the wire: the earlier `net.openid.authzen/tool-approval`
// in a client's declared capabilities (a proxy still emits it) is accepted like
// `io.modelcontextprotocol/tool-approval`, on the 2026-07-28 and the 2025-11-25 face; the server
// only ever emits `io.modelcontextprotocol/tool-approval` (docs/reference/01-identifier-and-capability.md).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WireClient } from '@countersign/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Stack } from '../../src/stack.js';
import { LEGACY_TOOL_APPROVAL_EXTENSION, TASKS_EXTENSION, TOOL_APPROVAL_EXTENSION } from '../../workflows/wire.js';
import { decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

async function wireClient(sub: string, extensions: Record<string, unknown>): Promise<WireClient> {
  return new WireClient({ url: stack.urls.mcp, token: await stack.issuer.mintToken({ sub }), capabilities: { extensions } });
}

/** Every extension identifier anywhere in `value` (keys that look like one). */
function identifiersIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => identifiersIn(v, found));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      if (/^[a-z]+(\.[a-z0-9-]+)+\/[a-z-]+$/.test(k)) found.add(k);
      identifiersIn(v, found);
    }
  return found;
}

it('a client declaring the earlier net.openid.authzen/tool-approval with tasks gets the same task, and the decision, as one declaring io.modelcontextprotocol/tool-approval', async () => {
  const earlier = await wireClient('ident-a', { [TASKS_EXTENSION]: {}, [LEGACY_TOOL_APPROVAL_EXTENSION]: {} });
  const current = await wireClient('ident-b', { [TASKS_EXTENSION]: {}, [TOOL_APPROVAL_EXTENSION]: {} });
  const answers = [];
  for (const client of [earlier, current]) {
    const m = `ident ${randomUUID().slice(0, 8)}`;
    const created = await client.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 40_000, memo: m },
    });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, m, 'approve')).toBe(200);
    const done = await waitForTerminal(client, created.taskId);
    answers.push({
      created: { resultType: created.resultType, status: created.status },
      done: { status: done.status, meta: done.result?._meta },
    });
  }
  expect(answers[0]).toEqual(answers[1]);
});

it('the server emits only io.modelcontextprotocol/tool-approval, never the earlier identifier, whatever the client declared', async () => {
  const earlier = await wireClient('ident-c', { [TASKS_EXTENSION]: {}, [LEGACY_TOOL_APPROVAL_EXTENSION]: {} });
  const seen = new Set<string>();
  const discovered = await earlier.request('server/discover', {});
  identifiersIn(discovered, seen);
  const m = `ident ${randomUUID().slice(0, 8)}`;
  const created = await earlier.request<WireTask>('tools/call', {
    name: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 40_000, memo: m },
  });
  identifiersIn(created, seen);
  expect(await decide(stack, m, 'deny')).toBe(200);
  identifiersIn(await waitForTerminal(earlier, created.taskId), seen);
  expect(seen).toContain(TOOL_APPROVAL_EXTENSION);
  expect(seen).not.toContain(LEGACY_TOOL_APPROVAL_EXTENSION);
});

it('a 2025-11-25 client declaring net.openid.authzen/tool-approval in its initialize capabilities connects and is answered with io.modelcontextprotocol identifiers only', async () => {
  const token = await stack.issuer.mintToken({ sub: 'ident-d' });
  const client = new Client(
    { name: 'ident-legacy', version: '1.0.0' },
    { capabilities: { extensions: { [LEGACY_TOOL_APPROVAL_EXTENSION]: {} } } as Record<string, unknown> },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  const caps = client.getServerCapabilities();
  expect(caps?.tasks).toBeDefined();
  expect(identifiersIn(caps)).not.toContain(LEGACY_TOOL_APPROVAL_EXTENSION);
  const tools = await client.listTools();
  expect(tools.tools.map((t) => t.name)).toContain('wire_transfer');
  await client.close();
});
