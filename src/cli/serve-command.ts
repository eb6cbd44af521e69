/**
 * `countersign serve --role <role>`: run one part of the stack as its own process, so
 * each can be stopped, killed and restarted independently against the same data folder
 * (`src/stack-roles.ts` lists the roles). Prints `countersign-ready <role> <url>` on stdout once
 * the role serves; SIGINT/SIGTERM stop it gracefully, exit 0. Exit 2: bad or missing option, an
 * option that does not apply to the role, or a bad configuration; exit 1: could not start (one
 * line on stderr saying why — for `worker` and `mcp`, Temporal not reachable at its address).
 *
 * Deliberately does not: start the other roles, or restart itself.
 */
import { connect } from 'node:net';
import type { Command } from 'commander';
import type { Config } from '../config.js';
import { ROLES, type Role } from '../roles.js';

interface ServeOptions {
  role?: string;
  approvalsUrl?: string;
  callbackBaseUrl?: string;
  workflowBundle?: string;
  backendCallTimeoutMs?: string;
}

/** Which role each role-specific option belongs to (flag name → role). */
const OPTION_ROLE: Record<Exclude<keyof ServeOptions, 'role'>, { flag: string; role: Role }> = {
  approvalsUrl: { flag: '--approvals-url', role: 'worker' },
  workflowBundle: { flag: '--workflow-bundle', role: 'worker' },
  callbackBaseUrl: { flag: '--callback-base-url', role: 'mcp' },
  backendCallTimeoutMs: { flag: '--backend-call-timeout-ms', role: 'mcp' },
};

/**
 * What is wrong with `o` as `serve` options, as one line; undefined when nothing. Pure (exported for
 * tests): a missing or unknown role, a bad timeout, an option that does not apply to the role.
 */
export function serveOptionProblem(o: ServeOptions): string | undefined {
  if (o.role === undefined) return `--role is required: one of ${ROLES.join(', ')}`;
  if (!(ROLES as readonly string[]).includes(o.role)) return `unknown role "${o.role}": use one of ${ROLES.join(', ')}`;
  for (const [key, { flag, role }] of Object.entries(OPTION_ROLE)) {
    if (o[key as keyof typeof OPTION_ROLE] !== undefined && o.role !== role)
      return `${flag} applies only to --role ${role}, not --role ${o.role}`;
  }
  if (o.backendCallTimeoutMs !== undefined) {
    const t = Number(o.backendCallTimeoutMs);
    if (!(Number.isInteger(t) && t >= 1000)) return '--backend-call-timeout-ms must be a whole number >= 1000';
  }
  return undefined;
}

/** Whether a TCP connection to `host:port` opens within `timeoutMs`. */
function reachable(address: string, timeoutMs = 3000): Promise<boolean> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(i + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Register `serve` on `program`; `config()` parses the environment (exits 2 on a problem). */
export function registerServeCommand(program: Command, config: () => Promise<Config>): void {
  program
    .command('serve')
    .description(`run one role of the stack as its own process (${ROLES.join(' | ')}); ports must be fixed`)
    .option('--role <role>', `required: one of ${ROLES.join(', ')}`)
    .option('--approvals-url <url>', 'worker: base URL of the approval backend (default: the approval service port)')
    .option('--callback-base-url <url>', 'mcp: where backend callbacks are sent (default: <mcp origin>/callbacks/arap)')
    .option(
      '--backend-call-timeout-ms <ms>',
      'mcp: per-attempt timeout of backend calls in new tasks (also how soon a call lost with a crashed worker is retried); default 30000',
    )
    .option('--workflow-bundle <file>', 'worker: a prebuilt workflow bundle (JSON {code, sourceMap}) instead of bundling at start')
    .action(async (o: ServeOptions) => {
      const problem = serveOptionProblem(o);
      if (problem) {
        process.stderr.write(`countersign serve: ${problem}\n`);
        process.exit(2);
      }
      const role = o.role as Role;
      const timeout = o.backendCallTimeoutMs === undefined ? undefined : Number(o.backendCallTimeoutMs);
      const cfg = await config();
      // what starts the role, loaded only now (`countersign --help` loads none of it)
      const [{ createLogger }, { exitOnSignals }, { startRole }, { roleUrls }, { ensureTemporalBinaries }] = await Promise.all([
        import('@countersign/http/log'),
        import('@countersign/http/server-lifecycle'),
        import('../stack-roles.js'),
        import('../compose.js'),
        import('../temporal/binaries.js'),
      ]);
      const temporalDown = (address: string) =>
        `countersign serve --role ${role}: cannot reach Temporal at ${address}; start it first (countersign serve --role temporal) or set TEMPORAL_ADDRESS to a running server\n`;
      let running;
      try {
        if (role === 'temporal') ensureTemporalBinaries();
        if (role === 'worker' || role === 'mcp') {
          const address = roleUrls(cfg).temporalAddress;
          if (!(await reachable(address))) {
            process.stderr.write(temporalDown(address));
            process.exit(1);
          }
        }
        running = await startRole(role, cfg, {
          logger: createLogger({ level: cfg.LOG_LEVEL }),
          ...(o.approvalsUrl ? { approvalsUrl: o.approvalsUrl.replace(/\/+$/, '') } : {}),
          ...(o.callbackBaseUrl ? { callbackBaseUrl: o.callbackBaseUrl.replace(/\/+$/, '') } : {}),
          ...(o.workflowBundle ? { workflowBundlePath: o.workflowBundle } : {}),
          ...(timeout !== undefined ? { backendCallTimeoutMs: timeout } : {}),
        });
      } catch (err) {
        const message = (err as Error).message;
        // a connection error from the Temporal client (a tonic transport error) in one line, not raw
        if (
          (role === 'worker' || role === 'mcp') &&
          /tonic|transport error|Connection refused|connect error|Failed to connect/i.test(message)
        ) {
          let address = 'its address';
          try {
            address = roleUrls(cfg).temporalAddress;
          } catch {
            // keep the generic wording
          }
          process.stderr.write(temporalDown(address));
        } else process.stderr.write(`countersign serve --role ${role}: could not start: ${message.split('\n')[0]}\n`);
        process.exit(1);
      }
      process.stdout.write(`countersign-ready ${role} ${running.url}\n`);
      const stopped = running;
      exitOnSignals(() => stopped.stop().catch(() => undefined));
    });
}
