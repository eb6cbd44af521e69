#!/usr/bin/env node
/**
 * Countersign's command line (commander).
 * - `dev`: the embedded stack (Temporal dev server, worker, MCP endpoint, approval service,
 *   development token issuer), printing URLs, a demo bearer token and the approver identities.
 *   Ctrl-C stops everything.
 * - `token --sub <subject>`: mint a development bearer token (from the same data folder).
 * - `serve --role <role>`: one part of the stack as its own process (`cli/serve-command.ts`).
 * - `approvals list|show|approve|deny|…`: the approver's client of the approval service
 *   (`@countersign/approvals/cli`, also its own `countersign-approvals`).
 * - `receipts export|verify|jwks`: evidence receipts (`cli/receipts-command.ts`).
 * - `policy validate|replay`: a policy change tried before it applies (`cli/policy-command.ts`).
 * - `conformance …`: the SEP-2848 conformance kit against any MCP server (`@countersign/conformance/cli`,
 *   also its own `countersign-conformance`), arguments passed through.
 *
 * Every command imports what it runs when it runs: `countersign --help` loads commander and the
 * command definitions only (docs/OPERATIONS.md gives the measured time). The conformance profile's
 * server is not a command of the product: `npm run conformance:server` (conformance/profile/).
 */
import { Command } from 'commander';
import type { Config } from './config.js';

