/**
 * `countersign receipts export | verify | jwks`: evidence receipts (docs/APPROVERS.md §Evidence receipts).
 *
 * - `export --since <ISO 8601 time | ISO 8601 duration | 30m, 24h, 7d> [--out FILE] [--include-arguments]
 *   [--approvals-db FILE]`: issues the receipts of approval tasks that closed since the last export
 *   (`src/receipts/issuer.ts`, reading Temporal at `TEMPORAL_ADDRESS` or the dev server's port and
 *   the approval store `<data>/approvals.db`), then writes the receipts from the first task that
 *   ended at or after `--since` to the end of the log as JSON Lines (one flattened JWS a line) to
 *   FILE or stdout. `--include-arguments` adds each call's arguments next to the signature, read
 *   back from the workflow's history.
 * - `verify FILE --jwks <file|url>`: checks every line's signature and the chain, offline except for
 *   fetching the JWKS when given a URL.
 * - `jwks [--out FILE]`: the public key set receipts are verified with.
 *
 * Exit codes: {@link RECEIPTS_EXIT}. Messages go to stderr, one line each; `verify` names the line
 * and the reason of every failure. Never prints the private key or, unless asked, arguments.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { Client } from '@temporalio/client';
import type { JSONWebKeySet } from 'jose';
import type { Config } from '../config.js';
import { parseIsoDurationMs } from '../policy/iso-duration.js';
import { loadOrCreateSecrets } from '../secrets.js';
import { connectClient } from '../temporal/connect.js';
import { payloadCodecFromKeyList } from '../temporal/payload-codec.js';
import { temporalConnectionOf } from '../stack-roles.js';
import { issuePendingReceipts } from '../receipts/issuer.js';
import { verifyReceiptLines, type ReceiptLine } from '../receipts/receipt.js';
import { openReceiptLog } from '../receipts/receipt-log.js';
import { loadReceiptSigningKey, ReceiptKeyError } from '../receipts/signing-key.js';
import { openApprovalStoreRecords, workflowInputOf, type DecisionRecordSource } from '../receipts/task-evidence.js';

/** Exit codes of the `receipts` commands: 0 ok; 1 verification failed, or Temporal / the JWKS URL unreachable; 2 usage or unreadable input. */
export const RECEIPTS_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** File name of the issuing log inside the data folder. */
export const RECEIPT_LOG_FILE_NAME = 'receipts.db';

class UsageError extends Error {}

const SHORT_DURATION = /^(\d+)(s|m|h|d)$/;
const SHORT_UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * `--since` as ms since the epoch: an ISO 8601 date-time with offset (`2026-12-01T00:00:00Z`), an
 * ISO 8601 duration back from `nowMs` (`PT1H`, `P7D`), or a short duration (`30m`, `24h`, `7d`).
 * Throws a usage error naming the accepted forms otherwise.
 */
export function parseSince(text: string, nowMs: number): number {
  const short = SHORT_DURATION.exec(text);
  if (short) return nowMs - Number(short[1]) * SHORT_UNIT_MS[short[2]!]!;
  const iso = parseIsoDurationMs(text);
  if (iso !== null) return nowMs - iso;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) && !Number.isNaN(Date.parse(text)))
    return Date.parse(text);
  throw new UsageError(
    `--since ${JSON.stringify(text)} is neither an ISO 8601 date-time with offset (2026-12-01T00:00:00Z), an ISO 8601 duration (PT1H, P7D) nor a short duration (30m, 24h, 7d)`,
  );
}

