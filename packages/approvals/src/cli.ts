/**
 * `countersign-approvals`: the reference approval service's own command line (commander).
 *
 * - `serve`: run the service on `COUNTERSIGN_HOST:COUNTERSIGN_APPROVALS_PORT` (settings:
 *   `ApprovalsServeConfigSchema`, `config.ts`) with its sweeper, over the data folder
 *   `COUNTERSIGN_DATA_DIR` whose `secrets.json` the gate's stack wrote (`readApprovalsSecrets`,
 *   `host.ts`); prints `approval service <url>` once it listens; Ctrl-C / SIGTERM stops it
 *   gracefully. The gate's `countersign serve --role approvals` runs the same service with the
 *   gate's `/livez`, `/readyz` and `/metrics` in front.
 * - `list | show | approve | deny | delegate | delegations | revoke-delegation`: the approver's
 *   client (`cli/approvals-command.ts`, also the gate's `countersign approvals …`).
 *
 * Each command imports what it runs when it runs, so `--help` loads commander only.
 * Exit codes: `serve` 2 for an invalid configuration, 1 when it cannot start; the approver's
 * commands as `APPROVALS_EXIT` says.
 */
import { Command } from 'commander';

/** Build the `countersign-approvals` program (`name`: how usage lines spell it). */
export async function approvalsProgram(name = 'countersign-approvals'): Promise<Command> {
  const program = new Command().name(name).description("Countersign's reference approval service and its approvers' client");
  program
    .command('serve')
    .description('run the approval service (ARAP API, approver inbox, channels) on COUNTERSIGN_APPROVALS_PORT')
    .action(async () => {
      const { ApprovalsConfigError, loadApprovalsServeConfig } = await import('./config.js');
      let config;
      try {
        config = loadApprovalsServeConfig();
      } catch (err) {
        if (!(err instanceof ApprovalsConfigError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.exit(2);
      }
      const { serveApprovals } = await import('./serve.js');
      let running;
      try {
        running = await serveApprovals(config);
      } catch (err) {
        process.stderr.write(`countersign-approvals: could not start: ${(err as Error).message}\n`);
        process.exit(1);
      }
      process.stdout.write(`approval service ${running.url}\n`);
      const { exitOnSignals } = await import('@countersign/http/server-lifecycle');
      exitOnSignals(() => running.stop());
    });
  const { registerApproverCommands } = await import('./cli/approvals-command.js');
  const { loadApprovalsClientEnv } = await import('./config.js');
  registerApproverCommands(program, () => loadApprovalsClientEnv());
  return program;
}

export {
  APPROVALS_COMMAND_DESCRIPTION,
  APPROVALS_EXIT,
  listText,
  nextPageCommand,
  registerApprovalsCommand,
  registerApproverCommands,
  showText,
} from './cli/approvals-command.js';
export type { ApprovalItem } from './cli/approvals-command.js';
