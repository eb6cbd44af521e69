// Scope: production sign-in to the approver inbox through OIDC (@hono/oidc-auth) against a small
// local identity provider over real HTTP (discovery + token endpoint, RS256 ID tokens): the
// authorization-code flow with PKCE ends in an inbox session for a configured approver; an IdP
// user who is not an approver gets nothing; passwords are not accepted; bad configuration stops
// start-up with the missing variables named.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidcOptionsFromEnv } from '../src/inbox/oidc-sessions.js';
import { createApprovalService, type ApprovalService } from '../src/service.js';

const CLIENT_ID = 'countersign-inbox';
const BASE = 'http://approvals.test';
let idp: Server;
let issuer: string;
let svc: ApprovalService;
/** code → what the IdP will put in the ID token. */
const grants = new Map<string, { nonce: string; email: string; emailVerified: boolean }>();

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  idp = createServer((req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/authorize`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          scopes_supported: ['openid', 'email', 'profile'],
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
      return;
    }
    if (url.pathname === '/jwks')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const grant = grants.get(new URLSearchParams(body).get('code') ?? '');
        if (grant === undefined)
          return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant' }));
        void new SignJWT({ nonce: grant.nonce, email: grant.email, email_verified: grant.emailVerified })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer(issuer)
          .setSubject(`sub-${grant.email}`)
          .setAudience(CLIENT_ID)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(privateKey)
          .then((idToken) =>
            res
              .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
              .end(JSON.stringify({ access_token: 'at', token_type: 'Bearer', expires_in: 300, refresh_token: 'rt', id_token: idToken })),
          );
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
  svc = createApprovalService({
    dbPath: ':memory:',
    clientToken: 'client-token',
    callbackSecret: 'callback-secret',
    approvers: [{ id: 'carol@bank.example', secret: 'api-only', groups: ['treasury'] }],
    publicBaseUrl: BASE,
    logger: pino({ level: 'silent' }),
    oidc: {
      approverClaim: 'email',
      env: {
        OIDC_ISSUER: issuer,
        OIDC_CLIENT_ID: CLIENT_ID,
        OIDC_CLIENT_SECRET: 'client-secret',
        OIDC_AUTH_SECRET: 'x'.repeat(40),
        OIDC_SCOPES: 'openid email',
      },
    },
  });
});
afterAll(async () => {
  svc?.close();
  await new Promise<void>((resolve) => idp?.close(() => resolve()));
});

/** A tiny cookie jar (path-insensitive: every cookie the service set is sent back). */
function jar() {
  const cookies = new Map<string, string>();
  return {
    take(res: Response) {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair!.indexOf('=');
        const name = pair!.slice(0, eq);
        const value = pair!.slice(eq + 1);
        if (value === '' || /Max-Age=0/i.test(line)) cookies.delete(name);
        else cookies.set(name, value);
      }
    },
    header: () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
  };
}

/** Walk the browser's part of the code flow as the IdP user `email`; returns the jar and the last response. */
async function signInThroughIdp(email: string, emailVerified = true) {
  const j = jar();
  const get = async (url: string) => {
    const res = await svc.app.request(url, { headers: { Cookie: j.header() } });
    j.take(res);
    return res;
  };
  const first = await get(`${BASE}/approver`);
  expect(first.headers.get('Location')).toBe('/approver/login');
  const login = await get(`${BASE}/approver/login`);
  expect(login.status).toBe(302);
  const authorize = new URL(login.headers.get('Location')!);
  expect(authorize.origin + authorize.pathname).toBe(`${issuer}/authorize`);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('redirect_uri')).toBe(`${BASE}/approver/callback`);
  // the IdP authenticates the user and redirects back with a code
  const code = randomUUID();
  grants.set(code, { nonce: authorize.searchParams.get('nonce')!, email, emailVerified });
  const callback = await get(`${BASE}/approver/callback?code=${code}&state=${authorize.searchParams.get('state')}`);
  expect(callback.status).toBe(302);
  const back = await get(callback.headers.get('Location')!);
  return { j, back, get };
}

describe('inbox sign-in through OIDC', () => {
  it('the code flow with PKCE signs a configured approver in; the inbox shows them and their groups', async () => {
    const { back, get } = await signInThroughIdp('carol@bank.example');
    expect(back.status).toBe(303);
    expect(back.headers.get('Location')).toBe('/approver');
    const inbox = await get(`${BASE}/approver`);
    expect(inbox.status).toBe(200);
    expect(await inbox.text()).toContain('Signed in as <strong data-testid="approver">carol@bank.example</strong> · treasury');
  });

  it('an IdP user who is not a configured approver is refused (403) and sees no inbox', async () => {
    const { back, get } = await signInThroughIdp('mallory@bank.example');
    expect(back.status).toBe(403);
    expect(await back.text()).toContain('not as a configured approver');
    expect((await get(`${BASE}/approver`)).status).toBe(303);
  });

  it('an ID token whose email matches an approver but is not verified (email_verified false) signs no one in', async () => {
    const { back, get } = await signInThroughIdp('carol@bank.example', false);
    expect(back.status).toBe(403);
    expect((await get(`${BASE}/approver`)).status).toBe(303);
  });

  it('a forged callback (unknown state) does not sign anyone in', async () => {
    const res = await svc.app.request(`${BASE}/approver/callback?code=x&state=forged`);
    expect(res.status).toBe(500);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('oidc-auth='))).toBe(false);
  });

  it('passwords are not accepted when OIDC is configured', async () => {
    const res = await svc.app.request(`${BASE}/approver/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: BASE },
      body: 'id=carol%40bank.example&password=api-only',
    });
    expect(res.status).toBe(404);
  });

  it('OIDC configuration problems are listed at start-up', () => {
    expect(oidcOptionsFromEnv({})).toBeUndefined();
    expect(() => oidcOptionsFromEnv({ OIDC_ISSUER: issuer, OIDC_AUTH_SECRET: 'short', COUNTERSIGN_OIDC_APPROVER_CLAIM: 'name' })).toThrow(
      /OIDC_CLIENT_ID is required with OIDC_ISSUER\n {2}OIDC_CLIENT_SECRET is required with OIDC_ISSUER\n {2}OIDC_AUTH_SECRET must be at least 32 characters\n {2}COUNTERSIGN_OIDC_APPROVER_CLAIM must be one of email, preferred_username, sub/,
    );
  });
});
