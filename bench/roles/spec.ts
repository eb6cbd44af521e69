// Scope: what a bench role process (an MCP server or a worker started as its own process, so its
// memory is measured alone) is told by the bench, and how the bench starts one and waits for it.
// The roles rebuild the same parts `src/stack.ts` wires in-process, from the exported builders.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/config.js';

export interface RoleSpec {
  /** The bench's resolved configuration (limits, durations, data folder with secrets.json). */
  config: Config;
  temporalAddress: string;
  approvalsUrl: string;
  /** Token issuer URL (its JWKS is at `/.well-known/jwks.json`). */
  issuerUrl: string;
  /** The resource identifier the tokens are minted for (shared by every MCP instance). */
  resourceUrl: string;
  /** SQLite ledger file of this role's tool registry. */
  ledgerFile: string;
  /** Worker only: workflow bundle written by the bench (so the role does not re-bundle). */
  workflowBundlePath?: string;
  /** Worker only: workflow cache size. */
  maxCachedWorkflows?: number;
  /**
   * Worker only (bench/heap): run the workflows in the main thread, and on request write a heap
   * snapshot of it into this folder when `worker-<n>.request` appears there (`worker-<n>.heapsnapshot`, then `worker-<n>.json` with the
   * memory figures taken just before).
   */
  heapSnapshotDir?: string;
  /** MCP server only (bench/heap): start runs traced (memo `tracing` on), as a tracing process does. */
  traceRuns?: boolean;
}

/** A role process: its pid, what it printed when ready, and `stop()` (SIGTERM, then SIGKILL). */
export interface RoleProcess {
  name: string;
  pid: number;
  ready: Record<string, unknown>;
  stop(): Promise<void>;
}

/** Start `bench/roles/<file>` under tsx with the spec; resolves on its `{"ready":...}` line. */
export async function startRole(
  name: string,
  file: 'mcp-server.ts' | 'worker.ts' | 'baseline-worker.ts',
  spec: RoleSpec,
  timeoutMs = 60_000,
): Promise<RoleProcess> {
  const path = fileURLToPath(new URL(`./${file}`, import.meta.url));
  // BENCH_CPU_PROF=<dir>: each role writes a V8 CPU profile there when it stops (node --cpu-prof)
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', `${process.env.BENCH_CPU_PROF}/${name}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...prof, '--expose-gc', '--import', 'tsx', path], {
    env: { ...process.env, BENCH_ROLE_SPEC: JSON.stringify(spec) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  child.stderr?.on('data', (b: Buffer) => {
    tail = (tail + b.toString()).slice(-4000);
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`role ${name} not ready in ${timeoutMs} ms:\n${tail}`)), timeoutMs);
    child.stdout?.on('data', (b: Buffer) => {
      buf += b.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
        } catch {
          reject(new Error(`role ${name} printed ${buf.slice(0, nl)}`));
        }
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`role ${name} exited during start-up:\n${tail}`));
    });
  });
  return {
    name,
    pid: child.pid!,
    ready,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Inside a role: the spec from the environment. */
export function readSpec(): RoleSpec {
  const raw = process.env.BENCH_ROLE_SPEC;
  if (!raw) throw new Error('BENCH_ROLE_SPEC is not set (bench roles are started by bench/run.ts)');
  return JSON.parse(raw) as RoleSpec;
}
