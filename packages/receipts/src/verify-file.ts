/**
 * Verifying an exported receipts file as an auditor does, offline except for fetching the JWKS
 * when given a URL: {@link loadJwks} (a file or an http(s) URL) and {@link verifyReceiptFile}
 * (every line's signature and the chain, `verifyReceiptLines`), with the messages and exit codes
 * of `countersign-receipts verify` and the gate's `countersign receipts verify`.
 */
import { readFileSync } from 'node:fs';
import type { JSONWebKeySet } from 'jose';
import { verifyReceiptLines } from './receipt.js';

/** Exit codes of the receipts commands: 0 ok; 1 verification failed, or Temporal / the JWKS URL unreachable; 2 usage or unreadable input. */
export const RECEIPTS_EXIT = { ok: 0, failed: 1, usage: 2 } as const;

/** Unusable input (an unreadable file, a JWKS that is not one): exit code {@link RECEIPTS_EXIT}.usage. */
export class ReceiptsUsageError extends Error {
  override readonly name = 'ReceiptsUsageError';
}

/** A JWKS from a file or an http(s) URL. Throws {@link ReceiptsUsageError} for unreadable or non-JWKS content, `Error` when the URL does not answer. */
export async function loadJwks(source: string): Promise<JSONWebKeySet> {
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
      throw new ReceiptsUsageError(`cannot read the JWKS file ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  let jwks: JSONWebKeySet;
  try {
    jwks = JSON.parse(text) as JSONWebKeySet;
  } catch {
    throw new ReceiptsUsageError(`${source} is not JSON`);
  }
  if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0) throw new ReceiptsUsageError(`${source} is not a JWK Set (no "keys")`);
  return jwks;
}

/** Where {@link verifyReceiptFile} writes: the verdict to `out`, each failure to `err`. */
export interface VerifyOutput {
  out(text: string): void;
  err(text: string): void;
}

/**
 * Verify the JSON Lines file `file` against the JWKS at `jwks` (file or URL): prints `ok: …` with
 * the count and the chain's anchor, then `<file>:<line>: disclosed arguments hide …` for each line
 * whose arguments name hidden fields (not checked against the binding digest), or each failure as `<file>:<line>: <reason>` and a closing
 * `FAILED` line. Resolves to the exit code; throws {@link ReceiptsUsageError} / `Error` as {@link loadJwks}.
 */
export async function verifyReceiptFile(
  file: string,
  jwks: string,
  io: VerifyOutput = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) },
  name = 'countersign receipts verify',
): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ReceiptsUsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const keys = await loadJwks(jwks);
  const report = await verifyReceiptLines(text, keys);
  if (!report.ok) {
    for (const f of report.failures) io.err(`${file}:${f.line}: ${f.reason}\n`);
    io.err(`${name}: FAILED: ${report.failures.length} problem(s) in ${report.count} receipt(s)\n`);
    return RECEIPTS_EXIT.failed;
  }
  const a = report.anchor!;
  const anchor = a.seq === 1 ? 'from the start of the log' : `anchored at seq ${a.seq} (prev ${a.prev})`;
  io.out(`ok: ${report.count} receipt(s) verified, signatures and chain intact, ${anchor}\n`);
  for (const u of report.unchecked)
    io.out(
      `${file}:${u.line}: disclosed arguments hide ${u.redacted.join(', ')} (sha256: digests): not checked against the binding digest\n`,
    );
  return RECEIPTS_EXIT.ok;
}
