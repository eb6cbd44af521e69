/**
 * Delivery of the reference service's signed status-change callbacks from a durable outbox.
 *
 * Every status change of a request that has a `callback_url` writes one outbox row in the same
 * SQLite transaction as the change (`store.ts`, table `callback_outbox`), so the decision's answer
 * never waits for the receiver and a restart of the service resumes what was not yet delivered.
 * This dispatcher POSTs each row as `{request_id, status, generation}` with
 * `X-Countersign-Timestamp` / `X-Countersign-Signature` (`packages/arap/src/callback-signature.ts`; the
 * HMAC covers the timestamp, the callback URL's request target and the body, signed per attempt):
 *
 * - in the background, at most {@link CallbackDeliveryPolicy.concurrency} attempts at once and at
 *   most {@link CallbackDeliveryPolicy.perReceiverConcurrency} per receiver origin, so one slow
 *   receiver cannot hold every slot;
 * - each attempt bounded by {@link CallbackDeliveryPolicy.attemptTimeoutMs}; any 2xx delivers; a
 *   final refusal ({@link isFinalRefusal}: most 4xx) ends it with state `refused`;
 * - a failed attempt (5xx, 408, 425, 429, network error, timeout) is retried after
 *   {@link callbackRetryDelayMs}: exponential backoff with full jitter and a cap;
 * - after {@link CallbackDeliveryPolicy.maxAttempts} attempts the row is given up (kept with state
 *   `gave-up`, logged at error). The receiver's workflow then learns the status from its fallback
 *   status poll (`COUNTERSIGN_STATUS_POLL_*` in `src/config.ts`): callbacks are hints, the
 *   receiver reads the status endpoint before acting, so a lost callback costs only latency.
 *
 * An attempt in flight when the process stops is delivered again after the restart (its lease,
 * `attemptTimeoutMs`, has passed): delivery is at least once per row while the budget lasts.
 * One pass over the outbox runs at a time (a wake during a pass runs another after it), and an
 * attempt starts only on a row its lease claimed (a compare-and-set on "still pending and due"),
 * so no row is attempted twice at once however the store's awaits interleave.
 * Deliberately does not: log bodies, URL paths or queries, or secrets; follow redirects.
 */
import type { Logger } from 'pino';
import type { WireCallbackBody } from '@countersign/arap';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, callbackRequestTarget, signCallback } from '@countersign/arap';
import type { CallbackOutboxRow, CallbackOutboxStore } from '../store/store.js';

/** When and how often callbacks are attempted. All durations in ms. */
export interface CallbackDeliveryPolicy {
  /** Attempts per callback before it is given up (first attempt included). */
  maxAttempts: number;
  /** Upper bound of the first retry's delay; doubles per failed attempt up to `maxDelayMs`. */
  baseDelayMs: number;
  /** Cap of the delay bound. */
  maxDelayMs: number;
  /** Abort an attempt that has not answered after this long (it counts as failed). */
  attemptTimeoutMs: number;
  /** Attempts in flight at once, over all receivers. */
  concurrency: number;
  /** Attempts in flight at once to one receiver origin (scheme, host, port). */
  perReceiverConcurrency: number;
}

/**
 * Defaults: 200 attempts, delays drawn from [0, min(10 min, 500 ms × 2^(n−1))), 5 s per attempt,
 * 16 in flight, 4 per receiver. The retries of one callback go on for about 16 hours (the first
 * dozen within about 10 minutes, then one every 5 minutes on average), so a receiver down for an
 * outage still gets its callbacks; the receiver's workflow polls only slowly (12 h cap).
 */
export const DEFAULT_CALLBACK_DELIVERY: CallbackDeliveryPolicy = {
  maxAttempts: 200,
  baseDelayMs: 500,
  maxDelayMs: 600_000,
  attemptTimeoutMs: 5_000,
  concurrency: 16,
  perReceiverConcurrency: 4,
};

