/**
 * The 2025-11-25 face of `/mcp` (docs/CLIENTS.md, MCP 2025-11-25): the server a client gets when it opens with
 * `initialize` instead of the 2026-07-28 per-request envelope. Served stateless by the SDK's
 * legacy fallback (`createMcpHandler(..., {legacy: 'stateless'})` in `http.ts`): one fresh
 * `Server` per HTTP request, no `Mcp-Session-Id`, so any instance answers any request, exactly
 * like the modern face.
 *
 * Same tool set, same bearer principal, same call binding, Cedar gate and approval workflows
 * (`gate.ts`, `task-service.ts`). What differs is only the wire shape of approvals, the 2025-11-25
 * tasks utility (spec 2025-11-25 basic/utilities/tasks):
 * - `initialize` advertises `capabilities.tasks` (`cancel`, `requests.tools.call`) and no
 *   `extensions`: the 2026-07-28 tasks and tool-approval extensions are not usable on this wire;
 * - `tools/list` marks every tool `execution.taskSupport: "optional"` (any call may be gated);
 * - a task-augmented `tools/call` (`params.task: {ttl?}`) whose call is denied but requestable
 *   starts or joins the approval workflow and returns `CreateTaskResult` `{task: Task}`; one that
 *   needs no approval (allowed: runs inline; or denied for good) returns an already `completed`
 *   task whose result is sealed into its id (`legacy-inline-task.ts`);
 * - `tasks/get` → `Task`; `tasks/result` blocks until the task is terminal (at most
 *   `RESULT_WAIT_LIMIT_MS`, then a retryable -32603), then returns the final `CallToolResult`
 *   (approved-executed content or the denial); `tasks/cancel` → `Task`;
 * - an unknown, expired, malformed or foreign task id is the same -32602 (`errors.ts`).
 * A requestable denial without `params.task` gets what `COUNTERSIGN_NO_TASKS_RESPONSE` says for a
 * client without tasks on the 2026-07-28 face: by default (`approval-tools`) the gate opens or
 * joins the same approval (same workflow, dedup and submission limits) and answers with the
 * plain tier's `isError` result carrying the approval id (`approval-tools.ts`), whose text also
 * names `params.task` for clients that can do 2025-11-25 tasks; `approval_status` and
 * `approval_cancel` are then listed (task support `forbidden`) and bound to the caller as there.
 * `degraded-result` answers an `isError` result saying how to ask for a task and opens nothing;
 * `error` opens nothing and answers -32600 "task augmentation required" (the 2025-11-25 tasks
 * utility's error for a receiver that requires task augmentation; -32021 belongs to the 2026-07-28
 * tasks extension).
 *
 * Deliberately does not: implement `tasks/list` (not advertised), send
 * `notifications/tasks/status` (stateless, nothing to push on), or accept MRTR input: a policy
 * needing a justification answers with an `isError` result pointing at a 2026-07-28 client.
 */
