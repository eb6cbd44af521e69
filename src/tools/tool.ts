/**
 * The tool port: what the gate runs once a call is allowed.
 *
 * A tool declares its MCP descriptor and an `execute` function. `execute` is called at most
 * once per approval task (SEP-2848 §Completion); inline calls that policy allows call it directly.
 * This module holds types only.
 */
import type { z } from 'zod';

/** Text-only tool result, a subset of MCP `CallToolResult`. */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  /** True when the tool ran and failed (an execution error). */
  isError?: boolean;
}

/** Per-execution context. */
export interface ToolExecutionContext {
  /** The MCP task id when the call runs under an approval task; absent for inline calls. */
  taskId?: string;
  /** Idempotency key of this execution (unique per task), usable as a dedup key by the effect. */
  executionId: string;
}

/**
 * What a tool can prove about one execution after a crash (docs/DESIGN.md §5, at most once): the effect happened (with
 * the result it recorded), or it did not and now never will (the execution id is fenced).
 */
export type ExecutionRecord = { executed: true; result: ToolResult } | { executed: false };

/** A gated tool. */
export interface Tool<S extends z.ZodType<Record<string, unknown>> = z.ZodType<Record<string, unknown>>> {
  name: string;
  title?: string;
  description: string;
  /** zod source of the input schema; the MCP `inputSchema` is derived with `z.toJSONSchema`. */
  inputSchema: S;
  /** Version string; bump when the implementation changes materially (drift detection). */
  version: string;
  /** Run the effect. Throw only for an execution error; the caller maps it to `execution-error`. */
  execute(args: z.infer<S>, ctx: ToolExecutionContext): Promise<ToolResult>;
  /**
   * Optional idempotency hook: "did the effect of execution `executionId` happen?" Asked only when
   * an approved execution was lost (worker crash, timeout) and the task would otherwise end
   * `outcome-unknown` (SEP-2848 §Completion: outcome-unknown is for a server that "cannot determine
   * whether invocation or the side effect completed"). Contract, which the caller relies on for
   * at-most-once:
   * - `{executed: true, result}` only when the effect for that id is durably recorded; `result` is
   *   what the tool reports for it (the task completes `approved-executed` with it);
   * - `{executed: false}` only when the effect did not happen AND can no longer happen: the answer
   *   must atomically fence the id (a late invocation with it, e.g. from a worker thought dead,
   *   must then fail without effect). The tool is never re-invoked either way; the task completes
   *   `execution-error` (after the claim a failure is never a denial, SEP-2848 §Completion) with a
   *   fixed body saying the execution was lost and fenced, no side effect occurred, and a new call
   *   is needed to try again.
   * Must be idempotent (asked again, it answers the same). Throw when it cannot tell: the task
   * then ends `outcome-unknown`. Tools without the hook always end `outcome-unknown` after a loss.
   */
  resolveExecution?(executionId: string): Promise<ExecutionRecord>;
}
