// Scope: the MCP instance's follower reports (src/mcp/follower-reports.ts): one report per task per
// interval, a held subscription reported again each interval, at most four in flight, a task the
// service does not know (404) never reported again, and only tasks waiting for a decision reported.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FollowerReportBody } from '@countersign/arap';
import { createFollowerReporter, type FollowerReporter, type ReportOutcome } from '../../src/mcp/follower-reports.js';
import type { TaskSnapshot } from '../../workflows/types.js';

const waiting = { status: 'working', phase: 'awaiting-approval' } as TaskSnapshot;
const client = { name: 'agent-x', version: '1.2' };

/** A reporter over a recording sender whose answers the test releases; the clock is the test's. */
function harness(opts: { outcome?: ReportOutcome; intervalMs?: number } = {}) {
  let nowMs = 1_000_000;
  const sent: Array<{ taskRef: string; body: FollowerReportBody }> = [];
  const pending: Array<() => void> = [];
  const reporter = createFollowerReporter({
    intervalMs: opts.intervalMs ?? 60_000,
    now: () => nowMs,
    send: (taskRef, body) => {
      sent.push({ taskRef, body });
      return new Promise((resolve) => pending.push(() => resolve(opts.outcome ?? 'ok')));
    },
  });
  const settle = async () => {
    for (const p of pending.splice(0)) p();
    await new Promise((r) => setImmediate(r));
  };
  return { reporter, sent, settle, advance: (ms: number) => (nowMs += ms) };
}

let open: FollowerReporter[] = [];
afterEach(() => {
  for (const r of open) r.close();
  open = [];
  vi.useRealTimers();
});

describe('follower reports', () => {
  it('a task read many times within the interval is reported once, and again once the interval has passed', async () => {
    const h = harness();
    open.push(h.reporter);
    for (let i = 0; i < 10; i++) h.reporter.read('t1', waiting, client);
    await h.settle();
    expect(h.sent).toEqual([{ taskRef: 't1', body: { subscribed: false, client } }]);
    h.advance(59_999);
    h.reporter.read('t1', waiting, client);
    expect(h.sent).toHaveLength(1);
    h.advance(1);
    h.reporter.read('t1', waiting, client);
    expect(h.sent).toHaveLength(2);
  });

  it('each task has its own interval', () => {
    const h = harness();
    open.push(h.reporter);
    h.reporter.read('t1', waiting, client);
    h.reporter.read('t2', waiting, undefined);
    expect(h.sent.map((s) => s.taskRef)).toEqual(['t1', 't2']);
    expect(h.sent[1]!.body).toEqual({ subscribed: false });
  });

  it('at most four reports are in flight: a fifth task read meanwhile is dropped, and reported by its next read', async () => {
    const h = harness();
    open.push(h.reporter);
    for (const t of ['a', 'b', 'c', 'd', 'e']) h.reporter.read(t, waiting, client);
    expect(h.sent.map((s) => s.taskRef)).toEqual(['a', 'b', 'c', 'd']);
    expect(h.reporter.stats()).toMatchObject({ inFlight: 4, dropped: 1 });
    await h.settle();
    h.reporter.read('e', waiting, client);
    expect(h.sent.map((s) => s.taskRef)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('a task the approval service answers 404 for is never reported again', async () => {
    const h = harness({ outcome: 'gone' });
    open.push(h.reporter);
    h.reporter.read('t1', waiting, client);
    await h.settle();
    h.advance(120_000);
    h.reporter.read('t1', waiting, client);
    h.reporter.hold('t1', client, true);
    expect(h.sent).toHaveLength(1);
  });

  it('a failed report is not retried by itself: the next read after the interval reports again', async () => {
    const h = harness({ outcome: 'failed' });
    open.push(h.reporter);
    h.reporter.read('t1', waiting, client);
    await h.settle();
    h.reporter.read('t1', waiting, client);
    expect(h.sent).toHaveLength(1);
    h.advance(60_000);
    h.reporter.read('t1', waiting, client);
    expect(h.sent).toHaveLength(2);
  });

  it('only a task waiting for a decision is reported by a read (not one executing or ended)', () => {
    const h = harness();
    open.push(h.reporter);
    h.reporter.read('t1', { status: 'working', phase: 'executing' } as TaskSnapshot, client);
    h.reporter.read('t2', { status: 'completed', phase: 'terminal' } as TaskSnapshot, client);
    h.reporter.read('t3', { status: 'input_required', phase: 'submitting' } as TaskSnapshot, client);
    expect(h.sent).toEqual([]);
  });

  it('a subscription is reported at once even right after a read, then every interval while held, and no more once released', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const h = harness({ intervalMs: 1000 });
    open.push(h.reporter);
    h.reporter.read('t1', waiting, client);
    const release = h.reporter.hold('t1', client, true);
    expect(h.sent.map((s) => s.body.subscribed)).toEqual([false, true]);
    await h.settle();
    h.advance(1000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(h.sent.map((s) => s.body.subscribed)).toEqual([false, true, true]);
    await h.settle();
    release();
    release(); // idempotent
    h.advance(5000);
    await vi.advanceTimersByTimeAsync(5000);
    expect(h.sent).toHaveLength(3);
  });

  it('after close nothing is reported', () => {
    const h = harness();
    h.reporter.close();
    h.reporter.read('t1', waiting, client);
    h.reporter.hold('t2', client, true);
    expect(h.sent).toEqual([]);
  });
});
