// Scope: OpenTelemetry traces of an approval task on the real stack (a Temporal dev server, the
// worker with the workflow interceptors bundled, the MCP front over HTTP), exported over OTLP/HTTP
// JSON to a real HTTP receiver in this test, configured through the OTEL_* variables; and the
// workflow summary line for the Temporal Web UI, read back by describing the workflow.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { dataConverterOf } from '../../src/compose.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '@countersign/http/log';
import { startStack, type Stack } from '../../src/stack.js';
import { WORKFLOWS_PATH, bundleWorkflows } from '../../src/worker.js';
import { ENCRYPTED_ENCODING } from '../../src/temporal/payload-codec.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS, SEARCH_ATTRIBUTE_KEYS } from '../../workflows/search-attributes.js';
import { ownerKeyOf, taskOwnerKeyOf } from '../../src/auth/principal-keys.js';
import { RUN_TRACING_MEMO_KEY } from '../../workflows/wire.js';
import { WORKFLOW_SPAN_INFO_ATTRIBUTES, WORKFLOW_SPAN_OWN_ATTRIBUTES } from '../../src/ops/tracing.js';
import { clientFor, decide, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} } as never;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: OtlpValue }>;
  links?: Array<{ traceId: string; spanId: string; attributes?: Array<{ key: string; value: OtlpValue }> }>;
  status?: { code?: number };
}
/** OTLP `SPAN_KIND_SERVER`, `STATUS_CODE_ERROR` (opentelemetry-proto trace/v1). */
const SPAN_KIND_SERVER = 2;
const STATUS_CODE_ERROR = 2;

/** The in-process OTLP/HTTP receiver: every JSON export request's body, as received. */
const bodies: string[] = [];
let receiver: Server;
let stack: Stack;
let bundle: WorkflowBundleWithSourceMap;
/** The approval workflow the first test ran with tracing on (its history is replayed below). */
let tracedWorkflowId: string | undefined;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  // the OTEL_* variables as an operator sets them, parsed by src/config.ts
  const { TRACING } = loadConfig({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'countersign-e2e',
  });
  bundle = await bundleWorkflows();
  stack = await startStack(testConfig({ ...(TRACING ? { TRACING } : {}), COUNTERSIGN_WORKFLOW_SUMMARY: 'sealed' }), {
    workflowBundle: bundle,
    logger: createLogger({ level: process.env.LOG_LEVEL ?? 'warn' }),
  });
});
afterAll(async () => {
  await stack?.stop();
  await new Promise((r) => receiver?.close(r));
});

function allSpans(): OtlpSpan[] {
  return bodies.flatMap((b) =>
    (JSON.parse(b) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> }).resourceSpans.flatMap((rs) =>
      rs.scopeSpans.flatMap((ss) => ss.spans),
    ),
  );
}

function attrs(span: OtlpSpan): Record<string, string | number | boolean | undefined> {
  return Object.fromEntries(
    (span.attributes ?? []).map((a) => [
      a.key,
      a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue),
    ]),
  );
}

