/**
 * The kit's command line: `countersign-conformance --url <mcp endpoint> --token <bearer>
 * (--approver-url <base> --approver <id:secret> | --decide "<command>") [--report <file>] [...]`
 * (also `npm run conformance --` and `countersign conformance` in the Countersign repository).
 *
 * Runs the SEP-2848 black-box suite (`suite.ts`) against any server that implements
 * `io.modelcontextprotocol/tool-approval`, over the wire plus the test-hook contract of the
 * package's TEST-HOOKS.md. Prints one line per check and closes with `N passed, N failed`
 * (`, N skipped` when some were skipped); `--report` also writes the JSON report
 * (`report.schema.json`). Exit status: 0 all passed (skips allowed), 1 a check failed, 2 a usage
 * error or a run that could not start. `countersign-conformance vectors [dir|file] [--json]` runs
 * the static vectors' verifier instead (`vectors/verify.mjs`, its README).
 */
import { parseArgs } from 'node:util';
import { writeFileSync } from 'node:fs';
import { vectorsMain } from '../vectors/verify.mjs';
import { commandHooks } from './decide-command.js';
import { buildReport } from './report.js';
import { CHECK_TITLES, runSuite } from './suite.js';
import type { SuiteOptions } from './wire.js';

const USAGE = `usage: countersign-conformance --url <mcp endpoint> --token <bearer> --approver-url <hook base> --approver <id:secret> [options]
       countersign-conformance --url <mcp endpoint> --token <bearer> --decide "<command>" [--approver <id>] [options]
       countersign-conformance vectors [dir|file] [--json]   the static vectors (the kit's vectors/ by default), no network;
                                                            exit 0 all judged as expected, 1 a mismatch, 2 a malformed vector

required
  --url URL                 the MCP endpoint (Streamable HTTP, protocol 2026-07-28)
  --token TOKEN             bearer token of the requesting principal A (or env CONFORMANCE_TOKEN);
                            --token '' sends no Authorization header (a server that needs none)
and either the HTTP test hooks (TEST-HOOKS.md, hooks 1 and 2)
  --approver-url URL        base of the test-hook API;
                            Countersign: <approval service>/access/v1, e.g. http://127.0.0.1:8788/access/v1
  --approver ID:SECRET      an approver's HTTP Basic credential (repeat for several; not the requester;
                            or env CONFORMANCE_APPROVERS=ID:SECRET[,ID:SECRET...])
or a command that plays them (TEST-HOOKS.md, "The --decide command")
  --decide COMMAND          run as: sh -c 'COMMAND "$@"' with "pending" or "decide <id> <approve|deny> <approver>"
                            and the same as JSON on stdin; --approver ID (secret optional) names the approvers
  --decide-timeout-ms N     longest one run of the command may take (default 30000)

optional
  --report FILE             write the JSON report (report.schema.json of this package) to FILE
  --token-b TOKEN           bearer token of another principal B (foreign-task, changed-principal and MRTR
                            other-caller checks; or env CONFORMANCE_TOKEN_B)
  --tool NAME               the approval-gated tool (default wire_transfer)
  --arguments JSON          arguments that are a requestable denial (default {"to":"acct-991","amount":50000})
  --marker-field NAME       free-text argument that carries each check's unique marker (default memo)
  --expiring-arguments JSON a requestable denial whose request deadline is a few seconds (else the expiry check is skipped)
  --expiry-timeout-ms N     how long to wait for that expiry (default 30000)
  --justify-arguments JSON  a requestable denial that asks for submission input first (MRTR; else those checks are skipped)
  --in-task-arguments JSON  a requestable denial whose task asks for input (tasks/update; else that check fails as unsupported)
  --blocked-arguments JSON  a denial that is not requestable (default for wire_transfer {"to":"acct-666","amount":50000};
                            "none" skips the check)
  --result-retention-ms N   the server's result retention, to check ttlMs strictly
  --effects-url URL         side-effect probe: GET URL?marker=<m> → {"count": n} (TEST-HOOKS.md, hook 3)
  --pending-path PATH       hook 1 path (default /approvals/pending)
  --decision-path PATH      hook 2 path, {id} = request id (default /requests/{id}/decision)
  --timeout-ms N            longest wait for any state change (default 20000)
  --only ID[,ID...]         run only these checks (repeatable)
  --list                    list the checks and exit
`;

class UsageError extends Error {}

function fail(msg: string): never {
  throw new UsageError(msg);
}

