/**
 * Back-off for password sign-ins (the inbox form and HTTP Basic on the API): every failed attempt
 * is logged (approver id as typed, shown safely, and the client address; never the password), and
 * after {@link SIGN_IN_MAX_FAILURES} failures within {@link SIGN_IN_WINDOW_MS} for the same
 * approver id or the same client address, further attempts are refused with 429 and `Retry-After`
 * until the window has passed, whether or not the password is right. In memory, per process.
 * The address is the routes' to find (`clientAddress` of `packages/http/src/client-address.ts`: the
 * socket's, or `X-Forwarded-For` from a configured trusted proxy); an `unknown` address (no socket,
 * in-process requests) is never throttled by address.
 * Deliberately does not: lock accounts permanently.
 *
 * Why not `rate-limiter-flexible` (its `RateLimiterMemory` was considered): it counts in fixed
 * windows opened by the first failure, where this counts the failures of the last
 * {@link SIGN_IN_WINDOW_MS} (a sliding window, so `Retry-After` is when the oldest counted failure
 * leaves it); it reads `Date.now` and expires keys with timers, where the approval service runs on
 * its injected clock (tests and the simulated-time bench move it); and its API is asynchronous,
 * where the routes ask synchronously before they check a password. The map below is the whole
 * mechanism.
 */
import type { Logger } from 'pino';
import { visible } from './format.js';

/** Failures allowed per id or address within the window. */
export const SIGN_IN_MAX_FAILURES = 5;
/** Window of the failure count, ms. */
export const SIGN_IN_WINDOW_MS = 60_000;

/** The throttle. */
export interface SignInThrottle {
  /** Seconds to wait when `id` or `address` is throttled, else 0. */
  retryAfterSeconds(id: string, address: string): number;
  /** Record a failed attempt (and log it). */
  failed(id: string, address: string, channel: 'inbox' | 'api'): void;
  /** Record a success: clears the id's failures. */
  succeeded(id: string): void;
}

/** Create a throttle over a clock. */
export function createSignInThrottle(deps: { now: () => number; logger: Logger }): SignInThrottle {
  const failures = new Map<string, number[]>();
  const recent = (key: string, at: number): number[] => {
    const list = (failures.get(key) ?? []).filter((t) => at - t < SIGN_IN_WINDOW_MS);
    if (list.length === 0) failures.delete(key);
    else failures.set(key, list);
    return list;
  };
  const wait = (key: string, at: number): number => {
    const list = recent(key, at);
    if (list.length < SIGN_IN_MAX_FAILURES) return 0;
    const oldest = list[list.length - SIGN_IN_MAX_FAILURES] ?? at;
    return Math.max(1, Math.ceil((oldest + SIGN_IN_WINDOW_MS - at) / 1000));
  };
  const idKey = (id: string) => `id:${id.toLowerCase()}`;
  const addrKey = (address: string) => `addr:${address}`;
  return {
    retryAfterSeconds(id, address) {
      const at = deps.now();
      return Math.max(wait(idKey(id), at), address === 'unknown' ? 0 : wait(addrKey(address), at));
    },
    failed(id, address, channel) {
      const at = deps.now();
      for (const key of [idKey(id), addrKey(address)]) {
        const list = recent(key, at);
        list.push(at);
        failures.set(key, list);
      }
      if (failures.size > 10_000) for (const key of [...failures.keys()]) recent(key, at); // drop stale entries
      deps.logger.warn({ approver: visible(id.slice(0, 100)), address, channel }, 'approver sign-in failed');
    },
    succeeded(id) {
      failures.delete(idKey(id));
    },
  };
}
