// Scope: the MCP endpoint as an OAuth 2.1 resource server configured for an external
// authorization server (production configuration): only that issuer's tokens for this audience
// are accepted; the embedded development issuer's are not; the protected-resource metadata names it.
import { serve, type ServerType } from '@hono/node-server';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadOrCreateDevIssuer, type DevIssuer } from '../../src/auth/dev-issuer.js';
import { McpRpcError, WireClient } from '@countersign/client';
import type { Stack } from '../../src/stack.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';

const AUDIENCE = 'https://countersign.example/mcp';
let idp: DevIssuer;
let idpServer: ServerType;
let stack: Stack;

beforeAll(async () => {
  let fetchRef: (r: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
  idpServer = await new Promise((resolve) => {
    const s = serve({ fetch: (r) => fetchRef(r), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const issuerUrl = `http://127.0.0.1:${(idpServer.address() as AddressInfo).port}`;
  idp = await loadOrCreateDevIssuer({
    keyFile: join(mkdtempSync(join(tmpdir(), 'idp-')), 'key.json'),
    issuer: issuerUrl,
    audience: AUDIENCE,
  });
  fetchRef = (r) => idp.app.fetch(r);
  stack = await startTestStack(testConfig({ COUNTERSIGN_OAUTH_ISSUER: issuerUrl, COUNTERSIGN_OAUTH_AUDIENCE: AUDIENCE }));
});
afterAll(async () => {
  await stack?.stop();
  await new Promise<void>((r) => idpServer?.close(() => r()));
});

const clientWith = (token: string) => new WireClient({ url: stack.urls.mcp, token, capabilities: {} });

it('accepts a token from the configured authorization server for the configured audience', async () => {
  const r = await clientWith(await idp.mintToken({ sub: 'alice' })).request<{ tools: unknown[] }>('tools/list');
  expect(r.tools.length).toBeGreaterThan(0);
});

it('refuses the embedded development issuer, and the right issuer for another audience, with 401', async () => {
  const wrongIssuer = await stack.issuer.mintToken({ sub: 'alice' });
  const otherAudience = await (
    await loadOrCreateDevIssuer({
      keyFile: join(mkdtempSync(join(tmpdir(), 'idp2-')), 'key.json'),
      issuer: idp.issuer,
      audience: 'https://elsewhere.example/mcp',
    })
  ).mintToken({ sub: 'alice' });
  for (const token of [wrongIssuer, otherAudience]) {
    const err = await clientWith(token)
      .request('tools/list')
      .then(
        () => null,
        (e: unknown) => e as McpRpcError,
      );
    expect(err?.httpStatus).toBe(401);
  }
});

it('publishes protected-resource metadata naming the configured authorization server', async () => {
  const res = await fetch(`${new URL(stack.urls.mcp).origin}/.well-known/oauth-protected-resource/mcp`);
  expect(res.status).toBe(200);
  const prm = (await res.json()) as { resource: string; authorization_servers: string[] };
  expect(prm.authorization_servers).toEqual([idp.issuer]);
  expect(prm.resource).toBe(stack.urls.mcp);
});
