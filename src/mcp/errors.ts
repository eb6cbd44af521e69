/**
 * The JSON-RPC errors the MCP front returns, built in this one module; local error classes (e.g.
 * `TaskCreationPendingError`) never cross the wire and are mapped to one of these by their caller
 * (docs/DESIGN.md §7).
 * Security failures are opaque: an unknown, expired, malformed or foreign task id (any string) all
 * produce the same -32602 with the same message (SEP-2848 §Security, task access control).
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import { TemporalUnavailableError } from '../temporal/availability.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { memberAt } from './narrow.js';

/** -32602 for any task the caller may not see. One message for every cause: no oracle. */
export function taskNotFound(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: unknown task');
}

/**
 * -32602 for `tools/call` arguments holding a string or member name that is not well-formed Unicode
 * (a lone surrogate, `"\ud800"`): `path` is where, e.g. `$.params.arguments.memo`; `data: {path}`,
 * as for the other refusals of the body (`src/mcp/http.ts`). JSON-RPC 2.0 §5.1 (-32602 Invalid params).
 */
export function illFormedArguments(path: string): ProtocolError {
  return new ProtocolError(-32602, `Invalid params: string at ${path} is not well-formed Unicode (lone surrogate)`, { path });
}

/**
 * -32602 for an MRTR answer (`inputResponses`) whose accepted content does not match the form it
 * answers (an unknown field, a value outside the form); `issues` lists paths (starting with the
 * input key) and messages only. Nothing is run or recorded.
 */
export function invalidInputResponse(issues: Array<{ path: string; message: string }>): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: inputResponses do not match the requested form', { issues });
}

/** One reason a request was refused: a JSON path (`$.params.cursor`) and what was expected there, never the value sent. */
export interface ParamsIssue {
  path: string;
  message: string;
}

/**
 * -32602 for a spec-method request whose params fail the served era's wire schema (`spec-params.ts`):
 * message `Invalid params for <method>: <path>: <expected>` (first issue, `(+N more)` when there are
 * more), `data: {issues}` with every reported issue. JSON-RPC 2.0 §5.1 (-32602 Invalid params).
 */
export function invalidRequestParams(method: string, issues: ParamsIssue[]): ProtocolError {
  const [first] = issues;
  const more = issues.length > 1 ? ` (+${issues.length - 1} more)` : '';
  const detail = first ? `: ${first.path}: ${first.message}${more}` : '';
  return new ProtocolError(-32602, `Invalid params for ${method}${detail}`, { issues });
}

/** -32602 for an unknown tool name. */
export function unknownTool(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: unknown tool');
}

/** -32602 for a refused `tasks/update`: `reason` is one of the fixed texts of the task service. */
export function inputRefused(reason: string): ProtocolError {
  return new ProtocolError(-32602, `Invalid params: ${reason}`);
}

/**
 * -32603 when the approval task was not confirmed within the creation wait (a busy worker, a slow
 * or unreachable approval backend). Retryable, HTTP 503 with `Retry-After` (`src/mcp/http.ts`).
 * `data`: `{retryable: true, retryAfterSeconds, taskStarted, retryJoins: true}` — `taskStarted`
 * is `true` when the approval workflow is durably started (the task exists and is submitting its
 * request; the retry answers its `CreateTaskResult`), `false` when this call started nothing, `null`
 * when the start was in flight. Whatever it says, the same call repeated joins the task if one
 * exists and never opens a second (workflow id keyed on the call binding; SEP-2848 §At-most-once
 * and deduplication), and uses no submission budget for it. docs/DESIGN.md §3.1.
 */
export function taskCreationPending(progress: 'started' | 'unknown' | 'not-started'): ProtocolError {
  const started = progress === 'started';
  return new ProtocolError(
    -32603,
    started
      ? 'Internal error: the approval task exists and its request is still being submitted; retry the same call to receive the task'
      : 'Internal error: the approval task could not be confirmed in time; retry the same call (it joins the task if one was started)',
    {
      retryable: true,
      retryAfterSeconds: started ? 1 : 2,
      taskStarted: started ? true : progress === 'not-started' ? false : null,
      retryJoins: true,
    },
  );
}

/** -32021: the call needs the tasks extension and the client did not declare it (SEP-2848, -32003 renumbered). */
export function missingTasksCapability(): ProtocolError {
  return new ProtocolError(-32021, `Missing required client capability: ${TASKS_EXTENSION}`, {
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });
}

/** -32602: an MRTR retry whose tool or arguments differ from the call that minted its requestState. */
export function requestStateMismatch(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: the retry does not match the original call (tool, arguments or caller differ)');
}

/** -32602: too many `input_required` rounds for one call. */
export function inputRoundsExhausted(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: too many input rounds for this call; start again with a new call');
}

