/**
 * The `pollIntervalMs` a task advertises, and the limit on polls that come much faster.
 *
 * SEP-2663: `pollIntervalMs` MAY change over a task's life, and servers MAY rate-limit clients
 * polling more often. A waiting approval changes rarely, so the interval follows the task
 * ({@link pollIntervalFor}):
 * - the base (`COUNTERSIGN_POLL_INTERVAL_MS`, 2 s) while something is about to happen — the
 *   request being submitted, a decision being re-evaluated or retried, the tool executing — and
 *   right after any change (a new task, an answered input, a new generation);
 * - while the task waits for a person (`awaiting-approval`, `input_required`), a tenth of the time
 *   since its last change, in whole seconds, never below the base and never above the cap
 *   (`COUNTERSIGN_POLL_INTERVAL_MAX_MS`, 60 s). A client that honours it sends about 45 reads in
 *   its first 10 minutes and then one a minute: about 10,100 in 7 days instead of 302,400.
 * Terminal tasks advertise none (nothing will change).
 *
 * {@link PollRateLimiter}: per caller and task on this instance, a token bucket of `burst` reads
 * (10) refilled at one per `refillMs` (half the base interval: 1 s by default). The interval is
 * never below the base, so a client that honours it, or even polls twice as often, is never
 * refused; a client hammering the server is, after the burst. A refused read is answered with `-32000` and HTTP 429 `Retry-After`
 * (`pollTooSoon` in `errors.ts`) and costs no Temporal call.
 *
 * The per-task bucket says nothing about a caller who reads a new id each time, and every id that
 * parses costs a Temporal read before it is known to be nobody's task. So each caller also has a
 * budget of *misses* — reads answered "unknown task" (unknown, expired or another principal's, alike):
 * `missBurst` (20) refilled at one per `missRefillMs` (1 s). While it is spent, that caller's reads
 * are refused the same way (`unknownTasksTooOften`) before any lookup. A client that follows its own
 * tasks meets an unknown answer once per task, when the task has expired, and stops.
 *
 * Deliberately does not: change anything the workflow records (the interval is computed at each
 * answer from the snapshot's phase and `lastUpdatedAt`).
 */
import type { TaskSnapshot } from '../../workflows/types.js';

/** The interval's bounds, ms. */
export interface PollIntervalPolicy {
  /** Interval while something is about to happen, and the least ever advertised. */
  baseMs: number;
  /** Most ever advertised, however long the task has waited. */
  maxMs: number;
}

/** Phases in which the task waits for someone outside (a person, an approver). */
const WAITING_PHASES: ReadonlySet<TaskSnapshot['phase']> = new Set(['awaiting-approval']);

/** The interval to advertise for `s` at `nowMs` (module header), ms; undefined for a terminal task. */
export function pollIntervalFor(s: TaskSnapshot, nowMs: number, policy: PollIntervalPolicy): number | undefined {
  if (s.phase === 'terminal') return undefined;
  const waiting = s.status === 'input_required' || WAITING_PHASES.has(s.phase);
  if (!waiting) return policy.baseMs;
  const sinceChangeMs = Math.max(0, nowMs - Date.parse(s.lastUpdatedAt));
  const tenth = Math.round(sinceChangeMs / 10 / 1000) * 1000;
  return Math.min(policy.maxMs, Math.max(policy.baseMs, tenth));
}

/** Options of the {@link PollRateLimiter}. */
export interface PollRateLimitOptions {
  /** Reads allowed in a burst before the refill rate applies; default 10. */
  burst?: number;
  /** One read is refilled per this many ms; default 1000 (the front passes half the base interval). */
  refillMs?: number;
  /** Callers × tasks tracked at once; the least recently seen is forgotten past it. Default 100,000. */
  maxTracked?: number;
  /** "Unknown task" answers a caller may get in a burst before its reads are refused; default 20. */
  missBurst?: number;
  /** One miss is refilled per this many ms; default 1000. */
  missRefillMs?: number;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** A refused read: poll again after `retryAfterMs`. */
export interface PollTooSoon {
  retryAfterMs: number;
}

/** A token bucket: `tokens` left at time `at` (ms). */
interface Bucket {
  tokens: number;
  at: number;
}

/** The per-caller, per-task read limit of one instance, and each caller's budget of unknown-task answers (module header). */
export class PollRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly misses = new Map<string, Bucket>();
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly maxTracked: number;
  private readonly missBurst: number;
  private readonly missRefillMs: number;
  private readonly now: () => number;

  constructor(opts: PollRateLimitOptions = {}) {
    this.burst = opts.burst ?? 10;
    this.refillMs = opts.refillMs ?? 1000;
    this.maxTracked = opts.maxTracked ?? 100_000;
    this.missBurst = opts.missBurst ?? 20;
    this.missRefillMs = opts.missRefillMs ?? 1000;
    this.now = opts.now ?? Date.now;
  }

  /** Take one read for `key` (the caller's owner key and the task id): null when allowed, else how long to wait. */
  take(key: string): PollTooSoon | null {
    return this.takeFrom(this.buckets, key, this.burst, this.refillMs);
  }

  /**
   * Whether the caller `ownerKey` may read a task now: null when allowed, else how long to wait
   * because its budget of unknown-task answers is spent ({@link missed}). Takes nothing.
   */
  admit(ownerKey: string): PollTooSoon | null {
    const b = this.misses.get(ownerKey);
    if (!b) return null;
    const tokens = Math.min(this.missBurst, b.tokens + (this.now() - b.at) / this.missRefillMs);
    return tokens < 1 ? { retryAfterMs: Math.ceil((1 - tokens) * this.missRefillMs) } : null;
  }

  /**
   * Both limits for one `tasks/get` of `taskId` by `ownerKey`, in the order the front applies them:
   * the caller's miss budget ({@link admit}), then the task's bucket ({@link take}, which takes a read).
   * Null when the read may go ahead; else which limit refused it and how long to wait.
   */
  check(ownerKey: string, taskId: string): (PollTooSoon & { scope: 'unknown-tasks' | 'task' }) | null {
    const misses = this.admit(ownerKey);
    if (misses) return { ...misses, scope: 'unknown-tasks' };
    const tooSoon = this.take(`${ownerKey} ${taskId}`);
    return tooSoon ? { ...tooSoon, scope: 'task' } : null;
  }

  /** A read by `ownerKey` was answered "unknown task": spend one of its misses. */
  missed(ownerKey: string): void {
    this.takeFrom(this.misses, ownerKey, this.missBurst, this.missRefillMs);
  }

  private takeFrom(buckets: Map<string, Bucket>, key: string, burst: number, refillMs: number): PollTooSoon | null {
    const t = this.now();
    const b = buckets.get(key) ?? { tokens: burst, at: t };
    buckets.delete(key); // re-inserted last: the map's order is least recently seen first
    b.tokens = Math.min(burst, b.tokens + (t - b.at) / refillMs);
    b.at = t;
    if (b.tokens < 1) {
      buckets.set(key, b);
      return { retryAfterMs: Math.ceil((1 - b.tokens) * refillMs) };
    }
    b.tokens -= 1;
    buckets.set(key, b);
    if (buckets.size > this.maxTracked) buckets.delete(buckets.keys().next().value!);
    return null;
  }
}
