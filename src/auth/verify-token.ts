/**
 * Bearer access-token verification (JWT, RFC 7519 / RFC 9068 profile) → `Principal`.
 *
 * Checks: signature against the issuer's JWKS (remote with caching, or a local set), algorithm in
 * an asymmetric allow-list (`ES256`, `RS256`, `PS256`, `EdDSA`: never `none`, never HMAC), `iss`
 * exactly equal to the configured issuer, `aud` containing the configured audience (RFC 8707
 * resource; MCP authorization §Token audience binding), `exp` present and not passed, `nbf` not in
 * the future (both with a clock tolerance), `sub` present, and — when the token carries a
 * `resource` claim (RFC 8707 §2: the resource the client asked the token for; a string or an
 * array of absolute URIs) — that claim names this resource too.
 *
 * Verified tokens are remembered (exact token string → principal and `exp`) for at most
 * `verifiedCacheMs` (default 60 s, bounded to `verifiedCacheSize` entries), so a client sending the
 * same token on every request pays the signature check once per minute rather than per request. A
 * hit re-checks `exp` with the same tolerance, so expiry is exact; only a signing key withdrawn from
 * the JWKS is honoured up to that long after (the remote JWKS is itself cached for minutes). Only
 * successes are cached.
 *
 * Deliberately does not: check scopes or roles (policy decides), introspect opaque tokens
 * (RFC 7662), check revocation, or read the token's `client_id`. Error messages are fixed
 * strings (plus a claim name) and never contain the token.
 */
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { Principal } from './principal.js';

/** Why a token was refused. `missing` → no token; `expired` → `exp` passed; `invalid` → anything else. */
export type AuthErrorCode = 'missing' | 'invalid' | 'expired';

/**
 * Authentication failure. Local error (never serialized as is): the MCP front maps it to HTTP 401
 * with `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1). `message` is safe to log
 * and to return as `error_description`: it never contains the token.
 */
export class AuthError extends Error {
  constructor(
    readonly code: AuthErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/** Options of `createTokenVerifier`. */
export interface TokenVerifierOptions {
  /** Expected `iss`, compared exactly (no trailing-slash normalization). */
  issuer: string;
  /** This resource's identifier; the token's `aud` (string or array) must contain it. */
  audience: string;
  /** Issuer's JWKS URL; fetched lazily, cached, refetched on an unknown `kid` (after a 30 s cooldown). */
  jwksUrl?: string;
  /** A fixed JWKS, used when `jwksUrl` is absent (tests, pinned keys). */
  jwks?: JSONWebKeySet;
  /** Allowed clock skew for `exp` / `nbf`, in seconds; default 30. */
  clockToleranceSeconds?: number;
  /** Minimum time between two JWKS fetches triggered by an unknown `kid`, in ms; default 30000. */
  jwksCooldownMs?: number;
  /** How long a verified token is remembered, ms; default 60000; 0 disables the cache. */
  verifiedCacheMs?: number;
  /** Most tokens remembered at once (oldest dropped first); default 10000. */
  verifiedCacheSize?: number;
}

/** A token verifier. */
export interface TokenVerifier {
  /**
   * Verify `token` (the bare JWT, without `Bearer `). Resolves to `{iss, sub, act?}` where `act` is
   * the RFC 8693 §4.1 actor chain flattened outermost (current actor) first. Rejects with
   * `AuthError` (`missing` for an empty token, `expired`, or `invalid`).
   */
  verify(token: string): Promise<Principal>;
}

/** Algorithms accepted: asymmetric only (RFC 8725 §3.1, §3.2). */
export const ALLOWED_ALGORITHMS = ['ES256', 'RS256', 'PS256', 'EdDSA'] as const;

const MAX_ACT_DEPTH = 8;

function flattenAct(act: unknown): NonNullable<Principal['act']> {
  const chain: NonNullable<Principal['act']> = [];
  let cur: unknown = act;
  while (cur !== undefined) {
    if (chain.length >= MAX_ACT_DEPTH) throw new AuthError('invalid', 'token act claim is nested too deeply');
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) {
      throw new AuthError('invalid', 'token act claim is malformed');
    }
    const { sub, iss, act: inner } = cur as Record<string, unknown>;
    if (typeof sub !== 'string' || sub === '' || (iss !== undefined && typeof iss !== 'string')) {
      throw new AuthError('invalid', 'token act claim is malformed');
    }
    chain.push(iss === undefined ? { sub } : { iss, sub });
    cur = inner;
  }
  return chain;
}

function toAuthError(err: unknown): AuthError {
  if (err instanceof AuthError) return err;
  if (err instanceof errors.JWTExpired) return new AuthError('expired', 'token expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    return new AuthError('invalid', `token claim "${err.claim}" rejected`);
  }
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) {
    return new AuthError('invalid', 'token algorithm not allowed');
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return new AuthError('invalid', 'token signature invalid');
  if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) {
    return new AuthError('invalid', 'no unique signing key matches the token');
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return new AuthError('invalid', 'token malformed');
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
    return new AuthError('invalid', 'issuer signing keys unavailable');
  }
  return new AuthError('invalid', 'token could not be verified');
}

