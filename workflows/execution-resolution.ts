/**
 * Resolving a lost execution to the truth, for the approval workflow: after the claim,
 * when the tool's single attempt was lost (worker crash, execution timeout) rather than failed, the
 * workflow asks the tool's idempotency hook (`Tool.resolveExecution`, via the `resolveExecution`
 * activity) what happened under the execution id, and never re-invokes the tool:
 * - recorded → `approved-executed` with the recorded result (it did run, once);
 * - fenced, not executed → `execution-error` (after the claim, SEP-2848 §Completion allows only
 *   `execution-error` or `outcome-unknown` for a failure), saying the execution was lost before the
 *   tool took effect and is fenced, so no side effect occurred and a new call is needed (true: the
 *   fence stops a late attempt);
 * - the tool has no hook, or the answer cannot be had → `outcome-unknown`, as before.
 * Why not re-run when the effect provably did not happen: SEP-2848 §Completion has the server
 * invoke the tool at most once after the claim, with every validity check holding at the claim;
 * a re-run hours later would act outside those checks, and a crash-looping tool would loop. Even a
 * tool idempotent by key gains nothing a fresh call (a new task, a fresh approval) does not give.
 *
 * Workflow code only (deterministic, pure templates).
 */
import { executionErrorWithText } from './results.js';
import type { StoredCallToolResult, ToolResult } from './types.js';

/** What the tool's idempotency hook said about a lost execution. */
export type ExecutionResolution = { state: 'executed'; result: ToolResult } | { state: 'not-executed' } | { state: 'unknown' };

/** Fixed model-facing text of {@link executionLostFencedResult}. */
export const EXECUTION_LOST_FENCED_TEXT =
  'Approved, but the execution of this call was lost before the tool took effect, and it has been fenced so it can never take effect. The tool did not run and no side effect occurred. Make a new call to try again. Outcome: execution-error.';

/**
 * The claimed execution was lost before the tool's effect and is fenced: it did not run and cannot
 * run later. After the claim every failure is a completed `execution-error` or `outcome-unknown`
 * (SEP-2848 §Completion); `denied-not-executed` is only for calls that never made the claim
 * (denied, expired, unresolved). So: `execution-error`, `isError`, no SEP-2643 denial envelope
 * (authorization succeeded), and a body saying nothing happened and a new call is needed.
 */
export function executionLostFencedResult(): StoredCallToolResult {
  return executionErrorWithText(EXECUTION_LOST_FENCED_TEXT);
}

/** Whether `result` is {@link executionLostFencedResult} (the tool did not run, unlike other execution errors). */
export function isExecutionLostFencedResult(result: { content: Array<{ text?: string }> } | undefined): boolean {
  return result?.content[0]?.text === EXECUTION_LOST_FENCED_TEXT;
}