/**
 * -32603 when Temporal (or a worker) did not answer in time or the front's circuit is open
 * (`src/temporal/availability.ts`). Retryable: `data.retryAfterSeconds` says when; nothing was
 * changed. The HTTP layer answers it with status 503 and the same `Retry-After` (`src/mcp/http.ts`).
 */
export function temporalUnavailable(retryAfterSeconds: number): ProtocolError {
  return new ProtocolError(
    -32603,
    `Service unavailable: the task store did not answer; nothing was changed; retry after ${retryAfterSeconds} s`,
    {
      retryable: true,
      retryAfterSeconds,
    },
  );
}

/**
 * -32000 for a `tasks/get` polled much faster than its `pollIntervalMs` (SEP-2663: servers MAY
 * rate-limit such clients; `poll-interval.ts` `PollRateLimiter`): HTTP 429 with `Retry-After`
 * (`src/mcp/http.ts`), `data: {rateLimited: true, retryAfterMs}`. Nothing was read.
 */
export function pollTooSoon(retryAfterMs: number): ProtocolError {
  return new ProtocolError(
    -32000,
    `Too many requests: this task was polled too often; poll it again after ${retryAfterMs} ms (see pollIntervalMs)`,
    {
      rateLimited: true,
      retryAfterMs,
    },
  );
}

/**
 * -32000 for a `tasks/get` from a caller whose reads were answered "unknown task" too often
 * (`poll-interval.ts` `PollRateLimiter.admit`): HTTP 429 with `Retry-After`, `data: {rateLimited:
 * true, retryAfterMs, scope: "unknown-tasks"}`. Nothing was read.
 */
export function unknownTasksTooOften(retryAfterMs: number): ProtocolError {
  return new ProtocolError(
    -32000,
    `Too many requests: too many reads of task ids that are not this caller's tasks; try again after ${retryAfterMs} ms`,
    { rateLimited: true, retryAfterMs, scope: 'unknown-tasks' },
  );
}

/** The -32000 refusal for a read the poll limits refused (`PollRateLimiter.check`): {@link unknownTasksTooOften} or {@link pollTooSoon}. */
export function readRefused(refused: { scope: 'unknown-tasks' | 'task'; retryAfterMs: number }): ProtocolError {
  return refused.scope === 'unknown-tasks' ? unknownTasksTooOften(refused.retryAfterMs) : pollTooSoon(refused.retryAfterMs);
}

/**
 * -32000 for a `subscriptions/listen` over a stream limit (`task-subscriptions.ts`): `scope`
 * `principal` (the caller's open streams) or `instance` (this server's); HTTP 429 with
 * `Retry-After`, `data: {rateLimited: true, retryAfterMs, scope, limit}`. Nothing was opened.
 */
export function tooManySubscriptions(scope: 'principal' | 'instance', limit: number): ProtocolError {
  return new ProtocolError(
    -32000,
    scope === 'principal'
      ? `Too many requests: at most ${limit} subscriptions/listen streams may be open per caller; close one, or poll tasks/get`
      : `Too many requests: this server holds its most subscriptions/listen streams (${limit}); retry later, or poll tasks/get`,
    { rateLimited: true, retryAfterMs: 30_000, scope, limit },
  );
}

/** -32603 for any failure that is not one of ours; details stay in the server log. */
export function internalError(): ProtocolError {
  return new ProtocolError(-32603, 'Internal error');
}

/**
 * Run a request handler so that only our own JSON-RPC errors reach the wire: a
 * `TemporalUnavailableError` becomes {@link temporalUnavailable} (retryable, HTTP 503); anything
 * else that is not a `ProtocolError` (a Temporal RPC failure, a bug) is logged by name and answered
 * -32603 "Internal error", never with its message or code (a gRPC status is not a JSON-RPC code).
 * Used by both faces of `/mcp` (`server.ts`, `legacy-server.ts`).
 */
export async function opaque<T>(logger: Logger, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    if (err instanceof TemporalUnavailableError) {
      logger.warn({ reason: err.reason, ...(err.detail ? { detail: err.detail } : {}) }, 'Temporal unavailable; answered retryable');
      throw temporalUnavailable(err.retryAfterSeconds);
    }
    logger.error(
      {
        err: memberAt(err, 'name'),
        code: memberAt(err, 'code'),
        cause: memberAt(err, 'cause', 'name'),
        causeCode: memberAt(err, 'cause', 'code'),
      },
      'request failed',
    );
    throw internalError();
  }
}

/** Longest error message answered, in characters (SDK messages quote request values: a method name, a header). */
export const MAX_ERROR_MESSAGE_CHARS = 500;
/** Longest string in an error's `data`, in characters (echoed request values: a header, a method, a member name). */
export const MAX_ERROR_DATA_CHARS = 200;

