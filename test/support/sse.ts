// Scope: test support for `subscriptions/listen` and other raw 2026-07-28 requests over real HTTP:
// a small Server-Sent Events reader (parses `event:` / `data:` frames, counts `:` comment frames,
// reports the end of the stream) and raw JSON-RPC POSTs whose status line and headers a test reads.
import { PROTOCOL_VERSION } from '@countersign/client';
import { TASKS_EXTENSION } from '../../workflows/wire.js';

/** Where and as whom a raw request goes: an MCP endpoint URL and a bearer token. */
export interface RpcTarget {
  url: string;
  token: string;
}

/** One JSON-RPC message read from a stream (notification, or the final result / error response). */
export interface StreamMessage {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  result?: Record<string, unknown> & { _meta?: Record<string, unknown> };
  error?: { code: number; message: string; data?: unknown };
}

/** A JSON-RPC error response as read from a JSON body. */
export interface RpcErrorBody {
  jsonrpc: '2.0';
  id: string | number | null;
  error: { code: number; message: string; data?: Record<string, unknown> & { issues?: Array<{ path: string; message: string }> } };
}

/**
 * Reads one `text/event-stream` body. Frames are separated by a blank line; `data:` lines are joined
 * with `\n` and parsed as JSON; a frame of comments only (`: keepalive`) is counted, not queued.
 */
export class SseReader {
  /** Comment frames seen (keep-alives). */
  comments = 0;
  /** Every `event:` name seen, in order (the tests expect only `message`). */
  readonly events: string[] = [];
  private buffer = '';
  private readonly queue: StreamMessage[] = [];
  private waiters: Array<() => void> = [];
  private finished = false;
  private failure: unknown;

  constructor(
    body: ReadableStream<Uint8Array>,
    private readonly abort: AbortController,
  ) {
    void this.pump(body.getReader());
  }

  /** True once the server ended the stream (or it failed, or `close()` was called) and every frame was read. */
  get ended(): boolean {
    return this.finished && this.queue.length === 0;
  }

  /** How the stream ended when it did not end cleanly (a reset connection), else undefined. */
  get error(): unknown {
    return this.failure;
  }

  /** The next message; null once the stream has ended. Rejects after `timeoutMs` without one (a hung stream fails the test instead of the run). */
  async next(timeoutMs = 60_000): Promise<StreamMessage | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.finished) return null;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE message within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return this.queue.shift()!;
  }

  /** Read messages until one satisfies `pred` (returned); the ones skipped are returned too. Rejects if the stream ends first. */
  async until(pred: (m: StreamMessage) => boolean, timeoutMs = 60_000): Promise<{ match: StreamMessage; skipped: StreamMessage[] }> {
    const skipped: StreamMessage[] = [];
    for (;;) {
      const m = await this.next(timeoutMs);
      if (m === null) throw new Error(`stream ended before the expected message; read: ${JSON.stringify(skipped).slice(0, 2000)}`);
      if (pred(m)) return { match: m, skipped };
      skipped.push(m);
    }
  }

  /** Every remaining message until the server ends the stream. */
  async rest(timeoutMs = 60_000): Promise<StreamMessage[]> {
    const out: StreamMessage[] = [];
    for (let m = await this.next(timeoutMs); m !== null; m = await this.next(timeoutMs)) out.push(m);
    return out;
  }

  /** Drop the connection (a client going away). */
  close(): void {
    this.abort.abort();
  }

  private async pump(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.buffer += decoder.decode(value, { stream: true });
        this.parse();
      }
      this.buffer += decoder.decode();
      this.parse();
    } catch (err) {
      if (!this.abort.signal.aborted) this.failure = err;
    } finally {
      this.finished = true;
      this.wake();
    }
  }

  private parse(): void {
    this.buffer = this.buffer.replace(/\r\n?/g, '\n');
    for (let i = this.buffer.indexOf('\n\n'); i >= 0; i = this.buffer.indexOf('\n\n')) {
      const frame = this.buffer.slice(0, i);
      this.buffer = this.buffer.slice(i + 2);
      let event = 'message';
      const data: string[] = [];
      let comment = false;
      for (const line of frame.split('\n')) {
        if (line.startsWith(':')) comment = true;
        else if (line.startsWith('event:')) event = line.slice(6).trimStart();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length === 0) {
        if (comment) this.comments++;
        continue;
      }
      this.events.push(event);
      this.queue.push(JSON.parse(data.join('\n')) as StreamMessage);
    }
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

/** Options of {@link openListen}. */
export interface ListenOptions {
  /** JSON-RPC id of the request (the subscription id); default a fresh string. */
  id?: string | number;
  /** Client capabilities in `_meta`; default: the tasks extension declared. */
  capabilities?: Record<string, unknown>;
  /** `params.notifications` as sent; default `{ taskIds }`. */
  notifications?: Record<string, unknown>;
  /** Extra or replaced headers. */
  headers?: Record<string, string>;
}

/** The answer to a `subscriptions/listen`: the stream when the server opened one, else the JSON error body. */
export type ListenAnswer =
  | { status: number; headers: Headers; stream: SseReader; error?: undefined }
  | { status: number; headers: Headers; stream?: undefined; error: RpcErrorBody };

let nextListenId = 1;

/** The 2026-07-28 per-request envelope with `capabilities`. */
export function envelope(capabilities: Record<string, unknown> = { extensions: { [TASKS_EXTENSION]: {} } }): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'sse-test-client', version: '0.0.0' },
  };
}