/** A fresh copy, so a caller changing its principal cannot change the cached one. */
function copyOf(p: Principal): Principal {
  return p.act === undefined ? { iss: p.iss, sub: p.sub } : { iss: p.iss, sub: p.sub, act: p.act.map((a) => ({ ...a })) };
}

/**
 * Build a verifier for one issuer and audience. Throws `TypeError` when neither `jwksUrl` nor
 * `jwks` is given or `jwksUrl` is not a URL.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const { issuer, audience, jwksUrl, jwks, clockToleranceSeconds = 30 } = options;
  let keys: JWTVerifyGetKey;
  if (jwksUrl !== undefined) keys = createRemoteJWKSet(new URL(jwksUrl), { cooldownDuration: options.jwksCooldownMs ?? 30_000 });
  else if (jwks !== undefined) keys = createLocalJWKSet(jwks);
  else throw new TypeError('createTokenVerifier: give jwksUrl or jwks');

  const cacheMs = options.verifiedCacheMs ?? 60_000;
  const cacheSize = options.verifiedCacheSize ?? 10_000;
  const verified = new Map<string, { principal: Principal; expS: number; untilMs: number }>();

  return {
    async verify(token: string): Promise<Principal> {
      if (typeof token !== 'string' || token.trim() === '') throw new AuthError('missing', 'bearer token missing');
      const hit = verified.get(token);
      if (hit) {
        const nowMs = Date.now();
        // the same rule as jose: expired once exp <= now - tolerance (seconds)
        if (hit.expS <= Math.floor(nowMs / 1000) - clockToleranceSeconds) {
          verified.delete(token);
          throw new AuthError('expired', 'token expired');
        }
        if (nowMs < hit.untilMs) return copyOf(hit.principal);
        verified.delete(token);
      }
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer,
          audience,
          algorithms: [...ALLOWED_ALGORITHMS],
          clockTolerance: clockToleranceSeconds,
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (err) {
        throw toAuthError(err);
      }
      const { iss, sub } = payload;
      if (typeof iss !== 'string' || typeof sub !== 'string' || sub === '') {
        throw new AuthError('invalid', 'token claim "sub" rejected');
      }
      if (payload.resource !== undefined && !namesResource(payload.resource, audience)) {
        throw new AuthError('invalid', 'token claim "resource" rejected');
      }
      const principal: Principal = payload.act === undefined ? { iss, sub } : { iss, sub, act: flattenAct(payload.act) };
      if (cacheMs > 0 && typeof payload.exp === 'number') {
        if (verified.size >= cacheSize) verified.delete(verified.keys().next().value!);
        verified.set(token, { principal: copyOf(principal), expS: payload.exp, untilMs: Date.now() + cacheMs });
      }
      return principal;
    },
  };
}

/**
 * RFC 8707: a token's `resource` claim (a string, or an array of strings) names `resource`, compared
 * exactly, as `aud` is. Any other shape does not.
 */
function namesResource(claim: unknown, resource: string): boolean {
  if (typeof claim === 'string') return claim === resource;
  return Array.isArray(claim) && claim.length > 0 && claim.every((r) => typeof r === 'string') && claim.includes(resource);
}
