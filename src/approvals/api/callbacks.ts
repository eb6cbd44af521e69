/**
 * Fire-and-forget delivery of the reference service's signed status-change callbacks.
 *
 * On every status change of a request that has a `callback_url`, POST
 * `{request_id, status, generation}` with `X-Countersign-Timestamp` / `X-Countersign-Signature`
 * (see `src/backends/callback-signature.ts`). Delivery is at least zero, at most
 * `1 + retryDelaysMs.length` attempts (default 3); any 2xx ends it. Callbacks are hints: the receiver must read the status
 * endpoint before acting, so a lost callback costs only latency.
 * Deliberately does not: persist an outbox (a crash mid-delivery loses the hint), block or fail
 * the status change that caused it, or log bodies, URLs' paths/queries, or secrets.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { RequestStatus, WireCallbackBody } from './arap-wire.js';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, signCallback } from '../../backends/callback-signature.js';

/** Options of {@link createCallbackDispatcher}. */
export interface CallbackDispatcherOptions {
  /** HMAC key shared with the receiver. */
  secret: string;
  /** Clock, ms since epoch (signing timestamp = floor(now / 1000)). */
  now: () => number;
  logger: Logger;
  /** HTTP client; default global `fetch`. */
  fetch?: typeof fetch;
  /** Waits before attempt 2, 3, … in ms; default `[250, 1000]` (3 attempts in all). */
  retryDelaysMs?: readonly number[];
  /** Per-attempt timeout in ms; default 5000. */
  timeoutMs?: number;
}

/** One callback to deliver. */
export interface CallbackTarget {
  url: string;
  requestId: string;
  status: RequestStatus;
  generation: number;
}

/** The dispatcher. */
export interface CallbackDispatcher {
  /** Start delivering in the background; returns immediately and never throws. */
  notify(target: CallbackTarget): void;
  /** Resolves once every delivery started so far has finished (succeeded or given up). */
  drain(): Promise<void>;
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid-url';
  }
}

/** Create a callback dispatcher. */
export function createCallbackDispatcher(opts: CallbackDispatcherOptions): CallbackDispatcher {
  const doFetch = opts.fetch ?? globalThis.fetch;
  const retryDelaysMs = opts.retryDelaysMs ?? [250, 1000];
  const timeoutMs = opts.timeoutMs ?? 5000;
  const inFlight = new Set<Promise<void>>();

  async function attempt(target: CallbackTarget, rawBody: string): Promise<string | null> {
    const { timestamp, signature } = signCallback(opts.secret, rawBody, opts.now() / 1000);
    try {
      const res = await doFetch(target.url, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          [CALLBACK_TIMESTAMP_HEADER]: timestamp,
          [CALLBACK_SIGNATURE_HEADER]: signature,
        },
        body: rawBody,
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'manual',
      });
      await res.body?.cancel().catch(() => undefined);
      return res.status >= 200 && res.status < 300 ? null : `HTTP ${res.status}`;
    } catch (err) {
      return err instanceof Error ? err.name : 'error';
    }
  }

  async function deliver(target: CallbackTarget): Promise<void> {
    const body: WireCallbackBody = { request_id: target.requestId, status: target.status, generation: target.generation };
    const rawBody = JSON.stringify(body);
    const attempts = 1 + retryDelaysMs.length;
    const log = { requestId: target.requestId, status: target.status, origin: originOf(target.url) };
    for (let i = 0; i < attempts; i += 1) {
      if (i > 0) await delay(retryDelaysMs[i - 1] ?? 0);
      const failure = await attempt(target, rawBody);
      if (failure === null) {
        opts.logger.debug({ ...log, attempt: i + 1 }, 'callback delivered');
        return;
      }
      opts.logger.warn({ ...log, attempt: i + 1, failure }, 'callback attempt failed');
    }
    opts.logger.error({ ...log, attempts }, 'callback delivery gave up');
  }

  return {
    notify(target) {
      const p = deliver(target).catch(() => undefined);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    },
    async drain() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}
