// Scope: the stack under load as the production-shaped cluster (`npm run load -- --target cluster`):
// PostgreSQL and the Temporal server built from source (test/support/postgres-temporal.ts, its four
// services in one process), then Countersign's roles as separate compiled `bin/countersign.mjs serve
// --role …` processes, as test/cluster/temporal-outage.test.ts runs them: the approval service, the
// token issuer, two workers on one task queue and two MCP fronts, on free ports and one fresh data
// folder (the approval service's and the tool's SQLite files, shared as on one host). Both fronts
// answer for one public MCP URL (the first front's; the tokens' audience), as behind a load balancer;
// each front gets the approval callbacks of the tasks it created. Each worker exports its SDK
// runtime's metrics on its own port. Everything started is stopped by `stop()`, also when starting
// fails half-way.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { startPostgresTemporal, type PostgresTemporal } from '../../test/support/postgres-temporal.js';
import { withoutNodeOptions, type StackMember, type StackProcess, type StackProcessOptions } from './stack-process.js';

/** The server build the cluster needs (scripts/install-temporal-server.mjs; `npm run test:cluster` builds it). */
export const TEMPORAL_SERVER_BUILD = join(PROJECT_ROOT, '.tools/temporal-server/v1.32.2');
const NAMESPACE = 'countersign';

/** A Countersign role process of the cluster. */
interface Role {
  name: string;
  role: 'approvals' | 'issuer' | 'worker' | 'mcp';
  env: Record<string, string>;
  args: string[];
}

