// Scope: the per-address sign-in throttle over a real listener (packages/http/src/server-lifecycle.ts passes the Node bindings; packages/http/src/client-address.ts reads the socket and, only from COUNTERSIGN_TRUSTED_PROXIES, X-Forwarded-For), the listener's request timeouts, and the setting's parsing in src/config.ts.
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalService } from '@countersign/approvals';
import { ConfigError, loadConfig } from '../../src/config.js';
import { closeServer, listen, SERVER_TIMEOUTS } from '@countersign/http/server-lifecycle';
import { approvalsUnderTest } from './apps.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The approval service on a real listener at 127.0.0.1; `lines` receives its JSON log lines. */
async function served(
  trustedProxies?: string[],
): Promise<{ base: string; lines: string[]; svc: ApprovalService; server: Awaited<ReturnType<typeof listen>>['server'] }> {
  const lines: string[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    }),
  );
  const svc = approvalsUnderTest({ logger, ...(trustedProxies !== undefined ? { trustedProxies } : {}) });
  const { server, port } = await listen('127.0.0.1', 0, { current: (req, env) => svc.app.fetch(req, env as object) }, 'TEST_PORT');
  cleanups.push(async () => {
    await closeServer(server);
    svc.close();
  });
  return { base: `http://127.0.0.1:${port}`, lines, svc, server };
}

async function signIn(base: string, id: string, password: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${base}/approver/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base, ...headers },
    body: new URLSearchParams({ id, password }).toString(),
  });
  await res.arrayBuffer();
  return res.status;
}

const addressesLogged = (lines: string[]) =>
  lines
    .map((l) => JSON.parse(l) as { msg: string; address?: string })
    .filter((l) => l.msg === 'approver sign-in failed')
    .map((l) => l.address);

describe('sign-in throttle per client address', () => {
  it('after 5 failed sign-ins from one address with 5 different ids, the 6th attempt and then a right password are 429, and the log names the address', async () => {
    const { base, lines } = await served();
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++) statuses.push(await signIn(base, `nobody-${i}`, 'wrong'));
    statuses.push(await signIn(base, 'bob', 'bob-pw'));
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    expect(addressesLogged(lines)).toEqual(['127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1', '127.0.0.1']);
  });

  it('without trusted proxies, X-Forwarded-For is ignored: a fresh forwarded address per attempt does not escape the throttle', async () => {
    const { base, lines } = await served();
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++) statuses.push(await signIn(base, `nobody-${i}`, 'wrong', { 'x-forwarded-for': `203.0.113.${i}` }));
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
    expect(new Set(addressesLogged(lines))).toEqual(new Set(['127.0.0.1']));
  });

  it('from a trusted proxy, the right-most untrusted X-Forwarded-For entry is the client: clients behind it are throttled apart', async () => {
    const { base, lines } = await served(['127.0.0.1', '10.0.0.2']);
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++)
      statuses.push(await signIn(base, `nobody-${i}`, 'wrong', { 'x-forwarded-for': `198.51.100.7, 203.0.113.${i}, 10.0.0.2` }));
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    expect(addressesLogged(lines)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `203.0.113.${i}`));
    const same: number[] = [];
    for (let i = 1; i <= 6; i++) same.push(await signIn(base, `other-${i}`, 'wrong', { 'x-forwarded-for': '192.0.2.9' }));
    expect(same).toEqual([401, 401, 401, 401, 401, 429]);
  });
});

describe('listener limits and the trusted-proxies setting', () => {
  it('every listener bounds the time to send headers and the whole request', async () => {
    const { server } = await served();
    const http = server as unknown as { headersTimeout: number; requestTimeout: number };
    expect(http.headersTimeout).toBe(SERVER_TIMEOUTS.headersTimeout);
    expect(http.requestTimeout).toBe(SERVER_TIMEOUTS.requestTimeout);
  });

  it('a 200 MB sign-in body over a real listener is refused with 413 after its first chunk, without the rest being read', async () => {
    const { base } = await served();
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${base}/approver/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base, 'content-length': String(200 * 1024 * 1024) },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', reject);
      req.write('id=bob&password=');
    });
    expect(status).toBe(413);
  });

  it('COUNTERSIGN_TRUSTED_PROXIES is a comma-separated list of IP addresses, empty by default, and anything else stops start-up', () => {
    expect(loadConfig({}).COUNTERSIGN_TRUSTED_PROXIES).toEqual([]);
    expect(loadConfig({ COUNTERSIGN_TRUSTED_PROXIES: ' 10.0.0.2, ::1 ,' }).COUNTERSIGN_TRUSTED_PROXIES).toEqual(['10.0.0.2', '::1']);
    expect(() => loadConfig({ COUNTERSIGN_TRUSTED_PROXIES: '10.0.0.0/8' })).toThrow(ConfigError);
  });
});
