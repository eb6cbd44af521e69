// Scope: the stack under load, as `npm start` runs it: the compiled `bin/countersign.mjs dev` (`npm run
// load` builds first; the driver's own `countersign-source` condition is not passed on) in its own Node process
// (worker, MCP endpoint, approval service and token issuer in that process; the Temporal dev
// server its child), on free ports and a fresh data folder. What the driver needs from it: the
// URLs it prints, tokens from the same development issuer key (`<data>/dev-issuer-key.json`, as
// `countersign token` mints them), the approvers of `<data>/secrets.json`, and the pids of the two
// processes whose memory the report shows. `--target cluster` starts the same interface as separate
// processes on PostgreSQL (bench/load/cluster-process.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevIssuer, type DevIssuer } from '../../src/auth/dev-issuer.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { freePort } from '../../src/temporal/dev-server.js';

/** A process of the stack under load, named as the report's memory table names it. */
export interface StackMember {
  name: string;
  /** null when it is not running (or was not found). */
  pid: number | null;
  /** What runs in it, for the report's process layout. */
  role: string;
}

/** A running stack: one process and its Temporal child (`embedded`), or the cluster's processes. */
export interface StackProcess {
  target: 'embedded' | 'cluster';
  /** MCP endpoint, approval service base URL, token issuer URL, Temporal address (host:port). */
  urls: { mcp: string; approvals: string; issuer: string; temporal: string };
  /** The MCP endpoints the traffic is spread over (embedded: `urls.mcp` only). */
  mcpFronts: string[];
  /** The Temporal namespace of the approval workflows. */
  namespace: string;
  dataDir: string;
  issuer: DevIssuer;
  /** Approvers from `<data>/secrets.json` (`id`, `secret`, `groups`). */
  approvers: Array<{ id: string; secret: string; groups: string[] }>;
  /** The processes whose memory the report shows, pids as of now. */
  members(): StackMember[];
  /** Prometheus URLs: the SDK runtime exporter of each worker, and `/metrics` of each MCP front. */
  metrics: { runtime: string[]; app: string[] };
  /** The exact command line of the stack process, or of each role (for the report). */
  command: string;
  /** Stop with SIGINT (the CLI's orderly stop), SIGKILL after `graceMs`. Resolves when it exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Options: extra environment of the stack (e.g. `COUNTERSIGN_CREATE_WAIT_MS`), Node flags (e.g. `--cpu-prof`), a log sink. */
export interface StackProcessOptions {
  env?: Record<string, string>;
  nodeFlags?: string[];
  log?: (line: string) => void;
  /** How long to wait for "Countersign is running.", ms; default 120,000. */
  startTimeoutMs?: number;
}

/** PID of a child of `parent` whose command line contains `needle`, or null. */
export function childPidOf(parent: number, needle: string): number | null {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(needle)) return Number(d);
    } catch {
      // gone or unreadable
    }
  }
  return null;
}

/** Start the stack (module header). Throws when it exits or does not come up in time. */
export async function startStackProcess(opts: StackProcessOptions = {}): Promise<StackProcess> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'countersign-load-'));
  const env: Record<string, string> = {
    COUNTERSIGN_DATA_DIR: dataDir,
    COUNTERSIGN_HOST: '127.0.0.1',
    COUNTERSIGN_PORT: String(await freePort()),
    COUNTERSIGN_APPROVALS_PORT: String(await freePort()),
    COUNTERSIGN_ISSUER_PORT: String(await freePort()),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
    ...opts.env,
  };
  const args = [...(opts.nodeFlags ?? []), 'bin/countersign.mjs', 'dev'];
  const command = `${Object.entries(opts.env ?? {})
    .map(([k, v]) => `${k}=${v} `)
    .join('')}node ${args.join(' ')}`;
  // The child gets this environment plus the stack's settings (PATH, HOME and the like pass through).
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: PROJECT_ROOT,
    // without the driver's NODE_OPTIONS (its countersign-source condition would run the sources through tsx)
    env: { ...withoutNodeOptions(process.env), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = opts.log ?? (() => undefined);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  child.stderr!.on('data', (b: Buffer) => {
    for (const line of b.toString('utf8').split('\n')) if (line.trim()) log(`stack: ${line.slice(0, 400)}`);
  });
  const running = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('stack did not start in time')), opts.startTimeoutMs ?? 120_000);
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      if (out.includes('Ctrl-C here stops everything')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`stack exited with ${code} before it was running`));
    });
  });
  const stop = async (graceMs = 60_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  try {
    await running;
  } catch (err) {
    await stop(5_000);
    throw err;
  }
  const url = (label: string): string => {
    const m = new RegExp(`${label}\\s+(http\\S+)`).exec(out);
    if (!m) throw new Error(`stack output has no ${label} URL`);
    return m[1]!;
  };
  const temporal = /Temporal\s+(\S+:\d+)/.exec(out)?.[1];
  if (!temporal) throw new Error('stack output has no Temporal address');
  const urls = {
    mcp: url('MCP endpoint'),
    approvals: url('approval API').replace(/\/access\/v1\/requests$/, ''),
    issuer: url('token issuer'),
    temporal,
  };
  const issuer = await loadOrCreateDevIssuer({ keyFile: join(dataDir, 'dev-issuer-key.json'), issuer: urls.issuer, audience: urls.mcp });
  const secrets = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8')) as { approvers: StackProcess['approvers'] };
  const temporalPid = childPidOf(child.pid!, 'temporal');
  const runtimeMetrics = env.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS;
  return {
    target: 'embedded',
    urls,
    mcpFronts: [urls.mcp],
    namespace: 'default',
    dataDir,
    issuer,
    approvers: secrets.approvers,
    members: () => [
      { name: 'main', pid: child.exitCode === null ? child.pid! : null, role: 'worker, MCP endpoint, approval service, token issuer' },
      { name: 'temporal', pid: temporalPid, role: 'Temporal dev server (child of main)' },
    ],
    metrics: { runtime: runtimeMetrics ? [`http://${runtimeMetrics}/metrics`] : [], app: [`${new URL(urls.mcp).origin}/metrics`] },
    command,
    stop,
  };
}

/** `env` without `NODE_OPTIONS`: the stack runs compiled code whatever conditions the driver was started with. */
export function withoutNodeOptions(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _driverOptions, ...rest } = env;
  return rest;
}