/**
 * A JSON-RPC error object whose strings are bounded: `message` cut at
 * {@link MAX_ERROR_MESSAGE_CHARS}, every string in `data` (values and member names, at any depth)
 * at {@link MAX_ERROR_DATA_CHARS}, each cut one ending `…(N characters left out)`. An error may quote
 * what the request sent, but never at the request's size: a 1 MB method name is not answered twice
 * over. Unchanged (the same object) when nothing is too long.
 */
export function boundedError<E extends { code: number; message: string; data?: unknown }>(error: E): E {
  const message = cut(error.message, MAX_ERROR_MESSAGE_CHARS);
  const data = error.data === undefined ? undefined : boundStrings(error.data, MAX_ERROR_DATA_CHARS);
  if (message === error.message && data === error.data) return error;
  return { ...error, message, ...(data === undefined ? {} : { data }) };
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length - max} characters left out)`;
}

function boundStrings(value: unknown, max: number): unknown {
  if (typeof value === 'string') return cut(value, max);
  if (Array.isArray(value)) {
    const items = value.map((v) => boundStrings(v, max));
    return items.every((v, i) => v === value[i]) ? value : items;
  }
  if (value === null || typeof value !== 'object') return value;
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = cut(k, max);
    const bounded = boundStrings(v, max);
    if (key !== k || bounded !== v) changed = true;
    out[key] = bounded;
  }
  return changed ? out : value;
}

/**
 * A JSON-RPC error answered at the HTTP layer, before the SDK sees the request (`http.ts`: body
 * limits, JSON limits, unknown paths under the endpoint, a thrown error): `{jsonrpc, error: {code,
 * message, data?}, id}` as `application/json` with `status` and `cache-control: no-store` (plus
 * `headers`), its strings bounded ({@link boundedError}). `id` is the request's when known.
 */
export function jsonRpcErrorResponse(
  status: number,
  code: number,
  message: string,
  data?: unknown,
  id: string | number | null = null,
  headers: Record<string, string> = {},
): Response {
  const error = boundedError(data === undefined ? { code, message } : { code, message, data });
  return new Response(JSON.stringify({ jsonrpc: '2.0', error, id }), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  });
}

/**
 * One of this module's errors answered outside the SDK (the `tasks/get` fast path,
 * `subscriptions/listen`), as {@link jsonRpcErrorResponse}, with `Retry-After` (whole seconds, at
 * least 1) from its data on a 429 (`data.retryAfterMs`) or a 503 (`data.retryAfterSeconds`).
 */
export function protocolErrorResponse(
  status: number,
  id: string | number,
  err: { code: number; message: string; data?: unknown },
): Response {
  const retryAfterMs = memberAt(err.data, 'retryAfterMs');
  const retryAfterSeconds = memberAt(err.data, 'retryAfterSeconds');
  const headers: Record<string, string> = {};
  if (status === 429 && typeof retryAfterMs === 'number') headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
  if (status === 503 && typeof retryAfterSeconds === 'number') headers['retry-after'] = String(retryAfterSeconds);
  return jsonRpcErrorResponse(status, err.code, err.message, err.data, id, headers);
}

// --- the 2025-11-25 face only (`legacy-server.ts`) ---

/** -32602 for `tasks/cancel` of a task already in a terminal status (2025-11-25 tasks utility). */
export function taskAlreadyTerminal(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: cannot cancel a task in a terminal status');
}

/** -32602 for `tasks/result` of a cancelled task: it has no result. */
export function cancelledTaskHasNoResult(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: the task was cancelled and has no result');
}

/** A failed task's own error (`code`, `message` as the workflow recorded them), for `tasks/result`. */
export function failedTaskError(error: { code?: number; message?: string } | undefined): ProtocolError {
  return new ProtocolError(error?.code ?? -32603, error?.message ?? 'Internal error');
}

/** -32603, retryable: `tasks/result` gave up waiting (or was cancelled) before the task ended. */
export function resultNotReady(): ProtocolError {
  return new ProtocolError(-32603, 'Internal error: the task has not finished yet; call tasks/result again or poll tasks/get', {
    retryable: true,
  });
}

/**
 * -32601 for a task-augmented call of a tool whose `execution.taskSupport` is `forbidden` (the
 * companion tools `approval_status` / `approval_cancel`; 2025-11-25 tools, tool-level negotiation).
 */
export function taskForbiddenForTool(): ProtocolError {
  return new ProtocolError(-32601, 'Method not found: this tool cannot be called as a task; call it without params.task');
}

/**
 * -32600 for a `tools/call` without `params.task` that can only go through an approval, under
 * `COUNTERSIGN_NO_TASKS_RESPONSE=error` (2025-11-25 tasks utility, error handling: a receiver that
 * requires task augmentation MAY answer -32600). Nothing was opened.
 */
export function taskAugmentationRequired(): ProtocolError {
  return new ProtocolError(
    -32600,
    'Invalid request: task augmentation required for this tools/call (send params.task); the tool did not run',
  );
}
