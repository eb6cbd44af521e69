/**
 * A client of the MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) and of
 * multi-round requests (SEP-2322), over `WireClient` (Streamable HTTP, protocol 2026-07-28). It
 * knows tools, tasks and input requests, and nothing else about the server: what a task is
 * waiting for and what its result means are read from the wire as any tasks client reads them.
 *
 * - `callTool(name, args)`: `tools/call`; an `input_required` answer (SEP-2322) is passed to the
 *   caller's `answer` callback and the call re-sent with `inputResponses` and the byte-exact
 *   `requestState`; a `CallToolResult` is returned as is; a `CreateTaskResult` is followed until
 *   `completed`, `failed` or `cancelled`, and the final task is returned.
 * - Following a task (after `callTool`, or `waitForTask` by id):
 *   - push (default; `push: false` turns it off): `subscriptions/listen` with
 *     `notifications.taskIds: [taskId]` (the tasks extension's Task Status Notifications). When
 *     the server's `notifications/subscriptions/acknowledged` lists the id, the client waits for
 *     `notifications/tasks` (each a whole task, as `tasks/get` returns it) and sends no
 *     `tasks/get` while the stream lasts (the stream's first notification is the task's current
 *     state).
 *   - If the server does not list the id (an unknown, expired or another caller's id is left
 *     out), refuses the request (any JSON-RPC error: -32021, -32602, -32000 HTTP 429, 503...) or
 *     answers it without a stream, the client polls instead (and `tasks/get` answers an unknown
 *     id with -32602, as always).
 *   - If the stream ends or breaks before the task is terminal, the client waits (backing off
 *     from `reconnect.delayMs`, doubling), reads the task once with `tasks/get` and subscribes
 *     again; after `reconnect.attempts` losses in a row with no change of the task seen, it polls.
 *   - polling: `tasks/get` until terminal, sleeping the server's `pollIntervalMs` (bounded)
 *     between polls.
 * - Either way a task in `input_required` has its outstanding `inputRequests` passed to `answer`
 *   and the responses delivered with `tasks/update` (each key once per input round).
 * - `cancel(taskId)`: `tasks/cancel` (an empty ack; the outcome shows on the next `tasks/get`).
 * - Durable task ids (`store` + `callKey`, see `task-id-store.ts`): the task id is recorded under
 *   the caller's call key before `callTool` follows the task or returns, and a `callTool` with a recorded key
 *   resumes that task by id instead of sending `tools/call` again — after a crash, or when the
 *   caller retries. A recorded task the server no longer knows is `recorded-task-unavailable`,
 *   never a new call; only the caller decides to call again (delete the key first).
 *
 * Errors: JSON-RPC errors surface as `McpRpcError` (from `wire-client.ts`); local conditions as
 * `TasksClientError` with a string `code`; an aborted `signal` rejects with its reason (and closes
 * an open stream); a store's I/O error rejects as is (before `tools/call` is sent when reading,
 * after the task exists when writing: the task is then kept by `onTask` only).
 * Deliberately does not: retry anything on its own (a failed request, a finished task, an
 * outcome it cannot read) — re-opening a lost notification stream, a read, is the one exception —
 * or interpret any extension `_meta` (`execution-outcome.ts` reads the result for the caller).
 */
import type { TaskIdStore } from './task-id-store.js';
import { McpRpcError, WireClient, type JsonRpcMessage, type WireClientOptions } from './wire-client.js';

import { TASKS_EXTENSION, type TaskStatus } from './protocol.js';

// Re-exported for users of this client: the tasks extension identifier declared in every request's
// client capabilities, and the SEP-2663 task status.
export { TASKS_EXTENSION, type TaskStatus };

