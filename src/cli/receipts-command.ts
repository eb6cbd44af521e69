/**
 * `countersign receipts export | verify | jwks`: evidence receipts (docs/APPROVERS.md §Evidence receipts).
 *
 * - `export --since <ISO 8601 time | ISO 8601 duration | 30m, 24h, 7d> [--out FILE] [--include-arguments
 *   [--include-hidden]] [--approvals-url URL | --no-approvals]`: issues the receipts of approval tasks that closed since
 *   the last export (`src/receipts/issuer.ts`, reading Temporal at `TEMPORAL_ADDRESS` or the dev
 *   server's port and each request's decisions from the approval service's
 *   `GET /access/v1/requests/:id/decisions`, at `COUNTERSIGN_APPROVALS_URL` or the configured port,
 *   with the client token of `secrets.json`), then writes the receipts from the first task that
 *   ended at or after `--since` to the end of the log as JSON Lines (one flattened JWS a line) to
 *   FILE or stdout. `--include-arguments` adds each call's arguments next to the signature, read
 *   back from the workflow's history, with every field the request masked for display
 *   (`toolInfo.sensitive`, docs/APPROVERS.md §Hidden values) in its digest form `sha256:<hex>` and
 *   named in the line's `redacted`; `--include-hidden` writes those fields' real values instead.
 * - `verify FILE --jwks <file|url>`: checks every line's signature and the chain, offline except for
 *   fetching the JWKS when given a URL (`@countersign/receipts`, also `countersign-receipts verify`).
 * - `jwks [--out FILE]`: the public key set receipts are verified with.
 *
 * Exit codes: {@link RECEIPTS_EXIT}. Messages go to stderr, one line each; `verify` names the line
 * and the reason of every failure. Never prints the private key or, unless asked, arguments; hidden values only with `--include-hidden`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../config.js';
import { parseIsoDurationMs } from '../policy/iso-duration.js';
import type { ReceiptLine } from '@countersign/receipts';

/** Exit codes of the `receipts` commands: 0 ok; 1 verification failed, or Temporal / the JWKS URL / the approval service unreachable; 2 usage or unreadable input. */
export const RECEIPTS_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** File name of the issuing log inside the data folder. */
export const RECEIPT_LOG_FILE_NAME = 'receipts.db';

class UsageError extends Error {}

const SHORT_DURATION = /^(\d+)(s|m|h|d)$/;
const SHORT_UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The time `--since` names, ms since the epoch, before it is checked to lie between 1970 and `nowMs`; null when `text` is none of the forms. */
function sinceMsOf(text: string, nowMs: number): number | null {
  const short = SHORT_DURATION.exec(text);
  if (short) return nowMs - Number(short[1]) * SHORT_UNIT_MS[short[2]!]!;
  const iso = parseIsoDurationMs(text);
  if (iso !== null) return nowMs - iso;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) && !Number.isNaN(Date.parse(text)))
    return Date.parse(text);
  return null;
}

/**
 * `--since` as ms since the epoch: an ISO 8601 date-time with offset (`2026-12-01T00:00:00Z`), an
 * ISO 8601 duration back from `nowMs` (`PT1H`, `P7D`), or a short duration (`30m`, `24h`, `7d`).
 * Throws a usage error naming the accepted forms otherwise, and one saying so when the time is
 * after `nowMs` (nothing is recorded after it) or before 1970-01-01T00:00:00Z (`99999999d`: a
 * duration too long to be a time; Temporal's visibility query and ISO 8601 output cannot hold it).
 */
