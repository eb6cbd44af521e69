/**
 * One MCP client per upstream server (docs/GATEWAY.md §Upstream connections), on
 * `@modelcontextprotocol/client`: stdio (the process is spawned, owned and stopped here) or
 * Streamable HTTP. Protocol: `versionNegotiation: auto`, so a 2026-07-28 server is spoken to in the
 * modern era and any other through the 2025 `initialize` handshake.
 *
 * Reconnects on its own: a stdio process that exits, or a connection that fails, is restarted with
 * a backing-off delay (250 ms doubling to 30 s) until `close()`. Every successful (re)connect lists
 * the tools again and tells `onToolsChanged`; so does the upstream's `tools/list_changed`.
 *
 * Security: the stdio process gets the SDK's default environment (PATH, HOME, …) plus the
 * configured, resolved variables, never this process's whole environment; HTTP requests carry the
 * configured headers only. Nothing of the MCP caller (its bearer token, its identity) is passed
 * upstream. Logs name the upstream, never header or environment values.
 *
 * Deliberately does not: retry a `tools/call` that may have reached the upstream (the one resend is
 * after an HTTP 404 or 400 for a lost session, which the upstream did not process), forward resources, prompts or upstream notifications other than `tools/list_changed`.
 */
import {
  Client,
  ProtocolError,
  SdkErrorCode,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type JsonSchemaValidatorResult,
  type jsonSchemaValidator,
  type Tool as McpTool,
} from '@modelcontextprotocol/client';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/client/stdio';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Logger } from 'pino';
import { BoundedReadBuffer, UPSTREAM_MAX_ANSWER_BYTES } from './bounded-read-buffer.js';
import type { UpstreamConfig } from './config-file.js';

/** A tool as the upstream lists it (MCP schema `Tool`). */
export type UpstreamToolDescriptor = McpTool;