/** One embedded request for input (SEP-2322), e.g. `elicitation/create`. */
export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** A `CallToolResult` (2026-07-28: `resultType` is `"complete"`). */
export interface CallToolResult {
  resultType?: 'complete';
  content: Array<{ type: string; text?: string; [key: string]: unknown }>;
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

/** A task as `tasks/get` returns it (SEP-2663 DetailedTask). */
export interface Task {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt?: string;
  /** Lifetime from `createdAt` in milliseconds; null: unlimited. */
  ttlMs?: number | null;
  /** Suggested delay between polls, in milliseconds. */
  pollIntervalMs?: number;
  /** Outstanding input requests while `input_required`. */
  inputRequests?: Record<string, InputRequest>;
  /** The tool's result once `completed`. */
  result?: CallToolResult;
  /** The JSON-RPC error once `failed`. */
  error?: { code: number; message: string; data?: unknown };
  _meta?: Record<string, unknown>;
}

/** What `callTool` resolves with: the tool's result directly, or the task that carried it. */
export type CallOutcome = { kind: 'result'; result: CallToolResult } | { kind: 'task'; task: Task };

/** Where input is being asked for: on the call itself (MRTR) or inside a task. */
export type InputContext = { phase: 'call'; tool: string; round: number } | { phase: 'task'; taskId: string };

/**
 * Produce `inputResponses` for `inputRequests` (same keys; e.g. `{action: "accept", content}`
 * for an elicitation). Keys left out stay outstanding.
 */
export type AnswerInput = (
  inputRequests: Record<string, InputRequest>,
  context: InputContext,
) => Promise<Record<string, unknown>> | Record<string, unknown>;

/** Local failures; never sent on the wire. */
export type TasksClientErrorCode =
  | 'input-unanswerable'
  | 'too-many-input-rounds'
  | 'unexpected-result'
  /** A `callKey` was given but the client has no `store`. */
  | 'no-task-store'
  /** The task recorded for a `callKey` is unknown to the server (expired, or another principal's); not re-called. */
  | 'recorded-task-unavailable';

/** A local failure of the client (not a JSON-RPC error). `task` is set when a task was involved. */
export class TasksClientError extends Error {
  constructor(
    readonly code: TasksClientErrorCode,
    message: string,
    readonly task?: Task,
  ) {
    super(message);
    this.name = 'TasksClientError';
  }
}

/** Options. Durations in milliseconds. */
export interface TasksClientOptions {
  url: string;
  token?: string;
  /** Capabilities besides the tasks extension (always declared), e.g. `{ elicitation: { form: {} } }`. */
  capabilities?: Record<string, unknown>;
  clientInfo?: { name: string; version: string };
  /** Answers input requests on the call (MRTR) and in tasks (`tasks/update`); without it they are `input-unanswerable`. */
  answer?: AnswerInput;
  /** Called with every task state seen: the created task, then each `tasks/get` and `notifications/tasks`. */
  onTask?: (task: Task) => void;
  /** Follow tasks by `subscriptions/listen` when the server acknowledges them (module header); `false`: poll only. Default true. */
  push?: boolean;
  /** A lost stream: first delay before subscribing again (doubled each time, bounded like a poll interval; default 1000) and most losses in a row without a change of the task before polling instead (default 5). */
  reconnect?: { delayMs?: number; attempts?: number };
  /** Delay when the server suggests none; default 1000. */
  defaultPollIntervalMs?: number;
  /** Bounds applied to the server's `pollIntervalMs`; defaults 50 and 60000. */
  minPollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Most `input_required` rounds on one call before giving up; default 10. */
  maxInputRounds?: number;
  /** Sleep used between polls and before a reconnect (tests inject one); default a timer that an abort interrupts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Where task ids are recorded by call key (`callTool`'s `callKey`); e.g. a `FileTaskIdStore`. */
  store?: TaskIdStore;
  /** Every message sent and received (see `WireClientOptions.onMessage`). */
  onMessage?: WireClientOptions['onMessage'];
  /** The `fetch` every request goes through; default the global one. */
  fetch?: typeof fetch;
}

const TERMINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/** Sleep `ms`, rejecting with the signal's reason if it aborts first. */
function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The client. */
export class TasksClient {
  private readonly wire: WireClient;

