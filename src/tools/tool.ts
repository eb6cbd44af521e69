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
}
