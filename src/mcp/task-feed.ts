/**
 * The task feed: what one MCP front instance knows, without asking, about the approval runs it
 * is watching — for `notifications/tasks` on `subscriptions/listen` streams and for reads of tasks
 * that are being polled right now (docs/DESIGN.md §4.5 Reads).
 *
 * A watch is one history long-poll per run (GetWorkflowExecutionHistory with `waitNewEvent`, all
 * events, from where the last answer ended): served by the Temporal server alone — no worker, no
 * workflow activation, not a billable action — it answers when the run's history grows, or empty
 * after the server's long-poll interval (20 s by default). The watch reads the run's state from the
 * events themselves: each task record the workflow writes (`WorkflowPropertiesModified`, the memo
 * of `workflows/task-record.ts`), and the terminal snapshot in the completion event. So every
 * snapshot the feed holds is one the run's history holds; it is at most as old as the server's
 * notification to this instance (the moment between a workflow task's completion and its answer
 * arriving here).
 *
 * - {@link TaskFeed.subscribe}: a listener gets every new snapshot of the run until its task ends
 *   (the terminal snapshot is delivered, then the watch stops).
 * - {@link TaskFeed.peek}: the latest snapshot of a watched run whose watch is caught up (its last
 *   answer held the end of the history and no error since); `undefined` otherwise, and the caller
 *   describes the run instead. Never a negative answer: an unknown run is never "known unknown".
 * - {@link TaskFeed.keep}: a read of a task that will be polled again soon (its interval below
 *   `watchBelowIntervalMs`) keeps or starts its watch for `retainForIntervals` intervals; a task
 *   polled slowly is cheaper to describe at each read than to long-poll for.
 * - {@link TaskFeed.forget}: this instance changed the run (`tasks/update`, `tasks/cancel`): its
 *   snapshot is not served until the watch has seen the change.
 *
 * Bounds: at most `maxWatches` runs watched per instance (past it, reads describe and subscribers
 * are refused by the caller); a watch stops, cancelling its long-poll, as soon as nothing keeps it
 * (its last listener left, its read keep ran out), so an idle run's long-poll does not hold a slot
 * for the server's interval; a watch whose long-poll fails is not served and retries with a
 * backoff of 1 s doubling to 30 s. Deliberately does not: check owners (the caller compares the
 * snapshot's `ownerKey`), or watch runs of other workflow types.
 */
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { Logger } from 'pino';
import { readTaskRecord, servableSnapshot, TASK_RECORD_MEMO_KEY } from '../../workflows/task-record.js';
import type { TaskSnapshot } from '../../workflows/types.js';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { memberAt } from './narrow.js';
import { isTerminalStatus, type RunIds } from './task-reads.js';

/** Events per history page the watch asks for; a full page means more may follow at once. */
const PAGE_SIZE = 1000;
/** Deadline of one long-poll call, ms: above the server's long-poll interval (20 s by default). */
const LONG_POLL_DEADLINE_MS = 70_000;
/** Retry of a failed long-poll: first delay and cap, ms. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** What a listener receives: each new snapshot; `ended` when the watch stops for good (the task ended, or the run is gone). */
export type FeedListener = (event: { snapshot: TaskSnapshot } | { ended: 'terminal' | 'gone' | 'closed' }) => void;

