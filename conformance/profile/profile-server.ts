/**
 * The conformance profile's MCP server factory, on the same SDK seam as Countersign's front
 * (`src/mcp/server.ts`: one `Server` per HTTP request, protocol 2026-07-28, stateless): the
 * fixture tools and prompt (`fixture-tools.ts`), fixture tasks on Temporal
 * (`fixture-task-service.ts`) and the tasks methods.
 *
 * Tasks wire (SEP-2663): `CreateTaskResult` is flat (`resultType: "task"`, `taskId`, `status`,
 * `statusMessage`, `createdAt`, `lastUpdatedAt`, `ttlMs`, `pollIntervalMs`; never `result`,
 * `error`, `inputRequests` or `requestState`); `tasks/get` answers `resultType: "complete"` with
 * the task, `inputRequests` while `input_required`, `result` once `completed`, `error` once
 * `failed`; `tasks/update` and `tasks/cancel` answer an empty `{resultType: "complete"}` ack, also
 * for a terminal task. `tasks/*` from a request that did not declare the tasks extension is
 * -32021; an unknown or foreign task id is -32602 (one message for both).
 *
 * Deliberately does not: advertise or implement the tool-approval extension (the profile has no
 * approval tools), or emit task status notifications.
 */
import { CLIENT_CAPABILITIES_META_KEY, ProtocolError, type McpServerFactory, type RequestStateCodec } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Principal } from '../../src/auth/principal.js';
import { missingTasksCapability, taskNotFound } from '../../src/mcp/errors.js';
import type { SubmissionState } from '../../src/mcp/submission-input.js';
import { ANY_PARAMS, parseMethodParams, SpecParamsServer } from '../../src/mcp/spec-params.js';
import { ownerKeyOf } from '../../src/auth/principal-keys.js';
import { completeCallToolResult } from '../../src/mcp/task-projection.js';
import type { FixtureTaskService } from './fixture-task-service.js';
import { FIXTURE_PROMPT, FIXTURE_TOOLS, fixtureTool } from './fixture-tools.js';
import type { FixtureTaskSnapshot } from './fixture-types.js';
import { gatherUserName, runMrtrFixture, type DeclaredCapabilities } from './mrtr-fixtures.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';

/** Longest inline run of `slow_compute` for a client without the tasks extension, in seconds. */
export const MAX_INLINE_SECONDS = 10;

const TaskIdParams = z.looseObject({ taskId: z.string() });
const TaskUpdateParams = z.looseObject({ taskId: z.string(), inputResponses: z.record(z.string(), z.unknown()).optional() });

interface HandlerCtx {
  http?: { authInfo?: { extra?: Record<string, unknown> } };
  mcpReq: { envelope?: Record<string, unknown>; inputResponses?: Record<string, unknown>; requestState?: () => unknown };
}

const asCtx = (ctx: unknown) => ctx as HandlerCtx;

function principalOf(ctx: HandlerCtx): Principal {
  const p = ctx.http?.authInfo?.extra?.principal as Principal | undefined;
  if (!p) throw new ProtocolError(-32600, 'Invalid request: unauthenticated');
  return p;
}

function capabilitiesOf(ctx: HandlerCtx): DeclaredCapabilities {
  return (ctx.mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] as DeclaredCapabilities | undefined) ?? {};
}

const declaresTasks = (ctx: HandlerCtx) => capabilitiesOf(ctx).extensions?.[TASKS_EXTENSION] !== undefined;

const isTerminal = (s: FixtureTaskSnapshot) => s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled';

/** Fields common to `CreateTaskResult` and the `tasks/get` result. */
function wireTask(taskId: string, s: FixtureTaskSnapshot): Record<string, unknown> {
  return {
    taskId,
    status: s.status,
    statusMessage: s.statusMessage,
    createdAt: s.createdAt,
    lastUpdatedAt: s.lastUpdatedAt,
    ttlMs: s.ttlMs,
    ...(isTerminal(s) ? {} : { pollIntervalMs: s.pollIntervalMs }),
  };
}

/** `CreateTaskResult`: the task only, never its input requests, result or error (those are on `tasks/get`). */
export function fixtureCreateTaskResult(taskId: string, s: FixtureTaskSnapshot): Record<string, unknown> {
  return { resultType: 'task', ...wireTask(taskId, s) };
}

/** `tasks/get` result (SEP-2663 DetailedTask). */
export function fixtureGetTaskResult(taskId: string, s: FixtureTaskSnapshot): Record<string, unknown> {
  return {
    resultType: 'complete',
    ...wireTask(taskId, s),
    ...(s.status === 'input_required' && s.inputRequests ? { inputRequests: s.inputRequests } : {}),
    ...(s.status === 'completed' && s.result ? { result: completeCallToolResult(s.result) } : {}),
    ...(s.status === 'failed' ? { error: s.error ?? { code: -32603, message: 'Internal error' } } : {}),
  };
}

/** Dependencies of the factory. */
export interface ProfileServerDeps {
  tasks: FixtureTaskService;
  /** Seals and verifies MRTR `requestState` (Countersign's codec, bound to method and caller). */
  requestStateCodec: RequestStateCodec<SubmissionState>;
  version?: string;
}

