/**
 * The MCP server factory on the official SDK 2.x line (protocol 2026-07-28, stateless): one
 * `Server` per HTTP request, `server/discover` advertising `io.modelcontextprotocol/tasks` and
 * `io.modelcontextprotocol/tool-approval`, `tools/list`, the gated `tools/call`, and the tasks
 * methods (`tasks/get`, `tasks/update`, `tasks/cancel`) the SDK does not implement itself.
 *
 * The caller's principal arrives in `ctx.http.authInfo.extra.principal`, set by the HTTP layer
 * after bearer-token verification (`http.ts`); requests without it never reach here.
 */
import type {
  CallToolRequest,
  HandlerResultTypeMap,
  ListToolsResult,
  McpServerFactory,
  RequestStateCodec,
  ServerContext,
} from '@modelcontextprotocol/server';
import type { SubmissionState } from './submission-input.js';
import type { ClientIdentity } from '../backends/approval-backend.js';
import type { TaskSnapshot } from '../../workflows/types.js';
import { z } from 'zod';
import { inputRefused, missingTasksCapability, opaque, readRefused, taskNotFound } from './errors.js';
import type { PollRateLimiter } from './poll-interval.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { gateToolCall, type GateDeps } from './gate.js';
import { ANY_PARAMS, parseMethodParams, SpecParamsServer } from './spec-params.js';
import { getTaskResult } from './task-projection.js';
import { approvalToolDescriptors, callApprovalTool, isApprovalTool } from './approval-tools.js';
import { noteToolResult } from './response-note.js';
import { clientIn, declaresTasks, principalOf } from './request-context.js';
import { listedTool, toolsCallAnswer } from './sdk-gaps.js';
import { CompleteResultSchema, GetTaskResultSchema, type CompleteResult, type GetTaskResult } from './wire-results.js';
import { TASKS_EXTENSION, TOOL_APPROVAL_EXTENSION } from '../../workflows/wire.js';

const TaskIdParams = z.looseObject({ taskId: z.string() });
const TaskUpdateParams = z.looseObject({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()).optional() });

/**
 * Schema-form registrations of the tasks methods: any object as params (checked by
 * `parseMethodParams`, `spec-params.ts`), and the result type (`wire-results.ts`; types only, the
 * SDK does not validate a result against it).
 */
const TASKS_GET = { ...ANY_PARAMS, result: GetTaskResultSchema };
const TASKS_COMPLETE = { ...ANY_PARAMS, result: CompleteResultSchema };

/** What the modern face needs besides the gate's dependencies. */
export type McpServerDeps = GateDeps & { requestStateCodec: RequestStateCodec<SubmissionState>; pollLimiter?: PollRateLimiter };

/** The tasks methods belong to the tasks extension: a request that does not declare it gets -32021. */
function requireTasks(ctx: ServerContext): void {
  if (!declaresTasks(ctx)) throw missingTasksCapability();
}

/**
 * Build the per-request server factory. `version` is reported in `serverInfo`. `requestStateCodec`
 * verifies every echoed MRTR `requestState` before a handler runs (failures: -32602). Every
 * handler answers unexpected failures opaquely (`opaque`, `errors.ts`).
 */
export function createMcpServerFactory(deps: McpServerDeps, version = '0.1.0'): McpServerFactory {
  return () => {
    // params failing the era's wire schema answer -32602, not the SDK's -32603 (spec-params.ts)
    const server = new SpecParamsServer(
      { name: 'countersign', version },
      {
        capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {}, [TOOL_APPROVAL_EXTENSION]: {} } },
        requestState: { verify: deps.requestStateCodec.verify },
      },
    );
    server.setRequestHandler('tools/list', async () => listTools(deps));
    server.setRequestHandler('tools/call', async (req, ctx) => opaque(deps.logger, () => callTool(deps, req.params, ctx)));
    server.setRequestHandler('tasks/get', TASKS_GET, async (raw, ctx) => opaque(deps.logger, () => getTask(deps, raw, ctx)));
    server.setRequestHandler('tasks/cancel', TASKS_COMPLETE, async (raw, ctx) => opaque(deps.logger, () => cancelTask(deps, raw, ctx)));
    server.setRequestHandler('tasks/update', TASKS_COMPLETE, async (raw, ctx) => opaque(deps.logger, () => updateTask(deps, raw, ctx)));
    return server;
  };
}

