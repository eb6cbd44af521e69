/**
 * The MCP server's HTTP surface (hono): the Streamable HTTP endpoint `/mcp` behind bearer-token
 * verification, OAuth Protected Resource Metadata (RFC 9728), and the receiver for the approval
 * backend's signed callbacks.
 *
 * - `/mcp`: a missing or invalid token is 401 with `WWW-Authenticate: Bearer resource_metadata=…`
 *   (MCP authorization); a valid one becomes the principal handed to the SDK handler.
 * - `POST /callbacks/arap/:workflowId/:generation`: the backend's signed callbacks, verified and
 *   delivered to the approval workflow by `src/backends/arap-callbacks.ts`.
 * Deliberately does not log tokens, bodies or arguments.
 */
import { Hono } from 'hono';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { extractBearer } from '../auth/bearer.js';
import type { TokenVerifier } from '../auth/verify-token.js';
import { createArapCallbackReceiver } from '../backends/arap-callbacks.js';
import { problem } from '../http/problem.js';
import type { McpServerFactory } from '@modelcontextprotocol/server';

/** Options of the MCP HTTP app. */
export interface McpHttpOptions {
  factory: McpServerFactory;
  verifier: TokenVerifier;
  /** This resource's identifier, e.g. `http://127.0.0.1:8787/mcp` (the token audience). */
  resourceUrl: string;
  /** Authorization servers advertised in the protected-resource metadata. */
  authorizationServers: string[];
  temporal: Client;
  callbackSecret: string;
  logger: Logger;
}

/** Build the app. `close()` tears down the SDK handler. */
export function createMcpHttpApp(opts: McpHttpOptions): { app: Hono; close: () => Promise<void> } {
  const handler = createMcpHandler(opts.factory, { legacy: 'reject', responseMode: 'json', onerror: (e) => opts.logger.debug({ err: e.message }, 'mcp handler reported') });
  const resourcePath = new URL(opts.resourceUrl).pathname;
  const origin = new URL(opts.resourceUrl).origin;
  const prmUrl = `${origin}/.well-known/oauth-protected-resource${resourcePath}`;
  const app = new Hono();

  const prm = (c: { json: (v: unknown) => Response }) =>
    c.json({ resource: opts.resourceUrl, authorization_servers: opts.authorizationServers, bearer_methods_supported: ['header'] });
  app.get(`/.well-known/oauth-protected-resource${resourcePath}`, prm);
  app.get('/.well-known/oauth-protected-resource', prm);
  app.get('/healthz', (c) => c.json({ ok: true }));

  app.all('/mcp', async (c) => {
    // Streamable HTTP: a browser Origin other than this server's own is refused (DNS rebinding).
    const originHeader = c.req.header('origin');
    if (originHeader !== undefined && originHeader !== origin) {
      return problem('forbidden', 'Origin not allowed');
    }
    const challenge = (error?: string) =>
      new Response(JSON.stringify({ error: error ?? 'unauthorized', error_description: 'A valid bearer token for this resource is required.' }), {
        status: 401,
        headers: {
          'content-type': 'application/json',
          'www-authenticate': `Bearer resource_metadata="${prmUrl}"${error ? `, error="${error}"` : ''}`,
        },
      });
    const token = extractBearer(c.req.header('authorization'));
    if (!token) return challenge();
    let principal;
    try {
      principal = await opts.verifier.verify(token);
    } catch (err) {
      opts.logger.info({ reason: (err as { code?: string }).code ?? 'invalid' }, 'bearer token rejected');
      return challenge('invalid_token');
    }
    const res = await handler.fetch(c.req.raw, { authInfo: { token, clientId: principal.sub, scopes: [], extra: { principal } } });
    return stripEmptyTaskContent(res);
  });

  app.route('/', createArapCallbackReceiver({ temporal: opts.temporal, callbackSecret: opts.callbackSecret, logger: opts.logger }));

  return { app, close: () => handler.close() };
}

/**
 * The SDK appends `content: []` to a task-shaped `tools/call` result; `CreateTaskResult` has no
 * `content`, so drop it (DESIGN.md §4). Only a body that can be such a result is parsed and
 * re-serialized; every other response (allowed calls, `tasks/get`, errors) passes through as is.
 */
async function stripEmptyTaskContent(res: Response): Promise<Response> {
  if (!(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  const text = await res.text();
  // cheap pre-check: the SDK writes compact JSON, so a task result holds both of these verbatim
  if (!text.includes('"resultType":"task"') || !text.includes('"content":[]')) return new Response(text, res);
  let body: { result?: { resultType?: string; content?: unknown[] } } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    return new Response(text, res);
  }
  if (body?.result?.resultType === 'task' && Array.isArray(body.result.content) && body.result.content.length === 0) {
    delete body.result.content;
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(body), { status: res.status, headers });
  }
  return new Response(text, res);
}