/** Start the cluster (module header). Throws, after stopping what it started, when a part does not come up. */
export async function startClusterProcesses(opts: StackProcessOptions = {}): Promise<StackProcess> {
  const log = opts.log ?? (() => undefined);
  if (!existsSync(join(TEMPORAL_SERVER_BUILD, 'server')) || !existsSync(join(TEMPORAL_SERVER_BUILD, 'sql')))
    throw new Error(
      `--target cluster needs the Temporal server build in ${TEMPORAL_SERVER_BUILD}: run \`npm run test:cluster\` once (or \`node scripts/install-temporal-server.mjs\`), which builds it`,
    );
  const procs = new Map<string, ChildProcess>();
  const exits = new Map<string, Promise<void>>();
  let temporal: PostgresTemporal | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 60_000): Promise<void> =>
    (stopping ??= (async () => {
      // fronts first (no new traffic), then the workers, the approval service and the issuer; the cluster last
      for (const names of [
        ['mcp-1', 'mcp-2'],
        ['worker-1', 'worker-2'],
        ['approvals', 'issuer'],
      ])
        await Promise.all(
          names.map(async (name) => {
            const child = procs.get(name);
            if (!child || child.exitCode !== null || child.signalCode !== null) return;
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
            await exits.get(name);
            clearTimeout(timer);
          }),
        );
      await temporal?.stop();
    })());

  try {
    log('stack: starting PostgreSQL and the Temporal server (test/support/postgres-temporal.ts)');
    temporal = await startPostgresTemporal({ namespace: NAMESPACE, retention: '48h', processes: 'one' });
    const dataDir = mkdtempSync(join(os.tmpdir(), 'countersign-load-cluster-'));
    const port = { approvals: await freePort(), issuer: await freePort(), mcp1: await freePort(), mcp2: await freePort() };
    const publicMcp = `http://127.0.0.1:${port.mcp1}`;
    const common: Record<string, string> = {
      COUNTERSIGN_DATA_DIR: dataDir,
      COUNTERSIGN_HOST: '127.0.0.1',
      COUNTERSIGN_APPROVALS_PORT: String(port.approvals),
      COUNTERSIGN_ISSUER_PORT: String(port.issuer),
      COUNTERSIGN_PORT: String(port.mcp1),
      COUNTERSIGN_MCP_URL: publicMcp,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      LOG_LEVEL: 'warn',
      ...opts.env,
    };
    // the experiments' COUNTERSIGN_TEMPORAL_METRICS_ADDRESS would collide: each worker gets its own
    delete common.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS;
    const runtimeMetrics: string[] = [];
    const roles: Role[] = [
      { name: 'approvals', role: 'approvals', env: common, args: [] },
      { name: 'issuer', role: 'issuer', env: common, args: [] },
    ];
    for (const n of [1, 2]) {
      const metrics = `127.0.0.1:${await freePort()}`;
      runtimeMetrics.push(`http://${metrics}/metrics`);
      roles.push({
        name: `worker-${n}`,
        role: 'worker',
        env: { ...common, COUNTERSIGN_WORKER_PORT: String(await freePort()), COUNTERSIGN_TEMPORAL_METRICS_ADDRESS: metrics },
        args: [],
      });
    }
    for (const [n, p] of [
      [1, port.mcp1],
      [2, port.mcp2],
    ] as const)
      roles.push({
        name: `mcp-${n}`,
        role: 'mcp',
        env: { ...common, COUNTERSIGN_PORT: String(p) },
        args: ['--callback-base-url', `http://127.0.0.1:${p}/callbacks/arap`],
      });

    const commands: string[] = [];
    const serve = async (r: Role): Promise<void> => {
      const args = [...(opts.nodeFlags ?? []), 'bin/countersign.mjs', 'serve', '--role', r.role, ...r.args];
      commands.push(`${r.name}: node ${args.join(' ')}`);
      const child = spawn(process.execPath, args, {
        cwd: PROJECT_ROOT,
        // compiled code: without the driver's NODE_OPTIONS (its countersign-source condition)
        env: { ...withoutNodeOptions(process.env), ...r.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      procs.set(r.name, child);
      exits.set(r.name, new Promise<void>((resolve) => child.once('exit', () => resolve())));
      let stderr = '';
      child.stderr!.on('data', (b: Buffer) => {
        stderr = (stderr + b.toString('utf8')).slice(-3000);
        for (const line of b.toString('utf8').split('\n')) if (line.trim()) log(`${r.name}: ${line.slice(0, 400)}`);
      });
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${r.name} did not start in time:\n${stderr}`)), opts.startTimeoutMs ?? 120_000);
        let out = '';
        child.stdout!.on('data', (b: Buffer) => {
          out += b.toString('utf8');
          if (out.includes('countersign-ready')) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`${r.name} exited (${code ?? signal}) before it was ready:\n${stderr}`));
        });
      });
      log(`stack: ${r.name} (serve --role ${r.role}) ready, pid ${child.pid}`);
    };
    for (const r of roles) await serve(r);

    const urls = {
      mcp: `${publicMcp}/mcp`,
      approvals: `http://127.0.0.1:${port.approvals}`,
      issuer: `http://127.0.0.1:${port.issuer}`,
      temporal: temporal.address,
    };
    const issuer = await loadOrCreateDevIssuer({ keyFile: join(dataDir, 'dev-issuer-key.json'), issuer: urls.issuer, audience: urls.mcp });
    const secrets = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8')) as { approvers: StackProcess['approvers'] };
    const cluster = temporal;
    const pidOf = (name: string) => {
      const child = procs.get(name);
      return child && child.exitCode === null && child.signalCode === null ? child.pid! : null;
    };
    const members = (): StackMember[] => {
      const pids = cluster.pids();
      return [
        ...roles.map((r) => ({
          name: r.name,
          pid: pidOf(r.name),
          role: `countersign serve --role ${r.role}${r.role === 'mcp' ? ` on :${r.env.COUNTERSIGN_PORT}` : ''}`,
        })),
        ...Object.entries(pids.temporal).map(([key, pid]) => ({
          name: key === 'all' ? 'temporal' : `temporal-${key}`,
          pid,
          role: key === 'all' ? 'Temporal server (frontend, history, matching, worker)' : `Temporal server (${key})`,
        })),
        { name: 'postgres', pid: pids.postmaster, role: 'PostgreSQL postmaster (its backends not counted)' },
      ];
    };
    return {
      target: 'cluster',
      urls,
      mcpFronts: [`http://127.0.0.1:${port.mcp1}/mcp`, `http://127.0.0.1:${port.mcp2}/mcp`],
      namespace: NAMESPACE,
      dataDir,
      issuer,
      approvers: secrets.approvers,
      members,
      metrics: { runtime: runtimeMetrics, app: [port.mcp1, port.mcp2].map((p) => `http://127.0.0.1:${p}/metrics`) },
      command: `${Object.entries(opts.env ?? {})
        .map(([k, v]) => `${k}=${v} `)
        .join('')}${commands.join('; ')}`,
      stop,
    };
  } catch (err) {
    await stop(5_000);
    throw err;
  }
}
