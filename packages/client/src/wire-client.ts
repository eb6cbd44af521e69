/**
 * A minimal MCP 2026-07-28 client over Streamable HTTP, speaking only the wire: JSON-RPC POSTs
 * with the per-request `_meta` envelope and the standard headers (`MCP-Protocol-Version`,
 * `Mcp-Method`, `Mcp-Name`), the answer read as one JSON body (`request`) or, for a request answered
 * with a stream such as `subscriptions/listen`, as the messages of its SSE body (`stream`, frames
 * read by `sse.ts`). Used by the demo (which prints every message), the tasks client and the
 * tests. It knows the tasks methods but nothing about approval.
 */

import { readSseEvents } from './sse.js';

/** Protocol revision this client speaks. */
export const PROTOCOL_VERSION = '2026-07-28';

/** A JSON-RPC error response, as an exception. */
export class McpRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'McpRpcError';
  }
}

/** Options. `capabilities` go into every request's `_meta` (declare tasks with `{extensions: {...}}`). */
export interface WireClientOptions {
  url: string;
  token?: string;
  capabilities?: Record<string, unknown>;
  clientInfo?: { name: string; version: string };
  /** Called with every message sent (`>`) and received (`<`). */
  onMessage?: (direction: '>' | '<', message: unknown) => void;
  /** The `fetch` to use (a proxy agent, a test's wrapper); default the global one. */
  fetch?: typeof fetch;
}

/** The client. */
export class WireClient {
  private nextId = 1;
  constructor(private readonly opts: WireClientOptions) {}

  /**
   * Send one request. Resolves with `result`; rejects with `McpRpcError` for a JSON-RPC error
   * (`httpStatus` set) or for a non-JSON-RPC HTTP failure (code 0, e.g. a 401).
   */
  async request<T = Record<string, unknown>>(
    method: string,
    params: Record<string, unknown> = {},
    extraMeta: Record<string, unknown> = {},
  ): Promise<T> {
    const { init } = this.build(method, params, extraMeta);
    const res = await (this.opts.fetch ?? fetch)(this.opts.url, init);
    const text = await res.text();
    const body = parseJson(text) as { result?: T; error?: { code: number; message: string; data?: unknown } } | undefined;
    this.opts.onMessage?.('<', body ?? { httpStatus: res.status, body: text });
    if (body?.error) throw new McpRpcError(body.error.code, body.error.message, body.error.data, res.status);
    if (!body || body.result === undefined) throw new McpRpcError(0, `HTTP ${res.status}: ${text.slice(0, 200)}`, undefined, res.status);
    return body.result;
  }

  /**
   * Send one request whose answer is a stream (`subscriptions/listen`). Resolves once the response
   * has begun, with its JSON-RPC id and the messages it carries as they arrive (each also passed
   * to `onMessage`); SSE comments (keep-alives) are skipped. The iteration ends when the server
   * ends the response, rejects when the connection breaks, and stops (closing the connection)
   * when the caller breaks out of it or `signal` aborts. A JSON (not SSE) answer is read whole:
   * a JSON-RPC error rejects as `McpRpcError`, anything else is yielded as the one message. A
   * non-JSON-RPC HTTP failure rejects as `McpRpcError` code 0.
   */
  async stream(
    method: string,
    params: Record<string, unknown> = {},
    options: { signal?: AbortSignal; extraMeta?: Record<string, unknown> } = {},
  ): Promise<{ id: number; messages: AsyncIterable<JsonRpcMessage> }> {
    const { message, init } = this.build(method, params, options.extraMeta ?? {});
    const res = await (this.opts.fetch ?? fetch)(this.opts.url, { ...init, ...(options.signal ? { signal: options.signal } : {}) });
    const contentType = res.headers.get('content-type') ?? '';
    if (!contentType.includes('text/event-stream') || !res.body) {
      const text = await res.text();
      const body = parseJson(text) as JsonRpcMessage | undefined;
      this.opts.onMessage?.('<', body ?? { httpStatus: res.status, body: text });
      if (body?.error) throw new McpRpcError(body.error.code, body.error.message, body.error.data, res.status);
      if (!body || typeof body !== 'object') throw new McpRpcError(0, `HTTP ${res.status}: ${text.slice(0, 200)}`, undefined, res.status);
      return {
        id: message.id,
        messages: (async function* () {
          yield body;
        })(),
      };
    }
    const onMessage = this.opts.onMessage;
    const body = res.body;
    async function* messages(): AsyncGenerator<JsonRpcMessage, void, undefined> {
      for await (const event of readSseEvents(body)) {
        if (event.event !== 'message') continue;
        const parsed = parseJson(event.data) as JsonRpcMessage | undefined;
        if (!parsed || typeof parsed !== 'object') continue;
        onMessage?.('<', parsed);
        yield parsed;
      }
    }
    return { id: message.id, messages: messages() };
  }

  /** The JSON-RPC message and the fetch init of one request. */
  private build(method: string, params: Record<string, unknown>, extraMeta: Record<string, unknown>) {
    const id = this.nextId++;
    const message = {
      jsonrpc: '2.0' as const,
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
          'io.modelcontextprotocol/clientCapabilities': this.opts.capabilities ?? {},
          'io.modelcontextprotocol/clientInfo': this.opts.clientInfo ?? { name: 'countersign-wire-client', version: '0.1.0' },
          ...extraMeta,
        },
      },
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      'mcp-method': method,
    };
    const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
    if (typeof name === 'string') headers['mcp-name'] = name;
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    this.opts.onMessage?.('>', message);
    return { message, init: { method: 'POST', headers, body: JSON.stringify(message) } satisfies RequestInit };
  }
}

/** A JSON-RPC message as received: a notification, a request, or a response. */
export interface JsonRpcMessage {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
