/**
 * `npm run conformance -- --url <mcp endpoint> --token <bearer> --approver-url <base> --approver <id:secret> [...]`
 *
 * Runs the SEP-2848 black-box suite (`scripts/conformance-suite.ts`) against any server that
 * implements `io.modelcontextprotocol/tool-approval`, over the wire plus the test-hook contract of
 * `conformance/TEST-HOOKS.md`. Prints one line per check and closes with `N passed, N failed`
 * (`, N skipped` when some were skipped). Exit status: 0 all passed (skips allowed), 1 a check
 * failed, 2 a usage error.
 */
import { parseArgs } from 'node:util';
import { CHECK_TITLES, runSuite, type SuiteOptions } from './conformance-suite.js';

const USAGE = `usage: npm run conformance -- --url <mcp endpoint> --token <bearer> --approver-url <hook base> --approver <id:secret> [options]

required
  --url URL                 the MCP endpoint (Streamable HTTP, protocol 2026-07-28)
  --token TOKEN             bearer token of the requesting principal A (or env CONFORMANCE_TOKEN)
  --approver-url URL        base of the test-hook API (conformance/TEST-HOOKS.md);
                            Countersign: <approval service>/access/v1, e.g. http://127.0.0.1:8788/access/v1
  --approver ID:SECRET      an approver's HTTP Basic credential (repeat for several; not the requester;
                            or env CONFORMANCE_APPROVERS=ID:SECRET[,ID:SECRET...])

optional
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

function fail(msg: string): never {
  process.stderr.write(`conformance: ${msg}\n\n${USAGE}`);
  process.exit(2);
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

async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
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
    return;
  }
  if (values.list) {
    for (const [id, title] of CHECK_TITLES) process.stdout.write(`${id}  ${title}\n`);
    return;
  }
  // Secrets may come from the environment, so they stay out of shell history and `npm run`'s echo.
  const token = values.token ?? process.env.CONFORMANCE_TOKEN;
  const tokenB = values['token-b'] ?? process.env.CONFORMANCE_TOKEN_B;
  const approverArgs = values.approver ?? process.env.CONFORMANCE_APPROVERS?.split(',').filter(Boolean);
  if (!values.url || !token || !values['approver-url'] || !approverArgs?.length)
    fail('--url, --token, --approver-url and --approver are required');
  const approvers = approverArgs.map((a) => {
    const i = a.indexOf(':');
    if (i < 1 || i === a.length - 1) fail('--approver must be ID:SECRET');
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
    approverUrl: values['approver-url'],
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
  const report = await runSuite(opts);
  process.exitCode = report.failed > 0 ? 1 : 0;
}

function optional<K extends string, V>(key: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: V };
}

main().catch((err: unknown) => {
  process.stderr.write(`conformance: ${(err as Error).message}\n`);
  process.exit(2);
});
