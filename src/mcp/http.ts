/**
 * The MCP server's HTTP surface (hono): the Streamable HTTP endpoint `/mcp` behind bearer-token
 * verification, OAuth Protected Resource Metadata (RFC 9728), and the receiver for the approval
 * backend's signed callbacks.
 *
 * - `/mcp`: behind two middlewares, the Origin check (`packages/http/src/origin.ts`: a foreign browser
 *   Origin is 403) and bearer verification (`src/auth/bearer-middleware.ts`: a missing or invalid
 *   token is 401 with `WWW-Authenticate: Bearer resource_metadata=…`, MCP authorization); a valid
 *   token becomes the principal handed to the SDK handler. 2026-07-28 requests are served by the
 *   modern face; `initialize`-era (2025-11-25) requests by the SDK's stateless legacy fallback and
 *   the factory's legacy face (`legacy-server.ts`), no sessions.
 * - `POST /callbacks/arap/:workflowId/:generation`: the backend's signed callbacks, verified and
 *   delivered to the approval workflow by `src/backends/arap-callbacks.ts`.
 *
 * Hostile input on `/mcp`, before the SDK parses anything: a body above {@link MAX_MCP_BODY_BYTES}
 * is 413 (-32000) — checked before the token, so an unauthenticated client cannot make the server
 * hold more; after the token, the body is parsed within `packages/http/src/json-limits.ts`: not JSON → 400
 * -32700, nested deeper than `MAX_JSON_DEPTH` or holding a `__proto__` key
 * anywhere → 400 -32602 naming the limit or the key's path (`__proto__` would
 * otherwise vanish when the SDK copies `arguments`, and the tool would run without the key its
 * schema refuses); an object with a duplicate member name at any depth → 400 -32602 naming its
 * path when it is inside `params`, else 400 -32600 (the message is not one unambiguous request:
 * `JSON.parse` keeps the last member, a proxy or log reader may keep the first); a request whose MRTR `params.inputResponses` is not an object → 400 -32602 at
 * `$.params.inputResponses` (`spec-params.ts` `retryFieldIssue`: the SDK would read it as no
 * responses). Every error of this app is JSON: JSON-RPC errors for any path under the
 * endpoint, in any letter case or with a trailing slash (404 -32000), problem+json elsewhere
 * (`packages/http/src/error-handlers.ts`).
 * Deliberately does not log tokens, bodies or arguments.
 */
