// Scope: src/auth/ — the development issuer (key persistence, JWKS, discovery), bearer-token verification to a Principal, and Authorization header parsing.
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { base64url, importJWK, SignJWT, type JWK } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { extractBearer } from '../../src/auth/bearer.js';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import { AuthError, createTokenVerifier } from '../../src/auth/verify-token.js';

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'https://mcp.test/mcp';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tmpDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-auth-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function issuerAndVerifier(opts: { issuer?: string; audience?: string } = {}) {
  const keyFile = path.join(tmpDir(), 'keys', 'dev-issuer.jwk.json');
  const issuer = await loadOrCreateDevIssuer({ keyFile, issuer: opts.issuer ?? ISSUER, audience: opts.audience ?? AUDIENCE });
  const verifier = createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, jwks: issuer.jwks });
  return { keyFile, issuer, verifier };
}

async function rejection(p: Promise<unknown>): Promise<AuthError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AuthError);
  return err as AuthError;
}

function unsignedToken(header: object, payload: object): string {
  const enc = (o: object) => base64url.encode(JSON.stringify(o));
  return `${enc(header)}.${enc(payload)}.`;
}

describe('dev issuer', () => {
  it('generates an ES256 key on first use, persists it with mode 0600, and reuses it after a restart', async () => {
    const { keyFile, issuer } = await issuerAndVerifier();
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as JWK;
    expect(stored).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    expect(typeof stored.d).toBe('string');

    const restarted = await loadOrCreateDevIssuer({ keyFile, issuer: ISSUER, audience: AUDIENCE });
    expect(restarted.jwks).toEqual(issuer.jwks);
    const token = await issuer.mintToken({ sub: 'alice' });
    const verifier = createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, jwks: restarted.jwks });
    expect(await verifier.verify(token)).toEqual({ iss: ISSUER, sub: 'alice' });
  });

  it('publishes only the public key, with kid = RFC 7638 thumbprint, in the JWKS', async () => {
    const { issuer } = await issuerAndVerifier();
    expect(issuer.jwks.keys).toHaveLength(1);
    const key = issuer.jwks.keys[0] as JWK;
    expect(key.d).toBeUndefined();
    expect(key.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const res = await issuer.app.request('/.well-known/jwks.json');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(issuer.jwks);
  });

  it('serves OpenID discovery metadata with issuer and jwks_uri', async () => {
    const { issuer } = await issuerAndVerifier({ issuer: 'https://issuer.test/' });
    const res = await issuer.app.request('/.well-known/openid-configuration');
    expect(await res.json()).toEqual({
      issuer: 'https://issuer.test/',
      jwks_uri: 'https://issuer.test/.well-known/jwks.json',
      id_token_signing_alg_values_supported: ['ES256'],
    });
  });

  it('mints tokens with iss, sub, aud, iat, exp, jti and refuses registered claims in extra', async () => {
    const { issuer } = await issuerAndVerifier();
    const token = await issuer.mintToken({ sub: 'alice', ttlSeconds: 60, extra: { scope: 'tools' } });
    const [h, p] = token.split('.') as [string, string];
    const header = JSON.parse(new TextDecoder().decode(base64url.decode(h))) as Record<string, unknown>;
    const payload = JSON.parse(new TextDecoder().decode(base64url.decode(p))) as Record<string, number | string>;
    expect(header).toEqual({ alg: 'ES256', kid: issuer.jwks.keys[0]?.kid, typ: 'JWT' });
    expect(payload).toMatchObject({ iss: ISSUER, sub: 'alice', aud: AUDIENCE, scope: 'tools' });
    expect(Number(payload.exp) - Number(payload.iat)).toBe(60);
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    await expect(issuer.mintToken({ sub: 'alice', extra: { aud: 'elsewhere' } })).rejects.toThrow(
      'mintToken: extra must not set registered claims (aud)',
    );
  });

  it('refuses a key file that is not a P-256 private JWK', async () => {
    const keyFile = path.join(tmpDir(), 'k.json');
    fs.writeFileSync(keyFile, JSON.stringify({ kty: 'oct', k: 'abc' }));
    await expect(loadOrCreateDevIssuer({ keyFile, issuer: ISSUER, audience: AUDIENCE })).rejects.toThrow(
      /does not hold a P-256 private JWK/,
    );
  });
});