/** `tools/list`: the gated tools, and the companion tools when they are how a client without tasks follows an approval. */
function listTools(deps: McpServerDeps): ListToolsResult {
  const approvalTools = deps.noTasksResponse === 'approval-tools';
  return {
    tools: [
      ...deps.tools.list().map((t) => listedTool(deps.tools.descriptor(t.name))),
      ...(approvalTools ? approvalToolDescriptors() : []),
    ],
  };
}

/**
 * `tools/call`: a companion tool (`approval-tools.ts`, bound to the caller like tasks/*), or the
 * gate (`gate.ts`) with this request's principal, tasks declaration and MRTR round. A plain
 * `CallToolResult` is noted for the HTTP layer (`response-note.ts`).
 */
async function callTool(
  deps: McpServerDeps,
  params: CallToolRequest['params'],
  ctx: ServerContext,
): Promise<HandlerResultTypeMap['tools/call']> {
  if (deps.noTasksResponse === 'approval-tools' && isApprovalTool(params.name))
    return callApprovalTool(deps.tasks, principalOf(ctx), params.name, params.arguments, readReporter(deps, clientIn(ctx)));
  const result = await gateToolCall(deps, {
    principal: principalOf(ctx),
    name: params.name,
    arguments: params.arguments,
    clientSupportsTasks: declaresTasks(ctx),
    ...withClient(clientIn(ctx)),
    mrtr: {
      // the codec's verified payload (`requestState.verify` above): the SDK's typed accessor
      state: ctx.mcpReq.requestState<SubmissionState>(),
      inputResponses: ctx.mcpReq.inputResponses,
      mint: (state) => deps.requestStateCodec.mint(state, ctx),
    },
  });
  noteToolResult(ctx.http?.authInfo?.extra, result);
  return toolsCallAnswer(result);
}

/**
 * `tasks/get` (SEP-2663): the caller's task. -32602 for bad params or a task that is not the
 * caller's (the same as unknown), -32021 without the tasks extension, a rate-limit error for a
 * client polling much faster than `pollIntervalMs` (`poll-interval.ts`).
 */
async function getTask(deps: McpServerDeps, raw: unknown, ctx: ServerContext): Promise<GetTaskResult> {
  const params = parseMethodParams('tasks/get', TaskIdParams, raw);
  requireTasks(ctx);
  const caller = principalOf(ctx);
  const owner = taskOwnerKeyOf(caller);
  const refused = deps.pollLimiter?.check(owner, params.taskId);
  if (refused) throw readRefused(refused);
  const snap = await deps.tasks.get(params.taskId, caller);
  if (!snap) {
    deps.pollLimiter?.missed(owner);
    throw taskNotFound();
  }
  deps.followers?.read(params.taskId, snap, clientIn(ctx));
  return getTaskResult(params.taskId, snap);
}

/** `tasks/cancel` (SEP-2663, SEP-2848 §Cancellation): `{resultType: "complete"}` once the cancel is applied or recorded. */
async function cancelTask(deps: McpServerDeps, raw: unknown, ctx: ServerContext): Promise<CompleteResult> {
  const params = parseMethodParams('tasks/cancel', TaskIdParams, raw);
  requireTasks(ctx);
  const outcome = await deps.tasks.cancel(params.taskId, principalOf(ctx));
  if (!outcome) throw taskNotFound();
  deps.logger.info({ outcome }, 'tasks/cancel');
  return { resultType: 'complete' };
}

/** `tasks/update` (SEP-2663): an `input_required` task's answer; -32602 with the fixed reason when it is refused. */
async function updateTask(deps: McpServerDeps, raw: unknown, ctx: ServerContext): Promise<CompleteResult> {
  const params = parseMethodParams('tasks/update', TaskUpdateParams, raw);
  requireTasks(ctx);
  // The SDK lifts `inputResponses` out of the params into the request context.
  const responses = ctx.mcpReq.inputResponses ?? params.inputResponses ?? {};
  const outcome = await deps.tasks.provideInput(params.taskId, principalOf(ctx), responses);
  if (!outcome) throw taskNotFound();
  if ('refused' in outcome) throw inputRefused(outcome.refused);
  return { resultType: 'complete' };
}

/** `{client}` when the request named one, else nothing (an optional member stays absent). */
function withClient(client: ClientIdentity | undefined): { client?: ClientIdentity } {
  return client ? { client } : {};
}

/** What the companion tools call after a status read: the follower report of this request's client (`follower-reports.ts`). */
function readReporter(deps: McpServerDeps, client: ClientIdentity | undefined): ((taskId: string, snap: TaskSnapshot) => void) | undefined {
  const followers = deps.followers;
  return followers ? (taskId, snap) => followers.read(taskId, snap, client) : undefined;
}
