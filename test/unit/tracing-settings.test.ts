// Scope: how the standard OTEL_* variables turn OpenTelemetry traces on and shape the export
// (src/config.ts → tracingSettingsOf in src/ops/tracing.ts), off by default; and the MCP server
// span's name, attributes and parent context read from a JSON-RPC request (src/mcp/tracing.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { TRACING_OFF, startTracing, tracingSettingsOf } from '../../src/ops/tracing.js';
import { mcpParentContext, mcpRequestSpanShape } from '../../src/mcp/tracing.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('OTEL_* variables', () => {
  it('with no OTEL_* variable tracing is off, and off starts nothing but the no-op API', () => {
    expect(loadConfig({}).TRACING).toBeUndefined();
    expect(startTracing(undefined)).toBe(TRACING_OFF);
    expect(TRACING_OFF.clientInterceptors).toEqual([]);
    expect(TRACING_OFF.workerInterceptors).toEqual({});
  });

  it('an OTLP endpoint turns tracing on and appends /v1/traces; the traces endpoint is used as given', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).TRACING).toMatchObject({
      exporter: 'otlp',
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      resource: { 'service.name': 'countersign' },
    });
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp/traces' }).TRACING
        ?.url,
    ).toBe('https://b/otlp/traces');
  });

  it('OTEL_TRACES_EXPORTER=otlp alone exports to the local collector; none or OTEL_SDK_DISABLED=true turns tracing off', () => {
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).TRACING?.url).toBe('http://localhost:4318/v1/traces');
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318' }).TRACING).toBeUndefined();
    expect(loadConfig({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }).TRACING).toBeUndefined();
  });

  it('service name, resource attributes, headers, protocol and sampler are read from their variables', () => {
    const t = loadConfig({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_SERVICE_NAME: 'countersign-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=pay%20ments',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k1',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=t1',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    }).TRACING;
    expect(t).toMatchObject({
      protocol: 'http/json',
      headers: { 'x-api-key': 'k1', 'x-tenant': 't1' },
      resource: { 'service.name': 'countersign-eu', 'deployment.environment': 'prod', team: 'pay ments' },
      sampler: { name: 'parentbased_traceidratio', ratio: 0.25 },
    });
  });

  it('an unsupported protocol, exporter or sampler and a malformed header list are configuration errors naming the variable, never echoing a header value', () => {
    let err: unknown;
    try {
      loadConfig({
        OTEL_TRACES_EXPORTER: 'zipkin',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s3cr3t-value,=orphan',
        OTEL_TRACES_SAMPLER: 'sometimes',
        OTEL_TRACES_SAMPLER_ARG: '2',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const issues = (err as ConfigError).issues;
    expect(issues.map((i) => i.split(':')[0]).sort()).toEqual([
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_EXPORTER',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
    ]);
    expect(issues.join('\n')).not.toContain('s3cr3t-value');
  });
});

describe('OTLP export in the default protocol', () => {
  it('with only an endpoint set, spans go out as OTLP/HTTP protobuf to <endpoint>/v1/traces, flushed by shutdown', async () => {
    const received: Array<{ url: string; type: string; auth: string; body: Buffer }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          url: req.url ?? '',
          type: req.headers['content-type'] ?? '',
          auth: String(req.headers['x-api-key']),
          body: Buffer.concat(chunks),
        });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const tracing = startTracing(
        tracingSettingsOf({
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k-123',
        }),
      );
      const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: TRACE, spanId: '00f067aa0ba902b7', traceFlags: 1 });
      tracing.tracer.startSpan('tools/call probe_tool', {}, parent).end();
      await tracing.shutdown();
      expect(received.map((r) => [r.url, r.type, r.auth])).toEqual([['/v1/traces', 'application/x-protobuf', 'k-123']]);
      // protobuf carries the trace id as its 16 raw bytes and the span name as UTF-8
      expect(received[0]!.body.includes(Buffer.from(TRACE, 'hex'))).toBe(true);
      expect(received[0]!.body.includes(Buffer.from('tools/call probe_tool'))).toBe(true);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('the MCP server span of a request', () => {
  const headers = (h: Record<string, string> = {}) => new Headers(h);

  it('a tools/call is named `tools/call <tool>` with the semconv attributes and none of its arguments', () => {
    const shape = mcpRequestSpanShape(
      {
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'submit_change',
          arguments: { change_id: 'CHG-1' },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        },
      },
      headers({ 'mcp-session-id': 's-1' }),
    );
    expect(shape.name).toBe('tools/call submit_change');
    expect(shape.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'submit_change',
      'mcp.protocol.version': '2026-07-28',
      'mcp.session.id': 's-1',
      'jsonrpc.request.id': '7',
    });
    expect(JSON.stringify(shape)).not.toContain('CHG-1');
  });

  it('a tool name that is not a plain identifier stays out of the span name and attributes', () => {
    const shape = mcpRequestSpanShape({ method: 'tools/call', id: 1, params: { name: 'x'.repeat(129) } }, headers());
    expect(shape.name).toBe('tools/call');
    expect(shape.attributes['gen_ai.tool.name']).toBeUndefined();
  });

  it('params._meta traceparent wins over the HTTP header; an invalid one falls back to the header', () => {
    const header = headers({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` });
    const fromMeta = mcpParentContext({ params: { _meta: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` } } }, header);
    expect(trace.getSpanContext(fromMeta)).toMatchObject({ traceId: TRACE, spanId: '00f067aa0ba902b7' });
    const fallback = mcpParentContext({ params: { _meta: { traceparent: 'garbage' } } }, header);
    expect(trace.getSpanContext(fallback)?.traceId).toBe('1'.repeat(32));
    expect(trace.getSpanContext(mcpParentContext(undefined, headers()))).toBeUndefined();
  });
});
