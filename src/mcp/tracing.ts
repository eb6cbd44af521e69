/**
 * The MCP server span of one `/mcp` request, after the OpenTelemetry semantic conventions for MCP
 * (docs/OPERATIONS.md §Traces lists what is recorded): kind SERVER, name `{mcp.method.name} {target}` (target: the
 * tool of a `tools/call`), attributes `mcp.method.name`, `jsonrpc.request.id`,
 * `jsonrpc.protocol.version`, `mcp.protocol.version`, `mcp.session.id` (when the request has one),
 * `gen_ai.tool.name` and `gen_ai.operation.name` (`execute_tool`) for `tools/call`,
 * `network.transport`, `network.protocol.name`; on a JSON-RPC error `error.type` and
 * `rpc.response.status_code` (the error code as a string) and status ERROR; on a tool result with
 * `isError` `error.type = tool_error`. The parent is the trace context
 * in `params._meta` (`traceparent` / `tracestate`, the conventions' propagation for MCP), else the HTTP
 * `traceparent` header, else none (a new trace).
 *
 * Deliberately does not record arguments, `_meta` values other than the trace context and the
 * protocol version, results, tokens or principals. A tool name that is not a plain identifier
 * (letters, digits, `_ . - /`, at most 128) is not put in the span name or attributes, so a hostile
 * client cannot blow up span-name cardinality.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  defaultTextMapGetter,
  trace,
  type Attributes,
  type Context,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { isJsonObject, isRecord, memberAt } from './narrow.js';

/** `_meta` key of the 2026-07-28 protocol version on every request (MCP 2026-07-28 §Base protocol). */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

const TOOL_NAME = /^[A-Za-z0-9_./-]{1,128}$/;
const w3c = new W3CTraceContextPropagator();

/**
 * The parent context of an MCP request: `traceparent`/`tracestate` of `params._meta` when present
 * (a string `traceparent`), else the HTTP headers'. Returns `ROOT_CONTEXT` when neither holds a
 * valid W3C trace context.
 */
export function mcpParentContext(message: unknown, headers: Headers): Context {
  const meta = memberAt(message, 'params', '_meta');
  if (isRecord(meta) && typeof meta.traceparent === 'string') {
    const carrier: Record<string, string> = { traceparent: meta.traceparent };
    if (typeof meta.tracestate === 'string') carrier.tracestate = meta.tracestate;
    const fromMeta = w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
    if (trace.getSpanContext(fromMeta)) return fromMeta;
  }
  const carrier: Record<string, string> = {};
  const tp = headers.get('traceparent');
  const ts = headers.get('tracestate');
  if (tp) carrier.traceparent = tp;
  if (ts) carrier.tracestate = ts;
  return w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}

/** Span name and request attributes of `message` (a parsed JSON-RPC request); see the module header. */
export function mcpRequestSpanShape(message: unknown, headers: Headers): { name: string; attributes: Attributes } {
  const m = isJsonObject(message) ? message : {};
  const method = typeof m.method === 'string' && m.method.length <= 128 ? m.method : 'unknown';
  const attributes: Attributes = {
    'mcp.method.name': method,
    'jsonrpc.protocol.version': '2.0',
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
  };
  if (typeof m.id === 'string' || typeof m.id === 'number') attributes['jsonrpc.request.id'] = String(m.id);
  const version = headers.get('mcp-protocol-version') ?? memberAt(m, 'params', '_meta', PROTOCOL_VERSION_META_KEY);
  if (typeof version === 'string' && version.length <= 32) attributes['mcp.protocol.version'] = version;
  const session = headers.get('mcp-session-id');
  if (session) attributes['mcp.session.id'] = session;
  let name = method;
  const tool = memberAt(m, 'params', 'name');
  if (method === 'tools/call' && typeof tool === 'string' && TOOL_NAME.test(tool)) {
    attributes['gen_ai.tool.name'] = tool;
    attributes['gen_ai.operation.name'] = 'execute_tool';
    name = `${method} ${tool}`;
  }
  return { name, attributes };
}

/**
 * Run `handle` (the MCP handler for this request) inside the request's server span and end the
 * span with the outcome read from the JSON-RPC answer. `bodyText` is the request body (already
 * parsed within limits by the HTTP layer). The returned response is `handle`'s; its body is read
 * from a clone, only for a JSON answer. Errors of `handle` are recorded and rethrown.
 */
export async function withMcpServerSpan(
  tracer: Tracer,
  request: Request,
  bodyText: string,
  handle: () => Promise<Response>,
): Promise<Response> {
  let message: unknown;
  try {
    message = bodyText.trim() === '' ? undefined : JSON.parse(bodyText);
  } catch {
    message = undefined;
  }
  const { name, attributes } = mcpRequestSpanShape(message, request.headers);
  const parent = mcpParentContext(message, request.headers);
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  try {
    const res = await context.with(trace.setSpan(parent, span), handle);
    await recordOutcome(span, res);
    return res;
  } catch (err) {
    const errorType = memberAt(err, 'name');
    span.setAttribute('error.type', typeof errorType === 'string' ? errorType : 'Error');
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

async function recordOutcome(span: ReturnType<Tracer['startSpan']>, res: Response): Promise<void> {
  let body: { error?: { code?: unknown }; result?: { isError?: unknown } } | undefined;
  if ((res.headers.get('content-type') ?? '').includes('application/json')) {
    try {
      body = JSON.parse(await res.clone().text());
    } catch {
      body = undefined;
    }
  }
  const code = body?.error?.code;
  if (typeof code === 'number') {
    span.setAttribute('error.type', String(code));
    span.setAttribute('rpc.response.status_code', String(code));
    span.setStatus({ code: SpanStatusCode.ERROR });
  } else if (body?.result?.isError === true) {
    span.setAttribute('error.type', 'tool_error');
    span.setStatus({ code: SpanStatusCode.ERROR });
  } else if (res.status >= 500) {
    span.setAttribute('error.type', String(res.status));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
}
