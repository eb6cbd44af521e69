// Scope: input validation errors as official clients see them, on both faces: arguments the tool's
// schema refuses are a tool execution error (`isError: true`, SEP-1303, MCP since 2025-11-25) that
// the client hands to the model, naming each failing path; an unknown tool stays the -32602
// protocol error (src/mcp/gate.ts; docs/reference/10-errors.md). Clients: `@modelcontextprotocol/client`
// 2.4 with auto negotiation (2026-07-28) and with its defaults (2025-11-25), and
// `@modelcontextprotocol/sdk` 1.32 (2025-11-25).
import { Client as Client2, StreamableHTTPClientTransport as Transport2 } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
});
afterAll(async () => {
  await stack?.stop();
});

interface Caller {
  revision: string;
  callTool(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; content: unknown[] }>;
  close(): Promise<void>;
}

const headers = async (sub: string) => ({ authorization: `Bearer ${await stack.issuer.mintToken({ sub })}` });

const clients: Record<string, (sub: string) => Promise<Caller>> = {
  '@modelcontextprotocol/client 2.4, auto (2026-07-28)': async (sub) => {
    const c = new Client2({ name: 'input-validation', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await c.connect(new Transport2(new URL(stack.urls.mcp), { requestInit: { headers: await headers(sub) } }));
    return {
      revision: c.getNegotiatedProtocolVersion() ?? '',
      callTool: (name, args) => c.callTool({ name, arguments: args }),
      close: () => c.close(),
    };
  },
  '@modelcontextprotocol/client 2.4, defaults (2025-11-25)': async (sub) => {
    const c = new Client2({ name: 'input-validation', version: '1.0.0' });
    await c.connect(new Transport2(new URL(stack.urls.mcp), { requestInit: { headers: await headers(sub) } }));
    return {
      revision: c.getNegotiatedProtocolVersion() ?? '',
      callTool: (name, args) => c.callTool({ name, arguments: args }),
      close: () => c.close(),
    };
  },
  '@modelcontextprotocol/sdk 1.32 (2025-11-25)': async (sub) => {
    const c = new Client1({ name: 'input-validation', version: '1.0.0' });
    const transport = new Transport1(new URL(stack.urls.mcp), { requestInit: { headers: await headers(sub) } });
    await c.connect(transport);
    return {
      revision: transport.protocolVersion ?? '',
      callTool: async (name, args) => (await c.callTool({ name, arguments: args })) as { isError?: boolean; content: unknown[] },
      close: () => c.close(),
    };
  },
};

const textOf = (r: { content: unknown[] }) => r.content.map((c) => (c as { text?: string }).text ?? '').join('\n');

describe.each(Object.entries(clients))('%s', (_name, connect) => {
  it('arguments the input schema refuses come back as an isError tool result naming each failing path, not a thrown protocol error, and nothing runs', async () => {
    const client = await connect('input-validation');
    expect(['2026-07-28', '2025-11-25']).toContain(client.revision);
    const before = stack.ledger.count();
    const res = await client.callTool('wire_transfer', { to: 'acct-991', amount: 'lots', memo: 'iv', extra: 1 });
    expect(res.isError).toBe(true);
    const text = textOf(res);
    expect(text).toMatch(/^Invalid arguments for wire_transfer; the tool did not run\./);
    expect(text).toContain('\n- amount: ');
    expect(text).toContain('extra');
    expect(text).not.toContain('lots'); // paths and reasons, never the value sent
    expect(stack.ledger.count()).toBe(before);
    await client.close();
  });

  it('an unknown tool is still the -32602 protocol error', async () => {
    const client = await connect('input-validation');
    await expect(client.callTool('no_such_tool', {})).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});
