/**
 * A production-shaped Temporal for the cluster tests (`npm run test:cluster`): PostgreSQL
 * (`./postgres.ts`) and the Go server built by
 * scripts/install-temporal-server.mjs with its four services (frontend, history, matching, worker),
 * in one process or, with `processes: 'per-service'`, one process per service (`start --service`),
 * each of which can be SIGKILLed and started again on the same ports and database; set up with the same scripts docker-compose.yml runs: `deploy/temporal-schema.sh` (the SQL tool,
 * run twice to prove it can run on every start) and `deploy/temporal-setup.sh` (the Temporal CLI:
 * namespace, retention, search attributes). Resolves once the namespace answers a search-attribute
 * query. Throws with the server's first output lines when it does not come up.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { temporalCliPath } from '../../src/temporal/binaries.js';
import { restartablePort } from '../../src/temporal/dev-server.js';
import { startPostgres } from './postgres.js';

const BIN = join(PROJECT_ROOT, '.tools/temporal-server/v1.32.2');
const SERVER = join(BIN, 'server');
const SQL_TOOL = join(BIN, 'sql');
/** gRPC status code NOT_FOUND. */
const GRPC_NOT_FOUND = 5;

/** One of the Temporal server's services, as `temporal-server start --service` names them. */
export type TemporalService = 'frontend' | 'history' | 'matching' | 'worker';

const SERVICES: readonly TemporalService[] = ['frontend', 'history', 'matching', 'worker'];

/** A running PostgreSQL + Temporal server; `address` is the frontend's `host:port`. */
export interface PostgresTemporal {
  address: string;
  namespace: string;
  /**
   * SIGKILL the process of `service` and wait until it has exited. Only with `processes:
   * 'per-service'`; throws otherwise, or when that service is not running.
   */
  kill(service: TemporalService): Promise<void>;
  /**
   * Start `service` again on its ports and the same database; resolves once the namespace answers
   * a visibility query, a `DescribeTaskQueue` (matching) and a `DescribeWorkflowExecution` (history)
   * through the frontend again. Only with `processes: 'per-service'`; throws when it is already running or does not
   * come back within 60 s (with its first output lines).
   */
  start(service: TemporalService): Promise<void>;
  /**
   * SIGKILL PostgreSQL: the postmaster and every backend at once (stopped first, so it forks no
   * new one meanwhile), as when its machine or container dies; resolves once they are all gone.
   */
  killPostgres(): Promise<void>;
  /**
   * Start PostgreSQL again on the same data folder and port (it runs crash recovery); resolves once
   * the Temporal services answer through the frontend as after {@link start}.
   */
  startPostgres(): Promise<void>;
  /**
   * PIDs of the running processes, for memory reports (`npm run load -- --target cluster`): each
   * Temporal server process by service (`all` when the four run in one) and PostgreSQL's
   * postmaster (null while it is down).
   */
  pids(): { temporal: Record<string, number>; postmaster: number | null };
  stop(): Promise<void>;
}

function serverConfig(pgPort: number, p: number[]): string {
  const store = (db: string) => `
      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "127.0.0.1:${pgPort}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: "1h"`;
  const svc = (name: string, grpc: number, membership: number) =>
    `  ${name}: { rpc: { grpcPort: ${grpc}, membershipPort: ${membership}, bindOnLocalHost: true } }\n`;
  return `log:
  stdout: true
  level: error
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store('temporal')}
    visibility:${store('temporal_visibility')}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
${svc('frontend', p[0]!, p[1]!)}${svc('history', p[2]!, p[3]!)}${svc('matching', p[4]!, p[5]!)}${svc('worker', p[6]!, p[7]!)}clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p[0]}"
dcRedirectionPolicy:
  policy: "noop"
`;
}

/**
 * Run one of docker-compose.yml's setup scripts with `tools` (name → binary) on PATH and `env`.
 * Asynchronous, so the server processes are watched meanwhile; killed after 180 s (the setup script
 * waits for the frontend without a limit of its own).
 */
