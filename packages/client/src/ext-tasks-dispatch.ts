/**
 * The raw dispatcher `@modelcontextprotocol/ext-tasks` needs to drive tasks on a 2026-07-28 server
 * through an `@modelcontextprotocol/client` 2.x `Client` (docs/CLIENTS.md, "SDK v2 + ext-tasks").
 *
 * Why it exists: the SDK `Client` validates every `tools/call` answer as a `CallToolResult`, so it
 * cannot carry a `CreateTaskResult` (`resultType: "task"`), and it has no `tasks/*` methods. ext-tasks
 * 0.2.2 therefore asks the host for `rawDispatch` (one JSON-RPC request → its response) plus the
 * `v2RequestFraming` it stamps into each such request's `_meta`, and routes `tools/call` and
 * `tasks/*` through it; everything else still goes through the `Client`.
 *
 * This module is self-contained (only `fetch` and ext-tasks types) so it can be copied into any
 * application. Wire: one POST per request to the Streamable HTTP endpoint with the standard
 * headers of 2026-07-28 (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` for `tools/call` and
 * `tasks/*`), a bearer token when given; a JSON or an SSE (`text/event-stream`) response body.
 *
 * Deliberately does not: retry (ext-tasks decides that from `DispatchError.retryable`), open the
 * GET stream, or answer server-to-client requests (2026-07-28 carries input in `inputRequests`).
 */
import { DispatchError, type JsonRpcResponse, type RawClientDispatch, type V2RequestFraming } from '@modelcontextprotocol/ext-tasks/client';

/** Protocol revision the framing declares. */
export const PROTOCOL_VERSION_2026 = '2026-07-28';

/** Options of {@link createRawDispatch}. */
export interface RawDispatchOptions {
  /** The Streamable HTTP endpoint, e.g. `http://127.0.0.1:8787/mcp`. */
  url: string | URL;
  /** Bearer token, or a function returning the current one (called per request). */
  token?: string | (() => string | Promise<string>);
  /** Extra headers on every request (per-call headers from ext-tasks are added on top). */
  headers?: Record<string, string>;
  /** The `fetch` to use; default the global one. */
  fetch?: typeof fetch;
}

/** The `_meta` key carrying the protocol version in 2026-07-28 requests. */
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

let nextId = 1;

/**
 * A `RawClientDispatch` over HTTP. Resolves `{kind: "result"}` or `{kind: "error"}` for a JSON-RPC
 * answer (any HTTP status); rejects with `DispatchError` when there is none — a network failure or
 * a 5xx/429 without a JSON-RPC body is `retryable: true`, anything else `false` — and with the
 * signal's reason when aborted. A per-request `requestTimeoutMs` from ext-tasks aborts the fetch.
 */
export function createRawDispatch(opts: RawDispatchOptions): RawClientDispatch {
  const doFetch = opts.fetch ?? fetch;
  return async (request, options = {}): Promise<JsonRpcResponse> => {
    const req = (request ?? {}) as { method?: unknown; params?: Record<string, unknown> };
    if (typeof req.method !== 'string') throw new DispatchError('MCP request method must be a string');
    const params = req.params ?? {};
    const id = nextId++;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-method': req.method,
      ...(opts.headers ?? {}),
    };
    const version = (params._meta as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META];
    if (typeof version === 'string') headers['mcp-protocol-version'] = version;
    const name = req.method === 'tools/call' ? params.name : req.method.startsWith('tasks/') ? params.taskId : undefined;
    if (typeof name === 'string') headers['mcp-name'] = name;
    for (const [k, v] of Object.entries(options.context?.headers ?? {})) headers[k.toLowerCase()] = v;
    const token = typeof opts.token === 'function' ? await opts.token() : opts.token;
    if (token) headers.authorization = `Bearer ${token}`;

    const timeout = options.context?.requestTimeoutMs;
    const signals = [options.signal, timeout !== undefined ? AbortSignal.timeout(timeout) : undefined].filter(
      (s): s is AbortSignal => s !== undefined,
    );
    let res: Response;
    try {
      res = await doFetch(opts.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id, method: req.method, ...(req.params !== undefined ? { params: req.params } : {}) }),
        ...(signals.length ? { signal: AbortSignal.any(signals) } : {}),
      });
    } catch (err) {
      options.signal?.throwIfAborted();
      throw new DispatchError(`MCP request ${req.method} failed: ${(err as Error).message}`, true, { cause: err });
    }
    const text = await res.text();
    const message = parseBody(text, res.headers.get('content-type') ?? '', id);
    if (message?.error && typeof message.error.code === 'number') {
      return {
        kind: 'error',
        error: {
          code: message.error.code,
          message: String(message.error.message ?? ''),
          ...(message.error.data !== undefined ? { data: message.error.data as never } : {}),
        },
      };
    }
    if (message && 'result' in message && message.result !== undefined) return { kind: 'result', result: message.result as never };
    throw new DispatchError(
      `MCP request ${req.method}: HTTP ${res.status} without a JSON-RPC answer`,
      res.status >= 500 || res.status === 429,
    );
  };
}

interface RpcMessage {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
}

/** The JSON-RPC answer to `id` in a JSON body or an SSE stream; undefined if there is none. */
function parseBody(text: string, contentType: string, id: number): RpcMessage | undefined {
  const tryParse = (s: string): RpcMessage | undefined => {
    try {
      return JSON.parse(s) as RpcMessage;
    } catch {
      return undefined;
    }
  };
  if (!contentType.includes('text/event-stream')) return tryParse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''))
      .join('\n');
    const msg = data ? tryParse(data) : undefined;
    if (msg && msg.id === id && ('result' in msg || 'error' in msg)) return msg;
  }
  return undefined;
}

/**
 * The `v2RequestFraming` for a 2026-07-28 server: protocol version, client info, and client
 * capabilities (ext-tasks adds `extensions["io.modelcontextprotocol/tasks"]` itself). Pass the
 * same capabilities the `Client` was constructed with, so task requests and ordinary requests
 * declare the same things.
 */
export function v2RequestFraming(
  clientInfo: { name: string; version: string },
  clientCapabilities: Record<string, unknown> = {},
): V2RequestFraming {
  return {
    protocolVersion: PROTOCOL_VERSION_2026,
    clientInfo,
    clientCapabilities: clientCapabilities as V2RequestFraming['clientCapabilities'],
  };
}
