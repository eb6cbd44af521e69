/**
 * The MCP server factory on the official SDK 2.x line (protocol 2026-07-28, stateless): one
 * `Server` per HTTP request, `server/discover` advertising `io.modelcontextprotocol/tasks` and
 * `io.modelcontextprotocol/tool-approval`, `tools/list`, the gated `tools/call`, and the tasks
 * methods (`tasks/get`, `tasks/update`, `tasks/cancel`) the SDK does not implement itself.
 *
 * The caller's principal arrives in `ctx.http.authInfo.extra.principal`, set by the HTTP layer
 * after bearer-token verification (`http.ts`); requests without it never reach here.
 */
import type { McpServerFactory, RequestStateCodec } from '@modelcontextprotocol/server';
import type { SubmissionState } from './submission-input.js';
import { z } from 'zod';
import { inputRefused, missingTasksCapability, opaque, pollTooSoon, taskNotFound } from './errors.js';
import type { PollRateLimiter } from './poll-interval.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { gateToolCall, type GateDeps } from './gate.js';
import { ANY_PARAMS, parseMethodParams, SpecParamsServer } from './spec-params.js';
import { getTaskResult } from './task-projection.js';
import { approvalToolDescriptors, callApprovalTool, isApprovalTool } from './approval-tools.js';
import { noteToolResult } from './response-note.js';
import { declaresTasks, principalOf } from './request-context.js';
import { listedTool, toolsCallAnswer } from './sdk-gaps.js';
import { CompleteResultSchema, GetTaskResultSchema } from './wire-results.js';
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

/** The tasks methods belong to the tasks extension: a request that does not declare it gets -32021. */
function requireTasks(ctx: Parameters<typeof declaresTasks>[0]): void {
  if (!declaresTasks(ctx)) throw missingTasksCapability();
}

/**
 * Build the per-request server factory. `version` is reported in `serverInfo`. `requestStateCodec`
 * verifies every echoed MRTR `requestState` before a handler runs (failures: -32602).
 */
export function createMcpServerFactory(
  deps: GateDeps & { requestStateCodec: RequestStateCodec<SubmissionState>; pollLimiter?: PollRateLimiter },
  version = '0.1.0',
): McpServerFactory {
  return () => {
    // params failing the era's wire schema answer -32602, not the SDK's -32603 (spec-params.ts)
    const server = new SpecParamsServer(
      { name: 'countersign', version },
      {
        capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {}, [TOOL_APPROVAL_EXTENSION]: {} } },
        requestState: { verify: deps.requestStateCodec.verify },
      },
    );
    const approvalTools = deps.noTasksResponse === 'approval-tools';
    server.setRequestHandler('tools/list', async () => ({
      tools: [
        ...deps.tools.list().map((t) => listedTool(deps.tools.descriptor(t.name))),
        ...(approvalTools ? approvalToolDescriptors() : []),
      ],
    }));
    server.setRequestHandler('tools/call', async (req, ctx) =>
      opaque(deps.logger, async () => {
        // the plain tier's companion tools (approval-tools.ts), bound to the caller like tasks/*
        if (approvalTools && isApprovalTool(req.params.name))
          return callApprovalTool(deps.tasks, principalOf(ctx), req.params.name, req.params.arguments);
        const result = await gateToolCall(deps, {
          principal: principalOf(ctx),
          name: req.params.name,
          arguments: req.params.arguments,
          clientSupportsTasks: declaresTasks(ctx),
          mrtr: {
            // the codec's verified payload (`requestState.verify` above): the SDK's typed accessor
            state: ctx.mcpReq.requestState<SubmissionState>(),
            inputResponses: ctx.mcpReq.inputResponses,
            mint: (state) => deps.requestStateCodec.mint(state, ctx),
          },
        });
        noteToolResult(ctx.http?.authInfo?.extra, result);
        return toolsCallAnswer(result);
      }),
    );
    server.setRequestHandler('tasks/get', TASKS_GET, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/get', TaskIdParams, raw);
        requireTasks(ctx);
        const caller = principalOf(ctx);
        // SEP-2663: a client polling much faster than pollIntervalMs may be refused (poll-interval.ts)
        const tooSoon = deps.pollLimiter?.take(`${taskOwnerKeyOf(caller)} ${params.taskId}`);
        if (tooSoon) throw pollTooSoon(tooSoon.retryAfterMs);
        const snap = await deps.tasks.get(params.taskId, caller);
        if (!snap) throw taskNotFound();
        return getTaskResult(params.taskId, snap);
      }),
    );
    server.setRequestHandler('tasks/cancel', TASKS_COMPLETE, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/cancel', TaskIdParams, raw);
        requireTasks(ctx);
        const outcome = await deps.tasks.cancel(params.taskId, principalOf(ctx));
        if (!outcome) throw taskNotFound();
        deps.logger.info({ outcome }, 'tasks/cancel');
        return { resultType: 'complete' as const };
      }),
    );
    server.setRequestHandler('tasks/update', TASKS_COMPLETE, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/update', TaskUpdateParams, raw);
        requireTasks(ctx);
        // The SDK lifts `inputResponses` out of the params into the request context.
        const responses = ctx.mcpReq.inputResponses ?? params.inputResponses ?? {};
        const outcome = await deps.tasks.provideInput(params.taskId, principalOf(ctx), responses);
        if (!outcome) throw taskNotFound();
        if ('refused' in outcome) throw inputRefused(outcome.refused);
        return { resultType: 'complete' as const };
      }),
    );
    return server;
  };
}