/** A JWKS from a file or an http(s) URL. Throws a usage error for unreadable or non-JWKS content. */
async function loadJwks(source: string): Promise<JSONWebKeySet> {
  let text: string;
  if (/^https?:\/\//.test(source)) {
    let res: Response;
    try {
      res = await fetch(source, { signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new Error(`could not fetch the JWKS from ${source}: ${(err as Error).message}`, { cause: err });
    }
    if (!res.ok) throw new Error(`could not fetch the JWKS from ${source}: HTTP ${res.status}`);
    text = await res.text();
  } else {
    try {
      text = readFileSync(source, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read the JWKS file ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  let jwks: JSONWebKeySet;
  try {
    jwks = JSON.parse(text) as JSONWebKeySet;
  } catch {
    throw new UsageError(`${source} is not JSON`);
  }
  if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) throw new UsageError(`${source} is not a JWK Set (no "keys")`);
  return jwks;
}

async function exportReceipts(
  config: Config,
  o: { since: string; out?: string; includeArguments?: boolean; approvalsDb?: string },
): Promise<void> {
  const sinceMs = parseSince(o.since, Date.now());
  const dataDir = config.COUNTERSIGN_DATA_DIR;
  const secrets = loadOrCreateSecrets(dataDir);
  const codec = payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys);
  const key = await loadReceiptSigningKey({ dataDir, keyFile: config.COUNTERSIGN_RECEIPTS_KEY_FILE });
  const approvalsDb = o.approvalsDb ?? join(dataDir, 'approvals.db');
  let records: DecisionRecordSource | undefined;
  if (existsSync(approvalsDb)) records = openApprovalStoreRecords(approvalsDb);
  else if (o.approvalsDb !== undefined) throw new UsageError(`no approval store at ${o.approvalsDb}`);
  else
    process.stderr.write(
      `countersign receipts: no approval store at ${approvalsDb}; approvals are taken from the approval material only (no channel, no quorum)\n`,
    );
  const log = openReceiptLog(join(dataDir, RECEIPT_LOG_FILE_NAME));
  const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  let connection;
  try {
    connection = await connectClient(address, temporalConnectionOf(config));
  } catch (err) {
    log.close();
    records?.close();
    throw new Error(`could not reach Temporal at ${address}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: { payloadCodecs: [codec] } });
    const report = await issuePendingReceipts({ temporal, codec, log, key, ...(records ? { records } : {}) });
    const receipts = log.since(sinceMs);
    const lines: string[] = [];
    for (const r of receipts) {
      const line: ReceiptLine = { ...r.jws };
      if (o.includeArguments) {
        const history = await temporal.workflow.getHandle(r.workflowId, r.runId).fetchHistory();
        line.arguments = (await workflowInputOf(history, codec)).binding.arguments;
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
    log.close();
    records?.close();
    await connection.close();
  }
}

async function verifyFile(file: string, o: { jwks: string }): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const jwks = await loadJwks(o.jwks);
  const report = await verifyReceiptLines(text, jwks);
  if (!report.ok) {
    for (const f of report.failures) process.stderr.write(`${file}:${f.line}: ${f.reason}\n`);
    process.stderr.write(`countersign receipts verify: FAILED: ${report.failures.length} problem(s) in ${report.count} receipt(s)\n`);
    return RECEIPTS_EXIT.failed;
  }
  const a = report.anchor!;
  const anchor = a.seq === 1 ? 'from the start of the log' : `anchored at seq ${a.seq} (prev ${a.prev})`;
  process.stdout.write(`ok: ${report.count} receipt(s) verified, signatures and chain intact, ${anchor}\n`);
  return RECEIPTS_EXIT.ok;
}

/** Register `receipts export | verify | jwks` on `program`; `config` loads the server configuration (exits 2 on a bad one). */
export function registerReceiptsCommand(program: Command, config: () => Config): void {
  const receipts = program.command('receipts').description('evidence receipts: signed, hash-chained records of terminal approval tasks');
  const run = (fn: () => Promise<number | void>) => async () => {
    let code: number;
    try {
      code = (await fn()) ?? RECEIPTS_EXIT.ok;
    } catch (err) {
      const usage = err instanceof UsageError || err instanceof ReceiptKeyError;
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
    .option('--include-arguments', "disclose each call's arguments next to its receipt (checked against the signed binding digest)")
    .option('--approvals-db <file>', 'the approval store to read decisions from (default <data>/approvals.db)')
    .action((o: { since: string; out?: string; includeArguments?: boolean; approvalsDb?: string }) =>
      run(() => exportReceipts(config(), o))(),
    );
  receipts
    .command('verify')
    .description('check every signature and the hash chain of an exported file')
    .argument('<file>', 'JSON Lines file written by receipts export')
    .requiredOption('--jwks <file|url>', 'the published key set: a file, or the URL of /.well-known/countersign-receipts.jwks.json')
    .action((file: string, o: { jwks: string }) => run(() => verifyFile(file, o))());
  receipts
    .command('jwks')
    .description('print the public key set receipts are verified with')
    .option('--out <file>', 'write to this file instead of stdout')
    .action((o: { out?: string }) =>
      run(async () => {
        const cfg = config();
        const key = await loadReceiptSigningKey({ dataDir: cfg.COUNTERSIGN_DATA_DIR, keyFile: cfg.COUNTERSIGN_RECEIPTS_KEY_FILE });
        const text = `${JSON.stringify(key.jwks, null, 2)}\n`;
        if (o.out !== undefined) writeFileSync(o.out, text);
        else process.stdout.write(text);
      })(),
    );
}