export function parseSince(text: string, nowMs: number): number {
  const ms = sinceMsOf(text, nowMs);
  if (ms === null)
    throw new UsageError(
      `--since ${JSON.stringify(text)} is neither an ISO 8601 date-time with offset (2026-12-01T00:00:00Z), an ISO 8601 duration (PT1H, P7D) nor a short duration (30m, 24h, 7d)`,
    );
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw new UsageError(
      `--since ${JSON.stringify(text)} reaches back before 1970-01-01T00:00:00Z: give a shorter duration or a later time`,
    );
  if (ms > nowMs)
    throw new UsageError(
      `--since ${JSON.stringify(text)} is in the future (it is now ${new Date(nowMs).toISOString()}): nothing has been recorded after it`,
    );
  return ms;
}

/** The options of `receipts export`, as commander parses them. */
interface ExportOptions {
  since: string;
  out?: string;
  includeArguments?: boolean;
  includeHidden?: boolean;
  approvalsUrl?: string;
  approvals?: boolean;
}

async function exportReceipts(config: Config, o: ExportOptions): Promise<void> {
  if (o.includeHidden && !o.includeArguments) throw new UsageError('--include-hidden needs --include-arguments');
  const sinceMs = parseSince(o.since, Date.now());
  const [
    { openTemporalReader },
    { loadOrCreateSecrets },
    { issuePendingReceipts },
    { openReceiptLog },
    { loadReceiptSigningKey },
    { approvalServiceRecords, workflowInputOf },
    { redactArguments },
    { jcsSha256 },
  ] = await Promise.all([
    import('./temporal-reader.js'),
    import('../secrets.js'),
    import('../receipts/issuer.js'),
    import('../receipts/receipt-log.js'),
    import('../receipts/signing-key.js'),
    import('../receipts/task-evidence.js'),
    import('@countersign/arap'),
    import('@countersign/receipts'),
  ]);
  const dataDir = config.COUNTERSIGN_DATA_DIR;
  const secrets = loadOrCreateSecrets(dataDir);
  const key = await loadReceiptSigningKey({ dataDir, keyFile: config.COUNTERSIGN_RECEIPTS_KEY_FILE });
  // who decided: the approval service's decisions API (the ARAP client token), unless --no-approvals
  const approvalsUrl =
    o.approvalsUrl ?? config.COUNTERSIGN_APPROVALS_URL ?? `http://${config.COUNTERSIGN_HOST}:${config.COUNTERSIGN_APPROVALS_PORT}`;
  const records =
    o.approvals === false ? undefined : approvalServiceRecords({ baseUrl: approvalsUrl, clientToken: secrets.approvalsClientToken });
  if (records === undefined)
    process.stderr.write(
      'countersign receipts: --no-approvals: approvals are taken from the approval material only (no channel, no quorum)\n',
    );
  let reader;
  try {
    reader = await openTemporalReader(config);
  } catch (err) {
    records?.close();
    throw err;
  }
  const { temporal, codec } = reader;
  let log;
  try {
    log = await openReceiptLog(config.COUNTERSIGN_RECEIPTS_DATABASE_URL ?? join(dataDir, RECEIPT_LOG_FILE_NAME));
  } catch (err) {
    records?.close();
    await reader.close();
    throw err;
  }
  try {
    const report = await issuePendingReceipts({ temporal, codec, log, key, ...(records ? { records } : {}) });
    const receipts = await log.since(sinceMs);
    const lines: string[] = [];
    for (const r of receipts) {
      const line: ReceiptLine = { ...r.jws };
      if (o.includeArguments) {
        const history = await temporal.workflow.getHandle(r.workflowId, r.runId).fetchHistory();
        const input = await workflowInputOf(history, codec);
        if (o.includeHidden) line.arguments = input.binding.arguments;
        else {
          // the fields the approval request masked leave in the form approvers saw (docs/APPROVERS.md §Hidden values)
          const shown = redactArguments(input.binding.arguments, input.toolInfo?.sensitive ?? [], jcsSha256);
          line.arguments = shown.arguments;
          if (shown.redacted.length > 0) line.redacted = shown.redacted;
        }
      }
      lines.push(JSON.stringify(line));
    }
    const text = lines.map((l) => `${l}\n`).join('');
    if (o.out !== undefined) writeFileSync(o.out, text, { mode: 0o600 });
    else process.stdout.write(text);
    for (const s of report.skipped)
      process.stderr.write(`countersign receipts: no receipt for ${s.workflowId} run ${s.runId}: ${s.reason}\n`);
    const range = receipts.length ? ` (seq ${receipts[0]!.seq}..${receipts[receipts.length - 1]!.seq})` : '';
    process.stderr.write(
      `countersign receipts: ${report.issued} issued, ${receipts.length} exported${range}${o.out !== undefined ? ` to ${o.out}` : ''}\n`,
    );
  } finally {
    await log.close();
    records?.close();
    await reader.close();
  }
}

