/**
 * `subscriptions/listen` with `notifications.taskIds` (the tasks extension, 2026-07-28, §Task Status
 * Notifications): one Server-Sent Events stream per request on which the caller hears every change
 * of the tasks it named, as `notifications/tasks` carrying the full DetailedTask that `tasks/get`
 * would return at that moment.
 *
 * The SDK's own listen router serves the list-changed filters and drops `taskIds`, so the HTTP
 * layer hands a listen request naming `taskIds` (on 2026-07-28) here instead (`http.ts`). On it:
 * - -32021 when the request does not declare the tasks extension (MUST); -32020 when its
 *   `Mcp-Method` header names another method; -32602 when `taskIds` is not an array of at most
 *   {@link TaskSubscriptionLimits.maxTaskIds} strings;
 * - over a limit — streams open for this caller, or on this instance — -32000 with HTTP 429
 *   (`tooManySubscriptions`); Temporal not answering while the ids are checked: the retryable 503
 *   every task method answers;
 * - otherwise HTTP 200 `text/event-stream`: first `notifications/subscriptions/acknowledged` listing
 *   the ids accepted — only the caller's own, readable tasks; an unknown, expired or foreign id is
 *   left out, and nothing tells which (no oracle) — then one `notifications/tasks` per accepted task
 *   with its current state (so a client that reconnects misses nothing between its last read and
 *   the acknowledgement), then one per change. Each notification's `_meta` carries the subscription
 *   id (the request's JSON-RPC id) besides the task's own `_meta`.
 * - A task that ends is followed no further; when none is left, or on this instance's shutdown, the
 *   stream ends gracefully with the `subscriptions/listen` result (`resultType: "complete"`, the
 *   subscription id and `serverInfo` in `_meta`). A client disconnect stops everything at once.
 *   Comment frames (`: keepalive`) every `keepAliveMs` keep proxies from closing an idle stream.
 *
 * Changes come from the instance's task feed (`task-feed.ts`: one history long-poll per watched
 * run, shared by every stream and every cached read of it): no query, no worker, no billable
 * action; a stream survives a worker restart and any instance serves any task. A client that loses
 * the stream reconnects with a new `subscriptions/listen` (and may read `tasks/get` meanwhile).
 * Deliberately does not: send `notifications/progress` or `notifications/message` on the stream
 * (the extension forbids it), or replay missed changes (the current state is sent instead).
 */
