/**
 * Where a value meets an SDK type that cannot describe it: the only type assertions of `src/mcp`,
 * one per gap, each named. Nothing here changes a value; each function is the identity.
 *
 * - {@link toolCallResult}: the tool port (`src/tools/tool.ts`) types a content block as open
 *   (`type: string`: upstream blocks and later block kinds pass through whole), the SDK's
 *   `CallToolResult` as the closed union of the five 2026-07-28 kinds. Not checked here: the SDK
 *   validates every `tools/call` result against the served era's schema before it is sent
 *   (`Server._wrapHandler`), which is where a block outside the union is refused, as before.
 *   It would go with a tool port typed by the SDK's content types (`src/tools/`).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { ToolResult } from '../tools/tool.js';

/** A tool's own result (the tool port's `ToolResult`, with `_meta` when it carries one) as the SDK's `CallToolResult`. */
export function toolCallResult(result: ToolResult & { _meta?: Record<string, unknown> }): CallToolResult {
  return result as CallToolResult;
}