describe('token verification', () => {
  it('a valid token becomes the principal {iss, sub}', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    expect(await verifier.verify(await issuer.mintToken({ sub: 'alice' }))).toEqual({ iss: ISSUER, sub: 'alice' });
  });

  it('the act claim becomes the delegation chain, outermost actor first', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const token = await issuer.mintToken({
      sub: 'alice',
      act: { sub: 'agent-7', iss: 'https://agents.test', act: { sub: 'orchestrator' } },
    });
    expect(await verifier.verify(token)).toEqual({
      iss: ISSUER,
      sub: 'alice',
      act: [{ iss: 'https://agents.test', sub: 'agent-7' }, { sub: 'orchestrator' }],
    });
  });

  it('a malformed act claim is rejected', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const token = await issuer.mintToken({ sub: 'alice', act: { sub: 'agent', act: 'nobody' as never } });
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token act claim is malformed']);
  });

  it('a token from another issuer is rejected', async () => {
    const { issuer, verifier } = await issuerAndVerifier({ issuer: 'https://evil.test' });
    const token = await issuer.mintToken({ sub: 'alice' });
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token claim "iss" rejected']);
    expect(err.message).not.toContain(token);
  });

  it('a token for another audience is rejected', async () => {
    const { issuer, verifier } = await issuerAndVerifier({ audience: 'https://other.test/mcp' });
    const err = await rejection(verifier.verify(await issuer.mintToken({ sub: 'alice' })));
    expect([err.code, err.message]).toEqual(['invalid', 'token claim "aud" rejected']);
  });

  it('a token whose RFC 8707 resource claim names another resource is rejected, even with the right aud', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    for (const resource of ['https://other.test/mcp', ['https://other.test/mcp'], [], 42]) {
      const err = await rejection(verifier.verify(await issuer.mintToken({ sub: 'alice', extra: { resource } })));
      expect([err.code, err.message]).toEqual(['invalid', 'token claim "resource" rejected']);
    }
  });

  it('a token whose RFC 8707 resource claim names this resource (alone or among others) is accepted', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    for (const resource of [AUDIENCE, ['https://other.test/mcp', AUDIENCE]]) {
      expect(await verifier.verify(await issuer.mintToken({ sub: 'alice', extra: { resource } }))).toEqual({ iss: ISSUER, sub: 'alice' });
    }
  });

  it('an expired token is rejected as expired (beyond the 30 s clock tolerance)', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const issuedAt = new Date(Date.now() - 3600_000 - 31_000);
    const err = await rejection(verifier.verify(await issuer.mintToken({ sub: 'alice', ttlSeconds: 3600, issuedAt })));
    expect([err.code, err.message]).toEqual(['expired', 'token expired']);
  });

  it('a token that expired within the clock tolerance is accepted', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const issuedAt = new Date(Date.now() - 60_000 - 10_000);
    const token = await issuer.mintToken({ sub: 'alice', ttlSeconds: 60, issuedAt });
    expect(await verifier.verify(token)).toEqual({ iss: ISSUER, sub: 'alice' });
  });

  it('a token not yet valid (nbf in the future) is rejected', async () => {
    const { keyFile, issuer, verifier } = await issuerAndVerifier();
    const jwk = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as JWK;
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: issuer.jwks.keys[0]?.kid })
      .setIssuer(ISSUER)
      .setSubject('alice')
      .setAudience(AUDIENCE)
      .setNotBefore(now + 600)
      .setExpirationTime(now + 3600)
      .sign(await importJWK(jwk, 'ES256'));
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token claim "nbf" rejected']);
  });

  it('a token without exp is rejected', async () => {
    const { keyFile, issuer, verifier } = await issuerAndVerifier();
    const jwk = JSON.parse(fs.readFileSync(keyFile, 'utf8')) as JWK;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: issuer.jwks.keys[0]?.kid })
      .setIssuer(ISSUER)
      .setSubject('alice')
      .setAudience(AUDIENCE)
      .sign(await importJWK(jwk, 'ES256'));
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token claim "exp" rejected']);
  });

  it('an alg none token is rejected', async () => {
    const { verifier } = await issuerAndVerifier();
    const now = Math.floor(Date.now() / 1000);
    const token = unsignedToken({ alg: 'none', typ: 'JWT' }, { iss: ISSUER, sub: 'alice', aud: AUDIENCE, exp: now + 600 });
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token algorithm not allowed']);
  });

  it('an HS256 token is rejected, even one keyed with the public key material', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const secret = new TextEncoder().encode(JSON.stringify(issuer.jwks.keys[0]));
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', kid: issuer.jwks.keys[0]?.kid })
      .setIssuer(ISSUER)
      .setSubject('alice')
      .setAudience(AUDIENCE)
      .setExpirationTime('10m')
      .sign(secret);
    const err = await rejection(verifier.verify(token));
    expect([err.code, err.message]).toEqual(['invalid', 'token algorithm not allowed']);
  });

  it('a token signed by a key outside the JWKS is rejected', async () => {
    const { verifier } = await issuerAndVerifier();
    const { issuer: impostor } = await issuerAndVerifier();
    const err = await rejection(verifier.verify(await impostor.mintToken({ sub: 'alice' })));
    expect([err.code, err.message]).toEqual(['invalid', 'no unique signing key matches the token']);
  });

  it('a token whose payload was altered is rejected', async () => {
    const { issuer, verifier } = await issuerAndVerifier();
    const [h, p, s] = (await issuer.mintToken({ sub: 'alice' })).split('.') as [string, string, string];
    const payload = JSON.parse(new TextDecoder().decode(base64url.decode(p))) as Record<string, unknown>;
    const forged = `${h}.${base64url.encode(JSON.stringify({ ...payload, sub: 'mallory' }))}.${s}`;
    const err = await rejection(verifier.verify(forged));
    expect([err.code, err.message]).toEqual(['invalid', 'token signature invalid']);
  });

  it('an empty token is missing and garbage is malformed', async () => {
    const { verifier } = await issuerAndVerifier();
    const missing = await rejection(verifier.verify(''));
    expect([missing.code, missing.message]).toEqual(['missing', 'bearer token missing']);
    const garbage = await rejection(verifier.verify('not-a-jwt'));
    expect([garbage.code, garbage.message]).toEqual(['invalid', 'token malformed']);
  });

  it('a verifier needs jwksUrl or jwks', () => {
    expect(() => createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE })).toThrow(TypeError);
  });

  it('a token verified via the JWKS URL of a real running dev issuer', async () => {
    let app = new Hono();
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: (r) => app.fetch(r), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const keyFile = path.join(tmpDir(), 'issuer.jwk.json');
    const issuer = await loadOrCreateDevIssuer({ keyFile, issuer: base, audience: AUDIENCE });
    app = issuer.app;

    const discovery = (await (await fetch(`${base}/.well-known/openid-configuration`)).json()) as { jwks_uri: string };
    const verifier = createTokenVerifier({ issuer: base, audience: AUDIENCE, jwksUrl: discovery.jwks_uri });
    const token = await issuer.mintToken({ sub: 'alice', act: { sub: 'agent-7' } });
    expect(await verifier.verify(token)).toEqual({ iss: base, sub: 'alice', act: [{ sub: 'agent-7' }] });
  });
});

