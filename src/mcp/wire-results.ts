/**
 * The task results the MCP front answers with, as zod schemas and the types inferred from them:
 * the tasks extension's (SEP-2663) task, `CreateTaskResult`, the `tasks/get` result and the
 * `complete` acknowledgement of `tasks/update` / `tasks/cancel`.
 *
 * Why here and not from the SDK: `@modelcontextprotocol/server` 2.4 types `CallToolResult` and
 * `InputRequiredResult` (used as they are), but its `Task` / `CreateTaskResult` are the 2025-11-25
 * tasks utility's (`{task: {ttl, pollInterval}}`, used by `legacy-server.ts`), and it has no types
 * for the 2026-07-28 tasks extension. The schemas follow the extension's wire schemas
 * (`@modelcontextprotocol/ext-tasks` `core/v2`, which `test/clients/task-result-schemas.test.ts`
 * checks every shape against) and are open where MCP results are open (extra keys allowed).
 * They type what `task-projection.ts` builds and the tasks handlers' `result` schemas
 * (`server.ts`); nothing is parsed with them at run time.
 */
import { z } from 'zod';

const MetaSchema = z.record(z.string(), z.unknown());

/** SEP-2663 task status. */
export const TaskStatusSchema = z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/**
 * A content block of a stored tool result: the tool port's open block (`src/tools/tool.ts`
 * `ContentBlock`), passed through whole.
 */
const StoredContentBlockSchema = z.looseObject({ type: z.string(), text: z.string().optional() });

/**
 * A completed task's `result`: the tool's `CallToolResult` as stored by the workflow, with the
 * 2026-07-28 `resultType: "complete"` first (`completeCallToolResult`).
 */
export const CompleteCallToolResultSchema = z.object({
  resultType: z.literal('complete'),
  content: z.array(StoredContentBlockSchema),
  structuredContent: z.record(z.string(), z.unknown()).optional(),
  isError: z.boolean().optional(),
  _meta: MetaSchema.optional(),
});

/**
 * The wire task (SEP-2663 `Task` and what a detailed task adds): `pollIntervalMs` and `_meta` (the
 * SEP-2643 envelope, a long-running tool's progress) while open, `inputRequests` while
 * `input_required`, `result` once `completed`, `error` once `failed`.
 */
export const WireTaskSchema = z.object({
  taskId: z.string(),
  status: TaskStatusSchema,
  statusMessage: z.string(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: z.number().int().nullable(),
  pollIntervalMs: z.number().int().optional(),
  _meta: MetaSchema.optional(),
  inputRequests: z.record(z.string(), z.unknown()).optional(),
  result: CompleteCallToolResultSchema.optional(),
  error: z.object({ code: z.number().int(), message: z.string() }).optional(),
});

/** `CreateTaskResult` (SEP-2663): the wire task with `resultType: "task"`; open like every MCP result. */
export const CreateTaskResultSchema = WireTaskSchema.extend({ resultType: z.literal('task') }).loose();

/** The `tasks/get` result (SEP-2663): the wire task with `resultType: "complete"`. */
export const GetTaskResultSchema = WireTaskSchema.extend({ resultType: z.literal('complete') }).loose();

/** The result of `tasks/update` and `tasks/cancel` (SEP-2663): `{resultType: "complete"}`. */
export const CompleteResultSchema = z.looseObject({ resultType: z.literal('complete') });

export type WireTask = z.infer<typeof WireTaskSchema>;
export type CompleteCallToolResult = z.infer<typeof CompleteCallToolResultSchema>;
export type CreateTaskResult = z.infer<typeof CreateTaskResultSchema>;
export type GetTaskResult = z.infer<typeof GetTaskResultSchema>;
export type CompleteResult = z.infer<typeof CompleteResultSchema>;
