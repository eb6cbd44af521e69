// Scope: the fault harness's process manager. Runs each role of the stack (`countersign serve
// --role …`) as its own process group on fixed free ports against one data folder, with the
// test-only fault hook preloaded; kills (SIGKILL to the whole group) and restarts them. The worker
// reaches the approval service, and the approval service reaches the MCP callback receiver, through
// recording proxies (`proxy.ts`) so trials can kill at observed states and replay callbacks.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import type { StackSecrets } from '../../src/secrets.js';
import type { Role } from '../../src/stack-roles.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { isPortFree, restartablePort } from '../../src/temporal/dev-server.js';
import { bundleWorkflows } from '../../src/worker.js';
import { Connection } from '@temporalio/client';
import { startProxy, type Proxy } from './proxy.js';

const HOOK = join(PROJECT_ROOT, 'test/faults/install-fault-hook.mjs');
/** The recording upstream of the upstream rows: one tool `op`, one line per call in `calls.log` (labels `hang-…` never answered). */
const UPSTREAM_FIXTURE = join(PROJECT_ROOT, 'test/gateway/fixtures/drift-server.ts');

/** Name of the recording upstream in the harness's gateway configuration; its tool is served as `rec__op`. */
export const UPSTREAM_NAME = 'rec';

/** Every destructive tool of the recording upstream needs treasury approval (the same approvers as wire_transfer). */
const UPSTREAM_POLICY = `
@id("rec-permit")
permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"${UPSTREAM_NAME}");

@id("rec-destructive-needs-treasury")
@requestable("true")
@approver_group("treasury")
@request_ttl("P1D")
@reason("Destructive tools of the recording upstream need treasury approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"${UPSTREAM_NAME}")
when { resource.destructiveHint }
unless { context has approval && context.approval.state == "approved" };
`;
const CLI = join(PROJECT_ROOT, 'src/cli.ts');

/** Tunables of a harness cluster (ms). Short timeouts make lost work visible within seconds. */
export interface ClusterOptions {
  executionTimeoutMs?: number;
  backendCallTimeoutMs?: number;
  /**
   * Put the recording upstream (`UPSTREAM_FIXTURE`) behind the gateway of the mcp and worker roles,
   * with the repository's policies plus {@link UPSTREAM_POLICY}; default false (native tools only).
   */
  upstream?: boolean;
  /** Receives every stderr line of every role (default: dropped, except on start failures). */
  log?: (role: Role, line: string) => void;
}

/** How a role's process ended: exit code, or the signal that ended it (a planned kill is `SIGKILL`). */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Proc {
  child: ChildProcess;
  exited: Promise<ExitInfo>;
  alive: boolean;
  faultHit?: string;
}