describe('key rotation', () => {
  it('a token signed with a rotated-in key (unknown kid) is verified after the JWKS is fetched again', async () => {
    let app = new Hono();
    const server: ServerType = await new Promise((resolve) => {
      const s = serve({ fetch: (r) => app.fetch(r), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const oldKey = await loadOrCreateDevIssuer({ keyFile: path.join(tmpDir(), 'old.jwk.json'), issuer: base, audience: AUDIENCE });
    const newKey = await loadOrCreateDevIssuer({ keyFile: path.join(tmpDir(), 'new.jwk.json'), issuer: base, audience: AUDIENCE });
    expect(newKey.jwks.keys[0]?.kid).not.toBe(oldKey.jwks.keys[0]?.kid);
    app = oldKey.app;
    const verifier = createTokenVerifier({ issuer: base, audience: AUDIENCE, jwksUrl: `${base}/.well-known/jwks.json`, jwksCooldownMs: 0 });
    expect((await verifier.verify(await oldKey.mintToken({ sub: 'alice' }))).sub).toBe('alice');
    // the issuer rotates: it now publishes only the new key
    app = newKey.app;
    expect((await verifier.verify(await newKey.mintToken({ sub: 'alice' }))).sub).toBe('alice');
    // and the retired key no longer verifies
    await expect(verifier.verify(await oldKey.mintToken({ sub: 'alice' }))).rejects.toBeInstanceOf(AuthError);
  });
});

describe('Authorization header', () => {
  it.each([
    ['Bearer abc.def.ghi', 'abc.def.ghi'],
    ['bearer abc.def.ghi', 'abc.def.ghi'],
    ['BEARER  abc-_~+/= ', 'abc-_~+/='],
    [' Bearer x ', 'x'],
  ])('%j yields the token', (header, token) => {
    expect(extractBearer(header)).toBe(token);
  });

  it.each([[undefined], [null], [''], ['Bearer'], ['Bearer '], ['Basic dXNlcjpwYXNz'], ['Bearer a b'], ['Bearerabc'], ['Bearer a=b']])(
    '%j yields null',
    (header) => {
      expect(extractBearer(header)).toBeNull();
    },
  );
});
