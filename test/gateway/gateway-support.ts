// Scope: helpers shared by the gateway end-to-end tests: a gateway configuration file in a fresh
// folder, deciding approval requests by what their arguments say, and a minimal Streamable HTTP upstream.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stack } from '../../src/stack.js';
import { basic, pendingFor } from '../support/stack-harness.js';

/** Write `{upstreams}` as a gateway configuration file in a fresh folder; returns its path. */
export function writeGatewayConfig(upstreams: unknown[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-gateway-')), 'countersign.json');
  writeFileSync(file, JSON.stringify({ upstreams }, null, 2));
  return file;
}

/** Pending approval requests for `tool` visible to bob. */
export async function pendingForTool(stack: Stack, pred: (args: Record<string, unknown>) => boolean): Promise<Array<{ id: string }>> {
  return (await pendingFor(stack, 'bob')).filter((r) => pred(r.arguments));
}

/** Decide the one pending request whose arguments satisfy `pred`; returns the HTTP status. */
export async function decideWhere(
  stack: Stack,
  pred: (args: Record<string, unknown>) => boolean,
  decision: 'approve' | 'deny',
  approverId = 'bob',
): Promise<number> {
  const a = stack.secrets.approvers.find((x) => x.id === approverId)!;
  const matches = (await pendingFor(stack, approverId)).filter((r) => pred(r.arguments));
  if (matches.length !== 1) throw new Error(`expected one pending request, found ${matches.length}`);
  const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${matches[0]!.id}/decision`, {
    method: 'POST',
    headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
    body: JSON.stringify({ decision }),
  });
  return res.status;
}

/**
 * A minimal Streamable HTTP MCP server (JSON responses, 2025-11-25) serving `tools`, whose every
 * `tools/call` is answered `{content: [{type: "text", text: callText}]}` — or, when its arguments carry
 * a number `errorCode`, with that JSON-RPC error —; records each request's
 * headers and the arguments of each call (`callArguments`, in order), and counts the calls. Listens on 127.0.0.1 (a free port); `url` is its endpoint.
 */
export async function startJsonHttpUpstream(opts: {
  name: string;
  tools: unknown[];
  callText: string;
}): Promise<{ server: Server; url: string; headers: IncomingHttpHeaders[]; callArguments: unknown[]; calls: () => number }> {
  const headers: IncomingHttpHeaders[] = [];
  const callArguments: unknown[] = [];
  let calls = 0;
  const server = createServer((req, res) => {
    headers.push(req.headers);
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const msg = JSON.parse(body) as { id?: number; method: string; params?: { arguments?: { errorCode?: unknown } } };
      if (msg.id === undefined) return void res.writeHead(202).end();
      const reply = (payload: Record<string, unknown>) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...payload }));
      if (msg.method === 'initialize')
        return reply({
          result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: opts.name, version: '1' } },
        });
      if (msg.method === 'tools/list') return reply({ result: { tools: opts.tools } });
      if (msg.method === 'tools/call') {
        calls++;
        callArguments.push(msg.params?.arguments);
        const code = msg.params?.arguments?.errorCode;
        if (typeof code === 'number') return reply({ error: { code, message: 'upstream error' } });
        return reply({ result: { content: [{ type: 'text', text: opts.callText }] } });
      }
      return reply({ error: { code: -32601, message: 'Method not found' } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`, headers, callArguments, calls: () => calls };
}
