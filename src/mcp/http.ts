/**
 * The MCP server's HTTP surface (hono): the Streamable HTTP endpoint `/mcp` behind bearer-token
 * verification, OAuth Protected Resource Metadata (RFC 9728), and the receiver for the approval
 * backend's signed callbacks.
 *
 * - `/mcp`: behind two middlewares, the Origin check (`src/http/origin.ts`: a foreign browser
 *   Origin is 403) and bearer verification (`src/auth/bearer-middleware.ts`: a missing or invalid
 *   token is 401 with `WWW-Authenticate: Bearer resource_metadata=…`, MCP authorization); a valid
 *   token becomes the principal handed to the SDK handler. 2026-07-28 requests are served by the
 *   modern face; `initialize`-era (2025-11-25) requests by the SDK's stateless legacy fallback and
 *   the factory's legacy face (`legacy-server.ts`), no sessions.
 * - `POST /callbacks/arap/:workflowId/:generation`: the backend's signed callbacks, verified and
 *   delivered to the approval workflow by `src/backends/arap-callbacks.ts`.
 * Deliberately does not log tokens, bodies or arguments.
 */
import { Hono } from 'hono';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { bearerAuth } from '../auth/bearer-middleware.js';
import type { TokenVerifier } from '../auth/verify-token.js';
import { createArapCallbackReceiver } from '../backends/arap-callbacks.js';
import { sameOriginOnly } from '../http/origin.js';
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
  const handler = createMcpHandler(opts.factory, {
    legacy: 'stateless',
    responseMode: 'json',
    onerror: (e) => opts.logger.debug({ err: e.message }, 'mcp handler reported'),
  });
  const resourcePath = new URL(opts.resourceUrl).pathname;
  const origin = new URL(opts.resourceUrl).origin;
  const prmUrl = `${origin}/.well-known/oauth-protected-resource${resourcePath}`;
  const app = new Hono();

  const prm = (c: { json: (v: unknown) => Response }) =>
    c.json({ resource: opts.resourceUrl, authorization_servers: opts.authorizationServers, bearer_methods_supported: ['header'] });
  app.get(`/.well-known/oauth-protected-resource${resourcePath}`, prm);
  app.get('/.well-known/oauth-protected-resource', prm);
  app.get('/healthz', (c) => c.json({ ok: true }));

  // Streamable HTTP: a browser Origin other than this server's own is refused (DNS rebinding),
  // before the token is looked at.
  app.use('/mcp', sameOriginOnly(origin), bearerAuth({ verifier: opts.verifier, resourceMetadataUrl: prmUrl, logger: opts.logger }));
  app.all('/mcp', async (c) => {
    const principal = c.get('principal');
    const token = c.get('bearerToken');
    const res = await handler.fetch(c.req.raw, { authInfo: { token, clientId: principal.sub, scopes: [], extra: { principal } } });
    return finishMcpResponse(res);
  });

  app.route('/', createArapCallbackReceiver({ temporal: opts.temporal, callbackSecret: opts.callbackSecret, logger: opts.logger }));

  return { app, close: () => handler.close() };
}

/**
 * Two fix-ups of the SDK's JSON answer, each applied only to a body that can need it (a cheap text
 * check first; every other response passes through as is):
 * - the SDK appends `content: []` to a task-shaped `tools/call` result; `CreateTaskResult` has no
 *   `content`, so drop it;
 * - a retryable "unavailable" error (`temporalUnavailable` in `errors.ts`: Temporal or a worker did
 *   not answer) is sent with HTTP 503 and `Retry-After: <data.retryAfterSeconds>`, so HTTP clients
 *   and proxies see an outage as one (the JSON-RPC body is unchanged).
 */
async function finishMcpResponse(res: Response): Promise<Response> {
  if (!(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  const text = await res.text();
  if (text.includes('"retryAfterSeconds"')) {
    const retryAfter = retryAfterOf(text);
    if (retryAfter !== undefined) {
      const headers = new Headers(res.headers);
      headers.set('retry-after', String(retryAfter));
      return new Response(text, { status: 503, headers });
    }
  }
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

/** `error.data.retryAfterSeconds` of a single JSON-RPC error body, when it is a positive integer. */
function retryAfterOf(text: string): number | undefined {
  try {
    const n = (JSON.parse(text) as { error?: { data?: { retryAfterSeconds?: unknown } } })?.error?.data?.retryAfterSeconds;
    return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}
