/**
 * A client of the MCP tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) and of
 * multi-round requests (SEP-2322), over `WireClient` (Streamable HTTP, protocol 2026-07-28). It
 * knows tools, tasks and input requests, and nothing else about the server: what a task is
 * waiting for and what its result means are read from the wire as any tasks client reads them.
 *
 * - `callTool(name, args)`: `tools/call`; an `input_required` answer (SEP-2322) is passed to the
 *   caller's `answer` callback and the call re-sent with `inputResponses` and the byte-exact
 *   `requestState`; a `CallToolResult` is returned as is; a `CreateTaskResult` is polled with
 *   `tasks/get` until `completed`, `failed` or `cancelled`, sleeping the server's
 *   `pollIntervalMs` between polls, and the final task is returned.
 * - While polling, a task in `input_required` has its outstanding `inputRequests` passed to
 *   `answer` and the responses delivered with `tasks/update` (each key once per input round).
 * - `cancel(taskId)`: `tasks/cancel` (an empty ack; the outcome shows on the next `tasks/get`).
 * - Durable task ids (`store` + `callKey`, see `task-id-store.ts`): the task id is recorded under
 *   the caller's call key before `callTool` polls or returns, and a `callTool` with a recorded key
 *   resumes that task by id instead of sending `tools/call` again — after a crash, or when the
 *   caller retries. A recorded task the server no longer knows is `recorded-task-unavailable`,
 *   never a new call; only the caller decides to call again (delete the key first).
 *
 * Errors: JSON-RPC errors surface as `McpRpcError` (from `wire-client.ts`); local conditions as
 * `TasksClientError` with a string `code`; an aborted `signal` rejects with its reason; a store's
 * I/O error rejects as is (before `tools/call` is sent when reading, after the task exists when
 * writing: the task is then kept by `onTask` only).
 * Deliberately does not: retry anything on its own (a failed request, a finished task, an
 * outcome it cannot read), or interpret any extension `_meta` (`execution-outcome.ts` reads the
 * result for the caller).
 */
import type { TaskIdStore } from './task-id-store.js';
import { WireClient, type WireClientOptions } from './wire-client.js';

import { TASKS_EXTENSION, type TaskStatus } from '../../workflows/wire.js';

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
  /** Called with every task state seen: the created task, then each `tasks/get`. */
  onTask?: (task: Task) => void;
  /** Delay when the server suggests none; default 1000. */
  defaultPollIntervalMs?: number;
  /** Bounds applied to the server's `pollIntervalMs`; defaults 50 and 60000. */
  minPollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Most `input_required` rounds on one call before giving up; default 10. */
  maxInputRounds?: number;
  /** Sleep used between polls (tests inject one); default a timer that an abort interrupts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Where task ids are recorded by call key (`callTool`'s `callKey`); e.g. a `FileTaskIdStore`. */
  store?: TaskIdStore;
  /** Every message sent and received (see `WireClientOptions.onMessage`). */
  onMessage?: WireClientOptions['onMessage'];
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
        const task = await this.waitForTask(created.taskId, { ...options, pollIntervalMs: created.pollIntervalMs });
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
   * Poll `tasks/get` until the task is terminal, sleeping its `pollIntervalMs` (bounded) between
   * polls and answering outstanding input with `tasks/update`. `pollIntervalMs` is the delay
   * before the first poll (default: poll at once).
   */
  async waitForTask(taskId: string, options: { signal?: AbortSignal; pollIntervalMs?: number | undefined } = {}): Promise<Task> {
    const sleep = this.opts.sleep ?? defaultSleep;
    const answered = new Set<string>();
    let delay = options.pollIntervalMs;
    for (;;) {
      if (delay !== undefined) await sleep(this.bounded(delay), options.signal);
      options.signal?.throwIfAborted();
      const task = await this.getTask(taskId);
      this.opts.onTask?.(task);
      if (TERMINAL.has(task.status)) return task;
      delay = task.pollIntervalMs ?? this.opts.defaultPollIntervalMs ?? 1000;
      if (task.status !== 'input_required') {
        answered.clear(); // a later input round may reuse a key
        continue;
      }
      const open = Object.fromEntries(Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key)));
      if (Object.keys(open).length === 0) continue; // answered; waiting for the server to move on
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
      delay = undefined; // look again at once: the task moves on, or asks for more
    }
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
