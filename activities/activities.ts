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
import { ApplicationFailure, Context } from '@temporalio/activity';
import { BackendError, type ApprovalBackend } from '../src/backends/approval-backend.js';
import { verifyCallBinding, type CallBinding } from '../src/binding/call-binding.js';
import type { PolicyDecisionPoint } from '../src/policy/pdp.js';
import type { Tool } from '../src/tools/tool.js';
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
import type { Logger } from '../src/log.js';
import { faultPoint } from '../src/fault-point.js';

/** What the activities need: the backend, the PDP, and the tools (by name, with drift digests). */
export interface ActivityDeps {
  backend: ApprovalBackend;
  pdp: PolicyDecisionPoint;
  tools: { get(name: string): Tool | undefined; descriptorDigest(name: string): string };
  logger?: Logger;
}

/** The activity set, as the workflow sees it (imported there as a type only). */
export interface ApprovalActivities {
  /** Submit one generation under its idempotency key; returns the backend handle. */
  submitApprovalRequest(input: { body: SubmissionBody; idempotencyKey: string }): Promise<BackendHandle>;
  /** Authoritative status of a submission (SEP-2848 §Security, callback authenticity). */
  fetchApprovalStatus(handle: BackendHandle): Promise<BackendStatus>;
  /** Cancel at the backend; false when it cannot (no endpoint, already resolved). */
  cancelApprovalRequest(handle: BackendHandle): Promise<boolean>;
  /** Re-evaluate the binding with the approval as input, against current policy and tools. */
  evaluatePolicy(input: { binding: CallBinding; approval: ApprovalMaterial }): Promise<ReEvaluation>;
  /** Run the tool from the stored binding. At most once; see module header. */
  executeTool(input: { binding: CallBinding; taskId: string; executionId: string }): Promise<ToolResult>;
  /**
   * After a lost execution: ask the tool's idempotency hook what happened under `executionId`
   * (`Tool.resolveExecution`). Never invokes the tool. `unknown` when the tool has no
   * hook or is gone; a hook that throws fails the activity (retried; the workflow then gives up
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

/** Build the activities over real or fake dependencies. */
export function createActivities(deps: ActivityDeps): Required<ApprovalActivities> {
  const log = deps.logger;
  return {
    async submitApprovalRequest({ body, idempotencyKey }) {
      try {
        faultPoint('worker.submit.before');
        const handle = await deps.backend.submit(body, idempotencyKey);
        faultPoint('worker.submit.after'); // the backend has it; the reply is about to be lost
        log?.info({ generation: body.generation, workflowId: workflowIdOfActivity() }, 'approval request submitted');
        return handle;
      } catch (err) {
        log?.warn({ generation: body.generation, err: (err as Error).message }, 'approval submission failed');
        return toFailure(err);
      }
    },
    async fetchApprovalStatus(handle) {
      try {
        return await deps.backend.status(handle);
      } catch (err) {
        return toFailure(err);
      }
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
      if (decision.decision === 'allow') {
        faultPoint('worker.evaluate.after'); // allowed, but the workflow has not claimed yet
        return { outcome: 'allow' };
      }
      if (decision.nextAction === 'request' && decision.accessRequest) return { outcome: 'request', accessRequest: decision.accessRequest };
      if (decision.nextAction === 'retry')
        return { outcome: 'retry', ...(decision.retryAfterMs !== undefined ? { retryAfterMs: decision.retryAfterMs } : {}) };
      return { outcome: 'deny', reason: 'policy-denied' };
    },
    async executeTool({ binding, taskId, executionId }) {
      if (Context.current().info.attempt > 1) {
        throw ApplicationFailure.nonRetryable('a second execution attempt was refused', FAILURE.executionAttemptRefused);
      }
      faultPoint('worker.execute.before'); // claimed, tool not invoked yet
      const tool = deps.tools.get(binding.tool);
      if (!tool) throw ApplicationFailure.nonRetryable('tool is no longer registered', FAILURE.toolExecutionError);
      const parsed = tool.inputSchema.safeParse(binding.arguments);
      if (!parsed.success)
        throw ApplicationFailure.nonRetryable('stored arguments no longer match the tool schema', FAILURE.toolExecutionError);
      try {
        const out = await tool.execute(parsed.data, { taskId, executionId });
        log?.info({ workflowId: workflowIdOfActivity(), isError: out.isError === true }, 'tool executed');
        return out;
      } catch (err) {
        log?.warn({ workflowId: workflowIdOfActivity() }, 'tool execution threw');
        throw ApplicationFailure.nonRetryable(`tool failed: ${(err as Error).name}`, FAILURE.toolExecutionError);
      }
    },
    async resolveExecution({ binding, executionId }) {
      const tool = deps.tools.get(binding.tool);
      if (!tool?.resolveExecution) return { state: 'unknown' };
      const record = await tool.resolveExecution(executionId);
      log?.info({ workflowId: workflowIdOfActivity(), executed: record.executed }, 'lost execution resolved by the tool');
      return record.executed ? { state: 'executed', result: record.result } : { state: 'not-executed' };
    },
  };
}