/** A failed upstream request; the subclass says whether it left. `upstream` is the configured name. */
abstract class UpstreamRequestError extends Error {
  constructor(
    readonly upstream: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The request provably never left: no connection could be made (the stdio process could not
 * start or exited before `initialize` finished, the TCP connect was refused or the host not
 * found), the client was not connected, or the write failed before any byte went out. A
 * `tools/call` that fails this way did not run.
 */
export class UpstreamNotSentError extends UpstreamRequestError {}

/**
 * The request was sent (or may have been) and no answer came: the call timed out, or the
 * connection was lost while it was in flight. A `tools/call` that fails this way may have run.
 */
export class UpstreamNoAnswerError extends UpstreamRequestError {}

/**
 * The upstream answered, but its answer (`sizeBytes`, one JSON-RPC message over stdio) exceeded
 * the gateway's limit (`limitBytes`, {@link UPSTREAM_MAX_ANSWER_BYTES}) and was discarded unread; the
 * connection stays up. A `tools/call` that fails this way ran.
 */
export class UpstreamAnswerTooLargeError extends Error {
  constructor(
    readonly upstream: string,
    readonly sizeBytes: number,
    readonly limitBytes: number,
  ) {
    super(`upstream ${upstream} answered with ${sizeBytes} bytes, over the limit of ${limitBytes}`);
    this.name = 'UpstreamAnswerTooLargeError';
  }
}

/**
 * The upstream answered a request with an error: a JSON-RPC error answer (`kind: 'json-rpc'`,
 * `code` the JSON-RPC code) or an HTTP 4xx status (`kind: 'http'`, `code` the status). Whether it
 * proves the call did not run: {@link UpstreamProtocolError.refusal}.
 */
export class UpstreamProtocolError extends Error {
  constructor(
    readonly upstream: string,
    readonly code: number,
    message: string,
    readonly kind: 'json-rpc' | 'http' = 'json-rpc',
  ) {
    super(message);
    this.name = 'UpstreamProtocolError';
  }

  /**
   * Whether the answer proves the request was refused before it ran: an HTTP 4xx, or JSON-RPC
   * -32600 (invalid request), -32601 (method not found) or -32602 (invalid params: MCP's answer for
   * an unknown tool or invalid arguments). Any other code (-32603, server-defined) may come after
   * part of the effect.
   */
  get refusal(): boolean {
    return this.kind === 'http' || this.code === -32600 || this.code === -32601 || this.code === -32602;
  }

  /** `JSON-RPC error -32602` or `HTTP 401`. */
  get label(): string {
    return this.kind === 'http' ? `HTTP ${this.code}` : `JSON-RPC error ${this.code}`;
  }
}

/** A connection to one upstream. */
export interface UpstreamConnection {
  readonly config: UpstreamConfig;
  /** Whether a connection is up now. */
  readonly connected: boolean;
  /**
   * The upstream's tools, freshly listed (connecting first when down). Throws
   * `UpstreamNotSentError` when it cannot connect, or the listing's error.
   */
  listTools(): Promise<UpstreamToolDescriptor[]>;
  /**
   * Call `name` once, never retried. Throws `UpstreamNotSentError` when the request provably never
   * left (did not run); `UpstreamProtocolError` for a JSON-RPC error answer or an HTTP 4xx (`refusal`: did not run);
   * `UpstreamAnswerTooLargeError` when the answer was over the stdio limit (it ran; the answer was
   * discarded); `UpstreamNoAnswerError` otherwise (timeout, connection lost mid-call: it may have run).
   * A failed call closes the shared connection only when the connection itself is gone (closed,
   * not connected, a lost HTTP session, a refused connect, or a timed-out call followed by an
   * unanswered ping), never for a slow call or an oversized answer, so one call's failure does not
   * cost the other calls in flight on it.
   */
  callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
  /** Called with the new list after each reconnect and each `tools/list_changed`. */
  onToolsChanged(listener: (tools: UpstreamToolDescriptor[]) => void): void;
  /** Stop: close the client, stop the stdio process, cancel reconnects. Idempotent. */
  close(): Promise<void>;
}

const BACKOFF_INITIAL_MS = 250;
const BACKOFF_MAX_MS = 30_000;

// Results pass through whole (docs/GATEWAY.md §Results): the MCP caller validates structured
// output against the descriptor it was served, so the gateway's client does not.
const passThroughValidator: jsonSchemaValidator = {
  getValidator:
    <T>() =>
    (input: unknown): JsonSchemaValidatorResult<T> => ({ valid: true, data: input as T, errorMessage: undefined }),
};

/** Marks the JSON-RPC error the gateway puts in place of an oversized answer (`data[OVERSIZED_MARK]` = the connection's nonce). */
const OVERSIZED_MARK = 'countersign/oversized-answer';

function transportOf(config: UpstreamConfig, logger: Logger, nonce: string) {
  if (config.transport === 'stdio') {
    for (const dir of config.createDirs) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: config.cwd,
      stderr: 'pipe',
    });
    // The upstream's stderr is its log; relay it line by line at debug level (stdout is the protocol).
    transport.stderr?.on('data', (chunk: Buffer) => logger.debug({ stderr: chunk.toString('utf8').slice(0, 2_000) }, 'upstream stderr'));
    boundReads(transport, logger, nonce);
    return transport;
  }
  return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } });
}

/**
 * Put a {@link BoundedReadBuffer} in place of the SDK transport's own read buffer (whose overflow
 * closes the connection): an oversized answer becomes this connection's marked JSON-RPC error for
 * its id. The instance keeps the SDK's class, so the SDK's stdio version negotiation (a probe on
 * a sibling process, which reads only a small reply) is unchanged. Throws at construction when the
 * SDK no longer has the field, so an SDK change cannot silently bring the overflow back.
 */
function boundReads(transport: StdioClientTransport, logger: Logger, nonce: string): void {
  const slot = transport as unknown as { _readBuffer?: unknown };
  if (typeof (slot._readBuffer as { append?: unknown } | undefined)?.append !== 'function')
    throw new Error('the MCP SDK stdio transport no longer has the read buffer the gateway bounds (src/gateway/bounded-read-buffer.ts)');
  slot._readBuffer = new BoundedReadBuffer(UPSTREAM_MAX_ANSWER_BYTES, (m) => {
    logger.warn(
      { sizeBytes: m.sizeBytes, limitBytes: UPSTREAM_MAX_ANSWER_BYTES, answered: m.id !== undefined && !m.hasMethod },
      'upstream message over the size limit discarded',
    );
    if (m.id === undefined || m.hasMethod) return undefined;
    return {
      jsonrpc: '2.0',
      id: m.id,
      error: {
        code: -32603,
        message: 'answer over the gateway limit, discarded',
        data: { [OVERSIZED_MARK]: nonce, sizeBytes: m.sizeBytes, limitBytes: UPSTREAM_MAX_ANSWER_BYTES },
      },
    };
  });
}

