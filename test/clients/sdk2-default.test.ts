// Scope: `@modelcontextprotocol/client` 2.4 with DEFAULT options (it opens with `initialize`,
// 2025-11-25) against the real stack: connect, tools/list, an allowed call inline, and a
// requestable denial answered with an isError result that starts no approval (DESIGN.md §8;
// src/mcp/legacy-server.ts).
import { randomUUID } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { clientFor, pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

async function defaultClient(sub: string): Promise<Client> {
  const token = await stack.issuer.mintToken({ sub });
  const client = new Client({ name: 'sdk2-default-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

describe('@modelcontextprotocol/client 2.4 with default options against Countersign', () => {
  it('connects (initialize, 2025-11-25) where it used to fail with -32022', async () => {
    const client = await defaultClient('alice');
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(client.getServerVersion()?.name).toBe('countersign');
    expect((client.getServerCapabilities() as Record<string, unknown>).extensions).toBeUndefined();
    await client.close();
  });

  it('tools/list returns the same tools as the 2026-07-28 face', async () => {
    const client = await defaultClient('alice');
    const { tools } = await client.listTools();
    const modern = await (await clientFor(stack, 'alice')).request<{ tools: Array<{ name: string; inputSchema: unknown }> }>('tools/list', {});
    expect(tools.map((t) => [t.name, t.inputSchema])).toEqual(modern.tools.map((t) => [t.name, t.inputSchema]));
    await client.close();
  });

  it('an allowed call ($100 transfer) runs inline', async () => {
    const client = await defaultClient('alice');
    const res = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-100', amount: 100, memo: `sdk2 ${randomUUID().slice(0, 12)}` } });
    expect(res.isError).toBe(false);
    expect(res.content.length).toBeGreaterThan(0);
    await client.close();
  });

  it('a requestable denial ($50,000) is an isError result saying the tool did not run, and starts no approval', async () => {
    const client = await defaultClient('alice');
    const memo = `sdk2 ${randomUUID().slice(0, 12)}`;
    const res = await client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } });
    expect(res.isError).toBe(true);
    expect((res.content[0] as { text?: string }).text).toMatch(/did not run/);
    expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === memo)).toBe(false);
    await client.close();
  });
});