/** `load()`'s result; on a `ConfigError`, its list of problems on stderr and exit 2. */
async function orExit<T>(load: () => T): Promise<T> {
  const { ConfigError } = await import('./config.js');
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

/** The server configuration from the environment (exits 2 listing every problem). */
async function config(): Promise<Config> {
  const { loadConfig } = await import('./config.js');
  return orExit(() => loadConfig());
}

const program = new Command().name('countersign').description('Durable, out-of-band approval for MCP tool calls on Temporal (SEP-2848)');

program
  .command('dev')
  .description('run everything embedded: Temporal dev server, worker, MCP endpoint, approval service, dev token issuer')
  .option('--config <file>', 'gateway configuration: upstream MCP servers behind the gate (docs/GATEWAY.md); default COUNTERSIGN_CONFIG')
  .action(async (opts: { config?: string }) => {
    const loaded = await config();
    // the embedded stack keeps call records for `policy replay` by default (docs/PRODUCTION.md §Trying a policy change)
    const cfg = {
      ...loaded,
      COUNTERSIGN_CALL_RECORD_DIR: loaded.COUNTERSIGN_CALL_RECORD_DIR ?? `${loaded.COUNTERSIGN_DATA_DIR}/call-records`,
      ...(opts.config ? { COUNTERSIGN_CONFIG: opts.config } : {}),
    };
    const [{ DEMO_REQUESTER, startStack }, { ensureTemporalBinaries }, { exitOnSignals }] = await Promise.all([
      import('./stack.js'),
      import('./temporal/binaries.js'),
      import('@countersign/http/server-lifecycle'),
    ]);
    let stack;
    try {
      if (!cfg.TEMPORAL_ADDRESS) ensureTemporalBinaries();
      stack = await startStack(cfg);
    } catch (err) {
      process.stderr.write(`countersign: could not start: ${(err as Error).message}\n`);
      process.exit(1);
    }
    const token = await stack.issuer.mintToken({ sub: DEMO_REQUESTER, ttlSeconds: 12 * 3600 });
    const out = process.stdout;
    out.write(
      [
        '',
        'Countersign is running.',
        `  MCP endpoint        ${stack.urls.mcp}`,
        `  approver page       ${stack.urls.approverPage}`,
        `  approval API        ${stack.urls.approvals}/access/v1/requests`,
        `  token issuer        ${stack.urls.issuer}  (JWKS ${stack.urls.jwks})`,
        `  Temporal            ${stack.urls.temporal}${stack.urls.temporalUi ? `  (UI ${stack.urls.temporalUi})` : ''}`,
        `  data folder         ${cfg.COUNTERSIGN_DATA_DIR}`,
        '',
        ...(cfg.COUNTERSIGN_OAUTH_ISSUER
          ? [`Access tokens: from ${cfg.COUNTERSIGN_OAUTH_ISSUER} (the development issuer's tokens are not accepted).`]
          : [`Bearer token for the demo requester "${DEMO_REQUESTER}" (12 h):`, `  ${token}`]),
        '',
        `Approver inbox: open ${stack.urls.approverPage} and sign in with one of these (a requester never approves their own request;`,
        'transfers over 100,000 need two of them, see docs/APPROVERS.md):',
        ...stack.secrets.approvers.map((a) => `  ${a.id.padEnd(8)} password ${a.secret}   groups ${a.groups.join(',')}`),
        `From a terminal: COUNTERSIGN_APPROVALS_URL=${stack.urls.approvals} COUNTERSIGN_APPROVER=${stack.secrets.approvers[0]?.id ?? 'bob'}:<password> npx countersign approvals list`,
        `Machine approvers (supervising agent "${stack.secrets.agents[0]?.id ?? 'supervisor'}", ITSM secret) are in ${cfg.COUNTERSIGN_DATA_DIR}/secrets.json; rules in approval-rules.json there.`,
        '',
        'Try it: npm run demo    (Ctrl-C here stops everything)',
        '',
      ].join('\n'),
    );
    const running = stack;
    exitOnSignals(async () => {
      out.write('\nstopping...\n');
      await running.stop();
      out.write('stopped.\n');
    });
  });

program
  .command('token')
  .description('mint a development bearer token for the MCP endpoint')
  .option('--sub <subject>', 'token subject', 'alice')
  .option('--ttl <seconds>', 'lifetime in seconds', '3600')
  .action(async (o: { sub: string; ttl: string }) => {
    const ttl = Number(o.ttl);
    if (!Number.isInteger(ttl) || ttl <= 0 || !/^[\x21-\x7e]{1,255}$/.test(o.sub)) {
      process.stderr.write('countersign token: --ttl must be a positive whole number of seconds and --sub 1-255 printable characters\n');
      process.exit(2);
    }
    const cfg = await config();
    const [{ join }, { loadOrCreateSecrets }, { loadOrCreateDevIssuer }] = await Promise.all([
      import('node:path'),
      import('./secrets.js'),
      import('./auth/dev-issuer.js'),
    ]);
    loadOrCreateSecrets(cfg.COUNTERSIGN_DATA_DIR);
    const host = cfg.COUNTERSIGN_HOST;
    const issuer = await loadOrCreateDevIssuer({
      keyFile: join(cfg.COUNTERSIGN_DATA_DIR, 'dev-issuer-key.json'),
      issuer: cfg.COUNTERSIGN_ISSUER_URL ?? `http://${host}:${cfg.COUNTERSIGN_ISSUER_PORT}`,
      audience: `${cfg.COUNTERSIGN_MCP_URL ?? `http://${host}:${cfg.COUNTERSIGN_PORT}`}/mcp`,
    });
    process.stdout.write(`${await issuer.mintToken({ sub: o.sub, ttlSeconds: ttl })}\n`);
  });

const { registerServeCommand } = await import('./cli/serve-command.js');
registerServeCommand(program, config);

// `approvals`: the approval service's own client; its definitions are loaded only when it runs
if (process.argv[2] === 'approvals') {
  const [{ registerApprovalsCommand }, { loadApprovalsClientEnv }] = await Promise.all([
    import('@countersign/approvals/cli'),
    import('@countersign/approvals/config'),
  ]);
  registerApprovalsCommand(program, () => loadApprovalsClientEnv());
} else {
  program
    .command('approvals')
    .description(
      'list, inspect and decide pending approval requests (env: COUNTERSIGN_APPROVER=id:secret, COUNTERSIGN_APPROVALS_URL); see countersign approvals --help',
    );
}

const { registerReceiptsCommand } = await import('./cli/receipts-command.js');
registerReceiptsCommand(program, config);

const { registerPolicyCommand } = await import('./cli/policy-command.js');
registerPolicyCommand(program, config);

// `conformance`: the SEP-2848 conformance kit (@countersign/conformance), its arguments passed through unchanged
program
  .command('conformance')
  .description('run the SEP-2848 conformance kit against an MCP server (countersign-conformance; see countersign conformance --help)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[args...]')
  .action(async () => {
    const { conformanceMain } = await import('@countersign/conformance/cli');
    process.exitCode = await conformanceMain(process.argv.slice(process.argv.indexOf('conformance') + 1));
  });

await program.parseAsync(process.argv);
