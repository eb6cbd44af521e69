/**
 * Activities of the approval workflow: every side effect it schedules (docs/DESIGN.md §4).
 * Built by `createActivities(deps)` so tests pass typed fakes and the worker passes adapters.
 *
 * Delivery: Temporal runs activities at least once. `submitApprovalRequest` is safe to repeat
 * because the backend deduplicates on the idempotency key; `fetchApprovalStatus`,
 * `cancelApprovalRequest` and `evaluatePolicy` are reads or idempotent; `executeTool` is scheduled
 * with `maximumAttempts: 1` and refuses any attempt after the first, so a tool runs at most once
 * per task (SEP-2848 §Completion). `resolveExecution` only asks the tool's idempotency hook what
 * happened under an execution id after a lost attempt; it never invokes the tool.
 *
 * Deliberately does not log arguments, approval material, backend URLs or the (unkeyed) binding
 * digest; log lines name the workflow id instead.
 */
import { SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { boundStoredResult, MAX_STORED_RESULT_CHARS } from '../src/tools/stored-result.js';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { BackendError, type ApprovalBackend } from '../src/backends/approval-backend.js';
import { verifyCallBinding, type CallBinding } from '../src/binding/call-binding.js';
import type { PolicyDecisionPoint } from '../src/policy/pdp.js';
import { taskIdFor } from '../workflows/task-id.js';
import {
  ToolAnswerDiscardedError,
  ToolNotExecutedError,
  ToolOutcomeUnknownError,
  type Tool,
  type ToolProgress,
} from '../src/tools/tool.js';
import {
  FAILURE,
  type ApprovalMaterial,
  type BackendHandle,
  type BackendStatus,
  type ReEvaluation,
  type SubmissionBody,
  type ToolResult,
} from '../workflows/types.js';
import type { ExecutionResolution } from '../workflows/execution-resolution.js';
import type { Logger } from '@countersign/http/log';
import { faultPoint } from '@countersign/http/fault-point';

/** What the activities need: the backend, the PDP, and the tools (by name, with drift digests). */
export interface ActivityDeps {
  backend: ApprovalBackend;
  pdp: PolicyDecisionPoint;
  /** `refresh`, when present (the gateway's registry), re-reads upstream descriptors before the drift check. */
  tools: { get(name: string): Tool | undefined; descriptorDigest(name: string): string; refresh?(): Promise<void> };
  logger?: Logger;
  /**
   * OpenTelemetry tracer (`src/ops/tracing.ts`): `executeTool` wraps the tool in an
   * `execute_tool {tool}` span (OpenTelemetry gen-ai conventions: `gen_ai.operation.name`, `gen_ai.tool.name`;
   * never the arguments or the result). Unset: the API's no-op tracer.
   */
  tracer?: Tracer;
  /**
   * Aborted when the worker process stops (`RunningWorker.stop`, at 80% of
   * `COUNTERSIGN_WORKER_SHUTDOWN_GRACE_MS`), never when a worker is replaced: a long-running tool's
   * `signal` is this or the activity's own cancellation, whichever comes first. Unset: the latter only.
   */
  stopping?: AbortSignal;
}

/** The activity set, as the workflow sees it (imported there as a type only). */
export interface ApprovalActivities {
  /** Submit one generation under its idempotency key; returns the backend handle. */
  submitApprovalRequest(input: { body: SubmissionBody; idempotencyKey: string }): Promise<BackendHandle>;
  /**
   * Authoritative status of a submission (SEP-2848 §Security, callback authenticity). With `poll`,
   * one attempt of the fallback status poll (docs/DESIGN.md §4.3): answers only news — a decided
   * status, or a pending one whose `expiresAt` is later than `poll.knownExpiresAt` (ISO 8601) — and
   * otherwise throws the retryable `ApprovalPending` failure (benign: logged at debug, no failure
   * metric), as it does for any backend error (a plain failure), so that Temporal retries the
   * activity with the poll's backoff: the attempts are the polls, one action each and none of them in history.
   */
  fetchApprovalStatus(handle: BackendHandle, poll?: { knownExpiresAt: string }): Promise<BackendStatus>;
  /** Cancel at the backend; false when it cannot (no endpoint, already resolved). */
  cancelApprovalRequest(handle: BackendHandle): Promise<boolean>;
  /** Re-evaluate the binding with the approval as input, against current policy and tools. */
  evaluatePolicy(input: { binding: CallBinding; approval: ApprovalMaterial }): Promise<ReEvaluation>;
  /** Run the tool from the stored binding. At most once; see module header. */
  executeTool(input: { binding: CallBinding; taskId: string; executionId: string }): Promise<ToolResult>;
  /**
   * After a lost execution: ask the tool's idempotency hook what happened under `executionId`
   * (`Tool.resolveExecution`). Never invokes the tool. `unknown` when the tool has no
   * hook or is gone, or when the hook throws `ToolOutcomeUnknownError` (it knows it cannot tell);
   * any other throw fails the activity (a transient failure: retried; the workflow then gives up
   * with outcome-unknown). Safe to repeat: the hook is idempotent. Optional only so test fakes may
   * omit it (a fake without it leaves a lost execution outcome-unknown); `createActivities` has it.
   */
  resolveExecution?(input: { binding: CallBinding; executionId: string }): Promise<ExecutionResolution>;
}

function toFailure(err: unknown): never {
  if (err instanceof BackendError) {
    const type =
      err.code === 'conflict'
        ? FAILURE.backendConflict
        : err.code === 'invalid'
          ? FAILURE.backendInvalid
          : err.code === 'unauthorized'
            ? FAILURE.backendUnauthorized
            : err.code === 'not-found'
              ? FAILURE.backendNotFound
              : 'BackendUnavailable';
    throw ApplicationFailure.create({ message: err.message, type, nonRetryable: !err.retryable });
  }
  throw err;
}

/**
 * The approval workflow id, the reference logs use for a call: a keyed HMAC of the binding. The
 * binding digest itself is an unkeyed hash, from which low-entropy arguments could be recovered.
 */
function workflowIdOfActivity(): string {
  return Context.current().info.workflowExecution?.workflowId ?? 'unknown';
}

/** The MCP task id of the approval run this activity belongs to (`workflows/task-id.ts`); undefined outside a workflow. */
function taskIdOfActivity(): string | undefined {
  const run = Context.current().info.workflowExecution;
  return run === undefined ? undefined : taskIdFor(run.workflowId, run.runId);
}

/** Build the activities over real or fake dependencies. */
export function createActivities(deps: ActivityDeps): Required<ApprovalActivities> {
  const log = deps.logger;
  return {
    async submitApprovalRequest({ body, idempotencyKey }) {
      try {
        faultPoint('worker.submit.before');
        // the task id names the request in the front's follower reports (docs/DESIGN.md §Who is waiting)
        const taskRef = taskIdOfActivity();
        const handle = await deps.backend.submit(taskRef === undefined ? body : { ...body, taskRef }, idempotencyKey);
        faultPoint('worker.submit.after'); // the backend has it; the reply is about to be lost
        log?.info({ generation: body.generation, workflowId: workflowIdOfActivity() }, 'approval request submitted');
        return handle;
      } catch (err) {
        log?.warn({ generation: body.generation, err: (err as Error).message }, 'approval submission failed');
        return toFailure(err);
      }
    },
    async fetchApprovalStatus(handle, poll) {
      let status: BackendStatus;
      try {
        status = await deps.backend.status(handle);
      } catch (err) {
        if (!poll) return toFailure(err);
        // polling: a failed read is no news either; the poll's backoff retries it
        throw ApplicationFailure.retryable('the approval backend did not answer the status poll', FAILURE.approvalPending);
      }
      if (poll && status.state === 'pending' && !(Date.parse(status.expiresAt) > Date.parse(poll.knownExpiresAt))) {
        // the poll's normal answer, a few dozen times per waiting task: benign, so the worker logs the
        // attempt at debug and counts no activity failure (a plain failure is a WARN with its stack)
        throw ApplicationFailure.create({
          message: 'the approval request is still pending',
          type: FAILURE.approvalPending,
          nonRetryable: false,
          category: ApplicationFailureCategory.BENIGN,
        });
      }
      return status;
    },
    async cancelApprovalRequest(handle) {
      try {
        return await deps.backend.cancel(handle);
      } catch (err) {
        return toFailure(err);
      }
    },
    async evaluatePolicy({ binding, approval }) {
      if (!verifyCallBinding(binding)) return { outcome: 'deny', reason: 'binding-invalid' };
      await deps.tools.refresh?.(); // an upstream tool's current descriptor, not the last one seen
      const tool = deps.tools.get(binding.tool);
      if (!tool || deps.tools.descriptorDigest(binding.tool) !== binding.toolDescriptorDigest) {
        return { outcome: 'deny', reason: 'tool-changed' }; // fail closed on material drift
      }
      const decision = await deps.pdp.evaluate({
        subject: binding.principal,
        action: { name: 'tools/call' },
        resource: binding.resource,
        context: { arguments: binding.arguments, approval },
      });
      log?.info(
        { workflowId: workflowIdOfActivity(), decision: decision.decision, policyIds: decision.policyIds },
        're-evaluated after approval',
      );
      // `policyIds` ride along for the evidence receipt (src/receipts/task-evidence.ts); the workflow ignores them.
      const { policyIds } = decision;
      if (decision.decision === 'allow') {
        faultPoint('worker.evaluate.after'); // allowed, but the workflow has not claimed yet
        return { outcome: 'allow', policyIds };
      }
      if (decision.nextAction === 'request' && decision.accessRequest)
        return { outcome: 'request', accessRequest: decision.accessRequest, policyIds };
      if (decision.nextAction === 'retry')
        return { outcome: 'retry', ...(decision.retryAfterMs !== undefined ? { retryAfterMs: decision.retryAfterMs } : {}), policyIds };
      return { outcome: 'deny', reason: 'policy-denied', policyIds };
    },
    async executeTool({ binding, taskId, executionId }) {
      if (Context.current().info.attempt > 1) {
        throw ApplicationFailure.nonRetryable('a second execution attempt was refused', FAILURE.executionAttemptRefused);
      }
      faultPoint('worker.execute.before'); // claimed, tool not invoked yet
      const tool = deps.tools.get(binding.tool);
      // neither case invokes the tool: it did not run (FAILURE.toolNotExecuted), not "ran and failed"
      if (!tool) throw ApplicationFailure.nonRetryable('tool is no longer registered', FAILURE.toolNotExecuted);
      const parsed = tool.inputSchema.safeParse(binding.arguments);
      if (!parsed.success)
        throw ApplicationFailure.nonRetryable('stored arguments no longer match the tool schema', FAILURE.toolNotExecuted);
      // A long-running tool heartbeats (its latest progress as the details, read by `tasks/get`):
      // four times per heartbeat timeout, and at once on every progress report.
      const long = tool.longRunning;
      let latest: ToolProgress | undefined;
      const beat = () => Context.current().heartbeat(latest);
      const ticker = long ? setInterval(beat, Math.max(250, Math.floor(long.heartbeatMs / 4))) : undefined;
      const progress = (p: ToolProgress) => {
        latest = { step: p.step, of: p.of, label: p.label };
        beat();
      };
      try {
        const out = await withToolSpan(deps.tracer, binding.tool, () =>
          tool.execute(parsed.data, {
            taskId,
            executionId,
            ...(long ? { progress, signal: toolSignal(Context.current().cancellationSignal, deps.stopping) } : {}),
          }),
        );
        log?.info({ workflowId: workflowIdOfActivity(), isError: out.isError === true }, 'tool executed');
        // the result must fit through Temporal: a failure here would read as outcome-unknown after the tool ran
        const bounded = boundStoredResult(out);
        if (bounded.truncatedFrom !== undefined)
          log?.warn(
            { workflowId: workflowIdOfActivity(), size: bounded.truncatedFrom, limit: MAX_STORED_RESULT_CHARS },
            'tool result too large to store; kept its start',
          );
        return bounded.result;
      } catch (err) {
        log?.warn({ workflowId: workflowIdOfActivity(), err: (err as Error).name }, 'tool execution threw');
        // not a tool error: the workflow treats it like a lost attempt (resolveExecution, else outcome-unknown)
        if (err instanceof ToolOutcomeUnknownError)
          throw ApplicationFailure.nonRetryable('tool outcome unknown', FAILURE.toolOutcomeUnknown);
        if (err instanceof ToolNotExecutedError) throw ApplicationFailure.nonRetryable('the tool did not run', FAILURE.toolNotExecuted);
        if (err instanceof ToolAnswerDiscardedError)
          throw ApplicationFailure.nonRetryable('the tool ran; its answer was too large and was discarded', FAILURE.toolAnswerDiscarded, {
            sizeBytes: err.sizeBytes,
            limitBytes: err.limitBytes,
          });
        throw ApplicationFailure.nonRetryable(`tool failed: ${(err as Error).name}`, FAILURE.toolExecutionError);
      } finally {
        if (ticker) clearInterval(ticker);
      }
    },
    async resolveExecution({ binding, executionId }) {
      const tool = deps.tools.get(binding.tool);
      if (!tool?.resolveExecution) return { state: 'unknown' };
      let record;
      try {
        record = await tool.resolveExecution(executionId);
      } catch (err) {
        // the hook's definite "cannot tell" (Tool.resolveExecution): outcome-unknown now, no retry
        if (err instanceof ToolOutcomeUnknownError) {
          log?.info({ workflowId: workflowIdOfActivity() }, 'lost execution: the tool cannot tell whether it took effect');
          return { state: 'unknown' };
        }
        throw err;
      }
      log?.info({ workflowId: workflowIdOfActivity(), executed: record.executed }, 'lost execution resolved by the tool');
      return record.executed ? { state: 'executed', result: record.result } : { state: 'not-executed' };
    },
  };
}

/** The abort signal a long-running tool gets: the activity's cancellation, or the process stopping (`ActivityDeps.stopping`). */
function toolSignal(cancellation: AbortSignal, stopping: AbortSignal | undefined): AbortSignal {
  return stopping ? AbortSignal.any([cancellation, stopping]) : cancellation;
}

/**
 * Run `execute` in an INTERNAL span `execute_tool {tool}` (OpenTelemetry gen-ai conventions,
 * docs/OPERATIONS.md §Traces): `error.type` is `tool_error` for an `isError` result, else the thrown error's name.
 * Records neither arguments nor result. Rethrows what `execute` throws.
 */
function withToolSpan(tracer: Tracer | undefined, toolName: string, execute: () => Promise<ToolResult>): Promise<ToolResult> {
  return (tracer ?? trace.getTracer('countersign')).startActiveSpan(
    `execute_tool ${toolName}`,
    { kind: SpanKind.INTERNAL, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': toolName } },
    async (span) => {
      try {
        const out = await execute();
        if (out.isError === true) {
          span.setAttribute('error.type', 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        return out;
      } catch (err) {
        span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}
