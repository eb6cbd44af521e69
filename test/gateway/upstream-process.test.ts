// Scope: stdio upstream processes are owned by their connection: started on connect, restarted
// after they die, stopped by close() and by the gateway's close(), never left running; a call to an
// upstream that cannot be started or reached fails as not sent (UpstreamNotSentError).
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StdioUpstreamConfig } from '../../src/gateway/config-file.js';
import { startGateway } from '../../src/gateway/gateway.js';
import { createServer } from 'node:net';
import { createUpstreamConnection, UpstreamNotSentError } from '../../src/gateway/upstream-client.js';
import { createLogger } from '@countersign/http/log';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';

const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'silent' });

function driftUpstream(): { config: StdioUpstreamConfig; pids: () => number[] } {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-proc-'));
  const config: StdioUpstreamConfig = {
    name: 'drift',
    transport: 'stdio',
    command: process.execPath,
    args: ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'test/gateway/fixtures/drift-server.ts')],
    env: { DRIFT_STATE_DIR: dir },
    cwd: PROJECT_ROOT,
    createDirs: [],
    tools: 'all',
    connectTimeoutMs: 30_000,
    callTimeoutMs: 30_000,
  };
  const pids = () => (existsSync(join(dir, 'pids.log')) ? readFileSync(join(dir, 'pids.log'), 'utf8').trim().split('\n').map(Number) : []);
  return { config, pids };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once `pid` has exited (polls; the assertion is on the state, not on how long it took). */
async function exited(pid: number): Promise<void> {
  while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
}

// The SDK's auto version negotiation may spawn a short-lived probe sibling; the serving process is the last pid.
const servingPid = (pids: number[]) => pids[pids.length - 1]!;

describe('stdio upstream processes', () => {
  it('close() stops the process it started', async () => {
    const { config, pids } = driftUpstream();
    const c = createUpstreamConnection(config, logger);
    expect((await c.listTools()).map((t) => t.name)).toEqual(['op']);
    const pid = servingPid(pids());
    expect(alive(pid)).toBe(true);
    await c.close();
    await exited(pid);
    expect(pids().filter(alive)).toEqual([]);
  });

  it('a process that dies is restarted, and the next request is served by the new one', async () => {
    const { config, pids } = driftUpstream();
    const c = createUpstreamConnection(config, logger);
    await c.listTools();
    const first = servingPid(pids());
    process.kill(first, 'SIGKILL');
    await exited(first);
    const r = await c.callTool('op', { label: 'after-restart' });
    expect(r.content).toEqual([{ type: 'text', text: 'recorded after-restart' }]);
    const second = servingPid(pids());
    expect(second).not.toBe(first);
    expect(alive(second)).toBe(true);
    await c.close();
    await exited(second);
  });

  it("the gateway's close() stops every upstream process", async () => {
    const a = driftUpstream();
    const b = driftUpstream();
    const gateway = await startGateway({
      nativeTools: [],
      config: { file: 'test', upstreams: [a.config, { ...b.config, name: 'drift2' }], toolModules: [] },
      logger,
    });
    expect(gateway.registry.list().map((t) => t.name)).toEqual(['drift__op', 'drift2__op']);
    const running = [servingPid(a.pids()), servingPid(b.pids())];
    expect(running.every(alive)).toBe(true);
    await gateway.close();
    for (const pid of running) await exited(pid);
    expect([...a.pids(), ...b.pids()].filter(alive)).toEqual([]);
  });

  it('a call to a stdio upstream whose command cannot be spawned fails as not sent', async () => {
    const { config } = driftUpstream();
    const c = createUpstreamConnection({ ...config, command: join(PROJECT_ROOT, 'no-such-upstream-binary') }, logger);
    const err = await c.callTool('op', { label: 'x' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamNotSentError);
    expect(err).toMatchObject({ upstream: 'drift', message: 'upstream drift is unreachable' });
    await c.close();
  });

  it('a call to a Streamable HTTP upstream on a closed port fails as not sent', async () => {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const c = createUpstreamConnection(
      {
        name: 'web',
        transport: 'http',
        url: `http://127.0.0.1:${port}/mcp`,
        headers: {},
        tools: 'all',
        connectTimeoutMs: 5_000,
        callTimeoutMs: 5_000,
      },
      logger,
    );
    const err = await c.callTool('post', {}).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UpstreamNotSentError);
    expect(err).toMatchObject({ upstream: 'web' });
    await c.close();
  });
});
