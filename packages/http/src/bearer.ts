/**
 * Bearer-token and shared-secret checks in constant time, for every HTTP surface that takes a
 * configured token (the approval service's API, the inbox sessions, the MCP role's `/metrics`).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Constant-time string equality: compares SHA-256 digests of the UTF-8 bytes, so lengths may differ. */
export function safeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest();
  const db = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(da, db);
}

/**
 * True when `authorization` (an `Authorization` header value; `null`/`undefined` when absent) is
 * exactly `Bearer <token>` (scheme case-insensitive, RFC 6750 §2.1), compared with {@link safeEqual}.
 */
export function bearerMatches(authorization: string | null | undefined, token: string): boolean {
  if (authorization === undefined || authorization === null) return false;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
  return m !== null && m[1] !== undefined && safeEqual(m[1], token);
}
