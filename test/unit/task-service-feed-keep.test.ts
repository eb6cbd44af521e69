// Scope: `tasks/get` answered from this instance's task feed (src/mcp/task-service.ts `get`): a read
// the feed serves renews the watch's keep like a read from Temporal does (`TaskFeed.keep`, "lives
// this many intervals after the last read"), so a task polled steadily stays watched instead of
// being described, and its history re-fetched by a new watch, every `retainForIntervals` intervals.
// Another caller's read is answered as unknown and keeps nothing.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { taskOwnerKeyOf } from '../../src/auth/principal-keys.js';
import type { TaskFeed } from '../../src/mcp/task-feed.js';
import { createTaskService } from '../../src/mcp/task-service.js';
import { taskIdFor } from '../../workflows/task-id.js';
import type { TaskSnapshot } from '../../workflows/types.js';

const alice = { iss: 'https://issuer.test', sub: 'alice' };
const now = Date.parse('2026-12-01T10:00:30.000Z');
const snapshot: TaskSnapshot = {
  status: 'working',
  phase: 'awaiting-approval',
  ownerKey: taskOwnerKeyOf(alice),
  policyReason: '',
  createdAt: '2026-12-01T10:00:00.000Z',
  lastUpdatedAt: '2026-12-01T10:00:00.000Z',
  ttlMs: null,
  pollIntervalMs: 2_000,
  generation: 1,
  claimed: false,
};

/** A feed that holds `snapshot` for every run and records `keep` calls. */
function feedDouble(): TaskFeed & { keeps: Array<{ pollIntervalMs: number }> } {
  const keeps: Array<{ pollIntervalMs: number }> = [];
  return {
    keeps,
    peek: () => snapshot,
    keep: (_ids, _s, pollIntervalMs) => void keeps.push({ pollIntervalMs }),
    forget: () => undefined,
    latest: () => snapshot,
    subscribe: () => null,
    stats: () => ({ watches: 1, caughtUp: 1, longPolls: 0 }),
    close: () => undefined,
  };
}

/** Never called: every read here is answered by the feed. */
const unusedClient = {
  connection: {},
  options: { namespace: 'default', dataConverter: {}, identity: 'test', loadedDataConverter: {} },
  workflow: {},
} as unknown as Client;

function service(feed: TaskFeed) {
  return createTaskService({
    client: unusedClient,
    taskQueue: 'q',
    dedupKey: 'k',
    workflowConfig: {
      resultRetentionMs: 86_400_000,
      clientPollIntervalMs: 2_000,
      statusPollInitialMs: 15_000,
      statusPollMaxMs: 43_200_000,
      maxGenerations: 1,
      retryBaseMs: 1_000,
      retryMaxMs: 60_000,
      executionTimeoutMs: 60_000,
      maxRequestWindowMs: 30 * 86_400_000,
    },
    createWaitMs: 1_000,
    feed,
    now: () => now,
    guard: { run: () => Promise.reject(new Error('no Temporal call expected')) } as never,
  });
}

describe('tasks/get served by the task feed', () => {
  it('keeps the watch at every read it serves, with the interval it advertises', async () => {
    const feed = feedDouble();
    const tasks = service(feed);
    const taskId = taskIdFor('approval-0123456789abcdef0123456789abcdef', '5a1c1c52-0b7e-4d3f-9f5e-2a9b1c3d4e5f');
    for (let i = 0; i < 3; i++) expect((await tasks.get(taskId, alice))?.pollIntervalMs).toBe(3_000); // a tenth of 30 s
    expect(feed.keeps).toEqual([{ pollIntervalMs: 3_000 }, { pollIntervalMs: 3_000 }, { pollIntervalMs: 3_000 }]);
  });

  it("another caller's read is unknown and keeps nothing", async () => {
    const feed = feedDouble();
    const taskId = taskIdFor('approval-0123456789abcdef0123456789abcdef', '5a1c1c52-0b7e-4d3f-9f5e-2a9b1c3d4e5f');
    expect(await service(feed).get(taskId, { iss: 'https://issuer.test', sub: 'mallory' })).toBeNull();
    expect(feed.keeps).toEqual([]);
  });
});
