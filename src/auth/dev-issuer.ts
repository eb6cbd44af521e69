/**
 * Development token issuer: one persistent ES256 key, a JWKS endpoint, OIDC discovery metadata,
 * and a `mintToken` for the CLI's `token` command, tests and the demo.
 *
 * Deliberately does not: authenticate anyone (whoever can call `mintToken` gets any `sub`), offer
 * a token endpoint or any OAuth grant, rotate keys, or sign anything but access tokens. It is a
 * stand-in for a real authorization server, which production deployments configure instead.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Hono } from 'hono';
import { problemNotFound, problemOnError } from '@countersign/http/error-handlers';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  SignJWT,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
} from 'jose';

/** RFC 8693 §4.1 `act` (actor) claim: the current actor, nesting the prior actors. */
export interface ActClaim {
  sub: string;
  iss?: string;
  act?: ActClaim;
}

/** Options of `loadOrCreateDevIssuer`. */
export interface DevIssuerOptions {
  /**
   * Path of the private key file (JWK JSON, mode 0600). Created with a fresh ES256 key on first
   * use (parent folder created, mode 0700); reused afterwards so tokens survive restarts.
   */
  keyFile: string;
  /** Issuer URL: the exact `iss` of every token. `app` must be served at this URL. */
  issuer: string;
  /** Audience (`aud`) of every token: the protected MCP resource's identifier (RFC 8707). */
  audience: string;
}

/** Options of `mintToken`. */
export interface MintTokenOptions {
  /** Subject (`sub`). */
  sub: string;
  /** RFC 8693 actor chain: the agent acting for `sub` (nested `act` = earlier actors). */
  act?: ActClaim;
  /** Lifetime in seconds, a positive integer; default 3600. */
  ttlSeconds?: number;
  /** Issue time (`iat`); default now. For tests and demos of expiry, never needed otherwise. */
  issuedAt?: Date;
  /** Additional claims. Registered claims (`iss`, `sub`, `aud`, `iat`, `nbf`, `exp`, `jti`, `act`) are refused. */
  extra?: Record<string, unknown>;
}

/** A loaded development issuer. */
export interface DevIssuer {
  /** The issuer URL (`iss`). */
  issuer: string;
  /** The audience (`aud`) of minted tokens. */
  audience: string;
  /** Public JWK Set (RFC 7517 §5): one ES256 key, `kid` = RFC 7638 SHA-256 thumbprint. */
  jwks: JSONWebKeySet;
  /**
   * Sign an access token (JWT, RFC 9068 claims): header `{alg: ES256, kid, typ: JWT}`; claims
   * `iss`, `sub`, `aud`, `iat`, `exp` (= iat + ttlSeconds), `jti` (random UUID), optional `act`.
   * Throws `TypeError` for an empty `sub`, a non-positive `ttlSeconds` or a registered claim in `extra`.
   */
  mintToken(options: MintTokenOptions): Promise<string>;
  /**
   * Hono app with `GET /.well-known/jwks.json` (the public JWKS) and
   * `GET /.well-known/openid-configuration` (OpenID Connect Discovery 1.0 §3: `issuer`,
   * `jwks_uri`, `id_token_signing_alg_values_supported`); anything else is 404 problem+json. Mount it at the issuer URL's path.
   */
  app: Hono;
}

const REGISTERED = new Set(['iss', 'sub', 'aud', 'iat', 'nbf', 'exp', 'jti', 'act']);

async function readKeyFile(keyFile: string): Promise<JWK | null> {
  let text: string;
  try {
    text = await readFile(keyFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
  } catch {
    throw new Error(`dev issuer key file ${keyFile} is not JSON; delete it to generate a new key`);
  }
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') {
    throw new Error(`dev issuer key file ${keyFile} does not hold a P-256 private JWK; delete it to generate a new key`);
  }
  return jwk;
}

/** Write `jwk` to `keyFile` only if it does not exist yet (atomic: temp file + link). Returns the winner's key. */
async function createKeyFile(keyFile: string, jwk: JWK): Promise<JWK> {
  await mkdir(dirname(keyFile), { recursive: true, mode: 0o700 });
  const tmp = `${keyFile}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(jwk, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, keyFile);
    return jwk;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const existing = await readKeyFile(keyFile);
    if (!existing) throw err;
    return existing;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/**
 * Load the issuer's key from `keyFile`, or generate and persist one on first use (concurrent
 * first starts agree on one key). Throws `Error` when the key file exists but is not a P-256
 * private JWK, or on file-system errors.
 */
export async function loadOrCreateDevIssuer(options: DevIssuerOptions): Promise<DevIssuer> {
  const { keyFile, issuer, audience } = options;
  let privateJwk = await readKeyFile(keyFile);
  if (!privateJwk) {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const generated = await exportJWK(privateKey);
    privateJwk = await createKeyFile(keyFile, { ...generated, alg: 'ES256', use: 'sig' });
  }
  const { kty, crv, x, y } = privateJwk;
  const publicBase: JWK = { kty, crv, x, y };
  const kid = await calculateJwkThumbprint(publicBase, 'sha256');
  const publicJwk: JWK = { ...publicBase, kid, alg: 'ES256', use: 'sig' };
  const signingKey = await importJWK({ ...privateJwk, kid, alg: 'ES256' }, 'ES256');
  const jwks: JSONWebKeySet = { keys: [publicJwk] };

  const base = issuer.replace(/\/+$/, '');
  const discovery = {
    issuer,
    jwks_uri: `${base}/.well-known/jwks.json`,
    id_token_signing_alg_values_supported: ['ES256'],
  };
  const app = new Hono();
  app.get('/.well-known/jwks.json', (c) => {
    c.header('Cache-Control', 'public, max-age=60');
    return c.json(jwks);
  });
  app.get('/.well-known/openid-configuration', (c) => c.json(discovery));
  // It reads no body; every other path and any thrown error is problem+json, never plain text.
  app.notFound(problemNotFound);
  app.onError(problemOnError(undefined, 'development token issuer'));

  async function mintToken(opts: MintTokenOptions): Promise<string> {
    const { sub, act, ttlSeconds = 3600, issuedAt = new Date(), extra = {} } = opts;
    if (typeof sub !== 'string' || sub === '') throw new TypeError('mintToken: sub must be a non-empty string');
    if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) {
      throw new TypeError('mintToken: ttlSeconds must be a positive integer');
    }
    const refused = Object.keys(extra).filter((k) => REGISTERED.has(k));
    if (refused.length > 0) throw new TypeError(`mintToken: extra must not set registered claims (${refused.join(', ')})`);
    const iat = Math.floor(issuedAt.getTime() / 1000);
    const payload: JWTPayload = { ...extra, ...(act ? { act } : {}) };
    return new SignJWT(payload)
      .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject(sub)
      .setAudience(audience)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSeconds)
      .setJti(randomUUID())
      .sign(signingKey);
  }

  return { issuer, audience, jwks, mintToken, app };
}
