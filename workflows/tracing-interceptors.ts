/**
 * Not a workflow: the workflow interceptors of OpenTelemetry tracing, bundled with every workflow
 * (`bundleWorkflows` in `src/worker.ts`, docs/OPERATIONS.md §Traces). Temporal's interceptors
 * (`@temporalio/interceptors-opentelemetry`), in the runs that asked for them, with two of their
 * spans left out.
 *
 * Which runs are traced is fixed at each run's start, by its memo ({@link RUN_TRACING_MEMO_KEY}):
 * `'off'` — no span, no OpenTelemetry state in the run; anything else, including no key (a run
 * started before the key existed) — traced. A run keeps its choice for its whole life, so turning
 * `OTEL_*` on or off never changes how an open run replays (their handler spans add awaits, which
 * order commands differently: test/e2e/tracing.test.ts).
 *
 * Why untraced runs get nothing: each traced run holds its own OpenTelemetry context manager, an
 * `AsyncLocalStorage`. On Node 20 every enabled `AsyncLocalStorage` of the worker thread stores a
 * property on every promise created in it, so with N cached traced runs each new promise carries
 * N more properties: memory and workflow-task CPU grow with the square of the cache
 * (bench/perf-notes.md §Where the worker's memory goes, measured with a heap snapshot).
 *
 * The two spans left out: `HandleQuery:*` (a `tasks/get` poll) and `ValidateUpdate:*` (an
 * update's validator, also of an update it rejects, whose workflow task Temporal then drops from
 * history) run on the cached workflow without leaving anything in history, and a span draws its
 * ids from the workflow's seeded random generator. A span there would advance that generator in
 * the live run only, so every later `uuid4()` (the idempotency key, the limiter's reservation id)
 * would differ on the next replay and the run would fail with a nondeterminism error (found by
 * test/e2e/approval-flow.test.ts: 20 concurrent identical calls, then a replay).
 *
 * Everything that is in history keeps its span in a traced run: the run (`RunWorkflow`), signals
 * (`HandleSignal`), accepted updates (`HandleUpdate`), scheduled activities (`StartActivity`, with
 * the trace header the activity's span continues), signals to other workflows.
 */
import type {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import { workflowInfo } from '@temporalio/workflow';
import type {
  ActivityInput,
  ContinueAsNewInput,
  DisposeInput,
  GetLogAttributesInput,
  GetMetricTagsInput,
  LocalActivityInput,
  Next,
  QueryInput,
  SignalInput,
  SignalWorkflowInput,
  StartChildWorkflowExecutionInput,
  StartNexusOperationInput,
  UpdateInput,
  WorkflowExecuteInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowInternalsInterceptor,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { RUN_TRACING_MEMO_KEY } from './wire.js';

/**
 * Whether the current run is traced: its start memo's {@link RUN_TRACING_MEMO_KEY} is not `'off'`.
 * Read once per run (the memo is set by the run's first activation and never upserted).
 */
function runIsTraced(): boolean {
  return workflowInfo().memo?.[RUN_TRACING_MEMO_KEY] !== 'off';
}

/**
 * Temporal's OpenTelemetry workflow module, loaded on first use in a traced run only. Each run
 * loads the bundle's modules for itself (the SDK's isolation of runs), and this module with
 * OpenTelemetry is over half of them: an untraced run never loads it (bench/perf-notes.md §Where
 * the worker's memory goes). A `require` the workflow bundler resolves at bundle time.
 */
function otelWorkflowModule(): typeof import('@temporalio/interceptors-opentelemetry/lib/workflow/index.js') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@temporalio/interceptors-opentelemetry/lib/workflow/index.js') as typeof import('@temporalio/interceptors-opentelemetry/lib/workflow/index.js');
}

/** The run's choice and, in a traced run, Temporal's interceptors (made on first use). */
class RunTracing {
  private traced?: boolean;
  private inbound?: OpenTelemetryInboundInterceptor;
  private outbound?: OpenTelemetryOutboundInterceptor;
  private internals?: OpenTelemetryInternalsInterceptor;

  /** Temporal's inbound interceptor, or undefined in an untraced run. */
  inboundOf(): OpenTelemetryInboundInterceptor | undefined {
    return this.isTraced() ? (this.inbound ??= new (otelWorkflowModule().OpenTelemetryInboundInterceptor)()) : undefined;
  }

  /** Temporal's outbound interceptor, or undefined in an untraced run. */
  outboundOf(): OpenTelemetryOutboundInterceptor | undefined {
    return this.isTraced() ? (this.outbound ??= new (otelWorkflowModule().OpenTelemetryOutboundInterceptor)()) : undefined;
  }

  /** Temporal's internals interceptor once the run made its tracer (it disables the context manager on dispose). */
  internalsOf(): OpenTelemetryInternalsInterceptor | undefined {
    return this.inbound || this.outbound ? (this.internals ??= new (otelWorkflowModule().OpenTelemetryInternalsInterceptor)()) : undefined;
  }

  private isTraced(): boolean {
    return (this.traced ??= runIsTraced());
  }
}

/** Inbound calls: Temporal's spans in a traced run, except for queries and update validators (see the module header). */
class RunInbound implements WorkflowInboundCallsInterceptor {
  constructor(private readonly run: RunTracing) {}

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const otel = this.run.inboundOf();
    return otel ? otel.execute(input, next) : next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    const otel = this.run.inboundOf();
    return otel ? otel.handleSignal(input, next) : next(input);
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    const otel = this.run.inboundOf();
    return otel ? otel.handleUpdate(input, next) : next(input);
  }

  validateUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>): void {
    next(input);
  }

  handleQuery(input: QueryInput, next: Next<WorkflowInboundCallsInterceptor, 'handleQuery'>): Promise<unknown> {
    return next(input);
  }
}

