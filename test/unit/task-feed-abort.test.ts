// Scope: src/mcp/task-feed.ts's history long-polls and their abort signals, against a stand-in for
// the Temporal client that does what @temporalio/client's RPC does with a call's signal (adds an
// abort listener and never removes it): a watch that long-polls many times leaves no signal with
// more than that one listener, and stopping the watch still aborts the long-poll in flight.
import { getEventListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createTaskFeed } from '../../src/mcp/task-feed.js';

/** A client whose every history long-poll answers "nothing new, more to come" until `hang` is set, then waits for its signal. */
function standIn() {
  const signals: AbortSignal[] = [];
  const state = { hang: false, calls: 0 };
  let current: AbortSignal | undefined;
  const client = {
    options: { namespace: 'default', loadedDataConverter: { payloadCodecs: [], payloadConverter: { fromPayload: () => undefined } } },
    connection: {
      async withAbortSignal<R>(signal: AbortSignal, fn: () => Promise<R>): Promise<R> {
        signal.addEventListener('abort', () => undefined); // as the Temporal client's RPC does, never removed
        signals.push(signal);
        current = signal;
        return fn();
      },
      withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    },
    workflowService: {
      async getWorkflowExecutionHistory() {
        state.calls++;
        const signal = current!;
        if (state.hang)
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }));
        await new Promise((r) => setTimeout(r, 1));
        return { history: { events: [] }, nextPageToken: new Uint8Array([1]) };
      },
    },
  };
  return { client: client as unknown as Client, signals, state };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe('task feed long-polls', () => {
  it('a watch that long-polls many times leaves no abort signal with more than the one listener each call adds', async () => {
    const { client, signals, state } = standIn();
    const feed = createTaskFeed({ client, logger: pino({ level: 'silent' }) });
    feed.subscribe({ workflowId: 'wf', runId: 'run' }, () => undefined);
    await until(() => state.calls >= 30);
    feed.close();
    const most = Math.max(...signals.map((s) => getEventListeners(s, 'abort').length));
    expect(most).toBe(1);
  });

  it('stopping the watch aborts the long-poll in flight', async () => {
    const { client, signals, state } = standIn();
    state.hang = true;
    const feed = createTaskFeed({ client, logger: pino({ level: 'silent' }) });
    feed.subscribe({ workflowId: 'wf', runId: 'run' }, () => undefined);
    await until(() => state.calls === 1);
    expect(signals.at(-1)!.aborted).toBe(false);
    feed.close();
    expect(signals.at(-1)!.aborted).toBe(true);
  });
});