/** Register `receipts export | verify | jwks` on `program`; `config` loads the server configuration (exits 2 on a bad one). */
export function registerReceiptsCommand(program: Command, config: () => Promise<Config>): void {
  const receipts = program.command('receipts').description('evidence receipts: signed, hash-chained records of terminal approval tasks');
  const run = (fn: () => Promise<number | void>) => async () => {
    let code: number;
    try {
      code = (await fn()) ?? RECEIPTS_EXIT.ok;
    } catch (err) {
      const { ReceiptsUsageError } = await import('@countersign/receipts');
      const { ReceiptKeyError } = await import('../receipts/signing-key.js');
      const usage = err instanceof UsageError || err instanceof ReceiptsUsageError || err instanceof ReceiptKeyError;
      process.stderr.write(`countersign receipts: ${(err as Error).message}\n`);
      code = usage ? RECEIPTS_EXIT.usage : RECEIPTS_EXIT.failed;
    }
    process.exitCode = code;
  };
  receipts
    .command('export')
    .description('issue receipts for newly closed tasks, then write receipts since a time as JSON Lines')
    .requiredOption('--since <when>', 'ISO 8601 date-time (2026-12-01T00:00:00Z), ISO 8601 duration (P7D) or 30m / 24h / 7d')
    .option('--out <file>', 'write to this file (mode 0600) instead of stdout')
    .option(
      '--include-arguments',
      "disclose each call's arguments next to its receipt (checked against the signed binding digest); hidden fields as their sha256: digest, named in the line's redacted",
    )
    .option(
      '--include-hidden',
      'with --include-arguments: write the real values of hidden (sensitive) fields too, so every line verifies in full',
    )
    .option(
      '--approvals-url <url>',
      "the approval service to read each request's decisions from (default COUNTERSIGN_APPROVALS_URL or the configured port)",
    )
    .option('--no-approvals', 'issue without the approval service: approvals from the approval material only (no channel, no quorum)')
    .action((o: ExportOptions) => run(async () => exportReceipts(await config(), o))());
  receipts
    .command('verify')
    .description('check every signature and the hash chain of an exported file')
    .argument('<file>', 'JSON Lines file written by receipts export')
    .requiredOption('--jwks <file|url>', 'the published key set: a file, or the URL of /.well-known/countersign-receipts.jwks.json')
    .action((file: string, o: { jwks: string }) =>
      run(async () => (await import('@countersign/receipts')).verifyReceiptFile(file, o.jwks))(),
    );
  receipts
    .command('jwks')
    .description('print the public key set receipts are verified with')
    .option('--out <file>', 'write to this file instead of stdout')
    .action((o: { out?: string }) =>
      run(async () => {
        const cfg = await config();
        const { loadReceiptSigningKey } = await import('../receipts/signing-key.js');
        const key = await loadReceiptSigningKey({ dataDir: cfg.COUNTERSIGN_DATA_DIR, keyFile: cfg.COUNTERSIGN_RECEIPTS_KEY_FILE });
        const text = `${JSON.stringify(key.jwks, null, 2)}\n`;
        if (o.out !== undefined) writeFileSync(o.out, text);
        else process.stdout.write(text);
      })(),
    );
}