/**
 * Delay before the next attempt after `failedAttempts` failed ones (1 after the first failure):
 * full jitter, `floor(random() × min(maxDelayMs, baseDelayMs × 2^(failedAttempts − 1)))` ms.
 * `random` returns a number in [0, 1) (default `Math.random`). Pure given `random`.
 * Throws `RangeError` when `failedAttempts` is not a positive integer.
 */
export function callbackRetryDelayMs(
  failedAttempts: number,
  policy: Pick<CallbackDeliveryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  if (!Number.isInteger(failedAttempts) || failedAttempts < 1) throw new RangeError('failedAttempts must be a positive integer');
  const bound = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(failedAttempts - 1, 52));
  return Math.floor(Math.min(Math.max(random(), 0), 1 - Number.EPSILON) * bound);
}

/** Options of {@link createCallbackDispatcher}. */
export interface CallbackDispatcherOptions {
  /** HMAC key shared with the receiver. */
  secret: string;
  /** The outbox the store fills (`ApprovalStore.callbacks`). */
  outbox: CallbackOutboxStore;
  /** Clock, ms since epoch (signing timestamp = floor(now / 1000); due times). */
  now: () => number;
  logger: Logger;
  /** HTTP client; default global `fetch`. */
  fetch?: typeof fetch;
  /** Overrides of {@link DEFAULT_CALLBACK_DELIVERY}. */
  policy?: Partial<CallbackDeliveryPolicy>;
  /** Random source in [0, 1) for the jitter; default `Math.random`. */
  random?: () => number;
}

/** The dispatcher: a pump over the outbox. */
export interface CallbackDispatcher {
  /** Look for due rows now (after a status change); returns immediately and never throws. */
  wake(): void;
  /**
   * Resolves once nothing is in flight and no row is due now: every row is delivered, given up,
   * or waiting for a later retry.
   */
  drain(): Promise<void>;
  /** Stop starting attempts and wait for those in flight (each ends within `attemptTimeoutMs`). Rows left stay in the outbox. */
  stop(): Promise<void>;
}

/**
 * Whether an HTTP status refuses the callback for good: a 4xx other than 408 (timeout), 425 (too
 * early) and 429 (too many requests). Countersign's receiver answers 409 to a callback it already
 * accepted or for no current generation (`src/backends/arap-callbacks.ts`), 400/401 to one it can
 * never accept; retrying would only repeat the answer.
 */
export function isFinalRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 425 && status !== 429;
}