async function runComposeScript(script: string, dir: string, tools: Record<string, string>, env: Record<string, string>): Promise<void> {
  const toolDir = join(dir, 'tools');
  mkdirSync(toolDir, { recursive: true });
  for (const [name, target] of Object.entries(tools)) if (!existsSync(join(toolDir, name))) symlinkSync(target, join(toolDir, name));
  await promisify(execFile)('sh', [join(PROJECT_ROOT, 'deploy', script)], {
    env: { PATH: `${toolDir}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: dir, ...env },
    timeout: 180_000,
  });
}

/**
 * Start PostgreSQL and the four-service Temporal server, set up as docker-compose.yml does.
 * `retention`: a CLI duration (`48h`). `processes`: `'one'` (default) runs the four services in one
 * server process; `'per-service'` runs each in its own, so a test can kill and restart one of them.
 */
export async function startPostgresTemporal(opts: {
  namespace: string;
  retention: string;
  processes?: 'one' | 'per-service';
}): Promise<PostgresTemporal> {
  for (const need of [SERVER, SQL_TOOL]) {
    if (!existsSync(need))
      throw new Error(`${need} is missing: run npm run test:cluster, which builds it (scripts/install-temporal-server.mjs)`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'countersign-pg-'));
  const postgres = await startPostgres(dir);
  const pgPort = postgres.port;
  // key: the service name, or `all` for the one process running the four
  const servers = new Map<string, ChildProcess>();
  const output = new Map<string, string>();
  const halt = async (key: string, signal: NodeJS.Signals) => {
    const server = servers.get(key);
    servers.delete(key);
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill(signal);
      await exited;
    }
  };
  const stop = async () => {
    // frontend first, so no new call reaches a half-stopped cluster
    for (const key of ['frontend', ...servers.keys()]) await halt(key, 'SIGTERM');
    postgres.stop();
  };
  try {
    const sqlEnv = { POSTGRES_SEEDS: '127.0.0.1', DB_PORT: String(pgPort), POSTGRES_USER: 'postgres', POSTGRES_PWD: '' };
    for (let run = 0; run < 2; run++) await runComposeScript('temporal-schema.sh', dir, { 'temporal-sql-tool': SQL_TOOL }, sqlEnv);

    const ports: number[] = [];
    // below 32768: the cluster-membership table stores the gRPC port as a SMALLINT
    for (let i = 0; i < 8; i++) ports.push(await restartablePort());
    const address = `127.0.0.1:${ports[0]}`;
    const configFile = join(dir, 'temporal.yaml');
    writeFileSync(configFile, serverConfig(pgPort, ports));
    // While a service is starting, an early exit is restarted (up to 5 times), as a supervisor
    // would: started together on a fresh database, the processes race to write its initial rows
    // and a loser exits ("duplicate key value violates unique constraint"). Each process's output is kept in <dir>/temporal-<service>.log.
    const starting = new Set<string>();
    // services that exited unexpectedly and were not restarted
    const failed = new Set<string>();
    const launch = (key: string, restartsLeft = 5) => {
      const services = key === 'all' ? [] : ['--service', key];
      const server = spawn(SERVER, ['--config-file', configFile, '--allow-no-auth', 'start', ...services], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      servers.set(key, server);
      output.set(key, output.get(key) ?? '');
      const keep = (b: Buffer) => {
        output.set(key, (output.get(key)! + b.toString()).slice(0, 4000));
        appendFileSync(join(dir, `temporal-${key}.log`), b);
      };
      server.stdout?.on('data', keep);
      server.stderr?.on('data', keep);
      server.once('exit', (code, signal) => {
        if (servers.get(key) !== server) return; // killed on purpose (halt)
        if (!starting.has(key) || restartsLeft === 0) {
          failed.add(key);
          return;
        }
        appendFileSync(join(dir, `temporal-${key}.log`), `\n-- exited (${code ?? signal}) while starting; restarted\n`);
        setTimeout(() => {
          if (servers.get(key) === server && starting.has(key)) launch(key, restartsLeft - 1);
        }, 1_000);
      });
    };
    const perService = opts.processes === 'per-service';
    const keys = perService ? SERVICES : ['all'];
    for (const key of keys) starting.add(key);
    for (const key of keys) launch(key);
    const exited = () => failed.size > 0;
    const outputs = () => [...output.entries()].map(([k, o]) => `[${k}] ${o}`).join('\n');

    await runComposeScript(
      'temporal-setup.sh',
      dir,
      { temporal: temporalCliPath() },
      { TEMPORAL_ADDRESS: address, NAMESPACE: opts.namespace, RETENTION: opts.retention },
    );
    // the frontend caches search attributes: wait until a query on one of them is accepted
    const ready = async (tries: number) => {
      for (let i = 0; ; i++) {
        try {
          const conn = await Connection.connect({ address, connectTimeout: 1000 });
          try {
            await conn.withDeadline(Date.now() + 5_000, async () => {
              await conn.workflowService.listWorkflowExecutions({
                namespace: opts.namespace,
                pageSize: 1,
                query: "CountersignStatus = 'working'",
              });
              // matching answers this one, history the next (NOT_FOUND: history looked and found none)
              await conn.workflowService.describeTaskQueue({
                namespace: opts.namespace,
                taskQueue: { name: 'countersign-readiness' },
              });
              await conn.workflowService
                .describeWorkflowExecution({ namespace: opts.namespace, execution: { workflowId: 'countersign-readiness' } })
                .catch((err: unknown) => {
                  if ((err as { code?: unknown }).code !== GRPC_NOT_FOUND) throw err;
                });
            });
            return;
          } finally {
            await conn.close();
          }
        } catch (err) {
          if (exited() || i >= tries)
            throw new Error(`Temporal on PostgreSQL not ready: ${(err as Error).message}\n${outputs()}`, { cause: err });
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    };
    await ready(240);
    starting.clear();
    const perServiceOnly = (service: TemporalService) => {
      if (!perService) throw new Error(`${service}: the services run in one process (processes: 'per-service' to kill one)`);
    };
    return {
      address,
      namespace: opts.namespace,
      stop,
      pids() {
        const temporal: Record<string, number> = {};
        for (const [key, server] of servers) if (server.pid !== undefined && server.exitCode === null) temporal[key] = server.pid;
        return { temporal, postmaster: postgres.postmaster() };
      },
      async kill(service) {
        perServiceOnly(service);
        if (!servers.has(service)) throw new Error(`Temporal ${service} is not running`);
        await halt(service, 'SIGKILL');
      },
      async killPostgres() {
        await postgres.kill();
      },
      async startPostgres() {
        postgres.start();
        await ready(120);
      },
      async start(service) {
        perServiceOnly(service);
        if (servers.has(service)) throw new Error(`Temporal ${service} is already running`);
        starting.add(service);
        failed.delete(service);
        launch(service);
        try {
          await ready(120);
        } finally {
          starting.delete(service);
        }
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