/** Options of {@link createTaskFeed}. */
export interface TaskFeedOptions {
  /** A Temporal client with the payload codec installed (the record is encrypted). */
  client: Client;
  logger: Logger;
  /** Runs watched at once on this instance; default 5000. */
  maxWatches?: number;
  /** A read keeps or starts a watch only when the task's `pollIntervalMs` is below this, ms; default 10,000. */
  watchBelowIntervalMs?: number;
  /** A read-started watch lives this many of the task's intervals after the last read; default 3. */
  retainForIntervals?: number;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** The feed (module header). */
export interface TaskFeed {
  /** The latest snapshot of a caught-up watch of `ids`, or undefined (then read the run instead). */
  peek(ids: RunIds): TaskSnapshot | undefined;
  /** After a read answered `snapshot` with interval `pollIntervalMs`: keep (or start) the run's watch when the task is polled often. */
  keep(ids: RunIds, snapshot: TaskSnapshot, pollIntervalMs: number): void;
  /**
   * This instance changed the run: do not serve its snapshot until a long-poll asked after this
   * call has answered (an answer to one asked before could predate the change).
   */
  forget(ids: RunIds): void;
  /** The latest snapshot a watch of `ids` has seen, caught up or not (for a new subscriber's first state); undefined when not watched. */
  latest(ids: RunIds): TaskSnapshot | undefined;
  /**
   * Deliver every new snapshot of the run to `listener` (not the current one: read it first). Null
   * when `maxWatches` runs are watched already and this one is not. Returns the unsubscribe.
   */
  subscribe(ids: RunIds, listener: FeedListener): (() => void) | null;
  /** Runs watched now, and of them caught up (for metrics and the bench). */
  stats(): { watches: number; caughtUp: number; longPolls: number };
  /** Stop every watch (listeners get nothing more). */
  close(): void;
}

interface Watch {
  key: string;
  ids: RunIds;
  snapshot: TaskSnapshot | undefined;
  caughtUp: boolean;
  listeners: Set<FeedListener>;
  /** Read-kept until (ms since the epoch); 0: only its listeners keep it. */
  keepUntil: number;
  /**
   * Cancels the long-poll in flight: one per call, because the Temporal client adds an `abort`
   * listener to the signal of every call and never removes it (one signal for the watch's life
   * would hold one listener, and its call, per long-poll ever made).
   */
  call: AbortController | undefined;
  /** Set while only a read keeps the watch: stops it when the keep runs out (`release`). */
  releaseTimer: ReturnType<typeof setTimeout> | undefined;
  ended: boolean;
  /** Bumped by `forget`: an answer to a long-poll asked before it cannot make the watch caught up again. */
  generation: number;
}

/** Build a feed over `opts.client` (module header). */
export function createTaskFeed(opts: TaskFeedOptions): TaskFeed {
  const now = opts.now ?? Date.now;
  const maxWatches = opts.maxWatches ?? 5000;
  const watchBelow = opts.watchBelowIntervalMs ?? 10_000;
  const retainFor = opts.retainForIntervals ?? 3;
  const watches = new Map<string, Watch>();
  /** Terminal snapshots of watches that ended while reads kept them (they never change). */
  const terminalCache = new Map<string, { snapshot: TaskSnapshot; until: number }>();
  const converter = opts.client.options.loadedDataConverter;
  const service = opts.client.workflowService;
  const connection = opts.client.connection;
  let longPolls = 0;
  let closed = false;

  const keyOf = (ids: RunIds) => `${ids.workflowId}/${ids.runId}`;
  /** Past `createdAt + ttlMs`: not served from here (a read of the run decides: expired, unknown). */
  const expired = (s: TaskSnapshot) => s.ttlMs !== null && now() > Date.parse(s.createdAt) + s.ttlMs;

  /**
   * A history payload through the client's codecs and converter; `T` is what the workflow wrote
   * there (the converter's typed read, as for a run's result), checked by the caller.
   */
  async function decode<T>(payload: Payload | null | undefined): Promise<T | undefined> {
    if (!payload) return undefined;
    let payloads = [payload];
    for (const codec of [...converter.payloadCodecs].reverse()) payloads = await codec.decode(payloads);
    return converter.payloadConverter.fromPayload<T>(payloads[0]!);
  }

  /** Apply one history event; returns 'ended' kinds when the run closed. */
  async function apply(w: Watch, e: temporal.api.history.v1.IHistoryEvent): Promise<'terminal' | 'closed' | undefined> {
    const memo = e.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.[TASK_RECORD_MEMO_KEY];
    if (memo) {
      const record = readTaskRecord(await decode<unknown>(memo));
      // a record without its (large) result cannot be served; the completion event brings it
      w.snapshot = record ? servableSnapshot(record) : undefined;
      return undefined;
    }
    const completed = e.workflowExecutionCompletedEventAttributes;
    if (completed) {
      const result = await decode<TaskSnapshot>(completed.result?.payloads?.[0]);
      w.snapshot = typeof result?.ownerKey === 'string' ? result : undefined;
      return w.snapshot ? 'terminal' : 'closed';
    }
    if (
      e.workflowExecutionFailedEventAttributes ||
      e.workflowExecutionTerminatedEventAttributes ||
      e.workflowExecutionTimedOutEventAttributes ||
      e.workflowExecutionCanceledEventAttributes ||
      e.workflowExecutionContinuedAsNewEventAttributes
    ) {
      w.snapshot = undefined;
      return 'closed';
    }
    return undefined;
  }

  function stop(w: Watch, ended?: 'terminal' | 'gone' | 'closed'): void {
    if (w.ended) return;
    w.ended = true;
    w.caughtUp = false;
    w.call?.abort();
    if (w.releaseTimer) clearTimeout(w.releaseTimer);
    if (watches.get(w.key) === w) watches.delete(w.key);
    if (ended) for (const l of [...w.listeners]) l({ ended });
    w.listeners.clear();
  }

  function unused(w: Watch): boolean {
    return w.listeners.size === 0 && now() >= w.keepUntil;
  }

  /**
   * Stop `w` now when nothing keeps it, cancelling its long-poll (which may otherwise wait out the
   * server's interval, holding a watch slot); when only a read keeps it, look again once that keep runs out.
   */
  function release(w: Watch): void {
    if (w.ended) return;
    if (unused(w)) return stop(w);
    if (w.listeners.size > 0 || w.releaseTimer) return;
    w.releaseTimer = setTimeout(() => {
      w.releaseTimer = undefined;
      release(w);
    }, w.keepUntil - now());
    w.releaseTimer.unref?.();
  }

  async function run(w: Watch): Promise<void> {
    let token: Uint8Array | undefined;
    let retryMs = RETRY_FIRST_MS;
    while (!w.ended && !closed) {
      if (unused(w)) return stop(w);
      let res: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse;
      const askedAt = w.generation;
      try {
        longPolls++;
        w.call = new AbortController();
        res = await connection.withAbortSignal(w.call.signal, () =>
          connection.withDeadline(now() + LONG_POLL_DEADLINE_MS, () =>
            service.getWorkflowExecutionHistory({
              namespace: opts.client.options.namespace,
              execution: { workflowId: w.ids.workflowId, runId: w.ids.runId },
              waitNewEvent: true,
              maximumPageSize: PAGE_SIZE,
              skipArchival: true,
              ...(token ? { nextPageToken: token } : {}),
            }),
          ),
        );
      } catch (err) {
        if (w.ended || closed) return;
        w.caughtUp = false;
        if (isWorkflowNotFound(err)) return stop(w, 'gone');
        opts.logger.debug({ err: memberAt(err, 'message') }, 'task feed: history long-poll failed; retrying');
        await new Promise((r) => setTimeout(r, retryMs).unref());
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
        continue;
      }
      retryMs = RETRY_FIRST_MS;
      const events = res.history?.events ?? [];
      let ended: 'terminal' | 'closed' | undefined;
      let changed = false;
      for (const e of events) {
        const before = w.snapshot;
        ended = (await apply(w, e)) ?? ended;
        if (w.snapshot !== before && w.snapshot) changed = true;
      }
      // caught up: this answer ends at the history's end (not a full page), and it was asked after
      // any change this instance made (`forget`), so it cannot predate that change
      const current = askedAt === w.generation;
      if (events.length > 0) w.caughtUp = current && events.length < PAGE_SIZE && w.snapshot !== undefined;
      else if (w.snapshot !== undefined) w.caughtUp = current; // the long-poll ran out: nothing new
      if (changed && w.snapshot) for (const l of [...w.listeners]) l({ snapshot: w.snapshot });
      if (ended || (w.snapshot && isTerminalStatus(w.snapshot.status) && !res.nextPageToken?.length)) {
        // a terminal snapshot never changes: keep serving it while reads keep the entry
        const final = w.snapshot;
        stop(w, ended ?? 'terminal');
        if (final && isTerminalStatus(final.status) && w.keepUntil > now())
          terminalCache.set(w.key, { snapshot: final, until: w.keepUntil });
        return;
      }
      token = res.nextPageToken?.length ? res.nextPageToken : token;
      if (!res.nextPageToken?.length) return stop(w, 'closed');
    }
  }

  /** The run's watch, started (after `init`, which gives it its first reason to live) when there is none. */
  function start(ids: RunIds, init: (w: Watch) => void): Watch | null {
    const key = keyOf(ids);
    const existing = watches.get(key);
    if (existing) {
      init(existing);
      return existing;
    }
    if (closed || watches.size >= maxWatches) return null;
    const w: Watch = {
      key,
      ids,
      snapshot: undefined,
      caughtUp: false,
      listeners: new Set(),
      keepUntil: 0,
      call: undefined,
      releaseTimer: undefined,
      ended: false,
      generation: 0,
    };
    watches.set(key, w);
    init(w);
    void run(w).catch((err: unknown) => {
      opts.logger.warn({ err: memberAt(err, 'message') }, 'task feed: watch stopped');
      stop(w, 'closed');
    });
    return w;
  }

  return {
    peek(ids) {
      const key = keyOf(ids);
      const w = watches.get(key);
      if (w?.caughtUp && w.snapshot && w.snapshot.phase !== 'executing' && !expired(w.snapshot)) return w.snapshot;
      const t = terminalCache.get(key);
      if (t) {
        if (now() < t.until && !expired(t.snapshot)) return t.snapshot;
        terminalCache.delete(key);
      }
      return undefined;
    },
    keep(ids, snapshot, pollIntervalMs) {
      if (pollIntervalMs >= watchBelow) return;
      const until = now() + retainFor * pollIntervalMs;
      const key = keyOf(ids);
      if (isTerminalStatus(snapshot.status)) {
        const w = watches.get(key);
        if (w) w.keepUntil = Math.max(w.keepUntil, until);
        terminalCache.set(key, { snapshot, until: Math.max(until, terminalCache.get(key)?.until ?? 0) });
        if (terminalCache.size > maxWatches) terminalCache.delete(terminalCache.keys().next().value!);
        return;
      }
      const w = start(ids, (x) => {
        x.keepUntil = Math.max(x.keepUntil, until);
      });
      if (w) release(w);
    },
    forget(ids) {
      const w = watches.get(keyOf(ids));
      if (w) {
        w.caughtUp = false;
        w.generation++;
      }
      terminalCache.delete(keyOf(ids));
    },
    latest(ids) {
      return watches.get(keyOf(ids))?.snapshot;
    },
    subscribe(ids, listener) {
      const w = start(ids, (x) => x.listeners.add(listener));
      if (!w) return null;
      return () => {
        w.listeners.delete(listener);
        release(w);
      };
    },
    stats() {
      let caughtUp = 0;
      for (const w of watches.values()) if (w.caughtUp) caughtUp++;
      return { watches: watches.size, caughtUp, longPolls };
    },
    close() {
      closed = true;
      for (const w of [...watches.values()]) stop(w);
      terminalCache.clear();
    },
  };
}
