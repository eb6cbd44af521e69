// Scope: the task feed's watches (src/mcp/task-feed.ts) over a scripted Temporal client that behaves
// like @temporalio/client's connection where it matters here: every call made under
// `withAbortSignal(signal)` adds an `abort` listener to that signal and never removes it, and a
// history long-poll answers only when the test says so (an idle run answers nothing for 20 s). A
// long-lived watch must not accumulate listeners, and a watch nobody needs any more must stop at
// once, cancelling its pending long-poll, instead of holding a watch slot until the long-poll ends.
import { getEventListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTaskFeed, type TaskFeed } from '../../src/mcp/task-feed.js';
import { TASK_RECORD_MEMO_KEY, TASK_RECORD_VERSION } from '../../workflows/task-record.js';
import type { TaskSnapshot } from '../../workflows/types.js';

const ids = { workflowId: 'approval-wf', runId: 'run-1' };

function snap(over: Partial<TaskSnapshot> = {}): TaskSnapshot {
  return {
    status: 'working',
    phase: 'awaiting-approval',
    ownerKey: 'owner',
    policyReason: '',
    createdAt: '2026-12-01T10:00:00.000Z',
    lastUpdatedAt: '2026-12-01T10:00:00.000Z',
    ttlMs: null,
    pollIntervalMs: 2_000,
    generation: 1,
    claimed: false,
    ...over,
  };
}

/** One history event that upserts the task record `s` (payloads are plain values: no codec here). */
const recordEvent = (s: TaskSnapshot) => ({
  workflowPropertiesModifiedEventAttributes: {
    upsertedMemo: { fields: { [TASK_RECORD_MEMO_KEY]: { v: TASK_RECORD_VERSION, snapshot: s } } },
  },
});

interface PendingPoll {
  signal: AbortSignal;
  answer(events: unknown[]): void;
}

/** A client whose history long-polls wait for `answer`; `polls` are the calls made, in order. */
function scriptedClient(): { client: Client; polls: PendingPoll[] } {
  const polls: PendingPoll[] = [];
  let current: AbortSignal | undefined;
  const client = {
    options: {
      namespace: 'default',
      loadedDataConverter: { payloadCodecs: [], payloadConverter: { fromPayload: (p: unknown) => p } },
    },
    connection: {
      async withAbortSignal<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
        current = signal;
        return fn();
      },
      async withDeadline<T>(_deadline: number, fn: () => Promise<T>): Promise<T> {
        return fn();
      },
    },
    workflowService: {
      getWorkflowExecutionHistory(): Promise<unknown> {
        const signal = current!;
        return new Promise((resolve, reject) => {
          // as @temporalio/client does for every call: added, never removed
          signal.addEventListener('abort', () => reject(Object.assign(new Error('cancelled'), { code: 1 })));
          polls.push({ signal, answer: (events) => resolve({ history: { events }, nextPageToken: new Uint8Array([1]) }) });
        });
      },
    },
  };
  return { client: client as unknown as Client, polls };
}

/** Wait (bounded) until the feed has made `n` long-poll calls. */
async function pollsMade(polls: PendingPoll[], n: number): Promise<PendingPoll> {
  await vi.waitFor(() => expect(polls.length).toBeGreaterThanOrEqual(n));
  return polls[n - 1]!;
}

let feed: TaskFeed | undefined;
afterEach(() => {
  feed?.close();
  feed = undefined;
  vi.useRealTimers();
});

describe('task feed watches', () => {
  it('a watch answered many times holds no more abort listeners than the one long-poll in flight (the client never removes its own)', async () => {
    const { client, polls } = scriptedClient();
    feed = createTaskFeed({ client, logger: pino({ level: 'silent' }) });
    const seen: string[] = [];
    feed.subscribe(ids, (e) => {
      if ('snapshot' in e) seen.push(e.snapshot.lastUpdatedAt);
    });
    for (let i = 1; i <= 25; i++) {
      const poll = await pollsMade(polls, i);
      poll.answer([recordEvent(snap({ lastUpdatedAt: `2026-12-01T10:00:${String(i).padStart(2, '0')}.000Z` }))]);
    }
    const last = await pollsMade(polls, 26);
    expect(seen).toHaveLength(25);
    expect(getEventListeners(last.signal, 'abort')).toHaveLength(1);
    expect(new Set(polls.map((p) => p.signal)).size).toBe(polls.length); // one signal per call, collected with it
  });

  it('the last subscriber leaving stops the watch at once and cancels its pending long-poll', async () => {
    const { client, polls } = scriptedClient();
    feed = createTaskFeed({ client, logger: pino({ level: 'silent' }), maxWatches: 1 });
    const unsubscribe = feed.subscribe(ids, () => undefined)!;
    (await pollsMade(polls, 1)).answer([recordEvent(snap())]);
    const idle = await pollsMade(polls, 2); // an idle run: this long-poll would answer only after the server's interval
    expect(feed.stats().watches).toBe(1);
    unsubscribe();
    expect(feed.stats().watches).toBe(0);
    expect(idle.signal.aborted).toBe(true);
    // its slot is free: another run can be watched under maxWatches 1
    expect(feed.subscribe({ workflowId: 'approval-wf', runId: 'run-2' }, () => undefined)).not.toBeNull();
  });

  it('a watch kept by reads stops when its keep runs out, even while its long-poll is pending', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { client, polls } = scriptedClient();
    feed = createTaskFeed({ client, logger: pino({ level: 'silent' }) });
    feed.keep(ids, snap(), 1_000); // polled every second: kept for 3 s
    await vi.advanceTimersByTimeAsync(0);
    (await pollsMade(polls, 1)).answer([recordEvent(snap())]);
    await vi.advanceTimersByTimeAsync(0);
    const idle = await pollsMade(polls, 2);
    expect(feed.peek(ids)?.status).toBe('working');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(feed.stats().watches).toBe(1); // still kept
    await vi.advanceTimersByTimeAsync(1_500);
    expect(feed.stats().watches).toBe(0);
    expect(idle.signal.aborted).toBe(true);
  });

  it('a subscriber leaving a watch that reads still keep leaves the watch running until the keep runs out', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const { client, polls } = scriptedClient();
    feed = createTaskFeed({ client, logger: pino({ level: 'silent' }) });
    const unsubscribe = feed.subscribe(ids, () => undefined)!;
    await vi.advanceTimersByTimeAsync(0);
    (await pollsMade(polls, 1)).answer([recordEvent(snap())]);
    feed.keep(ids, snap(), 1_000);
    await vi.advanceTimersByTimeAsync(0);
    unsubscribe();
    expect(feed.stats().watches).toBe(1);
    await vi.advanceTimersByTimeAsync(3_500);
    expect(feed.stats().watches).toBe(0);
  });
});
