/**
 * Bearer token extraction from an HTTP `Authorization` header (RFC 6750 §2.1).
 *
 * Deliberately does not: read tokens from query strings or form bodies (RFC 6750 §2.2/§2.3 are
 * not supported), verify anything, or produce the `WWW-Authenticate` challenge.
 */

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The token of `Authorization: Bearer <token>`, or `null` when the header is absent, uses another
 * scheme, has no token, or the token is not an RFC 6750 `b64token`. The scheme is
 * case-insensitive (RFC 9110 §11.1); surrounding spaces are ignored.
 */
export function extractBearer(authorizationHeader: string | null | undefined): string | null {
  if (typeof authorizationHeader !== 'string') return null;
  const m = BEARER.exec(authorizationHeader.trim());
  return m?.[1] ?? null;
}
