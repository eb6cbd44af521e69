// Scope: hostile input to the MCP front's HTTP app (src/mcp/http.ts) in-process: body and JSON limits on /mcp, prototype keys in tool arguments, JSON errors for unknown paths and the callback receiver's wrong methods; each answer a clean 4xx with a JSON body and no side effect (no ledger row, no task-service or Temporal use).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_MCP_BODY_BYTES } from '../../src/mcp/http.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { mcpHeaders, mcpUnderTest, toolsCallText, type McpUnderTest } from './apps.js';

let mcp: McpUnderTest;
beforeEach(() => {
  mcp = mcpUnderTest();
});
afterEach(async () => {
  await mcp.close();
});

const post = (path: string, body: string, headers = mcpHeaders('tools/call', 'wire_transfer')) =>
  mcp.app.request(path, { method: 'POST', headers, body });

function nested(depth: number): string {
  return `{"to":"acct-991","amount":5,"memo":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

describe('the MCP endpoint under hostile input', () => {
  it('a well-formed allowed wire_transfer runs and writes one ledger row (the probe the other tests rely on)', async () => {
    const res = await post('/mcp', toolsCallText('{"to":"acct-991","amount":5}'));
    expect(res.status).toBe(200);
    expect(mcp.ledger.count()).toBe(1);
  });

  it('a __proto__ key in tool arguments is refused with -32602 naming its path, and the transfer does not run', async () => {
    const res = await post('/mcp', toolsCallText('{"to":"acct-991","amount":5,"__proto__":{"x":1}}', 7));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32602,
        message: 'Invalid params: forbidden key at $.params.arguments.__proto__',
        data: { path: '$.params.arguments.__proto__' },
      },
    });
    expect(mcp.ledger.count()).toBe(0);
  });

  it('constructor and prototype keys are kept as own properties, so the tool schema refuses them as unknown keys (-32602) and nothing runs', async () => {
    for (const key of ['constructor', 'prototype']) {
      const res = await post('/mcp', toolsCallText(`{"to":"acct-991","amount":5,"${key}":{"x":1}}`));
      const body = (await res.json()) as { error?: { code: number; message: string } };
      expect(body.error?.code).toBe(-32602);
      expect(body.error?.message).toContain('arguments do not match the input schema of wire_transfer');
    }
    expect(mcp.ledger.count()).toBe(0);
  });

  it('arguments nested 3,000 deep are refused with -32602 before anything parses them', async () => {
    const res = await post('/mcp', toolsCallText(nested(3000)));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toContain('nested deeper than 64 levels');
    expect(mcp.ledger.count()).toBe(0);
  });

  it('a body over the limit is 413 with a JSON-RPC error, before the token is checked', async () => {
    const big = 'x'.repeat(MAX_MCP_BODY_BYTES + 1);
    for (const headers of [mcpHeaders('tools/call', 'wire_transfer'), { 'content-type': 'application/json' }]) {
      const res = await post('/mcp', big, headers);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32000);
    }
  });

  it('a body that is not JSON is 400 -32700', async () => {
    const res = await post('/mcp', '{"jsonrpc":"2.0",');
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it('POST /mcp/ and POST /MCP answer 404 with a JSON-RPC error naming the endpoint', async () => {
    for (const path of ['/mcp/', '/MCP', '/Mcp/extra']) {
      const res = await post(path, toolsCallText('{"to":"acct-991","amount":5}'));
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(await res.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32000, message: 'Not found: the MCP endpoint is /mcp' },
      });
    }
    expect(mcp.ledger.count()).toBe(0);
  });

  it('GET on the callback receiver and unknown paths answer 404 problem+json, and Temporal is not touched', async () => {
    for (const path of [`/callbacks/arap/${APPROVAL_WORKFLOW_ID_PREFIX}${'0'.repeat(32)}/1`, '/nope', '/callbacks/arap']) {
      const res = await mcp.app.request(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(((await res.json()) as { type: string }).type).toBe('urn:countersign:problem:not-found');
    }
    expect(mcp.temporalUses).toEqual([]);
  });
});