/** Build the per-request server factory of the conformance profile. */
export function createProfileServerFactory(deps: ProfileServerDeps): McpServerFactory {
  return () => {
    // params failing the era's wire schema answer -32602, as on the front (src/mcp/spec-params.ts)
    const server = new SpecParamsServer({ name: 'countersign-conformance-profile', version: deps.version ?? '0.1.0' }, {
      capabilities: { tools: {}, prompts: {}, extensions: { [TASKS_EXTENSION]: {} } },
      requestState: { verify: deps.requestStateCodec.verify },
    } as never);

    server.setRequestHandler('tools/list', async () => ({
      tools: FIXTURE_TOOLS.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })) as never,
    }));

    server.setRequestHandler('tools/call', async (req, rawCtx) => {
      const ctx = asCtx(rawCtx);
      const tool = fixtureTool(req.params.name);
      if (!tool) throw new ProtocolError(-32602, 'Invalid params: unknown tool');
      const args = (req.params.arguments ?? {}) as Record<string, unknown>;
      const ownerKey = ownerKeyOf(principalOf(ctx));
      const round = {
        name: tool.name,
        arguments: args,
        capabilities: capabilitiesOf(ctx),
        inputResponses: ctx.mcpReq.inputResponses,
        state: ctx.mcpReq.requestState?.() as SubmissionState | undefined,
        mint: (state: SubmissionState) => deps.requestStateCodec.mint(state, rawCtx),
      };

      const serve = tool.serve;
      if (serve.kind === 'sync') {
        if (tool.name === 'greet')
          return { content: [{ type: 'text', text: `Hello, ${typeof args.name === 'string' ? args.name : 'World'}!` }] } as never;
        return { content: [{ type: 'text', text: `${tool.name} ran; no log level was requested, so nothing was logged.` }] } as never;
      }
      if (serve.kind === 'mrtr') return (await runMrtrFixture(round)) as never;

      // task-supporting tools
      if (!declaresTasks(ctx)) {
        if (serve.taskSupport === 'required') throw missingTasksCapability();
        // optional: fall through to synchronous execution (SEP-2663 §Capability negotiation)
        const seconds = Math.min(MAX_INLINE_SECONDS, Math.max(0, Number(args.seconds) || 0));
        if (seconds > 0) await new Promise((r) => setTimeout(r, seconds * 1000));
        return {
          content: [
            {
              type: 'text',
              text: `slow_compute ${typeof args.label === 'string' ? args.label : 'job'}: done after ${seconds} s (inline, no task)`,
            },
          ],
        } as never;
      }
      let taskArgs = args;
      if (serve.mrtrFirst) {
        // MRTR on the call gathers user_name; the final round escalates to a task carrying it
        const gathered = await gatherUserName(round);
        if ('inputRequired' in gathered) return gathered.inputRequired as never;
        taskArgs = { user_name: gathered.name };
      }
      const { taskId, snapshot } = await deps.tasks.create(serve.tool, taskArgs, ownerKey);
      return fixtureCreateTaskResult(taskId, snapshot) as never;
    });

    server.setRequestHandler('prompts/list', async () => ({
      prompts: [{ name: FIXTURE_PROMPT.name, description: FIXTURE_PROMPT.description }],
    }));

    server.setRequestHandler('prompts/get', async (req, rawCtx) => {
      const ctx = asCtx(rawCtx);
      if (req.params.name !== FIXTURE_PROMPT.name) throw new ProtocolError(-32602, 'Invalid params: unknown prompt');
      principalOf(ctx);
      return (await runMrtrFixture({
        name: FIXTURE_PROMPT.name,
        arguments: (req.params.arguments ?? {}) as Record<string, unknown>,
        capabilities: capabilitiesOf(ctx),
        inputResponses: ctx.mcpReq.inputResponses,
        state: ctx.mcpReq.requestState?.() as SubmissionState | undefined,
        mint: (state) => deps.requestStateCodec.mint(state, rawCtx),
      })) as never;
    });

    const gate = (rawCtx: unknown) => {
      const ctx = asCtx(rawCtx);
      if (!declaresTasks(ctx)) throw missingTasksCapability();
      return ownerKeyOf(principalOf(ctx));
    };

    server.setRequestHandler('tasks/get', ANY_PARAMS, async (raw, ctx) => {
      const params = parseMethodParams('tasks/get', TaskIdParams, raw);
      const snap = await deps.tasks.get(params.taskId, gate(ctx));
      if (!snap) throw taskNotFound();
      return fixtureGetTaskResult(params.taskId, snap) as never;
    });

    server.setRequestHandler('tasks/cancel', ANY_PARAMS, async (raw, ctx) => {
      const params = parseMethodParams('tasks/cancel', TaskIdParams, raw);
      const outcome = await deps.tasks.cancel(params.taskId, gate(ctx));
      if (!outcome) throw taskNotFound();
      return { resultType: 'complete' } as never;
    });

    server.setRequestHandler('tasks/update', ANY_PARAMS, async (raw, ctx) => {
      const params = parseMethodParams('tasks/update', TaskUpdateParams, raw);
      // the SDK lifts `inputResponses` out of params into the request context (SEP-2322 wire material)
      const responses = asCtx(ctx).mcpReq.inputResponses ?? params.inputResponses ?? {};
      const taken = await deps.tasks.provideInput(params.taskId, gate(ctx), responses);
      if (taken === null) throw taskNotFound();
      return { resultType: 'complete' } as never;
    });

    return server;
  };
}
