/**
 * HMAC signatures for the approval backend's status-change callbacks (SEP-2848 §Security "Callback
 * authenticity": callbacks are authenticated with an HMAC over the body and a timestamp; this
 * scheme covers the request target too). The
 * backend signs (`packages/approvals/src/api/callbacks.ts`), the MCP front verifies
 * (`src/backends/arap-callbacks.ts`).
 *
 * Scheme (v2): `X-Countersign-Timestamp: <unix seconds>` and
 * `X-Countersign-Signature: v2=<hex HMAC-SHA256(secret, "v2\n<timestamp>\n<request target>\n<raw body>")>`,
 * where the request target is the path and query of the callback URL the workflow gave the backend
 * (RFC 9112 §3.2.1 origin-form, e.g. `/callbacks/arap/approval-<32 hex>/2`), as `new URL(url)`
 * serializes it — the same bytes the backend's HTTP client puts on the request line. Binding the
 * target means a delivery captured in flight cannot be posted to another workflow's or another
 * generation's callback URL: it is refused as unauthenticated (401), not merely as stale. No part
 * can contain a line feed (digits; a serialized URL percent-encodes it), so the string is
 * unambiguous. v1 (timestamp and body only) is no longer accepted: a signature is made per delivery
 * attempt and valid for 300 s, never stored, so no signature in the v1 form outlives an upgrade.
 * Deliberately does not do replay tracking beyond the timestamp window: a callback is only a hint,
 * and the receiver fetches the authoritative status endpoint before acting on it, so a replayed
 * authentic callback can at worst cause one extra status read.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Header carrying the signing time, unix seconds (decimal string). */
export const CALLBACK_TIMESTAMP_HEADER = 'X-Countersign-Timestamp';
/** Header carrying `v2=<64 lowercase hex chars>`. */
export const CALLBACK_SIGNATURE_HEADER = 'X-Countersign-Signature';
/** Default accepted clock skew either side of the receiver's clock, in seconds. */
export const DEFAULT_CALLBACK_WINDOW_SECONDS = 300;
/** The signature scheme's version tag, the prefix of {@link CALLBACK_SIGNATURE_HEADER}'s value. */
export const CALLBACK_SIGNATURE_VERSION = 'v2';

/**
 * The string the HMAC covers: `v2\n<timestamp>\n<request target>\n<raw body>` (module header).
 * Exported so the documentation's example can be checked against it.
 */
export function callbackSignedString(timestamp: string, target: string, body: string): string {
  return `${CALLBACK_SIGNATURE_VERSION}\n${timestamp}\n${target}\n${body}`;
}

function hmacHex(secret: string, timestamp: string, target: string, body: string): string {
  return createHmac('sha256', secret)
    .update(callbackSignedString(timestamp, target, body), 'utf8')
    .digest('hex');
}

/**
 * The request target (path and query, RFC 9112 §3.2.1 origin-form) of an absolute callback URL, as
 * `new URL(url)` serializes it: `http://mcp:8787/callbacks/arap/approval-…/2` → `/callbacks/arap/approval-…/2`.
 * Throws `TypeError` for a string that is not an absolute URL.
 */
export function callbackRequestTarget(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

/**
 * Sign a callback delivery.
 * @param secret shared HMAC key (the service's `callbackSecret`).
 * @param target the request target the delivery is sent to ({@link callbackRequestTarget} of the callback URL).
 * @param body the exact raw body bytes that will be sent (UTF-8 string).
 * @param nowSeconds signing time, unix seconds (fractions are floored).
 * @returns header values: `timestamp` (decimal unix seconds) and `signature` (`v2=<hex>`).
 */
export function signCallback(secret: string, target: string, body: string, nowSeconds: number): { timestamp: string; signature: string } {
  const timestamp = String(Math.floor(nowSeconds));
  return { timestamp, signature: `${CALLBACK_SIGNATURE_VERSION}=${hmacHex(secret, timestamp, target, body)}` };
}

/** Why {@link verifyCallback} rejected a callback. */
export type CallbackRejection = 'missing' | 'malformed' | 'unsupported-version' | 'bad-signature' | 'stale';

/**
 * Verify a received callback (used by the callback receiver, `arap-callbacks.ts`).
 *
 * Order: a missing header → `missing`; a signature of another scheme version (`v1=…`, the
 * timestamp-and-body form) → `unsupported-version`; a timestamp that is not 1–12 decimal digits or
 * a signature that is not `v2=<64 hex>` → `malformed`; an HMAC mismatch (constant-time compare; a
 * delivery signed for another request target, body or timestamp) → `bad-signature`; a timestamp
 * more than `windowSeconds` away from `nowSeconds` in either direction → `stale`.
 * @param target the request target as received (path and query, e.g. `/callbacks/arap/approval-…/2`).
 * @param body the raw request body exactly as received (do not re-serialize parsed JSON).
 * @param headers values of {@link CALLBACK_TIMESTAMP_HEADER} and {@link CALLBACK_SIGNATURE_HEADER}.
 * @param nowSeconds receiver clock, unix seconds.
 * @param windowSeconds accepted skew in seconds, default 300.
 */
export function verifyCallback(
  secret: string,
  target: string,
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
  const normalized = signature.trim().toLowerCase();
  const version = /^(v\d+)=/.exec(normalized)?.[1];
  if (version !== undefined && version !== CALLBACK_SIGNATURE_VERSION) return { ok: false, reason: 'unsupported-version' };
  const sig = /^v2=([0-9a-f]{64})$/.exec(normalized);
  if (!/^\d{1,12}$/.test(timestamp) || sig === null || sig[1] === undefined) {
    return { ok: false, reason: 'malformed' };
  }
  const expected = Buffer.from(hmacHex(secret, timestamp, target, body), 'hex');
  const given = Buffer.from(sig[1], 'hex');
  if (!timingSafeEqual(expected, given)) return { ok: false, reason: 'bad-signature' };
  if (Math.abs(Math.floor(nowSeconds) - Number(timestamp)) > windowSeconds) return { ok: false, reason: 'stale' };
  return { ok: true };
}