/** The size of the discarded answer when `err` is this connection's oversized-answer error (see {@link boundReads}). */
function oversizedAnswer(err: ProtocolError, nonce: string): number | undefined {
  const data = err.data as Record<string, unknown> | undefined;
  return data?.[OVERSIZED_MARK] === nonce && typeof data.sizeBytes === 'number' ? data.sizeBytes : undefined;
}

// Errors that mean the connection itself is gone, so it is dropped and the next request reconnects.
const CONNECTION_GONE_CODES = new Set<string>([SdkErrorCode.ConnectionClosed, SdkErrorCode.NotConnected]);

// Errors that mean no byte of the request reached the upstream: a TCP connect that never
// succeeded, a write to a stdio process already gone (EPIPE), a client already disconnected.
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  SdkErrorCode.NotConnected,
]);

/** Whether `err` (or one of its causes) says the connection was never made, so nothing was sent. */
function neverSent(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (NOT_SENT_CODES.has(String((e as { code?: unknown }).code))) return true;
    const nested = (e as { errors?: unknown }).errors; // AggregateError of a happy-eyeballs connect
    if (Array.isArray(nested) && nested.length > 0 && nested.every((x) => NOT_SENT_CODES.has(String((x as { code?: unknown }).code))))
      return true;
  }
  return false;
}