/** Waits until `predicate` holds over the spans received so far (the batch processor exports about every second); fails after 60 s. */
async function spansUntil(predicate: (spans: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  for (let i = 0; i < 300; i++) {
    const spans = allSpans();
    if (predicate(spans)) return spans;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `spans never arrived; received: ${allSpans()
      .map((s) => s.name)
      .join(', ')}`,
  );
}

const only = (spans: OtlpSpan[], name: string, traceId?: string): OtlpSpan => {
  const found = spans.filter((s) => s.name === name && (traceId === undefined || s.traceId === traceId));
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
};

describe('OpenTelemetry traces of an approval task', () => {
  it("an approved task is one trace from the agent's tools/call through the workflow start and run to the tool execution, the decision's callback is linked to it, and no argument is in any span", async () => {
    const traceId = randomBytes(16).toString('hex');
    const agentSpanId = randomBytes(8).toString('hex');
    const alice = await clientFor(stack, 'alice');
    const memo = `otel ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>(
      'tools/call',
      { name: 'wire_transfer', arguments: { to: 'acct-7731', amount: 54_321, memo } },
      { traceparent: `00-${traceId}-${agentSpanId}-01` },
    );
    expect(created.resultType).toBe('task');
    expect(await decide(stack, memo, 'approve')).toBe(200);
    expect((await waitForTerminal(alice, created.taskId)).status).toBe('completed');
    const { workflowId } = parseTaskId(created.taskId)!;
    tracedWorkflowId = workflowId;

    const spans = await spansUntil(
      (s) =>
        s.some((x) => x.name === 'execute_tool wire_transfer' && x.traceId === traceId) &&
        s.some((x) => x.name === 'StartActivity:executeTool' && x.traceId === traceId) &&
        s.some((x) => x.name === 'POST /callbacks/arap' && attrs(x).temporalWorkflowId === workflowId),
    );

    // the MCP server span: a child of the agent's span from params._meta, semconv attributes
    const call = only(spans, 'tools/call wire_transfer', traceId);
    expect(call.kind).toBe(SPAN_KIND_SERVER);
    expect(call.parentSpanId).toBe(agentSpanId);
    expect(attrs(call)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'wire_transfer',
      'gen_ai.operation.name': 'execute_tool',
      'mcp.protocol.version': '2026-07-28',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
    });
    expect(attrs(call)['error.type']).toBeUndefined();

    // the creation path (src/mcp/task-service.ts, docs/DESIGN.md §3.1), both steps under the server span:
    // the durable start, which the run continues, then the `taskCreated` update, handled by the workflow
    const start = only(spans, 'StartWorkflow:approvalWorkflow', traceId);
    expect(start.parentSpanId).toBe(call.spanId);
    expect(attrs(start).temporalWorkflowId).toBe(workflowId);
    const awaitCreated = only(spans, 'StartWorkflowUpdate:taskCreated', traceId);
    expect(awaitCreated.parentSpanId).toBe(call.spanId);
    expect(attrs(awaitCreated).temporalWorkflowId).toBe(workflowId);
    expect(only(spans, 'HandleUpdate:taskCreated', traceId).parentSpanId).toBe(awaitCreated.spanId);
    // the workflow's spans (through the sink) in the same trace: the run (exported when it closes,
    // after result retention) schedules the submission and, after the decision, the execution
    const submit = only(spans, 'StartActivity:submitApprovalRequest', traceId);
    const schedule = only(spans, 'StartActivity:executeTool', traceId);
    expect(schedule.parentSpanId).toBe(submit.parentSpanId);
    expect(spans.some((s) => s.spanId === schedule.parentSpanId && s.name !== 'RunWorkflow:approvalWorkflow')).toBe(false);
    const activity = only(spans, 'RunActivity:executeTool', traceId);
    expect(activity.parentSpanId).toBe(schedule.spanId);
    const tool = only(spans, 'execute_tool wire_transfer', traceId);
    expect(tool.parentSpanId).toBe(activity.spanId);
    expect(attrs(tool)['gen_ai.tool.name']).toBe('wire_transfer');

    // the decision days later is its own trace: the callback span links to the task's start
    const callback = spans.find((s) => s.name === 'POST /callbacks/arap' && attrs(s).temporalWorkflowId === workflowId)!;
    expect(callback.traceId).not.toBe(traceId);
    expect(callback.links?.map((l) => [l.traceId, l.spanId])).toEqual([[traceId, start.spanId]]);
    const update = spans.find((s) => s.name === 'StartWorkflowUpdate:backendCallback' && s.traceId === callback.traceId)!;
    expect(update.parentSpanId).toBe(callback.spanId);
    expect(spans.some((s) => s.name === 'HandleUpdate:backendCallback' && s.parentSpanId === update.spanId)).toBe(true);

    // nothing of the arguments, the memo or the requester in any export
    // (what a span says: names, attributes, events, status; not its ids and timestamps, whose digits can be anything)
    const said = JSON.stringify(
      bodies.flatMap((b) =>
        (
          JSON.parse(b) as { resourceSpans: Array<{ resource: unknown; scopeSpans: Array<{ spans: Array<Record<string, unknown>> }> }> }
        ).resourceSpans.map((rs) => [
          rs.resource,
          rs.scopeSpans.flatMap((ss) =>
            ss.spans.map(({ name, attributes, events, status, links }) => ({
              name,
              attributes,
              events,
              status,
              links: (links as OtlpSpan['links'])?.map((l) => l.attributes),
            })),
          ),
        ]),
      ),
    );
    for (const secret of ['acct-7731', memo, '54321', 'alice']) expect(said).not.toContain(secret);
  });

  it("workflow spans carry only the allowlisted workflow info: neither the caller's owner key nor any memo or search attribute is in any exported span", async () => {
    const traceId = randomBytes(16).toString('hex');
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>(
      'tools/call',
      { name: 'wire_transfer', arguments: { to: 'acct-7734', amount: 50_001, memo: `owner ${randomUUID().slice(0, 12)}` } },
      { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    );
    const { workflowId } = parseTaskId(created.taskId)!;
    // the caller's owner key as the product computes it (src/auth/principal-keys.ts), checked against the run's memo
    const alicePrincipal = { iss: stack.issuer.issuer, sub: 'alice' };
    const ownerKey = taskOwnerKeyOf(alicePrincipal);

    // this run's workflow spans from the sink (HandleUpdate, StartActivity); the checks below cover every span exported so far
    await spansUntil(
      (s) =>
        s.some((x) => x.name === 'HandleUpdate:taskCreated' && x.traceId === traceId) &&
        s.some((x) => x.name === 'StartActivity:submitApprovalRequest' && x.traceId === traceId),
    );
    // (described once the run has scheduled its submission: the search attributes are upserted by then)
    const desc = await stack.temporal.workflow.getHandle(workflowId).describe();
    expect(desc.memo?.owner).toBe(ownerKey);
    expect(desc.typedSearchAttributes.get(SEARCH_ATTRIBUTE_KEYS.owner)).toBe(ownerKey);
    await alice.request('tasks/cancel', { taskId: created.taskId });

    const exported = bodies.flatMap((b) =>
      (
        JSON.parse(b) as { resourceSpans: Array<{ scopeSpans: Array<{ scope?: { name?: string }; spans: OtlpSpan[] }> }> }
      ).resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ scope: ss.scope?.name, span })))),
    );
    const workflowSpans = exported.filter((e) => e.scope === '@temporalio/interceptor-workflow').map((e) => e.span);
    expect(workflowSpans.filter((s) => s.traceId === traceId).map((s) => s.name)).toEqual(
      expect.arrayContaining(['HandleUpdate:taskCreated', 'StartActivity:submitApprovalRequest']),
    );
    // every attribute key of a workflow span is an allowlisted WorkflowInfo field or the interceptors' own
    const allowed = new Set<string>([...WORKFLOW_SPAN_INFO_ATTRIBUTES, ...WORKFLOW_SPAN_OWN_ATTRIBUTES]);
    const workflowKeys = new Set(workflowSpans.flatMap((s) => (s.attributes ?? []).map((a) => a.key)));
    expect([...workflowKeys].filter((k) => !allowed.has(k))).toEqual([]);
    const handled = only(workflowSpans, 'HandleUpdate:taskCreated', traceId);
    expect(attrs(handled)).toMatchObject({ workflowType: 'approvalWorkflow', workflowId, runId: desc.runId });

    // no span (attributes, events, links; of any scope) holds the owner key, nor a key naming a memo or search attribute
    const said = JSON.stringify(
      exported.map(({ span }) => ({
        name: span.name,
        attributes: span.attributes,
        events: (span as { events?: unknown }).events,
        links: span.links,
      })),
    );
    for (const secret of [ownerKey, ownerKeyOf(alicePrincipal)]) expect(said).not.toContain(secret);
    const keysOf = (list: unknown): string[] =>
      JSON.stringify(list ?? [])
        .match(/"key":"[^"]*"/g)
        ?.map((k) => k.slice(7, -1)) ?? [];
    const everyKey = new Set(
      exported.flatMap(({ span }) => [...keysOf(span.attributes), ...keysOf((span as { events?: unknown }).events), ...keysOf(span.links)]),
    );
    const forbidden = [
      'memo',
      'owner',
      'searchattributes',
      'typedsearchattributes',
      ...SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => d.name.toLowerCase()),
    ];
    expect([...everyKey].filter((k) => forbidden.some((f) => k.toLowerCase().includes(f)))).toEqual([]);
  });

  it('a tools/call refused with a JSON-RPC error records the error code as error.type and rpc.response.status_code, and the HTTP traceparent is the parent when _meta has none', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const token = await stack.issuer.mintToken({ sub: 'alice' });
    const res = await fetch(stack.urls.mcp, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        authorization: `Bearer ${token}`,
        traceparent: `00-${traceId}-${parentId}-01`,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'bad-1',
        method: 'tools/call',
        params: {
          name: 'wire_transfer',
          arguments: { to: 'acct-7732', amount: 'a lot' },
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
        },
      }),
    });
    const body = (await res.json()) as { error?: { code: number } };
    expect(body.error?.code).toBe(-32602);

    const spans = await spansUntil((s) => s.some((x) => x.traceId === traceId));
    const call = only(spans, 'tools/call wire_transfer', traceId);
    expect(call.parentSpanId).toBe(parentId);
    expect(call.status?.code).toBe(STATUS_CODE_ERROR);
    expect(attrs(call)).toMatchObject({ 'error.type': '-32602', 'rpc.response.status_code': '-32602', 'jsonrpc.request.id': 'bad-1' });
    expect(bodies.join('\n')).not.toContain('acct-7732'); // (no digits: ids and timestamps cannot hold it)
  });
});

describe('switching tracing on or off is safe for open workflows', () => {
  it("a run traced end to end replays with the worker's bundle, which tracing off uses too, and would not replay without the workflow interceptors", async () => {
    expect(tracedWorkflowId).toBeDefined();
    const history = await stack.temporal.workflow.getHandle(tracedWorkflowId!).fetchHistory();
    // the run really went through the interceptors: its start carries their trace header
    expect(Object.keys(history.events?.[0]?.workflowExecutionStartedEventAttributes?.header?.fields ?? {})).toContain('_tracer-data');
    // and it was marked traced at its start (workflows/tracing-interceptors.ts): its scheduled activities carry the trace header too
    expect((await stack.temporal.workflow.getHandle(tracedWorkflowId!).describe()).memo?.[RUN_TRACING_MEMO_KEY]).toBe('on');
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled.length).toBeGreaterThan(0);
    for (const e of scheduled) expect(Object.keys(e.activityTaskScheduledEventAttributes?.header?.fields ?? {})).toContain('_tracer-data');
    // new runs read with regular activities (patch regular-reads, docs/decisions/0001-local-reads.md): the reads are scheduled, not markers
    const types = scheduled.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    expect(types).toEqual(expect.arrayContaining(['submitApprovalRequest', 'fetchApprovalStatus', 'evaluatePolicy', 'executeTool']));
    const dataConverter = dataConverterOf(stack.config, stack.secrets);
    await expect(Worker.runReplayHistory({ workflowBundle: bundle, dataConverter }, history)).resolves.toBeUndefined();
    // why bundleWorkflows() always includes them (src/worker.ts): their handler spans reorder commands
    const withoutInterceptors = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet });
    await expect(Worker.runReplayHistory({ workflowBundle: withoutInterceptors, dataConverter }, history)).rejects.toThrow(
      /nondeterminism/i,
    );
  });
});

describe('the workflow summary line in the Temporal Web UI', () => {
  it('a new approval workflow carries the summary naming tool, native or upstream, and approver group, sealed by the payload codec', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `summary ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-7733', amount: 50_000, memo },
    });
    const { workflowId } = parseTaskId(created.taskId)!;
    const desc = await stack.temporal.workflow.getHandle(workflowId).describe();
    expect(await desc.staticSummary()).toBe('approval: wire_transfer (native) for group treasury');
    // stored encrypted, like every payload: the Web UI shows it only through a codec server
    const stored = desc.raw.executionConfig?.userMetadata?.summary;
    expect(Buffer.from(stored?.metadata?.encoding ?? []).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(stored?.data ?? []).toString()).not.toContain('wire_transfer');
    await alice.request('tasks/cancel', { taskId: created.taskId });
  });
});
