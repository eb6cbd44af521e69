// Scope: bin/healthcheck.mjs, the container probe of the Dockerfile's HEALTHCHECK and of every role in
// docker-compose.yml, run as Docker runs it (a process whose exit status is the verdict) against real HTTP.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/project-root.js';

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.statusCode = req.url === '/readyz' ? 503 : req.url === '/livez' ? 200 : 404;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** Run the probe as its own process (the server here keeps answering meanwhile); resolves with its exit status. */
function probe(...urls: string[]): Promise<number | null> {
  const child = spawn(process.execPath, [join(PROJECT_ROOT, 'bin/healthcheck.mjs'), ...urls], { stdio: 'ignore' });
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('bin/healthcheck.mjs', () => {
  it('exits 0 when the URL answers 2xx, and 1 when it answers 503 or nothing listens', async () => {
    expect(await probe(`${base}/livez`)).toBe(0);
    expect(await probe(`${base}/readyz`)).toBe(1);
    expect(await probe('http://127.0.0.1:1/livez')).toBe(1);
  });

  it('is healthy when any of several URLs answers 2xx, as the image probes every role port', async () => {
    expect(await probe('http://127.0.0.1:1/livez', `${base}/readyz`, `${base}/livez`)).toBe(0);
  });

  it('exits 2 without a URL', async () => {
    expect(await probe()).toBe(2);
  });
});
