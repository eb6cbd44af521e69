/**
 * Where a value meets an SDK type that cannot describe it: the only type assertions of `src/mcp`,
 * one per gap, each named. Nothing here changes a value; each function is the identity.
 *
 * - {@link toolsCallAnswer}: `@modelcontextprotocol/server` 2.4 types a `tools/call` handler's
 *   return as `CallToolResult | InputRequiredResult` (`HandlerResultTypeMap`). A task result is
 *   not in it: neither the tasks extension's `CreateTaskResult` (SEP-2663, `resultType: "task"`),
 *   which the SDK's 2026-07-28 codec validates and sends, nor the 2025-11-25 `CreateTaskResult`
 *   (`{task}`), which `legacy-server.ts` hands past the SDK's result check.
 * - {@link toolCallResult}: the tool port (`src/tools/tool.ts`) types a content block as open
 *   (`type: string`: upstream blocks and later block kinds pass through whole), the SDK's
 *   `CallToolResult` as the closed union of the five 2026-07-28 kinds. Not checked here: the SDK
 *   validates every `tools/call` result against the served era's schema before it is sent
 *   (`Server._wrapHandler`), which is where a block outside the union is refused, as before.
 * - {@link listedTool}: the tool port types a descriptor's `inputSchema` as any JSON object
 *   (`src/tools/registry.ts` `ToolDescriptor`), the SDK's `Tool` as one with `type: "object"`.
 *   The SDK does not validate `tools/list` results; descriptors are served as the registry builds
 *   them, as before.
 *
 * The first is the SDK's; the other two would go with a tool port typed by the SDK's content and
 * tool types (`src/tools/`).
 */
import type { CallToolResult, CreateTaskResult as LegacyCreateTaskResult, HandlerResultTypeMap, Tool } from '@modelcontextprotocol/server';
import type { ToolDescriptor } from '../tools/registry.js';
import type { ToolResult } from '../tools/tool.js';
import type { GateResult } from './gate.js';

/** A `tools/call` handler's answer (the gate's, or the 2025-11-25 face's task) as the SDK's handler result type. */
export function toolsCallAnswer(answer: GateResult | LegacyCreateTaskResult): HandlerResultTypeMap['tools/call'] {
  return answer as HandlerResultTypeMap['tools/call'];
}

/** A tool's own result (the tool port's `ToolResult`, with `_meta` when it carries one) as the SDK's `CallToolResult`. */
export function toolCallResult(result: ToolResult & { _meta?: Record<string, unknown> }): CallToolResult {
  return result as CallToolResult;
}

/** A registry descriptor as the SDK's `Tool`. */
export function listedTool(descriptor: ToolDescriptor): Tool {
  return descriptor as Tool;
}
