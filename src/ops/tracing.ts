/**
 * OpenTelemetry traces (docs/OPERATIONS.md §Traces): one tracer provider per process, exporting
 * over OTLP/HTTP, with Temporal's OpenTelemetry interceptors (`@temporalio/interceptors-opentelemetry`)
 * on the client, the worker's activities and the workflows (their spans leave the workflow sandbox
 * through the `exporter` sink), so one trace holds the agent's `tools/call`, the workflow start,
 * the workflow run and the tool execution activity.
 *
 * Configured only by the standard `OTEL_*` variables, which `src/config.ts` parses into
 * {@link TracingSettings} with {@link tracingSettingsOf}. Off by default: with no settings,
 * {@link startTracing} returns {@link TRACING_OFF} — no provider, no exporter, no client or activity
 * interceptor, and the spans Countersign asks for are the `@opentelemetry/api` no-ops. The workflow
 * interceptors are the exception: they are bundled whatever the settings (`bundleWorkflows` in
 * `src/worker.ts` says why), and trace only the runs started by a process that traces (memo
 * `tracing`, `workflows/tracing-interceptors.ts`); spans of traced runs a worker without tracing
 * replays end in a sink that drops them.
 *
 * Deliberately does not: record tool arguments, tokens, justifications or principals on any span
 * (workflow spans keep only the allowlisted `WorkflowInfo` fields, {@link WORKFLOW_SPAN_INFO_ATTRIBUTES},
 * not the memo or search attributes that hold the task owner key); read
 * `process.env`; register a global tracer provider (every part receives the tracer it uses, so
 * two stacks in one process do not share one); instrument HTTP in general (only the MCP requests,
 * `src/mcp/tracing.ts`, and the backend callbacks).
 *
 * Why the `OTEL_*` variables are parsed here ({@link tracingSettingsOf}) and not by OpenTelemetry:
 * the SDK's own environment handling (`getEnv` / `parseEnvironment` of `@opentelemetry/core` 1.x,
 * `getStringFromEnv` in 2.x, `NodeSDK` of `@opentelemetry/sdk-node`) reads `process.env` or
 * registers global providers, both of which this module refuses (above), and it is lenient: an
 * unknown sampler or exporter, a malformed endpoint or header list is logged and ignored or
 * defaulted, where Countersign's configuration refuses to start with every invalid variable named.
 * Its key=value parser (`baggageUtils.parseKeyPairsIntoRecord`) silently drops malformed entries
 * for the same reason. The exporters, samplers, resource and propagator are the SDK's.
 */