/** One installation, its roles as separate processes. */
export class Cluster {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'countersign-faults-'));
  /** The recording upstream's folder: its `calls.log` has one line per call it received. */
  readonly upstreamDir = join(this.dataDir, 'upstream');
  ports = { mcp: 0, approvals: 0, issuer: 0, temporal: 0 };
  secrets!: StackSecrets;
  /** worker → approval service */
  approvalsProxy!: Proxy;
  /** approval service → MCP callback receiver */
  callbackProxy!: Proxy;
  private procs = new Map<Role, Proc>();
  private env: Record<string, string> = {};
  private bundlePath = join(this.dataDir, 'workflow-bundle.json');

  constructor(private readonly opts: ClusterOptions = {}) {}

  get mcpUrl(): string {
    return `http://127.0.0.1:${this.ports.mcp}/mcp`;
  }
  get approvalsUrl(): string {
    return `http://127.0.0.1:${this.ports.approvals}`;
  }

  /** Pick ports, bundle the workflows once, start every role (temporal first: it creates the secrets). */
  async start(): Promise<void> {
    this.ports = {
      mcp: await restartablePort(),
      approvals: await restartablePort(),
      issuer: await restartablePort(),
      temporal: await restartablePort(),
    };
    const { TEMPORAL_ADDRESS: _ignored, ...inherited } = process.env;
    this.env = {
      ...(inherited as Record<string, string>),
      COUNTERSIGN_DATA_DIR: this.dataDir,
      COUNTERSIGN_PORT: String(this.ports.mcp),
      COUNTERSIGN_APPROVALS_PORT: String(this.ports.approvals),
      COUNTERSIGN_ISSUER_PORT: String(this.ports.issuer),
      TEMPORAL_PORT: String(this.ports.temporal),
      COUNTERSIGN_WORKER_PORT: String(await restartablePort()), // the worker role's /livez, /readyz, /metrics
      TEMPORAL_UI_PORT: '0',
      COUNTERSIGN_TASK_QUEUE: `faults-${this.ports.temporal}`,
      COUNTERSIGN_EXECUTION_TIMEOUT_MS: String(this.opts.executionTimeoutMs ?? 3000),
      COUNTERSIGN_STATUS_POLL_INITIAL_MS: '1000',
      COUNTERSIGN_STATUS_POLL_MAX_MS: '2000',
      COUNTERSIGN_POLL_INTERVAL_MS: '200',
      COUNTERSIGN_CREATE_WAIT_MS: '45000',
      COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: '100000',
      COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: '100000',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    };
    delete this.env.COUNTERSIGN_FAULT;
    if (this.opts.upstream) this.configureUpstream();
    const bundle = await bundleWorkflows();
    writeFileSync(this.bundlePath, JSON.stringify(bundle));
    await this.startRole('temporal');
    this.approvalsProxy = await startProxy(this.approvalsUrl);
    this.callbackProxy = await startProxy(`http://127.0.0.1:${this.ports.mcp}`);
    await Promise.all([this.startRole('approvals'), this.startRole('issuer')]);
    await this.startRole('mcp');
    await this.startRole('worker');
    this.secrets = JSON.parse(readFileSync(join(this.dataDir, 'secrets.json'), 'utf8')) as StackSecrets;
  }

  /** Write the gateway configuration and policy folder of the recording upstream and point the roles at them. */
  private configureUpstream(): void {
    mkdirSync(this.upstreamDir, { recursive: true });
    const policyDir = join(this.dataDir, 'policies');
    mkdirSync(policyDir);
    const repoPolicies = join(PROJECT_ROOT, 'policies');
    for (const f of readdirSync(repoPolicies)) if (f.endsWith('.cedar')) copyFileSync(join(repoPolicies, f), join(policyDir, f));
    writeFileSync(join(policyDir, 'z_faults_upstream.cedar'), UPSTREAM_POLICY);
    const configFile = join(this.dataDir, 'countersign.json');
    const upstream = {
      name: UPSTREAM_NAME,
      transport: 'stdio',
      command: process.execPath,
      args: ['--conditions=countersign-source', '--import', 'tsx', UPSTREAM_FIXTURE],
      cwd: PROJECT_ROOT,
      env: { DRIFT_STATE_DIR: { fromEnv: 'FAULTS_UPSTREAM_DIR' } },
    };
    writeFileSync(configFile, JSON.stringify({ upstreams: [upstream] }, null, 2));
    Object.assign(this.env, { COUNTERSIGN_CONFIG: configFile, COUNTERSIGN_POLICY_DIR: policyDir, FAULTS_UPSTREAM_DIR: this.upstreamDir });
  }

  /** Mint a development bearer token for `sub` (same key file as the issuer role). */
  async token(sub: string): Promise<string> {
    const issuer = await loadOrCreateDevIssuer({
      keyFile: join(this.dataDir, 'dev-issuer-key.json'),
      issuer: `http://127.0.0.1:${this.ports.issuer}`,
      audience: this.mcpUrl,
    });
    return issuer.mintToken({ sub, ttlSeconds: 6 * 3600 });
  }

  /** Whether `role`'s process is running. */
  alive(role: Role): boolean {
    return this.procs.get(role)?.alive === true;
  }

  /** The fault point `role`'s last process announced before dying, if any. */
  faultHit(role: Role): string | undefined {
    return this.procs.get(role)?.faultHit;
  }

  /**
   * How `role`'s current process ended; `timeout` when it is still running after `timeoutMs`
   * (a fault point that never fired must not hang the matrix).
   */
  async exited(role: Role, timeoutMs = 60_000): Promise<ExitInfo | 'timeout'> {
    const p = this.procs.get(role);
    if (!p) return { code: null, signal: null };
    let timer: NodeJS.Timeout | undefined;
    const out = await Promise.race([p.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)))]);
    clearTimeout(timer);
    return out;
  }

  /** Temporal connection to this cluster's dev server (the caller closes it). */
  async temporal(): Promise<Connection> {
    return Connection.connect({ address: `127.0.0.1:${this.ports.temporal}` });
  }

  /** Start `role` (optionally armed with fault `fault`, `point[@n]`); resolves when it serves. */
  async startRole(role: Role, fault?: string): Promise<void> {
    const t0 = Date.now();
    try {
      await this.spawnRole(role, fault);
    } finally {
      if (process.env.FAULTS_DEBUG) process.stderr.write(`  [${role}${fault ? ` armed ${fault}` : ''} start ${Date.now() - t0} ms]\n`);
    }
  }

  private async spawnRole(role: Role, fault?: string): Promise<void> {
    if (this.alive(role)) throw new Error(`${role} is already running`);
    const args = ['--conditions=countersign-source', '--import', 'tsx', '--import', HOOK, CLI, 'serve', '--role', role];
    if (role === 'worker') args.push('--approvals-url', this.approvalsProxy.url, '--workflow-bundle', this.bundlePath);
    if (role === 'mcp')
      args.push(
        '--callback-base-url',
        `${this.callbackProxy.url}/callbacks/arap`,
        '--backend-call-timeout-ms',
        String(this.opts.backendCallTimeoutMs ?? 4000),
      );
    const env = { ...this.env, ...(fault ? { COUNTERSIGN_FAULT: fault } : {}) };
    const child = spawn(process.execPath, args, { cwd: PROJECT_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const proc: Proc = {
      child,
      alive: true,
      exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    };
    void proc.exited.then(() => (proc.alive = false));
    this.procs.set(role, proc);
    let tail = '';
    child.stderr!.on('data', (b: Buffer) => {
      const text = b.toString();
      tail = (tail + text).slice(-3000);
      const hit = /countersign-fault-hit (\S+)/.exec(text);
      if (hit) proc.faultHit = hit[1];
      for (const line of text.split('\n')) if (line) this.opts.log?.(role, line);
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${role} did not start in 90 s:\n${tail}`)), 90_000);
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('countersign-ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void proc.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`${role} exited (${signal ?? code}) during start-up:\n${tail}`));
      });
    });
  }

  /** SIGKILL `role`'s whole process group (the Temporal role's server child included); how it ended, or undefined when it was not running. */
  async kill(role: Role): Promise<ExitInfo | undefined> {
    const p = this.procs.get(role);
    if (!p?.alive || p.child.pid === undefined) return undefined;
    try {
      process.kill(-p.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    const info = await p.exited;
    if (role === 'temporal') await waitPortFree(this.ports.temporal);
    return info;
  }

  /** Stop `role` gracefully (SIGTERM, then SIGKILL after 15 s). */
  async stopRole(role: Role): Promise<void> {
    const p = this.procs.get(role);
    if (!p?.alive || p.child.pid === undefined) return;
    const t0 = Date.now();
    p.child.kill('SIGTERM');
    const timer = setTimeout(() => this.kill(role), 15_000);
    await p.exited;
    clearTimeout(timer);
    if (process.env.FAULTS_DEBUG) process.stderr.write(`  [${role} stop ${Date.now() - t0} ms]\n`);
    try {
      process.kill(-p.child.pid, 'SIGKILL'); // leftovers of the group, if any
    } catch {
      // none
    }
  }

  /** Stop every role and the proxies; delete the data folder unless FAULTS_KEEP_DATA is set. */
  async stop(): Promise<void> {
    for (const role of ['worker', 'mcp', 'issuer', 'approvals', 'temporal'] as Role[]) await this.stopRole(role);
    await this.approvalsProxy?.close();
    await this.callbackProxy?.close();
    if (!process.env.FAULTS_KEEP_DATA) rmSync(this.dataDir, { recursive: true, force: true });
  }
}

async function waitPortFree(port: number): Promise<void> {
  for (let i = 0; i < 100 && !(await isPortFree(port)); i++) await new Promise((r) => setTimeout(r, 100));
}