/** Create the dispatcher and start delivering what the outbox holds (rows left by an earlier process included). */
export function createCallbackDispatcher(opts: CallbackDispatcherOptions): CallbackDispatcher {
  const doFetch = opts.fetch ?? globalThis.fetch;
  const policy: CallbackDeliveryPolicy = { ...DEFAULT_CALLBACK_DELIVERY, ...opts.policy };
  const random = opts.random ?? Math.random;
  const { outbox, now, logger } = opts;
  const inFlight = new Map<number, Promise<void>>();
  const perOrigin = new Map<string, number>();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  /** `null` delivered; `{failure, final}` otherwise (`final`: a refusal no retry can change). */
  async function attempt(row: CallbackOutboxRow): Promise<{ failure: string; final: boolean } | null> {
    const body: WireCallbackBody = { request_id: row.requestId, status: row.status, generation: row.generation };
    const rawBody = JSON.stringify(body);
    try {
      // the signature binds the URL's request target: this delivery is valid for this callback URL only
      const { timestamp, signature } = signCallback(opts.secret, callbackRequestTarget(row.url), rawBody, now() / 1000);
      const res = await doFetch(row.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', [CALLBACK_TIMESTAMP_HEADER]: timestamp, [CALLBACK_SIGNATURE_HEADER]: signature },
        body: rawBody,
        signal: AbortSignal.timeout(policy.attemptTimeoutMs),
        redirect: 'manual',
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return null;
      return { failure: `HTTP ${res.status}`, final: isFinalRefusal(res.status) };
    } catch (err) {
      return { failure: err instanceof Error ? err.name : 'error', final: false };
    }
  }

  async function run(row: CallbackOutboxRow, origin: string): Promise<void> {
    const n = row.attempts + 1;
    const log = { requestId: row.requestId, status: row.status, origin, attempt: n };
    const outcome = await attempt(row);
    if (stopped) return; // the store may be closed; the lease lets the next process retry
    if (outcome === null) {
      await outbox.delivered(row.seq, n, now());
      logger.debug(log, 'callback delivered');
      return;
    }
    const { failure } = outcome;
    if (outcome.final) {
      await outbox.refused(row.seq, n, now(), failure);
      logger.warn({ ...log, failure }, 'callback refused by the receiver; not retried');
    } else if (n >= policy.maxAttempts) {
      await outbox.gaveUp(row.seq, n, now(), failure);
      logger.error({ ...log, failure }, 'callback delivery gave up; the receiver falls back to its status poll');
    } else {
      const delay = callbackRetryDelayMs(n, policy, random);
      await outbox.retryAt(row.seq, n, now() + delay, failure);
      logger.warn({ ...log, failure, retryInMs: delay }, 'callback attempt failed');
    }
  }

  /** Claim `row` and start its attempt in the background; false when another pass or process claimed it first. */
  async function start(row: CallbackOutboxRow): Promise<boolean> {
    const origin = row.origin;
    const at = now();
    if (!(await outbox.lease(row.seq, at, at + policy.attemptTimeoutMs))) return false;
    perOrigin.set(origin, (perOrigin.get(origin) ?? 0) + 1);
    const p = run(row, origin)
      .catch((err: unknown) => logger.error({ requestId: row.requestId, err: (err as Error).message }, 'callback delivery failed'))
      .finally(() => {
        inFlight.delete(row.seq);
        const left = (perOrigin.get(origin) ?? 1) - 1;
        if (left <= 0) perOrigin.delete(origin);
        else perOrigin.set(origin, left);
        void pump();
      });
    inFlight.set(row.seq, p);
    return true;
  }

  /** Receivers whose every slot is busy. */
  const saturated = (): string[] =>
    [...perOrigin.entries()].filter(([, n]) => n >= policy.perReceiverConcurrency).map(([origin]) => origin);

  /** One pass: start every due row the limits allow, then sleep until the next startable row falls due. */
  async function pass(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    try {
      while (inFlight.size < policy.concurrency && !stopped) {
        const skip = saturated();
        // Rows of busy receivers are skipped in the query, so they never crowd out the others.
        const row = (await outbox.due(now(), 1, skip)).find((r) => !inFlight.has(r.seq));
        if (row === undefined || stopped) break;
        await start(row);
      }
      if (stopped || inFlight.size >= policy.concurrency) return; // a finishing attempt pumps again
      const next = await outbox.nextDueAtMs(saturated());
      if (next !== null && !stopped) {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(() => void pump(), Math.min(Math.max(0, next - now()), 2 ** 31 - 1));
        timer.unref();
      }
    } catch (err) {
      logger.error({ err: (err as Error).message }, 'callback outbox unavailable');
    }
  }

  let pumping: Promise<void> | undefined;
  let again = false;
  /** Run a pass, one at a time: a call during a pass asks for one more after it; resolves when they are done. Never rejects. */
  function pump(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (pumping !== undefined) {
      again = true;
      return pumping;
    }
    pumping = (async () => {
      do {
        again = false;
        await pass();
      } while (again && !stopped);
    })().finally(() => {
      pumping = undefined;
    });
    return pumping;
  }

  queueMicrotask(() => void pump());

  return {
    wake() {
      queueMicrotask(() => void pump());
    },
    async drain() {
      for (;;) {
        await pump();
        if (inFlight.size === 0) {
          const next = await outbox.nextDueAtMs();
          if (stopped || next === null || next > now()) return;
          // due rows that cannot start (every slot of their receiver is busy elsewhere): wait a tick
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        await Promise.race(inFlight.values());
      }
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await pumping;
      await Promise.allSettled([...inFlight.values()]);
    },
  };
}
