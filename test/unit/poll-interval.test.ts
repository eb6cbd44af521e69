// Scope: the advertised pollIntervalMs (src/mcp/poll-interval.ts) — short while something is about
// to happen, growing with the time a waiting task has not changed, capped — and the per-caller,
// per-task read limit (SEP-2663: servers MAY rate-limit clients polling faster than the interval).
import { describe, expect, it } from 'vitest';
import { PollRateLimiter, pollIntervalFor, type PollIntervalPolicy } from '../../src/mcp/poll-interval.js';
import type { TaskSnapshot } from '../../workflows/types.js';

const policy: PollIntervalPolicy = { baseMs: 2_000, maxMs: 60_000 };
const T0 = Date.parse('2026-12-01T10:00:00.000Z');

function snap(over: Partial<TaskSnapshot>): TaskSnapshot {
  return {
    status: 'working',
    phase: 'awaiting-approval',
    ownerKey: 'o',
    policyReason: '',
    createdAt: new Date(T0).toISOString(),
    lastUpdatedAt: new Date(T0).toISOString(),
    ttlMs: null,
    pollIntervalMs: 2_000,
    generation: 1,
    claimed: false,
    ...over,
  };
}

describe('pollIntervalFor', () => {
  it('a task that just changed advertises the base interval', () => {
    expect(pollIntervalFor(snap({}), T0, policy)).toBe(2_000);
    expect(pollIntervalFor(snap({}), T0 + 20_000, policy)).toBe(2_000);
  });

  it('a task waiting for an approver advertises a tenth of the time since its last change, in whole seconds', () => {
    expect(pollIntervalFor(snap({}), T0 + 60_000, policy)).toBe(6_000);
    expect(pollIntervalFor(snap({}), T0 + 5 * 60_000, policy)).toBe(30_000);
    expect(pollIntervalFor(snap({ status: 'input_required', phase: 'awaiting-approval' }), T0 + 120_000, policy)).toBe(12_000);
  });

  it('however long the task waits, the interval never passes the cap', () => {
    expect(pollIntervalFor(snap({}), T0 + 7 * 86_400_000, policy)).toBe(60_000);
  });

  it('while something is about to happen (submitting, re-evaluating, retrying, executing) the base interval, whatever the age', () => {
    for (const phase of ['submitting', 'resubmitting', 're-evaluating', 'retry-wait', 'executing'] as const)
      expect(pollIntervalFor(snap({ phase }), T0 + 86_400_000, policy)).toBe(2_000);
  });

  it('a terminal task advertises no interval', () => {
    expect(pollIntervalFor(snap({ status: 'completed', phase: 'terminal' }), T0, policy)).toBeUndefined();
  });

  it('a client that honours the interval sends about 10,100 reads over a 7-day wait, not 302,400', () => {
    let reads = 0;
    for (let t = T0; t < T0 + 7 * 86_400_000; reads++) t += pollIntervalFor(snap({}), t, policy)!;
    expect(reads).toBeGreaterThan(10_000);
    expect(reads).toBeLessThan(10_300);
  });
});

describe('PollRateLimiter', () => {
  it('a burst of reads passes, the next is refused with how long to wait, and one read is refilled per refill interval', () => {
    let now = 0;
    const limiter = new PollRateLimiter({ burst: 3, refillMs: 1000, now: () => now });
    expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([null, null, null]);
    expect(limiter.take('a')).toEqual({ retryAfterMs: 1000 });
    now += 400;
    expect(limiter.take('a')).toEqual({ retryAfterMs: 600 });
    now += 600;
    expect(limiter.take('a')).toBeNull();
  });

  it('a client reading at the refill rate is never refused', () => {
    let now = 0;
    const limiter = new PollRateLimiter({ burst: 2, refillMs: 1000, now: () => now });
    for (let i = 0; i < 100; i++, now += 1000) expect(limiter.take('k')).toBeNull();
  });

  it('keys are independent: one caller or task exhausting its bucket does not limit another', () => {
    const limiter = new PollRateLimiter({ burst: 1, refillMs: 1000, now: () => 0 });
    expect(limiter.take('alice task-1')).toBeNull();
    expect(limiter.take('alice task-1')).not.toBeNull();
    expect(limiter.take('alice task-2')).toBeNull();
    expect(limiter.take('bob task-1')).toBeNull();
  });

  it('past maxTracked keys the least recently seen is forgotten (bounded memory), and starts again with a full bucket', () => {
    const limiter = new PollRateLimiter({ burst: 1, refillMs: 1000, maxTracked: 2, now: () => 0 });
    expect(limiter.take('a')).toBeNull();
    expect(limiter.take('b')).toBeNull();
    expect(limiter.take('c')).toBeNull(); // 'a' forgotten
    expect(limiter.take('a')).toBeNull();
    expect(limiter.take('c')).not.toBeNull();
  });

  it('a caller whose reads were answered unknown task past its miss budget is refused before any lookup, whatever the id, until a miss is refilled; another caller is not', () => {
    let now = 0;
    const limiter = new PollRateLimiter({ missBurst: 3, missRefillMs: 1000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(limiter.admit('mallory')).toBeNull();
      limiter.missed('mallory');
    }
    expect(limiter.admit('mallory')).toEqual({ retryAfterMs: 1000 });
    expect(limiter.admit('alice')).toBeNull();
    now += 250;
    expect(limiter.admit('mallory')).toEqual({ retryAfterMs: 750 });
    now += 750;
    expect(limiter.admit('mallory')).toBeNull();
  });

  it('admitting takes nothing: a caller who never meets an unknown task is never refused for misses', () => {
    const limiter = new PollRateLimiter({ missBurst: 1, now: () => 0 });
    for (let i = 0; i < 100; i++) expect(limiter.admit('alice')).toBeNull();
  });
});
