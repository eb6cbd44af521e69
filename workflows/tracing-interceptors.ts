/**
 * Not a workflow: the workflow interceptors of OpenTelemetry tracing, bundled with every workflow
 * (`bundleWorkflows` in `src/worker.ts`, docs/OPERATIONS.md §Traces). Temporal's interceptors
 * (`@temporalio/interceptors-opentelemetry`) with two of their spans left out:
 *
 * - `HandleQuery:*` (a `tasks/get` poll) and `ValidateUpdate:*` (an update's validator, also of
 *   an update it rejects, whose workflow task Temporal then drops from history) run on the cached
 *   workflow without leaving anything in history, and a span draws its ids from the workflow's
 *   seeded random generator. A span there would advance that generator in the live run only, so
 *   every later `uuid4()` (the idempotency key, the limiter's reservation id) would differ on the
 *   next replay and the run would fail with a nondeterminism error (found by
 *   test/e2e/approval-flow.test.ts: 20 concurrent identical calls, then a replay).
 *
 * Everything that is in history keeps its span: the run (`RunWorkflow`), signals
 * (`HandleSignal`), accepted updates (`HandleUpdate`), scheduled activities (`StartActivity`, with
 * the trace header the activity's span continues), signals to other workflows.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { Next, QueryInput, UpdateInput, WorkflowInboundCallsInterceptor, WorkflowInterceptors } from '@temporalio/workflow';

/** Temporal's inbound interceptor without the spans of calls that leave no history (see the module header). */
class HistoryOnlyInboundInterceptor extends OpenTelemetryInboundInterceptor {
  override handleQuery(input: QueryInput, next: Next<WorkflowInboundCallsInterceptor, 'handleQuery'>): Promise<unknown> {
    return next(input);
  }

  override validateUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>): void {
    next(input);
  }
}

/** The interceptors the workflow runtime installs in each run (the SDK's `workflowInterceptorModules` contract). */
export const interceptors = (): WorkflowInterceptors => ({
  inbound: [new HistoryOnlyInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
