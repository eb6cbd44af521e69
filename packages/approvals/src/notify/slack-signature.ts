/**
 * Verification of Slack's request signature on the interaction endpoint (Slack's "Verifying
 * requests from Slack", signature version `v0`): `X-Slack-Signature` must be `v0=` + hex
 * HMAC-SHA256 of `v0:{X-Slack-Request-Timestamp}:{raw body}` under the app's signing secret, and
 * the timestamp (Unix seconds) within {@link SLACK_SIGNATURE_WINDOW_SECONDS} of now, either way.
 *
 * Own code rather than a Slack SDK's: `@slack/web-api` exposes no verifier, and `@slack/bolt`'s
 * `verifySlackRequest` comes with an HTTP framework this service does not use (it serves hono).
 * The comparison is constant-time (`crypto.timingSafeEqual` over equal-length digests).
 * Deliberately does not: keep a replay cache (a replay inside the window meets the one-vote-per-person
 * rule or a request that is no longer pending, and decides nothing new).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Largest accepted distance between Slack's timestamp and the local clock: 5 minutes, in seconds. */
export const SLACK_SIGNATURE_WINDOW_SECONDS = 300;

/** Outcome of {@link verifySlackSignature}: `ok`, or why the request is refused. */
export type SlackSignatureCheck = 'ok' | 'missing-headers' | 'stale-timestamp' | 'bad-signature';

/** The `X-Slack-Signature` value for `body` sent at `timestamp` (Unix seconds, as a string): `v0=<hex>`. */
export function slackSignature(signingSecret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`, 'utf8').digest('hex')}`;
}

/**
 * Check one request. `timestamp` and `signature` are the raw header values (undefined when absent),
 * `body` the raw request body as received, `nowMs` the local clock (ms since epoch). Never throws.
 */
export function verifySlackSignature(opts: {
  signingSecret: string;
  timestamp: string | undefined;
  signature: string | undefined;
  body: string;
  nowMs: number;
}): SlackSignatureCheck {
  const { timestamp, signature } = opts;
  if (timestamp === undefined || signature === undefined || !/^\d{1,12}$/.test(timestamp)) return 'missing-headers';
  if (Math.abs(opts.nowMs / 1000 - Number(timestamp)) > SLACK_SIGNATURE_WINDOW_SECONDS) return 'stale-timestamp';
  const expected = Buffer.from(slackSignature(opts.signingSecret, timestamp, opts.body), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  // timingSafeEqual needs equal lengths; a different length is a mismatch without comparing.
  if (given.length !== expected.length) return 'bad-signature';
  return timingSafeEqual(given, expected) ? 'ok' : 'bad-signature';
}