import { Hono } from 'hono';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { JSONWebKeySet } from 'jose';
import { bearerAuth } from '../auth/bearer-middleware.js';
import type { TokenVerifier } from '../auth/verify-token.js';
import { createArapCallbackReceiver } from '../backends/arap-callbacks.js';
import { bodyLimit } from 'hono/body-limit';
import type { MiddlewareHandler } from 'hono';
import { problemNotFound, problemOnError } from '@countersign/http/error-handlers';
import { MAX_JSON_DEPTH, parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { sameOriginOnly } from '@countersign/http/origin';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import { boundedError, invalidRequestParams, jsonRpcErrorResponse } from './errors.js';
import { isRecord, memberAt, parseJson } from './narrow.js';
import { retryFieldIssue } from './spec-params.js';
import type { Tracer } from '@opentelemetry/api';
import { withMcpServerSpan } from './tracing.js';
import { newResponseNote, RESPONSE_NOTE_KEY, type ResponseNote } from './response-note.js';
import { isTaskListenRequest, type TaskSubscriptions } from './task-subscriptions.js';
import type { Principal } from '../auth/principal.js';

/** Largest accepted body of a `/mcp` request, bytes (1 MiB; the SDK's own default is 4 MiB). */
export const MAX_MCP_BODY_BYTES = 1024 * 1024;

/** Options of the MCP HTTP app. */
export interface McpHttpOptions {
  factory: McpServerFactory;
  /** `subscriptions/listen` naming `taskIds` (`task-subscriptions.ts`); unset: the SDK answers every listen request (and acknowledges no task ids). */
  subscriptions?: TaskSubscriptions;
  /** A clean `tasks/get` answered before the SDK (`task-get-fast-path.ts`); null hands the request to the SDK. Unset: the SDK answers all. */
  taskGetFastPath?: (body: unknown, caller: Principal, request: Request) => Promise<Response | null>;
  verifier: TokenVerifier;
  /** This resource's identifier, e.g. `http://127.0.0.1:8787/mcp` (the token audience). */
  resourceUrl: string;
  /** Authorization servers advertised in the protected-resource metadata. */
  authorizationServers: string[];
  temporal: Client;
  callbackSecret: string;
  logger: Logger;
  /** Public JWKS of the evidence receipts, served at {@link RECEIPTS_JWKS_PATH}; absent: that path is 404. */
  receiptsJwks?: JSONWebKeySet;
  /**
   * OpenTelemetry tracer (`src/ops/tracing.ts`): each authenticated `/mcp` POST gets its MCP server
   * span (`src/mcp/tracing.ts`), each backend callback its span linked to the task's trace. Unset: no spans.
   */
  tracer?: Tracer;
}

/** Where the MCP role publishes the receipts' public keys (docs/APPROVERS.md §Evidence receipts). */
export const RECEIPTS_JWKS_PATH = '/.well-known/countersign-receipts.jwks.json';

/** Build the app. `close()` tears down the SDK handler. */
export function createMcpHttpApp(opts: McpHttpOptions): { app: Hono; close: () => Promise<void> } {
  const handler = createMcpHandler(opts.factory, {
    legacy: 'stateless',
    responseMode: 'json',
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
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
  const receiptsJwks = opts.receiptsJwks;
  if (receiptsJwks) app.get(RECEIPTS_JWKS_PATH, (c) => c.json(receiptsJwks, 200, { 'Content-Type': 'application/jwk-set+json' }));

  // The body's size first (cheap, bounds what an unauthenticated client can make us hold); then
  // Streamable HTTP's Origin check (DNS rebinding) before the token is looked at; then, for a
  // verified caller only, the JSON limits.
  app.use(
    '/mcp',
    bodyLimit({
      maxSize: MAX_MCP_BODY_BYTES,
      onError: () => jsonRpcErrorResponse(413, -32000, `Request body too large: the limit is ${MAX_MCP_BODY_BYTES} bytes`),
    }),
    sameOriginOnly(origin),
    bearerAuth({ verifier: opts.verifier, resourceMetadataUrl: prmUrl, logger: opts.logger }),
    jsonWithinLimits(),
  );
  app.all('/mcp', async (c) => {
    const principal = c.get('principal');
    const token = c.get('bearerToken');
    const body = c.get('mcpBody');
    // task notifications: the SDK's listen router knows only the list-changed filters
    if (opts.subscriptions && body?.parsed && isTaskListenRequest(body.value, c.req.raw.headers))
      return opts.subscriptions.serve(body.value, principal, c.req.raw);
    const note = newResponseNote();
    const authInfo = { token, clientId: principal.sub, scopes: [], extra: { principal, [RESPONSE_NOTE_KEY]: note } };
    // A body already parsed by `jsonWithinLimits` goes to the SDK as `parsedBody`: it then reads,
    // clones and parses nothing again (see `createMcpHandler`'s `parsedBody` option).
    const run = async () => {
      // a clean tasks/get needs no per-request SDK server (task-get-fast-path.ts); anything else does
      const fast = opts.taskGetFastPath && body?.parsed ? await opts.taskGetFastPath(body.value, principal, c.req.raw) : null;
      return (
        fast ?? finishMcpResponse(await handler.fetch(c.req.raw, { authInfo, ...(body?.parsed ? { parsedBody: body.value } : {}) }), note)
      );
    };
    if (!opts.tracer || c.req.method !== 'POST') return run();
    return withMcpServerSpan(opts.tracer, c.req.raw, body?.text ?? (await c.req.raw.clone().text()), run);
  });

  app.route(
    '/',
    createArapCallbackReceiver({
      temporal: opts.temporal,
      callbackSecret: opts.callbackSecret,
      logger: opts.logger,
      ...(opts.tracer ? { tracer: opts.tracer } : {}),
    }),
  );

  // Under the endpoint (`/mcp/`, `/MCP`, `/mcp/x`) a client speaks JSON-RPC: answer it in kind.
  const underEndpoint = (path: string) =>
    path.toLowerCase() === resourcePath.toLowerCase() || path.toLowerCase().startsWith(`${resourcePath.toLowerCase()}/`);
  app.notFound((c) =>
    underEndpoint(c.req.path) ? jsonRpcErrorResponse(404, -32000, `Not found: the MCP endpoint is ${resourcePath}`) : problemNotFound(c),
  );
  const otherError = problemOnError(opts.logger, 'mcp http app');
  app.onError((err, c) => {
    if (!underEndpoint(c.req.path)) return otherError(err, c);
    opts.logger.error({ err: { name: err.name } }, 'unhandled error in mcp http app');
    return jsonRpcErrorResponse(500, -32603, 'Internal error');
  });

  return { app, close: () => handler.close() };
}

/**
 * The `/mcp` POST body as `jsonWithinLimits` read it: `text` as received; `parsed` true when it was
 * JSON (then `value` is `JSON.parse(text)`, checked within the limits), false for an empty or
 * whitespace-only body, which stays on the request for the SDK to answer as before.
 */
export interface McpRequestBody {
  text: string;
  parsed: boolean;
  value?: unknown;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by `jsonWithinLimits` for a `/mcp` POST with a body. */
    mcpBody?: McpRequestBody;
  }
}

/**
 * Middleware: a POST body (already size-bounded) is parsed within `packages/http/src/json-limits.ts` before
 * the SDK sees it; refusals are JSON-RPC errors (see the module header). A body that parsed is
 * handed to the SDK as that value (`parsedBody`, the same `JSON.parse` result the SDK would compute
 * from the text), so the request is not rebuilt, cloned or parsed again; an empty one is put back
 * on the request as the same text, so the SDK's own answer to it is unchanged.
 */
function jsonWithinLimits(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'POST' || c.req.raw.body === null) return next();
    let text: string | null;
    try {
      text = await readUtf8Body(c.req.raw);
    } catch {
      return jsonRpcErrorResponse(400, -32700, 'Parse error: the request body could not be read');
    }
    if (text === null) return jsonRpcErrorResponse(400, -32700, 'Parse error: the request body is not valid UTF-8');
    if (text.trim() !== '') {
      const parsed = parseJsonWithLimits(text);
      if (!parsed.ok) {
        if (parsed.reason === 'invalid-json') return jsonRpcErrorResponse(400, -32700, 'Parse error: the request body is not valid JSON');
        if (parsed.reason === 'too-deep')
          return jsonRpcErrorResponse(400, -32602, `Invalid params: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
        if (parsed.reason === 'duplicate-key' || parsed.reason === 'ill-formed-unicode') {
          // inside params the request is well formed but its params are ambiguous or unusable;
          // elsewhere (a repeated or ill-formed `id`, `method`, `params`) the message itself is not
          // one JSON-RPC request object
          const what =
            parsed.reason === 'duplicate-key'
              ? `duplicate key at ${parsed.path}`
              : `string at ${parsed.path} is not well-formed Unicode (lone surrogate)`;
          return IN_PARAMS.test(parsed.path)
            ? jsonRpcErrorResponse(400, -32602, `Invalid params: ${what}`, { path: parsed.path }, idOf(text))
            : jsonRpcErrorResponse(
                400,
                -32600,
                `Invalid Request: ${what}`,
                { path: parsed.path },
                parsed.path === '$.id' ? null : idOf(text),
              );
        }
        return jsonRpcErrorResponse(400, -32602, `Invalid params: forbidden key at ${parsed.path}`, { path: parsed.path }, idOf(text));
      }
      const retry = retryFieldIssue(parsed.value);
      if (retry) {
        const { message, data } = invalidRequestParams(retry.method, [retry.issue]);
        return jsonRpcErrorResponse(400, -32602, message, data, idOf(text));
      }
      c.set('mcpBody', { text, parsed: true, value: parsed.value });
      return next();
    }
    c.set('mcpBody', { text, parsed: false });
    c.req.raw = new Request(c.req.raw, { body: text });
    await next();
  };
}

/** A path (`packages/http/src/json-limits.ts` spelling) inside a request's `params`, of a single or a batched message. */
const IN_PARAMS = /^\$(\[\d+\])?\.params[.[]/;

/** The top-level `id` of a JSON-RPC request text when it is a string or number (for echoing), else null. */
function idOf(text: string): string | number | null {
  const id = memberAt(parseJson(text), 'id');
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * Three fix-ups of the SDK's JSON answer, each applied only to a body that can need it (a cheap text
 * check first; every other response passes through as is):
 * - an error body longer than {@link LONG_ERROR_CHARS} has its strings bounded (`boundedError`):
 *   the SDK's -32020 header mismatch quotes the method or tool name, twice, at any length;
 * - the SDK appends `content: []` to a task-shaped `tools/call` result; `CreateTaskResult` has no
 *   `content`, so drop it;
 * - a retryable "unavailable" error (`temporalUnavailable` in `errors.ts`: Temporal or a worker did
 *   not answer) is sent with HTTP 503 and `Retry-After: <data.retryAfterSeconds>`, so HTTP clients
 *   and proxies see an outage as one (the JSON-RPC body is unchanged).
 */
async function finishMcpResponse(res: Response, note: ResponseNote): Promise<Response> {
  // a plain CallToolResult (`response-note.ts`) needs neither fix-up: not read, passed on as is
  if (note.plainToolResult) return res;
  if (!(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  let text = await res.text();
  // an error quoting what the request sent (the SDK's -32020 header mismatch quotes the method
  // or name twice) is answered with its strings bounded: nothing unbounded is echoed
  if (text.length > LONG_ERROR_CHARS) text = boundedErrorText(text);
  if (text.includes('"rateLimited":true')) {
    const waitMs = rateLimitWaitOf(text);
    if (waitMs !== undefined) {
      const headers = new Headers(res.headers);
      headers.set('retry-after', String(Math.max(1, Math.ceil(waitMs / 1000))));
      return new Response(text, { status: 429, headers });
    }
  }
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

/** A JSON-RPC error body longer than this (characters) is checked for strings to bound; a bounded error is far shorter. */
const LONG_ERROR_CHARS = 2048;

/** `text`, a JSON body: when it is a single JSON-RPC error, re-serialized with its strings bounded (`boundedError`). */
function boundedErrorText(text: string): string {
  const body: unknown = parseJson(text);
  if (!isRecord(body) || !isRecord(body.error)) return text;
  const { code, message } = body.error;
  if (typeof code !== 'number' || typeof message !== 'string') return text;
  const error = { ...body.error, code, message };
  const bounded = boundedError(error);
  return bounded === error ? text : JSON.stringify({ ...body, error: bounded });
}

/** `error.data.retryAfterMs` of a single JSON-RPC rate-limit error body (`pollTooSoon`, `tooManySubscriptions`), when it is a positive number. */
function rateLimitWaitOf(text: string): number | undefined {
  const data = memberAt(parseJson(text), 'error', 'data');
  const waitMs = memberAt(data, 'retryAfterMs');
  return memberAt(data, 'rateLimited') === true && typeof waitMs === 'number' && waitMs > 0 ? waitMs : undefined;
}

/** `error.data.retryAfterSeconds` of a single JSON-RPC error body, when it is a positive integer. */
function retryAfterOf(text: string): number | undefined {
  const n = memberAt(parseJson(text), 'error', 'data', 'retryAfterSeconds');
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined;
}
