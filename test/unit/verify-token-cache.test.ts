// Scope: src/auth/verify-token.ts — the verified-token cache: a repeated token skips the signature
// check but never outlives its `exp`, failures are never cached, and callers get their own copy.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import { AuthError, createTokenVerifier } from '../../src/auth/verify-token.js';

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'https://mcp.test/mcp';
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

async function setup(cache?: { verifiedCacheMs?: number }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-auth-cache-'));
  dirs.push(dir);
  const issuer = await loadOrCreateDevIssuer({ keyFile: path.join(dir, 'k.json'), issuer: ISSUER, audience: AUDIENCE });
  return { issuer, verifier: createTokenVerifier({ issuer: ISSUER, audience: AUDIENCE, jwks: issuer.jwks, ...cache }) };
}

describe('verified-token cache', () => {
  it('a cached token is still refused once it has expired (same 30 s tolerance)', async () => {
    const { issuer, verifier } = await setup({ verifiedCacheMs: 3_600_000 });
    const token = await issuer.mintToken({ sub: 'alice', ttlSeconds: 60 });
    expect(await verifier.verify(token)).toEqual({ iss: ISSUER, sub: 'alice' });
    vi.useFakeTimers({ now: Date.now() + 80_000, toFake: ['Date'] }); // within exp + tolerance
    expect(await verifier.verify(token)).toEqual({ iss: ISSUER, sub: 'alice' });
    vi.setSystemTime(Date.now() + 20_000); // past exp + 30 s
    const err = await verifier.verify(token).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthError);
    expect((err as AuthError).code).toBe('expired');
  });

  it('a refused token is not remembered: a tampered copy of a cached token is still refused', async () => {
    const { issuer, verifier } = await setup();
    const token = await issuer.mintToken({ sub: 'alice' });
    await verifier.verify(token);
    const [h, p, s] = token.split('.');
    const tampered = `${h}.${p}.${s!.slice(0, -4)}AAAA`;
    await expect(verifier.verify(tampered)).rejects.toBeInstanceOf(AuthError);
    await expect(verifier.verify(tampered)).rejects.toBeInstanceOf(AuthError);
  });

  it('each caller gets its own principal object', async () => {
    const { issuer, verifier } = await setup();
    const token = await issuer.mintToken({ sub: 'alice', act: { sub: 'agent-1' } });
    const a = await verifier.verify(token);
    (a as { sub: string }).sub = 'mallory';
    a.act![0]!.sub = 'mallory';
    expect(await verifier.verify(token)).toEqual({ iss: ISSUER, sub: 'alice', act: [{ sub: 'agent-1' }] });
  });
});
