/**
 * HMAC signatures for the approval backend's status-change callbacks (SEP-2848 §Security "Callback
 * authenticity": callbacks are authenticated with an HMAC over the body and a timestamp). The
 * backend signs (`src/approvals/api/callbacks.ts`), the MCP front verifies
 * (`src/backends/arap-callbacks.ts`).
 *
 * Scheme (v1): `X-Countersign-Timestamp: <unix seconds>` and
 * `X-Countersign-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>`.
 * Deliberately does not do replay tracking beyond the timestamp window: a callback is only a hint,
 * and the receiver fetches the authoritative status endpoint before acting on it, so a replayed
 * authentic callback can at worst cause one extra status read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying the signing time, unix seconds (decimal string). */
export const CALLBACK_TIMESTAMP_HEADER = 'X-Countersign-Timestamp';
/** Header carrying `v1=<64 lowercase hex chars>`. */
export const CALLBACK_SIGNATURE_HEADER = 'X-Countersign-Signature';
/** Default accepted clock skew either side of the receiver's clock, in seconds. */
export const DEFAULT_CALLBACK_WINDOW_SECONDS = 300;

function hmacHex(secret: string, timestamp: string, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

/**
 * Sign a callback body.
 * @param secret shared HMAC key (the service's `callbackSecret`).
 * @param body the exact raw body bytes that will be sent (UTF-8 string).
 * @param nowSeconds signing time, unix seconds (fractions are floored).
 * @returns header values: `timestamp` (decimal unix seconds) and `signature` (`v1=<hex>`).
 */
export function signCallback(secret: string, body: string, nowSeconds: number): { timestamp: string; signature: string } {
  const timestamp = String(Math.floor(nowSeconds));
  return { timestamp, signature: `v1=${hmacHex(secret, timestamp, body)}` };
}

/** Why {@link verifyCallback} rejected a callback. */
export type CallbackRejection = 'missing' | 'malformed' | 'bad-signature' | 'stale';

/**
 * Verify a received callback (used by the callback receiver, `arap-callbacks.ts`).
 *
 * Order: a missing header → `missing`; a timestamp that is not 1–12 decimal digits or a
 * signature that is not `v1=<64 hex>` → `malformed`; an HMAC mismatch (constant-time compare)
 * → `bad-signature`; a timestamp more than `windowSeconds` away from `nowSeconds` in either
 * direction → `stale`.
 * @param body the raw request body exactly as received (do not re-serialize parsed JSON).
 * @param headers values of {@link CALLBACK_TIMESTAMP_HEADER} and {@link CALLBACK_SIGNATURE_HEADER}.
 * @param nowSeconds receiver clock, unix seconds.
 * @param windowSeconds accepted skew in seconds, default 300.
 */
export function verifyCallback(
  secret: string,
  body: string,
  headers: { timestamp?: string | null; signature?: string | null },
  nowSeconds: number,
  windowSeconds: number = DEFAULT_CALLBACK_WINDOW_SECONDS,
): { ok: true } | { ok: false; reason: CallbackRejection } {
  const { timestamp, signature } = headers;
  if (
    timestamp === undefined ||
    timestamp === null ||
    timestamp === '' ||
    signature === undefined ||
    signature === null ||
    signature === ''
  ) {
    return { ok: false, reason: 'missing' };
  }
  const sig = /^v1=([0-9a-f]{64})$/.exec(signature.trim().toLowerCase());
  if (!/^\d{1,12}$/.test(timestamp) || sig === null || sig[1] === undefined) {
    return { ok: false, reason: 'malformed' };
  }
  const expected = Buffer.from(hmacHex(secret, timestamp, body), 'hex');
  const given = Buffer.from(sig[1], 'hex');
  if (!timingSafeEqual(expected, given)) return { ok: false, reason: 'bad-signature' };
  if (Math.abs(Math.floor(nowSeconds) - Number(timestamp)) > windowSeconds) return { ok: false, reason: 'stale' };
  return { ok: true };
}
