// Scope: where the Python MCP SDK for the client tests lives, its one-time install, and running
// the Python client script asynchronously (the stack under test answers from this same process).
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';

/** Folder holding `mcp` 2.3.0 (`PYTHON_MCP_PATH`, else `.tools/py-mcp`). */
export const PYTHON_MCP_PATH = process.env.PYTHON_MCP_PATH || join(PROJECT_ROOT, '.tools', 'py-mcp');

/** Folder holding `fastmcp-tasks` 4.1.4 and its dependencies (`FASTMCP_TASKS_PATH`, else `.tools/py-fastmcp-tasks`). */
export const FASTMCP_TASKS_PATH = process.env.FASTMCP_TASKS_PATH || join(PROJECT_ROOT, '.tools', 'py-fastmcp-tasks');

/**
 * Run `scripts/install-python-packages.mjs` (pip-installs `mcp==2.3.0` and `fastmcp-tasks==4.1.4`
 * when missing); throws when it fails.
 */
export function ensurePythonPackages(): void {
  const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'scripts', 'install-python-packages.mjs')], { stdio: 'inherit' });
  if (r.status !== 0)
    throw new Error('A Python package of the client tests is missing and could not be installed (see the message above).');
}

/** One JSON line the script printed. */
export type ScriptEvent = Record<string, unknown> & { event: string };

/**
 * Run `test/clients/python_mcp_client.py` with `env`; `onEvent` sees each JSON line of its stdout
 * as it arrives (so a test can approve while the script waits). Resolves with the exit code, all
 * events and stderr; the script is killed after `timeoutMs`.
 */
export function runPythonClient(
  env: Record<string, string>,
  onEvent: (e: ScriptEvent) => void | Promise<void> = () => {},
  timeoutMs = 120_000,
): Promise<{ code: number | null; events: ScriptEvent[]; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('python3', [join(PROJECT_ROOT, 'test', 'clients', 'python_mcp_client.py')], {
      env: { ...process.env, ...env, PYTHONPATH: PYTHON_MCP_PATH, PYTHONUNBUFFERED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const events: ScriptEvent[] = [];
    let stderr = '';
    let buffered = '';
    const pending: Array<Promise<void>> = [];
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        const e = JSON.parse(line) as ScriptEvent;
        events.push(e);
        pending.push(Promise.resolve(onEvent(e)));
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', async (code) => {
      clearTimeout(timer);
      await Promise.allSettled(pending);
      resolve({ code, events, stderr });
    });
  });
}
