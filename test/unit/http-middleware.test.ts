// Scope: the MCP front's request middleware and principal keys, in-process with app.request: the Origin check (packages/http/src/origin.ts), bearer authentication (src/auth/bearer-middleware.ts), and the keys of src/auth/principal-keys.ts.
import { createHash, createHmac } from 'node:crypto';
import { Hono } from 'hono';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { bearerAuth } from '../../src/auth/bearer-middleware.js';
import type { Principal } from '../../src/auth/principal.js';
import { principalNames } from '@countersign/approvals';
import { ownerKeyOf, principalKey, quotaKeyOf, taskOwnerKeyOf } from '../../src/auth/principal-keys.js';
import { AuthError, type TokenVerifier } from '../../src/auth/verify-token.js';
import { sameOriginOnly } from '@countersign/http/origin';

const ORIGIN = 'http://127.0.0.1:8787';
const PRM_URL = `${ORIGIN}/.well-known/oauth-protected-resource/mcp`;
const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice', act: [{ sub: 'Agent-7' }] };

const verifier: TokenVerifier = {
  async verify(token) {
    if (token === 'good-token') return ALICE;
    throw new AuthError(token === 'old-token' ? 'expired' : 'invalid', 'token could not be verified');
  },
};

function app(): Hono {
  const a = new Hono();
  a.use('/mcp', sameOriginOnly(ORIGIN), bearerAuth({ verifier, resourceMetadataUrl: PRM_URL, logger: pino({ level: 'silent' }) }));
  a.all('/mcp', (c) => c.json({ principal: c.get('principal'), token: c.get('bearerToken') }));
  a.get('/open', (c) => c.text('open'));
  return a;
}

describe('Origin check', () => {
  it('a browser Origin other than the server’s own is refused with 403 problem+json before the token is looked at', async () => {
    const res = await app().request('/mcp', {
      method: 'POST',
      headers: { origin: 'http://evil.test', authorization: 'Bearer good-token' },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toEqual({
      type: 'urn:countersign:problem:forbidden',
      title: 'Forbidden',
      status: 403,
      detail: 'Origin not allowed',
    });
  });

  it('the server’s own Origin and a request without Origin pass', async () => {
    for (const headers of [{ origin: ORIGIN }, {}] as Array<Record<string, string>>) {
      const res = await app().request('/mcp', { method: 'POST', headers: { ...headers, authorization: 'Bearer good-token' } });
      expect(res.status).toBe(200);
    }
  });
});

describe('bearer authentication', () => {
  it('a missing token is 401 with a WWW-Authenticate challenge naming the resource metadata, without error=', async () => {
    const res = await app().request('/mcp', { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${PRM_URL}"`);
    expect(await res.json()).toEqual({ error: 'unauthorized', error_description: 'A valid bearer token for this resource is required.' });
  });

  it('an invalid or expired token is 401 with error="invalid_token"', async () => {
    for (const token of ['bad-token', 'old-token']) {
      const res = await app().request('/mcp', { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${PRM_URL}", error="invalid_token"`);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_token');
    }
  });

  it('a valid token puts the verified principal and the token on the context; other paths are not guarded', async () => {
    const res = await app().request('/mcp', { method: 'POST', headers: { authorization: 'Bearer good-token' } });
    expect(await res.json()).toEqual({ principal: ALICE, token: 'good-token' });
    expect((await app().request('/open')).status).toBe(200);
  });
});

describe('principal keys', () => {
  it('keep their stored values: owner and quota keys cover issuer and subject, the task owner key the delegation chain too', () => {
    expect(principalKey(ALICE)).toBe('https://issuer.test\u0000alice');
    expect(ownerKeyOf(ALICE)).toBe(createHash('sha256').update('https://issuer.test\u0000alice').digest('hex'));
    expect(quotaKeyOf('k', ALICE)).toBe(
      createHmac('sha256', 'k').update('countersign/quota\u0000https://issuer.test\u0000alice').digest('hex'),
    );
    expect(quotaKeyOf('k', { iss: ALICE.iss, sub: ALICE.sub })).toBe(quotaKeyOf('k', ALICE));
    expect(taskOwnerKeyOf(ALICE)).toBe(
      createHash('sha256').update('{"act":[{"sub":"Agent-7"}],"iss":"https://issuer.test","sub":"alice"}').digest('hex'),
    );
    expect(taskOwnerKeyOf({ iss: ALICE.iss, sub: ALICE.sub })).not.toBe(taskOwnerKeyOf(ALICE));
  });

  it('the four-eyes names of a requester are its subject and every actor, lower-cased', () => {
    expect([...principalNames(ALICE)]).toEqual(['alice', 'agent-7']);
  });
});
