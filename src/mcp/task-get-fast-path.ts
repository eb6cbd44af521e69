/**
 * `tasks/get` answered before the SDK's per-request server is built: the hottest request of a
 * waiting task (docs/DESIGN.md §4.5 Reads). A client honouring `pollIntervalMs` sends mostly these,
 * and once the task's state comes from the task feed without a Temporal call, most of what a read
 * costs is the SDK building a `Server` for the one request, validating it against the era's codec,
 * dispatching and serialising (bench/perf-notes.md §Reads). This path serves exactly the well-formed
 * request and nothing else:
 *
 * - one JSON-RPC request object, `jsonrpc: "2.0"`, a string or number `id`, method `tasks/get`;
 * - `params` holding only `taskId` (a string) and `_meta`, whose envelope names protocol
 *   `2026-07-28`, declares the tasks extension and carries no MRTR fields;
 * - `Content-Type: application/json` (the SDK answers anything else 415, so this path must too:
 *   it hands such a request on);
 * - the routing headers agreeing: `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method: tasks/get`,
 *   `Mcp-Name` equal to `params.taskId` (the tasks extension's routing header).
 *
 * Anything else — a missing or disagreeing header, another key, a wrong type, a missing capability
 * — returns `null` and goes to the SDK, which answers it as before (-32020, -32021, -32602 in the
 * documented forms). For the request it serves, the answer is the one the SDK path gives: the same
 * `TaskService.get`, the same poll limit, the same projection (`getTaskResult`) with the SDK's
 * `serverInfo` stamp in `result._meta`, the same errors (`errors.ts`); `test/e2e/task-get-fast-path.test.ts`
 * reads the same tasks through both and compares.
 */
import { SERVER_INFO_META_KEY } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { TemporalUnavailableError } from '../temporal/availability.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { internalError, protocolErrorResponse, readRefused, taskNotFound, temporalUnavailable } from './errors.js';
import type { PollRateLimiter } from './poll-interval.js';
import { getTaskResult } from './task-projection.js';
import { isJsonObject, memberAt } from './narrow.js';
import type { TaskService } from './task-service.js';
import type { ClientIdentity } from '../backends/approval-backend.js';
import { clientOfEnvelope } from './client-identity.js';
import type { FollowerReporter } from './follower-reports.js';

const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
const MODERN_REVISION = '2026-07-28';
/** `_meta` keys of the request envelope this path accepts (anything else goes to the SDK). */
const ENVELOPE_KEYS: ReadonlySet<string> = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  'io.modelcontextprotocol/clientInfo',
  'io.modelcontextprotocol/logLevel',
  'traceparent',
  'tracestate',
  'baggage',
]);

/** What the fast path needs: the task service, the poll limit (when on), the server's identity and a logger. */
export interface TaskGetFastPathOptions {
  tasks: TaskService;
  pollLimiter?: PollRateLimiter;
  /** Stamped in `result._meta` as the SDK stamps every modern result. */
  serverInfo: { name: string; version: string };
  logger: Logger;
  /** This instance's follower reports (`follower-reports.ts`); absent: none. */
  followers?: FollowerReporter;
}

/** A served request's parts. */
interface CleanTaskGet {
  id: string | number;
  taskId: string;
  /** The envelope's `clientInfo`, bounded and escaped. */
  client: ClientIdentity | undefined;
}

/**
 * Build the fast path: `(body, caller, request)` answers a clean `tasks/get` (module header) with
 * its JSON-RPC response, or returns `null` for the SDK to answer.
 */
export function createTaskGetFastPath(
  opts: TaskGetFastPathOptions,
): (body: unknown, caller: Principal, request: Request) => Promise<Response | null> {
  return async (body, caller, request) => {
    const clean = cleanTaskGet(body, request.headers);
    if (!clean) return null;
    try {
      const owner = taskOwnerKeyOf(caller);
      const refused = opts.pollLimiter?.check(owner, clean.taskId);
      if (refused) return protocolErrorResponse(429, clean.id, readRefused(refused));
      const snap = await opts.tasks.get(clean.taskId, caller);
      if (!snap) {
        opts.pollLimiter?.missed(owner);
        return protocolErrorResponse(200, clean.id, taskNotFound());
      }
      opts.followers?.read(clean.taskId, snap, clean.client);
      const result = getTaskResult(clean.taskId, snap);
      const meta = { ...(isJsonObject(result._meta) ? result._meta : {}), [SERVER_INFO_META_KEY]: opts.serverInfo };
      return json(200, { result: { ...result, _meta: meta }, jsonrpc: '2.0', id: clean.id });
    } catch (err) {
      if (err instanceof TemporalUnavailableError) {
        opts.logger.warn({ reason: err.reason, ...(err.detail ? { detail: err.detail } : {}) }, 'Temporal unavailable; answered retryable');
        return protocolErrorResponse(503, clean.id, temporalUnavailable(err.retryAfterSeconds));
      }
      opts.logger.error({ err: err instanceof Error ? err.name : typeof err }, 'request failed');
      return protocolErrorResponse(200, clean.id, internalError());
    }
  };
}

/** The request's id and task id when it is a clean `tasks/get` (module header), else null. */
function cleanTaskGet(body: unknown, headers: Headers): CleanTaskGet | null {
  if (!isJsonObject(body) || body.jsonrpc !== '2.0' || body.method !== 'tasks/get') return null;
  const id = body.id;
  if (typeof id !== 'string' && typeof id !== 'number') return null;
  if (Object.keys(body).some((k) => k !== 'jsonrpc' && k !== 'id' && k !== 'method' && k !== 'params')) return null;
  const params = body.params;
  if (!isJsonObject(params) || typeof params.taskId !== 'string') return null;
  if (Object.keys(params).some((k) => k !== 'taskId' && k !== '_meta')) return null;
  const envelope = params._meta;
  if (!isJsonObject(envelope) || envelope[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION) return null;
  if (Object.keys(envelope).some((k) => !ENVELOPE_KEYS.has(k))) return null;
  if (!isJsonObject(memberAt(envelope, CLIENT_CAPABILITIES_META_KEY, 'extensions', TASKS_EXTENSION))) return null;
  if (!isJsonMediaType(headers.get('content-type'))) return null;
  if (headers.get('mcp-protocol-version') !== MODERN_REVISION || headers.get('mcp-method') !== 'tasks/get') return null;
  if (headers.get('mcp-name') !== params.taskId) return null;
  return { id, taskId: params.taskId, client: clientOfEnvelope(envelope) };
}

/** Whether a Content-Type header names `application/json` (parameters such as `charset` allowed, case-insensitive). */
function isJsonMediaType(contentType: string | null): boolean {
  return contentType !== null && contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}