import {
  isInputRequiredResult,
  specTypeSchemas,
  type CallToolRequest,
  type CallToolResult,
  type CreateTaskResult as LegacyCreateTaskResult,
  type ListToolsResult,
  type McpServerFactory,
  type Server,
  type ServerContext,
  type Task as LegacyTask,
  type Tool,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { META, type TaskSnapshot } from '../../workflows/types.js';
import {
  cancelledTaskHasNoResult,
  failedTaskError,
  opaque,
  resultNotReady,
  taskAlreadyTerminal,
  taskAugmentationRequired,
  taskForbiddenForTool,
  taskNotFound,
} from './errors.js';
import { approvalToolDescriptors, callApprovalTool, getDecliningUnanswerableInput, isApprovalTool } from './approval-tools.js';
import { gateToolCall, isTaskAnswer, type GateCall, type GateDeps } from './gate.js';
import { createInlineTaskSealer, INLINE_TASK_MAX_RESULT_CHARS, type InlineTask, type InlineTaskSealer } from './legacy-inline-task.js';
import { isRecord } from './narrow.js';
import { principalOf } from './request-context.js';
import { listedTool, toolsCallAnswer } from './sdk-gaps.js';
import { SpecParamsServer } from './spec-params.js';
import { statusMessage } from './status-text.js';
import type { CreateTaskResult } from './wire-results.js';

/** `_meta` key relating a message to a task (2025-11-25 tasks utility). */
export const RELATED_TASK_META = 'io.modelcontextprotocol/related-task';

/** `capabilities.tasks` announced in `initialize` (2025-11-25 tasks utility, capabilities). */
export const LEGACY_TASKS_CAPABILITY = { cancel: {}, requests: { tools: { call: {} } } } as const;

const TaskIdParams = z.looseObject({ taskId: z.string() });

/** Registrations of the tasks methods: the params, and the 2025-11-25 result type (the SDK's; types only, not validated). */
const TASKS_GET = { params: TaskIdParams, result: specTypeSchemas.GetTaskResult };
const TASKS_RESULT = { params: TaskIdParams, result: specTypeSchemas.GetTaskPayloadResult };
const TASKS_CANCEL = { params: TaskIdParams, result: specTypeSchemas.CancelTaskResult };

/** No MRTR on this wire: a justification or confirmation request is turned into an `isError` result (`needsInputResult`). */
const NO_MRTR: GateCall['mrtr'] = { state: undefined, inputResponses: undefined, mint: async () => '' };

const isTerminal = (s: TaskSnapshot): boolean => s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled';

/**
 * A snapshot as the 2025-11-25 `Task`: `ttl` and `pollInterval` in milliseconds (`ttl` null:
 * unlimited), `statusMessage` from the fixed templates of `status-text.ts`.
 */
export function legacyTask(taskId: string, s: TaskSnapshot): LegacyTask {
  return {
    taskId,
    status: s.status,
    statusMessage: statusMessage(s),
    createdAt: s.createdAt,
    lastUpdatedAt: s.lastUpdatedAt,
    ttl: s.ttlMs,
    ...(isTerminal(s) ? {} : { pollInterval: s.pollIntervalMs }),
  };
}

/** A SEP-2663 task (`task-projection.ts`: `ttlMs`, `pollIntervalMs`) as the 2025-11-25 `Task` (`ttl`, `pollInterval`). */
function fromModernTask(t: CreateTaskResult): LegacyTask {
  return {
    taskId: t.taskId,
    status: t.status,
    statusMessage: t.statusMessage,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttl: t.ttlMs,
    ...(t.pollIntervalMs !== undefined ? { pollInterval: t.pollIntervalMs } : {}),
  };
}

/** `result` (a `CallToolResult`) tagged with the related task in its `_meta` (2025-11-25 `tasks/result`). */
function withRelatedTask(result: Record<string, unknown>, taskId: string): Record<string, unknown> {
  const meta = isRecord(result._meta) ? result._meta : {};
  return { ...result, _meta: { ...meta, [RELATED_TASK_META]: { taskId } } };
}

/**
 * The `tasks/result` payload of a terminal snapshot: the final `CallToolResult` of a completed
 * task (approved-executed content, a denial, an execution error or outcome-unknown, with its
 * disposition in `_meta`), tagged with the related task. Throws `ProtocolError`: a failed task's
 * own error; a cancelled one -32602 (it has no result).
 */
export function legacyTaskPayload(taskId: string, s: TaskSnapshot): Record<string, unknown> {
  if (s.status === 'completed' && s.result) return withRelatedTask({ ...s.result }, taskId);
  if (s.status === 'failed') throw failedTaskError(s.error);
  throw cancelledTaskHasNoResult();
}

/** An opened inline task as the 2025-11-25 `Task`. */
function inlineLegacyTask(taskId: string, t: InlineTask): LegacyTask {
  return {
    taskId,
    status: 'completed',
    statusMessage: 'Completed: answered without an approval; read the result with tasks/result.',
    createdAt: t.createdAt,
    lastUpdatedAt: t.createdAt,
    ttl: t.ttlMs,
  };
}

/**
 * Longest a `tasks/result` waits for a task to end (ms). The spec has it block until the end, but
 * an approval can take days and the HTTP request is not held that long: past this the call answers
 * `resultNotReady` and the client asks again (the task is unaffected).
 */
export const RESULT_WAIT_LIMIT_MS = 5 * 60 * 1000;

/**
 * Appended to the plain tier's answer (`approvalOpenedResult`) while the approval is pending: the
 * 2025-11-25 way to follow the same approval (a task-augmented call joins it through the dedup).
 */
const TASK_ALTERNATIVE_TEXT =
  'A client that supports MCP 2025-11-25 tasks can instead make this same call with task augmentation ' +
  '(params.task, e.g. {"ttl": 86400000}): it joins this approval, to be followed with tasks/get and tasks/result.';

/** Text for a requestable denial of a call that did not ask for a task (`degraded-result`, `error`): nothing was opened. */
const NO_TASK_TEXT =
  'This call can be approved out of band, but only through a task: call the tool again with task augmentation ' +
  '(params.task, e.g. {"ttl": 86400000}), then poll tasks/get and read tasks/result with the returned taskId. ' +
  'The tool did not run and no approval was requested.';

/** The answer when the approval needs input (a justification, a confirmation) this wire cannot carry (a fresh object per call). */
function needsInputResult(): CallToolResult {
  return {
    content: [
      {
        type: 'text',
        text:
          'Not executed: this call needs input first (a justification, or your own confirmation), which a 2025-11-25 client cannot supply. ' +
          'Use a client that speaks MCP 2026-07-28 with the io.modelcontextprotocol/tasks extension. The tool did not run.',
      },
    ],
    isError: true,
  };
}

type Handler = Parameters<Server['_wrapHandler']>[1];

/**
 * `Server` whose `tools/call` may answer a task-augmented request with `CreateTaskResult`
 * (2025-11-25 tasks utility): the SDK 2.4 wraps every `tools/call` handler in a `CallToolResult`
 * check, which refuses `{task}`; such a result is handed past that check unchanged, every other
 * result still goes through it. Params failing the 2025-11-25 wire schema answer -32602 (`spec-params.ts`).
 */
class LegacyTaskServer extends SpecParamsServer {
  protected override _wrapHandler(method: string, handler: Handler): Handler {
    if (method !== 'tools/call') return super._wrapHandler(method, handler);
    return async (request, ctx) => {
      let created: Awaited<ReturnType<Handler>> | undefined;
      const inner: Handler = async (r, c) => {
        const out = await handler(r, c);
        if (out && typeof out === 'object' && 'task' in out && !('content' in out)) {
          created = out;
          return { content: [] };
        }
        return out;
      };
      const checked = await super._wrapHandler(method, inner)(request, ctx);
      return created ?? checked;
    };
  }
}

/** The plain tier's answer with `TASK_ALTERNATIVE_TEXT` added to its text while the approval is pending (`next` set). */
function withTaskAlternative(out: CallToolResult): CallToolResult {
  const pending = isRecord(out.structuredContent) && out.structuredContent.next !== undefined;
  const [first, ...rest] = out.content;
  if (!pending || first?.type !== 'text') return out;
  return { ...out, content: [{ ...first, text: `${first.text} ${TASK_ALTERNATIVE_TEXT}` }, ...rest] };
}

/** Whether `result` is a requestable denial (`isError` with the SEP-2643 envelope at `remediation: "available"`). */
function isRequestableDenial(result: CallToolResult): boolean {
  const envelope = result._meta?.[META.authorization];
  return result.isError === true && isRecord(envelope) && envelope.remediation === 'available';
}

/** Resolves after `ms`, or early when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

/** A tool descriptor with the 2025-11-25 `execution.taskSupport` the face announces for it. */
function withTaskSupport(tool: Tool, taskSupport: 'optional' | 'forbidden'): Tool {
  return { ...tool, execution: { taskSupport } };
}

/** What the 2025-11-25 face's handlers share: the gate's dependencies, as given and as the gate gets them here, and the inline task sealer. */
interface LegacyFace {
  deps: GateDeps;
  /** The gate's `error` is -32021, a 2026-07-28 code: here the gate answers `degraded-result` and that answer becomes -32600 (`legacyToolsCall`). */
  gateDeps: GateDeps;
  inline: InlineTaskSealer;
  /** Whether the companion tools are served (`noTasksResponse: approval-tools`). */
  approvalTools: boolean;
}

/**
 * Build the per-request factory of the 2025-11-25 face over the same gate dependencies as the
 * modern one (`createMcpServerFactory` in `server.ts`). `sealKey` (the installation's `dedupKey`)
 * keys the inline task ids; `version` is reported in `serverInfo`. Every handler but `tools/list`
 * answers unexpected failures opaquely (`opaque`, `errors.ts`).
 */
export function createLegacyServerFactory(deps: GateDeps & { sealKey: string }, version = '0.1.0'): McpServerFactory {
  const gateDeps: GateDeps = { ...deps, noTasksResponse: deps.noTasksResponse === 'error' ? 'degraded-result' : deps.noTasksResponse };
  const face: LegacyFace = {
    deps,
    gateDeps,
    inline: createInlineTaskSealer(deps.sealKey),
    approvalTools: gateDeps.noTasksResponse === 'approval-tools',
  };
  const { logger } = deps;
  return () => {
    const server = new LegacyTaskServer({ name: 'countersign', version }, { capabilities: { tools: {}, tasks: LEGACY_TASKS_CAPABILITY } });
    server.setRequestHandler('tools/list', async () => legacyListTools(face));
    server.setRequestHandler('tools/call', async (req, ctx) =>
      opaque(logger, async () => toolsCallAnswer(await legacyToolsCall(face, req.params, ctx))),
    );
    server.setRequestHandler('tasks/get', TASKS_GET, async (params, ctx) => opaque(logger, () => legacyGetTask(face, params.taskId, ctx)));
    server.setRequestHandler('tasks/result', TASKS_RESULT, async (params, ctx) =>
      opaque(logger, () => legacyTaskResult(face, params.taskId, ctx)),
    );
    server.setRequestHandler('tasks/cancel', TASKS_CANCEL, async (params, ctx) =>
      opaque(logger, () => legacyCancelTask(face, params.taskId, ctx)),
    );
    return server;
  };
}

/** `tools/list`: every tool may be called as a task; the companion tools (when served) never are. */
function legacyListTools({ deps, approvalTools }: LegacyFace): ListToolsResult {
  return {
    tools: [
      ...deps.tools.list().map((t) => withTaskSupport(listedTool(deps.tools.descriptor(t.name)), 'optional')),
      // the companion tools only read or withdraw an approval: never run as a task
      ...(approvalTools ? approvalToolDescriptors().map((d) => withTaskSupport(d, 'forbidden')) : []),
    ],
  };
}

/** `tasks/get`: an inline task, or the caller's approval task (declining input it cannot answer); -32602 when unknown. */
async function legacyGetTask({ deps, inline }: LegacyFace, taskId: string, ctx: ServerContext): Promise<LegacyTask> {
  const done = inline.open(taskId, principalOf(ctx));
  if (done) return inlineLegacyTask(taskId, done);
  const snap = await getDecliningUnanswerableInput(deps.tasks, taskId, principalOf(ctx));
  if (!snap) throw taskNotFound();
  // a 2025-11-25 client names itself only in `initialize`, which a stateless request does not carry
  deps.followers?.read(taskId, snap, undefined);
  return legacyTask(taskId, snap);
}

/**
 * `tasks/result`: blocks until the task is terminal (the client calls it after seeing `completed`,
 * or earlier to wait), each pause the task's own poll interval, at most `RESULT_WAIT_LIMIT_MS`
 * (then -32603 retryable, `resultNotReady`); then its payload (`legacyTaskPayload`).
 */
async function legacyTaskResult({ deps, inline }: LegacyFace, taskId: string, ctx: ServerContext): Promise<Record<string, unknown>> {
  const done = inline.open(taskId, principalOf(ctx));
  if (done) return withRelatedTask(done.result, taskId);
  const signal = ctx.mcpReq.signal;
  const giveUpAt = Date.now() + RESULT_WAIT_LIMIT_MS;
  for (;;) {
    const snap = await getDecliningUnanswerableInput(deps.tasks, taskId, principalOf(ctx));
    if (!snap) throw taskNotFound();
    if (isTerminal(snap)) return legacyTaskPayload(taskId, snap);
    if (signal.aborted || Date.now() > giveUpAt) throw resultNotReady();
    await pause(snap.pollIntervalMs, signal);
  }
}

/** `tasks/cancel`: the task after the cancel; -32602 for an inline or already terminal task (2025-11-25) and an unknown one. */
async function legacyCancelTask({ deps, inline }: LegacyFace, taskId: string, ctx: ServerContext): Promise<LegacyTask> {
  const caller = principalOf(ctx);
  if (inline.open(taskId, caller)) throw taskAlreadyTerminal();
  const outcome = await deps.tasks.cancel(taskId, caller);
  if (!outcome) throw taskNotFound();
  deps.logger.info({ outcome }, 'tasks/cancel (2025-11-25)');
  if (outcome === 'already-terminal') throw taskAlreadyTerminal();
  const snap = await deps.tasks.get(taskId, caller);
  if (!snap) throw taskNotFound();
  return legacyTask(taskId, snap);
}

/**
 * `tools/call` on the 2025-11-25 face (module header): the companion tools (never as a task);
 * otherwise the same gate as the modern face, with `params.task` as the client's tasks support.
 * Its answer in this wire's shapes:
 * - a task (`CreateTaskResult`, SEP-2663) → the 2025-11-25 `CreateTaskResult` `{task}` of the same
 *   workflow; `_meta` keeps `model-immediate-response` (a 2025-11-25 key too) and the SEP-2643 envelope;
 * - an MRTR question → `needsInputResult` (this wire has no MRTR);
 * - any other result, for a task-augmented call → a completed inline task carrying it
 *   (`legacy-inline-task.ts`), unless it is too large for a task id: then it is answered directly, as
 *   a receiver that does not take this request as a task does (2025-11-25 tasks: task metadata may
 *   be ignored);
 * - a requestable denial of a call without `params.task` → with the companion tools, the approval
 *   (opened by the gate) and how to follow it as a task instead; otherwise nothing was opened:
 *   -32600 (`error`) or an `isError` result saying how to ask for a task.
 * Throws -32601 for a companion tool called as a task, and whatever the gate throws.
 */
async function legacyToolsCall(
  { deps, gateDeps, inline, approvalTools }: LegacyFace,
  params: CallToolRequest['params'],
  ctx: ServerContext,
): Promise<CallToolResult | LegacyCreateTaskResult> {
  const wantsTask = params.task !== undefined;
  if (approvalTools && isApprovalTool(params.name)) {
    if (wantsTask) throw taskForbiddenForTool();
    return callApprovalTool(deps.tasks, principalOf(ctx), params.name, params.arguments, (taskId, snap) =>
      deps.followers?.read(taskId, snap, undefined),
    );
  }
  const out = await gateToolCall(gateDeps, {
    principal: principalOf(ctx),
    name: params.name,
    arguments: params.arguments,
    clientSupportsTasks: wantsTask,
    mrtr: NO_MRTR,
  });
  if (isTaskAnswer(out)) {
    return { task: fromModernTask(out), ...(out._meta ? { _meta: out._meta } : {}) };
  }
  const final = isInputRequiredResult(out) ? needsInputResult() : out;
  if (wantsTask && JSON.stringify(final).length <= INLINE_TASK_MAX_RESULT_CHARS) {
    const sealed = inline.seal(final, principalOf(ctx), params.task?.ttl);
    return { task: inlineLegacyTask(sealed.taskId, sealed.task) };
  }
  if (final !== out || !isRequestableDenial(final)) return final;
  // approval-tools: the approval is open (approvalOpenedResult); otherwise nothing was opened
  if (approvalTools) return withTaskAlternative(final);
  if (deps.noTasksResponse === 'error') throw taskAugmentationRequired();
  return { ...final, content: [{ type: 'text', text: `Not executed: ${NO_TASK_TEXT}` }] };
}

/**
 * One factory for both eras: `ctx.era === 'legacy'` (an `initialize`-era request, routed by the
 * SDK's stateless legacy fallback) gets `legacy`, everything else `modern`.
 */
export function byEra(modern: McpServerFactory, legacy: McpServerFactory): McpServerFactory {
  return (ctx) => (ctx?.era === 'legacy' ? legacy(ctx) : modern(ctx));
}