import { SERVER_INFO_META_KEY, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { TemporalUnavailableError } from '../temporal/availability.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import type { TaskSnapshot } from '../../workflows/types.js';
import {
  internalError,
  invalidRequestParams,
  missingTasksCapability,
  protocolErrorResponse,
  temporalUnavailable,
  tooManySubscriptions,
} from './errors.js';
import { isJsonObject, isRecord, memberAt } from './narrow.js';
import { isTerminalStatus } from './task-reads.js';
import { wireTask } from './task-projection.js';
import type { TaskService } from './task-service.js';
import { clientOfEnvelope } from './client-identity.js';
import type { FollowerReporter } from './follower-reports.js';

/** The 2026-07-28 request envelope keys (`_meta`). */
const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';
/** The protocol revision whose `subscriptions/listen` this module serves. */
const MODERN_REVISION = '2026-07-28';
/** Task ids checked at once while a subscription is being opened. */
const CHECK_CONCURRENCY = 8;

/** Limits of the subscriptions one instance serves. */
export interface TaskSubscriptionLimits {
  /** Task ids one `subscriptions/listen` may name; default 100. */
  maxTaskIds: number;
  /** Streams one caller may hold open on this instance; default 16. */
  maxPerPrincipal: number;
  /** Streams this instance holds open; default 2000. */
  maxStreams: number;
  /** Interval of the keep-alive comment frames, ms; default 15,000 (0: none). */
  keepAliveMs: number;
}

/** Defaults of {@link TaskSubscriptionLimits}. */
export const DEFAULT_TASK_SUBSCRIPTION_LIMITS: TaskSubscriptionLimits = {
  maxTaskIds: 100,
  maxPerPrincipal: 16,
  maxStreams: 2000,
  keepAliveMs: 15_000,
};

/** Options of {@link createTaskSubscriptions}. */
export interface TaskSubscriptionOptions {
  tasks: TaskService;
  logger: Logger;
  /** `serverInfo` stamped on the graceful end of a stream. */
  serverInfo: { name: string; version: string };
  limits?: Partial<TaskSubscriptionLimits>;
  /** This instance's follower reports (`follower-reports.ts`): each followed task is reported as subscribed while its stream lasts; absent: none. */
  followers?: FollowerReporter;
}

/** The subscriptions of one instance. */
export interface TaskSubscriptions {
  /**
   * Serve one `subscriptions/listen` request (`message`, already parsed within the JSON limits) of
   * `caller`: the SSE stream, or a JSON-RPC error response (module header). `request` gives the
   * headers and the abort signal of the client's connection.
   */
  serve(message: ListenMessage, caller: Principal, request: Request): Promise<Response>;
  /** End every open stream gracefully (instance shutdown). */
  closeAll(): void;
  /** Streams open now, and the tasks they follow (for metrics and the bench). */
  stats(): { streams: number; followed: number };
}

/** A `subscriptions/listen` request as received. */
export interface ListenMessage {
  jsonrpc: '2.0';
  id: string | number;
  method: 'subscriptions/listen';
  params: { notifications: { taskIds?: unknown }; _meta?: Record<string, unknown> };
}

/**
 * True when `body` is a single 2026-07-28 `subscriptions/listen` request naming `taskIds`, sent
 * with the `MCP-Protocol-Version: 2026-07-28` header: the requests this module serves. Every other
 * listen request is the SDK's, which also answers a missing or disagreeing header (-32020).
 */
export function isTaskListenRequest(body: unknown, headers?: Headers): body is ListenMessage {
  if (headers && headers.get('mcp-protocol-version') !== MODERN_REVISION) return false;
  if (!isJsonObject(body)) return false;
  if (body.method !== 'subscriptions/listen' || (typeof body.id !== 'string' && typeof body.id !== 'number')) return false;
  const notifications = memberAt(body, 'params', 'notifications');
  if (!isRecord(notifications) || !('taskIds' in notifications)) return false;
  // a tasks declaration that is not an object is an invalid envelope: the SDK answers it (-32602), as for every method
  const declared = memberAt(body, 'params', '_meta', CLIENT_CAPABILITIES_META_KEY, 'extensions', TASKS_EXTENSION);
  if (declared !== undefined && !isJsonObject(declared)) return false;
  return memberAt(body, 'params', '_meta', PROTOCOL_VERSION_META_KEY) === MODERN_REVISION;
}

/** Build the subscriptions of one instance (module header). */
export function createTaskSubscriptions(opts: TaskSubscriptionOptions): TaskSubscriptions {
  const limits = { ...DEFAULT_TASK_SUBSCRIPTION_LIMITS, ...opts.limits };
  const open = new Set<Stream>();
  const perPrincipal = new Map<string, number>();

  return {
    async serve(message, caller, request) {
      const id = message.id;
      const header = request.headers.get('mcp-method');
      if (header !== null && header !== message.method) {
        return protocolErrorResponse(400, id, {
          code: -32020,
          message: `Header mismatch: Mcp-Method is ${header}, the body's method is ${message.method}`,
        });
      }
      const declared = memberAt(message.params._meta, CLIENT_CAPABILITIES_META_KEY, 'extensions', TASKS_EXTENSION);
      // HTTP 400, as the SDK answers -32021 on every other method; the other in-band errors 200
      if (declared === undefined) return protocolErrorResponse(400, id, missingTasksCapability());
      const ids = taskIdsOf(message.params.notifications.taskIds, limits.maxTaskIds);
      if ('issue' in ids) return protocolErrorResponse(200, id, invalidRequestParams('subscriptions/listen', [ids.issue]));
      const owner = taskOwnerKeyOf(caller);
      const client = clientOfEnvelope(message.params._meta);
      if ((perPrincipal.get(owner) ?? 0) >= limits.maxPerPrincipal) {
        return protocolErrorResponse(429, id, tooManySubscriptions('principal', limits.maxPerPrincipal));
      }
      if (open.size >= limits.maxStreams) return protocolErrorResponse(429, id, tooManySubscriptions('instance', limits.maxStreams));

      const stream = new Stream(id, opts.serverInfo, limits.keepAliveMs, () => {
        open.delete(stream);
        const n = (perPrincipal.get(owner) ?? 1) - 1;
        if (n > 0) perPrincipal.set(owner, n);
        else perPrincipal.delete(owner);
        for (const f of stream.following.values()) f.stop();
        stream.following.clear();
      });
      // counted before the checks below, so a burst of requests cannot pass the limits while they wait
      open.add(stream);
      perPrincipal.set(owner, (perPrincipal.get(owner) ?? 0) + 1);

      const accepted: Array<{ taskId: string; current: TaskSnapshot }> = [];
      try {
        await eachLimited(ids.taskIds, CHECK_CONCURRENCY, async (taskId) => {
          const f = await opts.tasks.follow(taskId, caller, (snapshot) => stream.taskChanged(taskId, snapshot));
          if (!f) return;
          if (stream.ended) return f.stop();
          accepted.push({ taskId, current: f.current });
          if (isTerminalStatus(f.current.status)) return f.stop();
          const release = opts.followers?.hold(taskId, client, f.current.phase === 'awaiting-approval');
          stream.following.set(taskId, release ? { stop: () => void [f.stop(), release()] } : f);
        });
      } catch (err) {
        stream.end(false);
        if (err instanceof TemporalUnavailableError) return protocolErrorResponse(503, id, temporalUnavailable(err.retryAfterSeconds));
        opts.logger.error({ err: memberAt(err, 'name') }, 'subscriptions/listen: checking the task ids failed');
        return protocolErrorResponse(500, id, internalError());
      }
      // the acknowledgement lists ids in the order the client gave them
      const order = new Map(ids.taskIds.map((t, i) => [t, i]));
      accepted.sort((a, b) => order.get(a.taskId)! - order.get(b.taskId)!);
      const response = stream.start(
        accepted.map((a) => a.taskId),
        accepted,
      );
      const signal = request.signal;
      if (signal.aborted) stream.end(false);
      else signal.addEventListener('abort', () => stream.end(false), { once: true });
      return response;
    },
    closeAll() {
      for (const s of [...open]) s.end(true);
    },
    stats() {
      // counted from the streams: a task that ends leaves its stream's `following` at once
      let followed = 0;
      for (const s of open) followed += s.following.size;
      return { streams: open.size, followed };
    },
  };
}

/** One open stream. */
class Stream {
  readonly following = new Map<string, { stop: () => void }>();
  ended = false;
  /** `end(true)` came before the response existed (instance shutdown while the ids were checked). */
  private endedGracefully = false;
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private readonly encoder = new TextEncoder();
  private keepAlive: ReturnType<typeof setInterval> | undefined;
  /** The last state sent per task (without the interval, which changes with time alone), to drop repeats. */
  private readonly sent = new Map<string, string>();
  /** Changes that arrived while the ids were still being checked, delivered after the current states. */
  private readonly early = new Map<string, TaskSnapshot | null>();

  constructor(
    private readonly id: string | number,
    private readonly serverInfo: { name: string; version: string },
    private readonly keepAliveMs: number,
    private readonly onEnd: () => void,
  ) {}

  /** The response: the acknowledgement of `acceptedIds`, each task's current state, then changes as they come. */
  start(acceptedIds: string[], current: Array<{ taskId: string; current: TaskSnapshot }>): Response {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.controller = controller;
        if (this.ended) {
          // ended while its ids were being checked: the graceful end alone, and the body closes
          if (this.endedGracefully) controller.enqueue(this.encoder.encode(this.frame(this.listenResult())));
          controller.close();
          return;
        }
        this.notify('notifications/subscriptions/acknowledged', {
          notifications: { taskIds: acceptedIds },
          _meta: { [SUBSCRIPTION_ID_META_KEY]: this.id },
        });
        for (const c of current) this.sendTask(c.taskId, c.current);
        for (const [taskId, snapshot] of this.early) this.taskChanged(taskId, snapshot);
        this.early.clear();
        if (this.following.size === 0) return this.end(true);
        if (this.keepAliveMs > 0) {
          this.keepAlive = setInterval(() => this.write(': keepalive\n\n'), this.keepAliveMs);
          this.keepAlive.unref();
        }
      },
      cancel: () => this.end(false),
    });
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      },
    });
  }

  /** A followed task changed (`null`: it became unreadable). */
  taskChanged(taskId: string, snapshot: TaskSnapshot | null): void {
    if (this.ended) return;
    if (!this.controller) {
      this.early.set(taskId, snapshot);
      return;
    }
    if (snapshot) this.sendTask(taskId, snapshot);
    if (!snapshot || isTerminalStatus(snapshot.status)) {
      this.following.get(taskId)?.stop();
      if (this.following.delete(taskId) && this.following.size === 0) this.end(true);
    }
  }

  /** End the stream: `graceful` sends the `subscriptions/listen` result first. Idempotent. */
  end(graceful: boolean): void {
    if (this.ended) return;
    if (graceful && this.controller) this.writeMessage(this.listenResult());
    this.endedGracefully = graceful;
    this.ended = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    this.onEnd();
    try {
      this.controller?.close();
    } catch {
      // already closed by the client
    }
  }

  private sendTask(taskId: string, snapshot: TaskSnapshot): void {
    const task = wireTask(taskId, snapshot);
    const { pollIntervalMs: _interval, ...comparable } = task;
    const key = JSON.stringify(comparable);
    if (this.sent.get(taskId) === key) return;
    this.sent.set(taskId, key);
    const meta = { ...(task._meta ?? {}), [SUBSCRIPTION_ID_META_KEY]: this.id };
    this.notify('notifications/tasks', { ...task, _meta: meta });
  }

  private notify(method: string, params: Record<string, unknown>): void {
    this.writeMessage({ jsonrpc: '2.0', method, params });
  }

  /** The `subscriptions/listen` result that ends the stream gracefully. */
  private listenResult(): unknown {
    return {
      jsonrpc: '2.0',
      id: this.id,
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: this.id, [SERVER_INFO_META_KEY]: this.serverInfo } },
    };
  }

  private frame(message: unknown): string {
    return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
  }

  private writeMessage(message: unknown): void {
    this.write(this.frame(message));
  }

  private write(frame: string): void {
    if (this.ended || !this.controller) return;
    try {
      this.controller.enqueue(this.encoder.encode(frame));
    } catch {
      this.end(false);
    }
  }
}

/** The `taskIds` of a listen request, deduplicated in order; or the issue that refuses it. */
function taskIdsOf(value: unknown, max: number): { taskIds: string[] } | { issue: { path: string; message: string } } {
  const path = '$.params.notifications.taskIds';
  if (!Array.isArray(value)) return { issue: { path, message: 'expected an array of task ids' } };
  if (value.length > max) return { issue: { path, message: `at most ${max} task ids per subscription (got ${value.length})` } };
  const out: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < value.length; i++) {
    const v: unknown = value[i];
    if (typeof v !== 'string') return { issue: { path: `${path}[${i}]`, message: 'expected a string' } };
    if (!seen.has(v)) {
      seen.add(v);
      out.push(v);
    }
  }
  return { taskIds: out };
}

/** Run `fn` over `items`, at most `limit` at once; rejects with the first failure. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
