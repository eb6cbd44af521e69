/**
 * The MCP server factory on the official SDK 2.x line (protocol 2026-07-28, stateless): one
 * `Server` per HTTP request, `server/discover` advertising `io.modelcontextprotocol/tasks` and
 * `io.modelcontextprotocol/tool-approval`, `tools/list`, the gated `tools/call`, and the tasks
 * methods (`tasks/get`, `tasks/update`, `tasks/cancel`) the SDK does not implement itself.
 *
 * The caller's principal arrives in `ctx.http.authInfo.extra.principal`, set by the HTTP layer
 * after bearer-token verification (`http.ts`); requests without it never reach here.
 */
import { CLIENT_CAPABILITIES_META_KEY, ProtocolError, type McpServerFactory, type RequestStateCodec } from '@modelcontextprotocol/server';
import type { SubmissionState } from './submission-input.js';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { inputRefused, missingTasksCapability, opaque, pollTooSoon, taskNotFound } from './errors.js';
import type { PollRateLimiter } from './poll-interval.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { gateToolCall, type GateDeps } from './gate.js';
import { ANY_PARAMS, parseMethodParams, SpecParamsServer } from './spec-params.js';
import { getTaskResult } from './task-projection.js';
import { approvalToolDescriptors, callApprovalTool, isApprovalTool } from './approval-tools.js';
import { noteToolResult } from './response-note.js';
import { TASKS_EXTENSION, TOOL_APPROVAL_EXTENSION } from '../../workflows/wire.js';

const TaskIdParams = z.looseObject({ taskId: z.string() });
const TaskUpdateParams = z.looseObject({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()).optional() });

interface HandlerCtx {
  http?: { authInfo?: { extra?: Record<string, unknown> } };
  mcpReq: {
    envelope?: Record<string, unknown>;
    inputResponses?: Record<string, unknown>;
    requestState?: () => unknown;
  };
}

function principalOf(ctx: HandlerCtx): Principal {
  const p = ctx.http?.authInfo?.extra?.principal as Principal | undefined;
  if (!p) throw new ProtocolError(-32600, 'Invalid request: unauthenticated');
  return p;
}

/** The tasks methods belong to the tasks extension: a request that does not declare it gets -32021. */
function requireTasks(ctx: HandlerCtx): void {
  if (!declaresTasks(ctx)) throw missingTasksCapability();
}

function declaresTasks(ctx: HandlerCtx): boolean {
  const caps = ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined;
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
    const server = new SpecParamsServer({ name: 'countersign', version }, {
      capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {}, [TOOL_APPROVAL_EXTENSION]: {} } },
      requestState: { verify: deps.requestStateCodec.verify },
    } as never);
    const approvalTools = deps.noTasksResponse === 'approval-tools';
    server.setRequestHandler('tools/list', async () => ({
      tools: [...deps.tools.list().map((t) => deps.tools.descriptor(t.name)), ...(approvalTools ? approvalToolDescriptors() : [])] as never,
    }));
    server.setRequestHandler('tools/call', async (req, ctx) =>
      opaque(deps.logger, async () => {
        const c = ctx as unknown as HandlerCtx;
        // the plain tier's companion tools (approval-tools.ts), bound to the caller like tasks/*
        if (approvalTools && isApprovalTool(req.params.name))
          return (await callApprovalTool(deps.tasks, principalOf(c), req.params.name, req.params.arguments)) as never;
        const result = await gateToolCall(deps, {
          principal: principalOf(c),
          name: req.params.name,
          arguments: req.params.arguments as Record<string, unknown> | undefined,
          clientSupportsTasks: declaresTasks(c),
          mrtr: {
            state: c.mcpReq.requestState?.() as SubmissionState | undefined,
            inputResponses: c.mcpReq.inputResponses,
            mint: (state) => deps.requestStateCodec.mint(state, ctx),
          },
        });
        noteToolResult(c.http?.authInfo?.extra, result);
        return result as never;
      }),
    );
    server.setRequestHandler('tasks/get', ANY_PARAMS, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/get', TaskIdParams, raw);
        requireTasks(ctx as unknown as HandlerCtx);
        const caller = principalOf(ctx as unknown as HandlerCtx);
        // SEP-2663: a client polling much faster than pollIntervalMs may be refused (poll-interval.ts)
        const tooSoon = deps.pollLimiter?.take(`${taskOwnerKeyOf(caller)} ${params.taskId}`);
        if (tooSoon) throw pollTooSoon(tooSoon.retryAfterMs);
        const snap = await deps.tasks.get(params.taskId, caller);
        if (!snap) throw taskNotFound();
        return getTaskResult(params.taskId, snap) as never;
      }),
    );
    server.setRequestHandler('tasks/cancel', ANY_PARAMS, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/cancel', TaskIdParams, raw);
        requireTasks(ctx as unknown as HandlerCtx);
        const outcome = await deps.tasks.cancel(params.taskId, principalOf(ctx as unknown as HandlerCtx));
        if (!outcome) throw taskNotFound();
        deps.logger.info({ outcome }, 'tasks/cancel');
        return { resultType: 'complete' } as never;
      }),
    );
    server.setRequestHandler('tasks/update', ANY_PARAMS, async (raw, ctx) =>
      opaque(deps.logger, async () => {
        const params = parseMethodParams('tasks/update', TaskUpdateParams, raw);
        requireTasks(ctx as unknown as HandlerCtx);
        const c = ctx as unknown as HandlerCtx;
        // The SDK lifts `inputResponses` out of the params into the request context.
        const responses = c.mcpReq.inputResponses ?? (params.inputResponses as Record<string, unknown> | undefined) ?? {};
        const outcome = await deps.tasks.provideInput(params.taskId, principalOf(c), responses);
        if (!outcome) throw taskNotFound();
        if ('refused' in outcome) throw inputRefused(outcome.refused);
        return { resultType: 'complete' } as never;
      }),
    );
    return server;
  };
}
