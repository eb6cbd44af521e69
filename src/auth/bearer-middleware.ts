/**
 * Bearer-token authentication as hono middleware, for a protected resource in the sense of MCP
 * authorization and RFC 9728: `Authorization: Bearer <token>` (RFC 6750 §2.1, `bearer.ts`) is
 * verified with a `TokenVerifier` (`verify-token.ts`), and the resulting principal and token are
 * put on the request context for the handler.
 *
 * A missing token is 401 `{"error":"unauthorized", …}` with
 * `WWW-Authenticate: Bearer resource_metadata="<url>"`; a token that fails verification is 401
 * `{"error":"invalid_token", …}` with `…, error="invalid_token"` added (RFC 6750 §3, RFC 9728 §5.1).
 * Deliberately does not: check scopes (policy decides), log or echo the token (a rejection logs
 * only the `AuthError` code), or read tokens from anywhere but the `Authorization` header.
 */
import type { MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import { extractBearer } from './bearer.js';
import type { Principal } from './principal.js';
import type { TokenVerifier } from './verify-token.js';

/** Context variables set by {@link bearerAuth} for the handlers after it. */
export interface BearerAuthVariables {
  /** The verified caller. */
  principal: Principal;
  /** The bearer token as presented (already verified); never log it. */
  bearerToken: string;
}

// Typed `c.get('principal')` / `c.get('bearerToken')` in any hono app, as hono's own middleware
// (request-id, jwt) declares its variables; they are set only behind `bearerAuth`.
declare module 'hono' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- module augmentation merges into hono's interface
  interface ContextVariableMap extends BearerAuthVariables {}
}

/** Options of {@link bearerAuth}. */
export interface BearerAuthOptions {
  verifier: TokenVerifier;
  /** Absolute URL of this resource's RFC 9728 metadata, advertised in the 401 challenge. */
  resourceMetadataUrl: string;
  /** Where a rejected token is logged (at `info`, with the `AuthError` code only). */
  logger: Logger;
}

/**
 * Middleware that admits only requests with a valid bearer token (see the module header for the
 * 401 answers) and sets `principal` and `bearerToken` on the context.
 */
export function bearerAuth(opts: BearerAuthOptions): MiddlewareHandler {
  const challenge = (error?: string) =>
    new Response(
      JSON.stringify({ error: error ?? 'unauthorized', error_description: 'A valid bearer token for this resource is required.' }),
      {
        status: 401,
        headers: {
          'content-type': 'application/json',
          'www-authenticate': `Bearer resource_metadata="${opts.resourceMetadataUrl}"${error ? `, error="${error}"` : ''}`,
        },
      },
    );
  return async (c, next) => {
    const token = extractBearer(c.req.header('authorization'));
    if (!token) return challenge();
    let principal: Principal;
    try {
      principal = await opts.verifier.verify(token);
    } catch (err) {
      opts.logger.info({ reason: (err as { code?: string }).code ?? 'invalid' }, 'bearer token rejected');
      return challenge('invalid_token');
    }
    c.set('principal', principal);
    c.set('bearerToken', token);
    await next();
  };
}