import { context, propagation, trace, type Attributes, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import {
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
  makeWorkflowExporter,
  type OpenTelemetrySinks,
  type SerializableSpan,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import { SOURCE_EXTENSION } from '../project-root.js';
import { fileURLToPath } from 'node:url';

/** Instrumentation scope name of every span Countersign itself starts. */
export const TRACER_NAME = 'countersign';

/** How spans are exported; parsed from the `OTEL_*` variables by {@link tracingSettingsOf}. */
export interface TracingSettings {
  /** `otlp` (OTLP/HTTP to {@link url}) or `console` (stdout, for a look while developing). */
  exporter: 'otlp' | 'console';
  /** Full OTLP traces URL, e.g. `http://127.0.0.1:4318/v1/traces`. */
  url: string;
  /** OTLP encoding: `http/protobuf` (the OTLP default) or `http/json`. */
  protocol: 'http/protobuf' | 'http/json';
  /** Extra request headers of the export (e.g. a collector's API key). Never logged. */
  headers: Record<string, string>;
  /** Resource attributes; `service.name` always set (`OTEL_SERVICE_NAME`, default `countersign`). */
  resource: Record<string, string>;
  /** `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`) with its ratio argument. */
  sampler: { name: string; ratio: number };
}

/** The `OTEL_*` variables {@link tracingSettingsOf} reads, as raw strings (undefined when unset). */
export interface OtelEnv {
  OTEL_SDK_DISABLED?: string | undefined;
  OTEL_TRACES_EXPORTER?: string | undefined;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string | undefined;
  OTEL_EXPORTER_OTLP_PROTOCOL?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?: string | undefined;
  OTEL_EXPORTER_OTLP_HEADERS?: string | undefined;
  OTEL_EXPORTER_OTLP_TRACES_HEADERS?: string | undefined;
  OTEL_SERVICE_NAME?: string | undefined;
  OTEL_RESOURCE_ATTRIBUTES?: string | undefined;
  OTEL_TRACES_SAMPLER?: string | undefined;
  OTEL_TRACES_SAMPLER_ARG?: string | undefined;
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** Thrown by {@link tracingSettingsOf}; `issues` are `NAME: message` lines, as `ConfigError`'s. */
export class TracingSettingsError extends Error {
  constructor(readonly issues: string[]) {
    super(issues.join('; '));
    this.name = 'TracingSettingsError';
  }
}

/**
 * Tracing settings from the `OTEL_*` variables (OpenTelemetry SDK environment variable
 * specification), or undefined when tracing is off. On when `OTEL_SDK_DISABLED` is not `true` and
 * either `OTEL_TRACES_EXPORTER` names `otlp` or `console`, or it is unset and an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, used as is, or `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`)
 * is set; `OTEL_TRACES_EXPORTER=otlp` with no endpoint exports to `http://localhost:4318/v1/traces`.
 * Unlike the specification's default exporter (`otlp`), nothing is exported unless asked.
 * Throws {@link TracingSettingsError} for an unsupported exporter or protocol (`grpc`: use a
 * collector's OTLP/HTTP port), a malformed endpoint, header list or sampler.
 */
export function tracingSettingsOf(env: OtelEnv): TracingSettings | undefined {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return undefined;
  const issues: string[] = [];
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== '');
  for (const e of exporters)
    if (!['otlp', 'console', 'none'].includes(e)) issues.push(`OTEL_TRACES_EXPORTER: '${e}' is not supported here (otlp, console or none)`);
  const tracesEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const baseEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  let url = 'http://localhost:4318/v1/traces';
  if (tracesEndpoint) {
    if (!isHttpUrl(tracesEndpoint)) issues.push('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http(s) URL');
    url = tracesEndpoint;
  } else if (baseEndpoint) {
    if (!isHttpUrl(baseEndpoint)) issues.push('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http(s) URL');
    url = `${baseEndpoint.replace(/\/+$/, '')}/v1/traces`;
  }
  const protocolVar = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = (nonEmpty(env[protocolVar]) ?? 'http/protobuf').toLowerCase() as TracingSettings['protocol'];
  if (!['http/protobuf', 'http/json'].includes(protocol))
    issues.push(`${protocolVar}: '${protocol}' is not supported (http/protobuf or http/json; for grpc use a collector's OTLP/HTTP port)`);
  const headers = {
    ...keyValueList(env.OTEL_EXPORTER_OTLP_HEADERS, 'OTEL_EXPORTER_OTLP_HEADERS', issues),
    ...keyValueList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', issues),
  };
  const resource = {
    ...keyValueList(env.OTEL_RESOURCE_ATTRIBUTES, 'OTEL_RESOURCE_ATTRIBUTES', issues),
    'service.name': nonEmpty(env.OTEL_SERVICE_NAME) ?? 'countersign',
  };
  const samplerName = (nonEmpty(env.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on').toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(samplerName))
    issues.push(`OTEL_TRACES_SAMPLER: '${samplerName}' is not supported (${SAMPLERS.join(', ')})`);
  const ratio = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG) === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (!(ratio >= 0 && ratio <= 1)) issues.push('OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1');
  if (issues.length > 0) throw new TracingSettingsError(issues);

  const asked = exporters.filter((e) => e !== 'none');
  const on = exporters.length === 0 ? tracesEndpoint !== undefined || baseEndpoint !== undefined : asked.length > 0;
  if (!on) return undefined;
  return {
    exporter: asked.includes('otlp') || asked.length === 0 ? 'otlp' : 'console',
    url,
    protocol,
    headers,
    resource,
    sampler: { name: samplerName, ratio },
  };
}

function nonEmpty(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/** `k1=v1,k2=v2` with percent-encoded values (the OTEL_*_HEADERS / OTEL_RESOURCE_ATTRIBUTES form). Never echoes a value. */
function keyValueList(text: string | undefined, variable: string, issues: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [i, part] of (text ?? '').split(',').entries()) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    if (key === '') {
      issues.push(`${variable}: entry ${i + 1} is not key=value`);
      continue;
    }
    try {
      out[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      issues.push(`${variable}: the value of '${key}' is not valid percent-encoding`);
    }
  }
  return out;
}

/** A process's tracing: what each part needs to take part in the trace. */
export interface Tracing {
  /** False for {@link TRACING_OFF}. */
  enabled: boolean;
  /** Tracer of Countersign's own spans (MCP requests, callbacks, tool execution); a no-op when off. */
  tracer: Tracer;
  /** Client interceptors for `new Client({ interceptors: { workflow } })`; empty when off. */
  clientInterceptors: WorkflowClientInterceptor[];
  /** Worker interceptors (activities) for `Worker.create`; empty when off. */
  workerInterceptors: WorkerInterceptors;
  /**
   * The `exporter` sink the workflow interceptors ({@link WORKFLOW_TRACING_MODULE}, bundled whatever
   * the tracing) export through, keeping only allowlisted attributes ({@link WORKFLOW_SPAN_INFO_ATTRIBUTES});
   * when off, one that drops the spans.
   */
  workflowSinks: InjectedSinks<OpenTelemetrySinks>;
  /** Flush pending spans and stop exporting; resolves even when the collector is down. */
  shutdown(): Promise<void>;
}

/** Tracing off: the `@opentelemetry/api` no-op tracer and nothing else. */
export const TRACING_OFF: Tracing = {
  enabled: false,
  tracer: trace.getTracer(TRACER_NAME),
  clientInterceptors: [],
  workerInterceptors: {},
  workflowSinks: { exporter: { export: { fn: () => undefined } } },
  shutdown: async () => undefined,
};

/**
 * The workflow interceptor module (`workflows/tracing-interceptors.ts`: Temporal's OpenTelemetry
 * workflow interceptors without the spans of queries and update validators, which would break
 * replay): RunWorkflow, HandleSignal, HandleUpdate, StartActivity spans and the trace header on
 * each scheduled activity. Always bundled with the workflow code, tracing on or off
 * (`bundleWorkflows`, `src/worker.ts`, says why).
 */
export const WORKFLOW_TRACING_MODULE = fileURLToPath(new URL(`../../workflows/tracing-interceptors${SOURCE_EXTENSION}`, import.meta.url));

let globalsInstalled = false;

/**
 * W3C trace-context propagation and the AsyncLocalStorage context manager, installed once per
 * process; Temporal's interceptors inject and extract through the global propagator.
 */
function installGlobals(): void {
  if (globalsInstalled) return;
  globalsInstalled = true;
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

function samplerOf(s: TracingSettings['sampler']): Sampler {
  const ratio = new TraceIdRatioBasedSampler(s.ratio);
  switch (s.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * Start tracing with `settings` (from `Config.TRACING`); {@link TRACING_OFF} when undefined.
 * Spans are batched (the SDK's BatchSpanProcessor) and exported to `settings.url`; an export that
 * fails is dropped by the exporter, never retried into memory without bound, and never fails a request.
 */
export function startTracing(settings: TracingSettings | undefined): Tracing {
  if (!settings) return TRACING_OFF;
  installGlobals();
  const resource = new Resource(settings.resource);
  const exporter: SpanExporter =
    settings.exporter === 'console'
      ? new ConsoleSpanExporter()
      : settings.protocol === 'http/json'
        ? new OtlpJsonExporter({ url: settings.url, headers: settings.headers })
        : new OtlpProtoExporter({ url: settings.url, headers: settings.headers });
  const processor: SpanProcessor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
  const provider = new NodeTracerProvider({ resource, sampler: samplerOf(settings.sampler), spanProcessors: [processor] });
  const tracer = provider.getTracer(TRACER_NAME);
  return {
    enabled: true,
    tracer,
    clientInterceptors: [new OpenTelemetryWorkflowClientInterceptor({ tracer })],
    workerInterceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    workflowSinks: workflowSpanSinks(processor, resource),
    shutdown: () => provider.shutdown().catch(() => undefined),
  };
}

/**
 * The `WorkflowInfo` fields a span exported through the workflow sink carries, as attributes of
 * the same name: workflow type, workflow id, run id, task queue, namespace, attempt (a number).
 * The workflow id is kept: it is `approval-` + the 128-bit HMAC of the call binding under the
 * server key (`workflows/task-id.ts`), which nobody without that key can compute from a guessed
 * call, and the client spans (`temporalWorkflowId`) and the callback span carry it anyway.
 * Everything else of `WorkflowInfo` is dropped: the memo and search attributes (the task owner key,
 * `src/auth/principal-keys.ts`, an unkeyed hash that confirms who asked), the static summary,
 * `unsafe`, `priority` and the rest (docs/OPERATIONS.md §Traces).
 */
export const WORKFLOW_SPAN_INFO_ATTRIBUTES = ['workflowType', 'workflowId', 'runId', 'taskQueue', 'namespace', 'attempt'] as const;

/**
 * Attributes the workflow interceptors (`workflows/tracing-interceptors.ts`) set on their own
 * spans that a workflow span keeps: the update id of `HandleUpdate:*` (`temporalUpdateId`, a
 * client-chosen UUID here). Any other attribute set inside the workflow is dropped.
 */
export const WORKFLOW_SPAN_OWN_ATTRIBUTES = ['temporalUpdateId'] as const;

/**
 * The `exporter` sink of the workflow interceptors: the SDK's `makeWorkflowExporter` (which merges
 * the whole `WorkflowInfo` into every span's attributes), given only the allowlisted info fields
 * ({@link WORKFLOW_SPAN_INFO_ATTRIBUTES}) and spans whose own attributes are cut to
 * {@link WORKFLOW_SPAN_OWN_ATTRIBUTES}. Events and links pass unchanged (the interceptors record
 * only exceptions there, whose messages name no principal).
 */
function workflowSpanSinks(processor: SpanProcessor, resource: Resource): InjectedSinks<OpenTelemetrySinks> {
  const sdk = makeWorkflowExporter(processor, resource);
  return {
    exporter: {
      export: {
        ...sdk.export,
        fn: (info: WorkflowInfo, spans: SerializableSpan[]) =>
          sdk.export.fn(
            // only these fields are read: the SDK's exporter Object.assigns `info` into each span's attributes
            pick(info, WORKFLOW_SPAN_INFO_ATTRIBUTES) as unknown as WorkflowInfo,
            spans.map((span) => ({ ...span, attributes: pick(span.attributes, WORKFLOW_SPAN_OWN_ATTRIBUTES) })),
          ),
      },
    },
  };
}

/** The entries of `from` under `keys` that are set, as span attributes (a copy; `from` is untouched). */
function pick(from: object, keys: readonly string[]): Attributes {
  const out: Attributes = {};
  for (const k of keys) {
    const v = (from as Record<string, unknown>)[k];
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = v;
  }
  return out;
}
