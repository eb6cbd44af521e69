/**
 * Runs `temporal server start-dev` as a child process: SQLite-backed when `dbFile` is given (so
 * pending tasks survive a restart), Update-with-Start enabled, the approval workflow's search
 * attributes registered. Used by `npm start` and by the
 * end-to-end tests; production points `TEMPORAL_ADDRESS` at a real cluster instead.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { Connection } from '@temporalio/client';
import { temporalCliPath } from './binaries.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../workflows/search-attributes.js';

/** A running dev server. `stop()` sends SIGTERM and resolves when the process exited. */
export interface DevServer {
  address: string;
  uiPort?: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Whether nothing listens on `host:port` right now. */
export async function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on 127.0.0.1 below the kernel's ephemeral range (read from
 * `/proc/sys/net/ipv4/ip_local_port_range`; 32768 when unknown), for a server that must come back on
 * the same port after a stop: a port from {@link freePort} lies inside the ephemeral range, where any
 * outgoing connection may take it between the stop and the restart (EADDRINUSE). Picks at random in
 * [10000, lower bound) and checks it is free. Throws after 100 taken candidates.
 */
export async function restartablePort(): Promise<number> {
  let low = 32768;
  try {
    low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || low;
  } catch {
    /* not Linux: keep the IANA dynamic range's usual lower bound */
  }
  const top = Math.max(10001, Math.min(low, 65536));
  for (let i = 0; i < 100; i++) {
    const port = 10000 + Math.floor(Math.random() * (top - 10000));
    if (await isPortFree(port)) return port;
  }
  throw new Error('no free port below the ephemeral range after 100 tries');
}

/** A free TCP port on 127.0.0.1 (best effort: another process may take it before use). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Start a dev server and wait until its frontend answers (up to `readyTimeoutMs`, default 60000).
 * `port` defaults to a free port; `uiPort` 0/undefined disables the web UI. Throws with the
 * server's last stderr lines if it exits or does not become ready.
 */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  // The CLI picks its own free ports for the HTTP API, metrics and each service's membership, and
  // binds them later: another process can take one in between (seen with many stacks starting at
  // once). Such a start fails with "address already in use"; when the caller fixed no port, try again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      const raced = err instanceof DevServerPortRaceError;
      if (!raced || opts.port !== undefined || attempt >= DEV_SERVER_START_ATTEMPTS) throw raced ? new Error(err.message) : err;
      opts.log?.(`temporal dev server lost a port race on start (attempt ${attempt}); starting again on other ports\n`);
    }
  }
}

/** Options of {@link startDevServer}. */
export interface DevServerOptions {
  port?: number;
  uiPort?: number;
  dbFile?: string;
  namespace?: string;
  readyTimeoutMs?: number;
  log?: (line: string) => void;
  /**
   * More `--dynamic-config-value key=<JSON value>` settings, after the stack's own (a later value of
   * a key wins), e.g. `{ 'history.workflowTaskRetryMaxInterval': '1s' }` (durations as Go duration
   * strings). Keys are the server's dynamic config (Temporal server `common/dynamicconfig`); a value
   * of the wrong type fails the start with the server's message.
   */
  dynamicConfig?: Record<string, string | number | boolean>;
}

/** Starts tried by {@link startDevServer} when the server loses a port race during start-up. */
const DEV_SERVER_START_ATTEMPTS = 3;

/** The dev server exited during start-up because a port it chose was taken meanwhile. */
class DevServerPortRaceError extends Error {}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const port = opts.port ?? (await freePort());
  // Never adopt a server we did not start (a leftover dev server, another stack's): its tasks,
  // approvals and ledger would mix with ours.
  for (const p of [port, ...(opts.uiPort ? [opts.uiPort] : [])]) {
    if (!(await isPortFree(p))) {
      throw new Error(
        `port ${p} on 127.0.0.1 is already in use, so a Temporal dev server cannot start there. ` +
          'Stop whatever holds it (a leftover `temporal server start-dev`?), or set TEMPORAL_PORT / TEMPORAL_UI_PORT to free ports, ' +
          'or set TEMPORAL_ADDRESS to use that server deliberately.',
      );
    }
  }
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    opts.namespace ?? 'default',
    '--log-level',
    'error',
    '--dynamic-config-value',
    'frontend.enableExecuteMultiOperation=true',
    '--dynamic-config-value',
    'frontend.enableUpdateWorkflowExecution=true',
    // a run whose workflow task failed or timed out twice in a row is listed by the
    // TemporalReportedProblems search attribute (the workflow-task watchdog reads it,
    // src/temporal/workflow-task-watchdog.ts; the server's default is 5)
    '--dynamic-config-value',
    'system.numConsecutiveWorkflowTaskProblemsToTriggerSearchAttribute=2',
    // the approval workflow's typed search attributes (workflows/search-attributes.ts)
    ...SEARCH_ATTRIBUTE_DEFINITIONS.flatMap((d) => ['--search-attribute', `${d.name}=${d.type}`]),
    ...Object.entries(opts.dynamicConfig ?? {}).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
  ];
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  const child = spawn(temporalCliPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let tail = '';
  const onData = (b: Buffer): void => {
    tail = (tail + b.toString()).slice(-4000);
    opts.log?.(b.toString());
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let dead = false;
  void exited.then(() => (dead = true));
  const address = `127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (dead) {
      const message = `temporal dev server exited during start-up:\n${tail}`;
      throw /address already in use/.test(tail) ? new DevServerPortRaceError(message) : new Error(message);
    }
    try {
      if (dead) throw new Error('exited');
      const conn = await Connection.connect({ address, connectTimeout: 1000 });
      await conn.workflowService.getSystemInfo({});
      await conn.close();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`temporal dev server did not become ready on ${address}:\n${tail}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    address,
    ...(opts.uiPort ? { uiPort: opts.uiPort } : {}),
    process: child,
    async stop() {
      if (dead) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