/** Headers of a 2026-07-28 POST of `method` to an MCP endpoint (`name`: the `Mcp-Name`, a tool name or task id). */
export function headersFor(target: RpcTarget, method: string, name?: string): Record<string, string> {
  return {
    authorization: `Bearer ${target.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': name } : {}),
  };
}

/** Send `subscriptions/listen` for `taskIds` (any value: hostile tests send wrong types) and open its stream. */
export async function openListen(target: RpcTarget, taskIds: unknown, opts: ListenOptions = {}): Promise<ListenAnswer> {
  const abort = new AbortController();
  const id = opts.id ?? `listen-${nextListenId++}`;
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: { notifications: opts.notifications ?? { taskIds }, _meta: envelope(opts.capabilities) },
  });
  const res = await fetch(target.url, {
    method: 'POST',
    headers: { ...headersFor(target, 'subscriptions/listen'), ...opts.headers },
    body,
    signal: abort.signal,
  });
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream') && res.body) {
    return { status: res.status, headers: res.headers, stream: new SseReader(res.body, abort) };
  }
  const text = await res.text();
  return { status: res.status, headers: res.headers, error: JSON.parse(text) as RpcErrorBody };
}

/** `openListen` that must open a stream; returns it with its acknowledgement (the first message) already read. */
export async function listenOpened(
  target: RpcTarget,
  taskIds: unknown,
  opts: ListenOptions = {},
): Promise<{ stream: SseReader; ack: StreamMessage; id: string | number }> {
  const id = opts.id ?? `listen-${nextListenId++}`;
  const answer = await openListen(target, taskIds, { ...opts, id });
  if (!answer.stream) throw new Error(`subscriptions/listen was refused: HTTP ${answer.status} ${JSON.stringify(answer.error)}`);
  const ack = await answer.stream.next();
  if (ack?.method !== 'notifications/subscriptions/acknowledged')
    throw new Error(`first message is not the acknowledgement: ${JSON.stringify(ack)}`);
  return { stream: answer.stream, ack, id };
}

/** The task ids an acknowledgement lists. */
export function ackedIds(ack: StreamMessage): string[] {
  return ((ack.params?.notifications as { taskIds?: string[] } | undefined)?.taskIds ?? []).slice();
}

/** One raw JSON-RPC POST of `method` (declaring the tasks extension unless `capabilities` say otherwise): status, headers and parsed body. */
export async function rawRpc(
  target: RpcTarget,
  method: string,
  params: Record<string, unknown>,
  capabilities?: Record<string, unknown>,
): Promise<{ status: number; headers: Headers; body: { result?: Record<string, unknown>; error?: RpcErrorBody['error'] } }> {
  const name = typeof params.taskId === 'string' ? params.taskId : typeof params.name === 'string' ? params.name : undefined;
  const res = await fetch(target.url, {
    method: 'POST',
    headers: headersFor(target, method, name),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope(capabilities) } }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as never };
}