/** Open a connection to `config` (connects in the background; see {@link UpstreamConnection}). */
export function createUpstreamConnection(config: UpstreamConfig, logger: Logger): UpstreamConnection {
  const log = logger.child({ upstream: config.name });
  const nonce = randomUUID(); // marks this connection's own oversized-answer errors; never sent upstream
  let client: Client | undefined;
  let connecting: Promise<Client> | undefined;
  let closed = false;
  let backoffMs = BACKOFF_INITIAL_MS;
  let timer: NodeJS.Timeout | undefined;
  const listeners: Array<(tools: UpstreamToolDescriptor[]) => void> = [];

  const notify = (tools: UpstreamToolDescriptor[]) => {
    for (const l of listeners) {
      try {
        l(tools);
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'tools listener failed');
      }
    }
  };

  const scheduleReconnect = () => {
    if (closed || timer) return;
    const delay = backoffMs;
    backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
    timer = setTimeout(() => {
      timer = undefined;
      ensure()
        .then(async (c) => notify((await c.listTools(undefined, { cacheMode: 'bypass' })).tools))
        .catch(() => undefined); // ensure() scheduled the next attempt
    }, delay);
    timer.unref();
  };

  const connectOnce = async (): Promise<Client> => {
    const c = new Client(
      { name: 'countersign-gateway', version: '0.1.0' },
      {
        capabilities: {},
        versionNegotiation: { mode: 'auto', probe: { timeoutMs: Math.min(config.connectTimeoutMs, 5_000) } },
        jsonSchemaValidator: passThroughValidator,
        listChanged: {
          tools: {
            onChanged: (err: Error | null, tools: UpstreamToolDescriptor[] | null) => {
              if (err) log.warn({ err: err.message }, 'upstream tools changed; re-listing failed');
              else if (tools) notify(tools);
            },
          },
        },
      },
    );
    const transport = transportOf(config, log, nonce);
    c.onclose = () => {
      if (client === c) client = undefined;
      if (!closed) {
        log.warn('upstream connection closed; reconnecting');
        scheduleReconnect();
      }
    };
    c.onerror = (err) => log.debug({ err: err.message }, 'upstream transport error');
    try {
      await c.connect(transport, { timeout: config.connectTimeoutMs });
    } catch (err) {
      await c.close().catch(() => undefined);
      throw err;
    }
    return c;
  };

  const ensure = (): Promise<Client> => {
    if (closed) return Promise.reject(new UpstreamNotSentError(config.name, `upstream ${config.name} is closed`));
    if (client) return Promise.resolve(client);
    connecting ??= connectOnce()
      .then((c) => {
        if (closed) {
          void c.close();
          throw new UpstreamNotSentError(config.name, `upstream ${config.name} is closed`);
        }
        client = c;
        backoffMs = BACKOFF_INITIAL_MS;
        log.info('upstream connected');
        return c;
      })
      .catch((err: unknown) => {
        log.warn({ err: (err as Error).message }, 'upstream connect failed');
        scheduleReconnect();
        throw err instanceof UpstreamNotSentError ? err : new UpstreamNotSentError(config.name, `upstream ${config.name} is unreachable`);
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  };

  // Drop a connection that failed a request, so the next request reconnects first.
  const discard = (c: Client) => {
    if (client !== c) return;
    client = undefined;
    void c.close().catch(() => undefined);
  };

  // After a call timed out: a ping tells a slow call (the upstream still answers: keep the
  // connection and the other calls in flight on it) from a hung upstream (no answer: drop it, so
  // the next request starts it afresh).
  const checkAlive = (c: Client) => {
    c.ping({ timeout: Math.min(config.connectTimeoutMs, 5_000) }).catch(() => {
      log.warn('upstream did not answer a ping after a call timed out; reconnecting');
      discard(c);
    });
  };

  void ensure().catch(() => undefined);

  // A request may arrive while a background reconnect attempt is failing (e.g. just before a
  // restarted upstream listens); joining that attempt would fail it too, so try once more afresh.
  const connected = () => ensure().catch(() => ensure());

  return {
    config,
    get connected() {
      return client !== undefined;
    },
    async listTools() {
      const c = await connected();
      try {
        return (await c.listTools(undefined, { cacheMode: 'bypass', timeout: config.connectTimeoutMs })).tools;
      } catch (err) {
        if (err instanceof ProtocolError) throw new UpstreamProtocolError(config.name, err.code, err.message);
        discard(c);
        // A listing is safe to repeat: one fresh connection, once.
        return (await (await ensure()).listTools(undefined, { cacheMode: 'bypass', timeout: config.connectTimeoutMs })).tools;
      }
    },
    async callTool(name, args) {
      const call = async (retryOnLostSession: boolean): Promise<CallToolResult> => {
        const c = await connected();
        try {
          return (await c.callTool({ name, arguments: args }, { timeout: config.callTimeoutMs })) as CallToolResult;
        } catch (err) {
          if (err instanceof ProtocolError) {
            const size = oversizedAnswer(err, nonce);
            if (size !== undefined) throw new UpstreamAnswerTooLargeError(config.name, size, UPSTREAM_MAX_ANSWER_BYTES);
            throw new UpstreamProtocolError(config.name, err.code, err.message);
          }
          log.warn(
            { err: (err as Error).name, code: (err as { code?: unknown }).code, status: (err as { status?: unknown }).status },
            'upstream tools/call failed',
          );
          const sessionLost = err instanceof SdkHttpError && (err.status === 404 || err.status === 400);
          const code = String((err as { code?: unknown }).code);
          if (sessionLost || neverSent(err) || CONNECTION_GONE_CODES.has(code)) discard(c);
          else if (code === SdkErrorCode.RequestTimeout) checkAlive(c);
          if (neverSent(err)) throw new UpstreamNotSentError(config.name, `upstream ${config.name} is unreachable`, { cause: err });
          // An HTTP 4xx is a refusal: the upstream did not process the request. 404 (MCP Streamable
          // HTTP, session management) and 400 (what many servers answer instead) for a session the
          // upstream no longer knows, after it restarted: one resend on a new session is safe.
          if (err instanceof SdkHttpError && err.status >= 400 && err.status < 500) {
            if (retryOnLostSession && (err.status === 404 || err.status === 400)) {
              log.info({ status: err.status }, 'upstream session lost; calling once more on a new session');
              return call(false);
            }
            throw new UpstreamProtocolError(config.name, err.status, `upstream ${config.name} answered HTTP ${err.status}`, 'http');
          }
          throw new UpstreamNoAnswerError(config.name, `upstream ${config.name} gave no answer`, { cause: err });
        }
      };
      return call(true);
    },
    onToolsChanged(listener) {
      listeners.push(listener);
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      const c = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      await c?.close().catch(() => undefined);
    },
  };
}