  constructor(private readonly opts: TasksClientOptions) {
    const capabilities = { ...(opts.capabilities ?? {}) } as Record<string, unknown> & { extensions?: Record<string, unknown> };
    capabilities.extensions = { ...(capabilities.extensions ?? {}), [TASKS_EXTENSION]: {} };
    this.wire = new WireClient({
      url: opts.url,
      ...(opts.token ? { token: opts.token } : {}),
      capabilities,
      clientInfo: opts.clientInfo ?? { name: 'countersign-tasks-client', version: '0.1.0' },
      ...(opts.onMessage ? { onMessage: opts.onMessage } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
  }

  /**
   * Call a tool and see it through: MRTR rounds answered, a task polled to its end.
   * Resolves with `{kind: "result"}` for a direct `CallToolResult`, `{kind: "task"}` with the
   * terminal task otherwise (its `result` is the tool's `CallToolResult` when `completed`).
   *
   * `callKey` (needs `store`): the caller's name for this call. Recorded with the task id before
   * polling; if already recorded, the recorded task is resumed (no `tools/call` is sent) and a
   * task the server no longer knows rejects with `recorded-task-unavailable`.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    options: { signal?: AbortSignal; callKey?: string } = {},
  ): Promise<CallOutcome> {
    const maxRounds = this.opts.maxInputRounds ?? 10;
    const { callKey } = options;
    const store = this.opts.store;
    if (callKey !== undefined && !store) throw new TasksClientError('no-task-store', `${name}: a callKey needs a task id store`);
    if (callKey !== undefined && store) {
      const recorded = await store.get(callKey);
      if (recorded) return { kind: 'task', task: await this.resume(callKey, recorded.taskId, options) };
    }
    let params: Record<string, unknown> = { name, arguments: args };
    for (let round = 1; ; round++) {
      options.signal?.throwIfAborted();
      const res = await this.wire.request<Record<string, unknown>>('tools/call', params);
      if (res.resultType === 'input_required') {
        if (round > maxRounds)
          throw new TasksClientError('too-many-input-rounds', `${name}: still input_required after ${maxRounds} rounds`);
        const requests = (res.inputRequests ?? {}) as Record<string, InputRequest>;
        if (!this.opts.answer)
          throw new TasksClientError(
            'input-unanswerable',
            `${name} asks for input (${Object.keys(requests).join(', ')}) and no answer callback was given`,
          );
        const inputResponses = await this.opts.answer(requests, { phase: 'call', tool: name, round });
        params = {
          name,
          arguments: args,
          inputResponses,
          ...(typeof res.requestState === 'string' ? { requestState: res.requestState } : {}),
        };
        continue;
      }
      if (res.resultType === 'task') {
        const created = res as unknown as Task;
        if (typeof created.taskId !== 'string') throw new TasksClientError('unexpected-result', `${name}: a task result without a taskId`);
        this.opts.onTask?.(created);
        if (callKey !== undefined && store)
          await store.put(callKey, { taskId: created.taskId, tool: name, recordedAt: new Date().toISOString() });
        const task = await this.follow(created.taskId, { ...options, pollIntervalMs: created.pollIntervalMs }, created);
        if (callKey !== undefined && store) await this.markTerminal(callKey, task);
        return { kind: 'task', task };
      }
      if (res.resultType !== undefined && res.resultType !== 'complete')
        throw new TasksClientError('unexpected-result', `${name}: unknown resultType ${JSON.stringify(res.resultType)}`);
      if (!Array.isArray(res.content)) throw new TasksClientError('unexpected-result', `${name}: a result without content`);
      return { kind: 'result', result: res as unknown as CallToolResult };
    }
  }

  /** Resume a recorded task by id; `recorded-task-unavailable` when the server says it is unknown (-32602). */
  private async resume(callKey: string, taskId: string, options: { signal?: AbortSignal }): Promise<Task> {
    let task: Task;
    try {
      task = await this.waitForTask(taskId, { ...(options.signal ? { signal: options.signal } : {}) });
    } catch (err) {
      if ((err as { name?: string; code?: number }).name === 'McpRpcError' && (err as { code?: number }).code === -32602) {
        throw new TasksClientError(
          'recorded-task-unavailable',
          `the task recorded for ${JSON.stringify(callKey)} (${taskId}) is unknown to the server; it is not called again`,
        );
      }
      throw err;
    }
    await this.markTerminal(callKey, task);
    return task;
  }

  private async markTerminal(callKey: string, task: Task): Promise<void> {
    const store = this.opts.store;
    const recorded = await store?.get(callKey);
    if (store && recorded && recorded.taskId === task.taskId && recorded.status !== task.status)
      await store.put(callKey, { ...recorded, status: task.status });
  }

  /** One `tasks/get`. */
  getTask(taskId: string): Promise<Task> {
    return this.wire.request<Task>('tasks/get', { taskId });
  }

  /**
   * Follow the task `taskId` until it is terminal (module header: by notification when the server
   * offers it, else by polling `tasks/get`), answering outstanding input with `tasks/update`.
   * `pollIntervalMs` is the delay before the first poll when polling (default: poll at once).
   */
  waitForTask(taskId: string, options: { signal?: AbortSignal; pollIntervalMs?: number | undefined } = {}): Promise<Task> {
    return this.follow(taskId, options);
  }

  /** Follow `taskId`; `created`: its state as just created (the `CreateTaskResult`). */
  private async follow(
    taskId: string,
    options: { signal?: AbortSignal; pollIntervalMs?: number | undefined },
    created?: Task,
  ): Promise<Task> {
    const { signal } = options;
    const answered = new Set<string>();
    if (this.opts.push === false) return this.poll(taskId, answered, signal, options.pollIntervalMs);
    const attempts = this.opts.reconnect?.attempts ?? 5;
    const firstDelay = this.opts.reconnect?.delayMs ?? 1000;
    const sleep = this.opts.sleep ?? defaultSleep;
    let known = created;
    /** Delay before the first poll should the client end up polling. */
    let pollDelay = options.pollIntervalMs;
    let losses = 0;
    for (;;) {
      const end = await this.listen(taskId, known, answered, signal);
      if (end.kind === 'terminal') return end.task;
      if (end.kind === 'not-offered') return this.poll(taskId, answered, signal, pollDelay);
      losses = end.changed ? 1 : losses + 1;
      if (losses > attempts) return this.poll(taskId, answered, signal, undefined);
      await sleep(this.bounded(firstDelay * 2 ** (losses - 1)), signal);
      // reconnect: read the task once, then subscribe again
      signal?.throwIfAborted();
      known = await this.getTask(taskId);
      this.opts.onTask?.(known);
      if (TERMINAL.has(known.status)) return known;
      pollDelay = (await this.answerInput(taskId, known, answered)) ? undefined : this.suggested(known);
    }
  }

  /**
   * One `subscriptions/listen` for `taskId`, read until the task is terminal (`terminal`), the
   * server does not take the id up (`not-offered`: refused, not acknowledged, or no stream), or the
   * stream ends or breaks first (`lost`; `changed` when it showed the task move on from `known`,
   * the last state the client had, if any).
   * Errors of answering input propagate; the stream is closed on every way out.
   */
  private async listen(
    taskId: string,
    known: Task | undefined,
    answered: Set<string>,
    signal: AbortSignal | undefined,
  ): Promise<{ kind: 'terminal'; task: Task } | { kind: 'not-offered' } | { kind: 'lost'; changed: boolean }> {
    const local = new AbortController();
    const streamSignal = signal ? AbortSignal.any([signal, local.signal]) : local.signal;
    let opened: { id: number; messages: AsyncIterable<JsonRpcMessage> };
    try {
      opened = await this.wire.stream('subscriptions/listen', { notifications: { taskIds: [taskId] } }, { signal: streamSignal });
    } catch (err) {
      signal?.throwIfAborted();
      if (err instanceof McpRpcError) return { kind: 'not-offered' }; // refused (a JSON-RPC error, or an HTTP failure)
      return { kind: 'lost', changed: false }; // no connection
    }
    const messages = opened.messages[Symbol.asyncIterator]();
    let acknowledged = false;
    let last = known;
    let changed = false;
    try {
      for (;;) {
        let next: IteratorResult<JsonRpcMessage>;
        try {
          next = await messages.next();
        } catch {
          signal?.throwIfAborted();
          return { kind: 'lost', changed }; // the connection broke
        }
        if (next.done) return acknowledged ? { kind: 'lost', changed } : { kind: 'not-offered' };
        const msg = next.value;
        if (msg.method === undefined && msg.id === opened.id) {
          // the listen request's answer: a refusal before the acknowledgement, else the stream's end
          return acknowledged ? { kind: 'lost', changed } : { kind: 'not-offered' };
        }
        if (msg.method === 'notifications/subscriptions/acknowledged') {
          const ids = (msg.params?.notifications as { taskIds?: unknown } | undefined)?.taskIds;
          if (!Array.isArray(ids) || !ids.includes(taskId)) return { kind: 'not-offered' };
          acknowledged = true;
          continue;
        }
        if (!acknowledged || msg.method !== 'notifications/tasks' || msg.params?.taskId !== taskId) continue;
        const task = msg.params as unknown as Task;
        if (last && (task.status !== last.status || task.lastUpdatedAt !== last.lastUpdatedAt)) changed = true;
        last = task;
        this.opts.onTask?.(task);
        if (TERMINAL.has(task.status)) return { kind: 'terminal', task };
        await this.answerInput(taskId, task, answered); // the next notification shows what it led to
      }
    } finally {
      await messages.return?.().catch(() => undefined);
      local.abort();
    }
  }

  /**
   * Poll `tasks/get` until the task is terminal, sleeping its `pollIntervalMs` (bounded) between
   * polls and answering outstanding input with `tasks/update`. `delay`: before the first poll
   * (undefined: poll at once).
   */
  private async poll(taskId: string, answered: Set<string>, signal: AbortSignal | undefined, delay: number | undefined): Promise<Task> {
    const sleep = this.opts.sleep ?? defaultSleep;
    for (;;) {
      if (delay !== undefined) await sleep(this.bounded(delay), signal);
      signal?.throwIfAborted();
      const task = await this.getTask(taskId);
      this.opts.onTask?.(task);
      if (TERMINAL.has(task.status)) return task;
      // after an answer, look again at once: the task moves on, or asks for more
      delay = (await this.answerInput(taskId, task, answered)) ? undefined : this.suggested(task);
    }
  }

  /**
   * Answer the outstanding input of `task` (if `input_required`) with one `tasks/update`, each
   * key once per input round (`answered`, cleared when the task leaves `input_required`, since a
   * later round may reuse a key). True when an update was sent.
   */
  private async answerInput(taskId: string, task: Task, answered: Set<string>): Promise<boolean> {
    if (task.status !== 'input_required') {
      answered.clear();
      return false;
    }
    const open = Object.fromEntries(Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key)));
    if (Object.keys(open).length === 0) return false; // answered; waiting for the server to move on
    if (!this.opts.answer)
      throw new TasksClientError(
        'input-unanswerable',
        `task ${taskId} asks for input (${Object.keys(open).join(', ')}) and no answer callback was given`,
        task,
      );
    const inputResponses = await this.opts.answer(open, { phase: 'task', taskId });
    const keys = Object.keys(inputResponses).filter((k) => k in open);
    if (keys.length === 0)
      throw new TasksClientError('input-unanswerable', `the answer callback gave no response for task ${taskId}`, task);
    await this.wire.request('tasks/update', { taskId, inputResponses: Object.fromEntries(keys.map((k) => [k, inputResponses[k]])) });
    for (const k of keys) answered.add(k);
    return true;
  }

  /** The delay the server suggests after `task`. */
  private suggested(task: Task): number {
    return task.pollIntervalMs ?? this.opts.defaultPollIntervalMs ?? 1000;
  }

  /** `tasks/cancel`. Resolves on the server's ack; whether the task ended `cancelled` shows on the next `tasks/get`. */
  async cancel(taskId: string): Promise<void> {
    await this.wire.request('tasks/cancel', { taskId });
  }

  private bounded(ms: number): number {
    const min = this.opts.minPollIntervalMs ?? 50;
    const max = this.opts.maxPollIntervalMs ?? 60_000;
    return Math.min(max, Math.max(min, Number.isFinite(ms) ? ms : min));
  }
}