/** Outbound calls: Temporal's spans (and trace headers) in a traced run. */
class RunOutbound implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly run: RunTracing) {}

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>): Promise<unknown> {
    const otel = this.run.outboundOf();
    return otel ? otel.scheduleActivity(input, next) : next(input);
  }

  scheduleLocalActivity(
    input: LocalActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
  ): Promise<unknown> {
    const otel = this.run.outboundOf();
    return otel ? otel.scheduleLocalActivity(input, next) : next(input);
  }

  startNexusOperation(
    input: StartNexusOperationInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startNexusOperation'>,
  ): ReturnType<Next<WorkflowOutboundCallsInterceptor, 'startNexusOperation'>> {
    const otel = this.run.outboundOf();
    return otel ? otel.startNexusOperation(input, next) : next(input);
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ): Promise<[Promise<string>, Promise<unknown>]> {
    const otel = this.run.outboundOf();
    return otel ? otel.startChildWorkflowExecution(input, next) : next(input);
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>): Promise<never> {
    const otel = this.run.outboundOf();
    return otel ? otel.continueAsNew(input, next) : next(input);
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>): Promise<void> {
    const otel = this.run.outboundOf();
    return otel ? otel.signalWorkflow(input, next) : next(input);
  }

  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
  ): Record<string, unknown> {
    const otel = this.run.outboundOf();
    return otel ? otel.getLogAttributes(input, next) : next(input);
  }

  getMetricTags(input: GetMetricTagsInput, next: Next<WorkflowOutboundCallsInterceptor, 'getMetricTags'>): GetMetricTagsInput {
    return next(input);
  }
}

/** Internals: a traced run's context manager is disabled when the run leaves the cache. */
class RunInternals implements WorkflowInternalsInterceptor {
  constructor(private readonly run: RunTracing) {}

  dispose(input: DisposeInput, next: Next<WorkflowInternalsInterceptor, 'dispose'>): void {
    const otel = this.run.internalsOf();
    if (otel) void otel.dispose(input, next);
    else next(input);
  }
}

/** The interceptors the workflow runtime installs in each run (the SDK's `workflowInterceptorModules` contract). */
export const interceptors = (): WorkflowInterceptors => {
  const run = new RunTracing();
  return { inbound: [new RunInbound(run)], outbound: [new RunOutbound(run)], internals: [new RunInternals(run)] };
};
