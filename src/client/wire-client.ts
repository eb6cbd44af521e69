/**
 * A minimal MCP 2026-07-28 client over Streamable HTTP, speaking only the wire: JSON-RPC POSTs
 * with the per-request `_meta` envelope and the standard headers (`MCP-Protocol-Version`,
 * `Mcp-Method`, `Mcp-Name`). Used by the demo (which prints every message) and the tests.
 * It knows the tasks methods but nothing about approval.
 */

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
    const id = this.nextId++;
    const message = {
      jsonrpc: '2.0',
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
    const res = await fetch(this.opts.url, { method: 'POST', headers, body: JSON.stringify(message) });
    const text = await res.text();
    let body: { result?: T; error?: { code: number; message: string; data?: unknown } } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    this.opts.onMessage?.('<', body ?? { httpStatus: res.status, body: text });
    if (body?.error) throw new McpRpcError(body.error.code, body.error.message, body.error.data, res.status);
    if (!body || body.result === undefined) throw new McpRpcError(0, `HTTP ${res.status}: ${text.slice(0, 200)}`, undefined, res.status);
    return body.result;
  }
}