function json(name: string, v: string | undefined): Record<string, unknown> | undefined {
  if (v === undefined) return undefined;
  try {
    const o = JSON.parse(v) as unknown;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('not an object');
    return o as Record<string, unknown>;
  } catch {
    return fail(`--${name} must be a JSON object`);
  }
}

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} must be a whole number`);
  return n;
}

/**
 * Run the command line on `argv` (the arguments after the program name); resolves with the exit
 * status (0 all passed, 1 a check failed, 2 a usage error or a run that could not start). Writes
 * the check lines to stdout, usage errors to stderr, the report to `--report`. Never throws.
 */
export async function conformanceMain(argv: string[]): Promise<number> {
  if (argv[0] === 'vectors') return vectorsMain(argv.slice(1));
  try {
    return await main(argv);
  } catch (err) {
    process.stderr.write(`conformance: ${(err as Error).message}\n${err instanceof UsageError ? `\n${USAGE}` : ''}`);
    return 2;
  }
}

async function main(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        'token-b': { type: 'string' },
        'approver-url': { type: 'string' },
        approver: { type: 'string', multiple: true },
        tool: { type: 'string', default: 'wire_transfer' },
        arguments: { type: 'string' },
        'marker-field': { type: 'string', default: 'memo' },
        'expiring-arguments': { type: 'string' },
        'expiry-timeout-ms': { type: 'string' },
        'justify-arguments': { type: 'string' },
        'in-task-arguments': { type: 'string' },
        'blocked-arguments': { type: 'string' },
        'result-retention-ms': { type: 'string' },
        'effects-url': { type: 'string' },
        'pending-path': { type: 'string' },
        'decision-path': { type: 'string' },
        'timeout-ms': { type: 'string' },
        decide: { type: 'string' },
        'decide-timeout-ms': { type: 'string' },
        report: { type: 'string' },
        only: { type: 'string', multiple: true },
        list: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.list) {
    for (const [id, title] of CHECK_TITLES) process.stdout.write(`${id}  ${title}\n`);
    return 0;
  }
  // Secrets may come from the environment, so they stay out of shell history and `npm run`'s echo.
  const token = values.token ?? process.env.CONFORMANCE_TOKEN;
  const tokenB = values['token-b'] ?? process.env.CONFORMANCE_TOKEN_B;
  const approverArgs = values.approver ?? process.env.CONFORMANCE_APPROVERS?.split(',').filter(Boolean);
  const decide = values.decide;
  if (!values.url || token === undefined) fail('--url and --token are required');
  if (decide !== undefined && values['approver-url']) fail('--decide and --approver-url exclude each other');
  if (decide === undefined && (!values['approver-url'] || !approverArgs?.length))
    fail('--approver-url and --approver are required (or --decide)');
  if (decide !== undefined && decide.trim() === '') fail('--decide needs a command');
  const approvers = (approverArgs ?? []).map((a) => {
    const i = a.indexOf(':');
    if (decide !== undefined && i < 0 && a.length > 0) return { id: a };
    if (i < 1 || i === a.length - 1) fail(decide !== undefined ? '--approver must be ID or ID:SECRET' : '--approver must be ID:SECRET');
    return { id: a.slice(0, i), secret: a.slice(i + 1) };
  });
  const wireTransfer = values.tool === 'wire_transfer';
  const blocked =
    values['blocked-arguments'] === 'none'
      ? undefined
      : (json('blocked-arguments', values['blocked-arguments']) ?? (wireTransfer ? { to: 'acct-666', amount: 50_000 } : undefined));
  const effectsUrl = values['effects-url'];
  const opts: SuiteOptions = {
    url: values.url,
    token,
    ...(tokenB ? { tokenB } : {}),
    ...optional('approverUrl', values['approver-url']),
    approvers,
    ...(values['pending-path'] ? { pendingPath: values['pending-path'] } : {}),
    ...(values['decision-path'] ? { decisionPath: values['decision-path'] } : {}),
    tool: values.tool!,
    arguments:
      json('arguments', values.arguments) ??
      (wireTransfer ? { to: 'acct-991', amount: 50_000 } : fail('--arguments is required for a tool other than wire_transfer')),
    markerField: values['marker-field']!,
    ...optional('expiringArguments', json('expiring-arguments', values['expiring-arguments'])),
    ...optional('justifyArguments', json('justify-arguments', values['justify-arguments'])),
    ...optional('inTaskArguments', json('in-task-arguments', values['in-task-arguments'])),
    ...optional('blockedArguments', blocked),
    ...optional('resultRetentionMs', int('result-retention-ms', values['result-retention-ms'])),
    ...optional('timeoutMs', int('timeout-ms', values['timeout-ms'])),
    ...optional('expiryTimeoutMs', int('expiry-timeout-ms', values['expiry-timeout-ms'])),
    ...(values.only
      ? {
          only: values.only
            .flatMap((s) => s.split(','))
            .map((s) => s.trim())
            .filter(Boolean),
        }
      : {}),
    ...(effectsUrl
      ? {
          effects: async (marker: string) => {
            const u = new URL(effectsUrl);
            u.searchParams.set('marker', marker);
            const res = await fetch(u);
            const body = (await res.json()) as { count?: unknown };
            if (!res.ok || typeof body.count !== 'number') throw new Error(`effects probe answered HTTP ${res.status}`);
            return body.count;
          },
        }
      : {}),
    log: (line) => process.stdout.write(`${line}\n`),
  };
  if (decide !== undefined) {
    const timeoutMs = int('decide-timeout-ms', values['decide-timeout-ms']);
    opts.hooks = commandHooks({ command: decide, ...(timeoutMs !== undefined ? { timeoutMs } : {}) }, opts);
  }
  const run = await runSuite(opts);
  if (values.report) writeFileSync(values.report, `${JSON.stringify(buildReport(run, opts.url), null, 2)}\n`);
  return run.failed > 0 ? 1 : 0;
}

function optional<K extends string, V>(key: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: V };
}
