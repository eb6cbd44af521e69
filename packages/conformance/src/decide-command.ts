/**
 * Hooks 1 and 2 of TEST-HOOKS.md as a command (`--decide "<command>"`), for an implementer who would
 * rather not expose the HTTP test hooks: the suite runs the command through the shell once per
 * hook call, with the operation as arguments and as one JSON object on stdin.
 *
 *   <command> pending                                  stdin {"hook":"pending", "tool", "markerField"}
 *     → exit 0, stdout {"items": [{"id", "arguments", "expires_at"?, ...}]}   (hook 1's answer)
 *   <command> decide <id> <approve|deny> <approver>    stdin {"hook":"decide", "id", "decision",
 *                                                             "approver": {"index", "id"?}, "comment"?,
 *                                                             "marker"?, "arguments"?, "tool", "markerField"}
 *     → exit 0 decided; exit 3 refused (no longer pending, approver not eligible); stdout ignored
 *
 * Any other exit status, a timeout or unreadable stdout is a hook error: the running check fails
 * with the command's exit status and the first line of its stderr.
 *
 * The checks run concurrently and list often; `pending` calls that arrive while a run is under way
 * share the next run, started once that one ends, so each caller sees a listing begun after it asked
 * and the command runs at most twice at a time for hook 1.
 */
import { spawn } from 'node:child_process';
import type { ApprovalHooks, PendingItem, SuiteOptions } from './wire.js';
import { CheckFailure, get, isObj } from './wire.js';

/** Exit status of a `decide` the backend refused (hook 2's 4xx). */
export const DECIDE_REFUSED_EXIT = 3;

/** Options of `commandHooks`. */
export interface CommandHooksOptions {
  /** The shell command (run with `sh -c`, the operation appended as arguments). */
  command: string;
  /** Longest a single run may take before it is a hook error (default 30 000 ms). */
  timeoutMs?: number;
  /** Extra environment for the command. */
  env?: Record<string, string>;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(o: CommandHooksOptions, args: string[], input: unknown): Promise<Ran> {
  return new Promise((resolve, reject) => {
    // "$@" passes the operation's arguments to the command unchanged, whatever they contain
    const child = spawn('sh', ['-c', `${o.command} "$@"`, 'countersign-conformance-decide', ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...o.env },
      timeout: o.timeoutMs ?? 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.on('error', () => {}); // a command that does not read stdin
    child.stdin.end(JSON.stringify(input));
  });
}

const failure = (op: string, r: Ran) =>
  new CheckFailure(
    `--decide ${op} exited ${r.code ?? 'on a signal'}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]!.slice(0, 200)}` : ''}`,
  );

/**
 * Hooks 1 and 2 served by a command (the contract above). `opts` gives the tool, the marker field and
 * the approver identities passed on to the command.
 */
export function commandHooks(o: CommandHooksOptions, opts: Pick<SuiteOptions, 'tool' | 'markerField' | 'approvers'>): ApprovalHooks {
  const common = { tool: opts.tool, markerField: opts.markerField };
  const listOnce = async (): Promise<PendingItem[]> => {
    const r = await run(o, ['pending'], { hook: 'pending', ...common });
    if (r.code !== 0) throw failure('pending', r);
    let body: unknown;
    try {
      body = JSON.parse(r.stdout);
    } catch {
      throw new CheckFailure('--decide pending did not print JSON');
    }
    const items = get(body, 'items');
    if (!Array.isArray(items)) throw new CheckFailure('--decide pending did not print {"items": [...]}');
    return items as PendingItem[];
  };
  let running: Promise<PendingItem[]> | undefined;
  let next: Promise<PendingItem[]> | undefined;
  const start = (): Promise<PendingItem[]> => {
    const p = listOnce();
    running = p;
    const clear = () => {
      if (running === p) running = undefined;
    };
    p.then(clear, clear);
    return p;
  };
  return {
    pending() {
      if (!running) return start();
      next ??= running
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => {
          next = undefined;
          return start();
        });
      return next;
    },
    async decide({ id, decision, approver, comment, item }) {
      const n = opts.approvers.length;
      const index = n > 0 ? approver % n : approver;
      const who = n > 0 ? { index, id: opts.approvers[index]!.id } : { index };
      const marker = item && isObj(item.arguments) ? item.arguments[opts.markerField] : undefined;
      const r = await run(o, ['decide', id, decision, String(index)], {
        hook: 'decide',
        ...common,
        id,
        decision,
        approver: who,
        ...(comment ? { comment } : {}),
        ...(typeof marker === 'string' ? { marker } : {}),
        ...(item ? { arguments: item.arguments } : {}),
      });
      if (r.code === 0) return 200;
      if (r.code === DECIDE_REFUSED_EXIT) return 409;
      throw failure('decide', r);
    },
  };
}
