/**
 * `countersign-receipts verify <file> --jwks <file|url>`: the offline verifier an auditor installs
 * alone (`npm i @countersign/receipts`): checks every signature and the hash chain of a file that
 * `countersign receipts export` wrote. Arguments are parsed with Node's `util.parseArgs`.
 * Exit codes: `RECEIPTS_EXIT` (0 ok, 1 failed, 2 usage).
 */
import { parseArgs } from 'node:util';
import { RECEIPTS_EXIT, ReceiptsUsageError, verifyReceiptFile } from './verify-file.js';

const USAGE = `usage: countersign-receipts verify <file> --jwks <file|url>

  Check every signature and the hash chain of an exported receipts file (JSON Lines).
  --jwks   the published key set: a file, or the URL of /.well-known/countersign-receipts.jwks.json
`;

/** Run the command line with `argv` (without node and the script); resolves to the exit code. */
export async function runReceiptsCli(argv: readonly string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { jwks: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (err) {
    process.stderr.write(`countersign-receipts: ${(err as Error).message}\n${USAGE}`);
    return RECEIPTS_EXIT.usage;
  }
  const [command, file, ...rest] = parsed.positionals;
  if (parsed.values.help || command === undefined) {
    (parsed.values.help ? process.stdout : process.stderr).write(USAGE);
    return parsed.values.help ? RECEIPTS_EXIT.ok : RECEIPTS_EXIT.usage;
  }
  if (command !== 'verify' || file === undefined || rest.length > 0 || parsed.values.jwks === undefined) {
    process.stderr.write(USAGE);
    return RECEIPTS_EXIT.usage;
  }
  try {
    return await verifyReceiptFile(file, parsed.values.jwks, undefined, 'countersign-receipts verify');
  } catch (err) {
    process.stderr.write(`countersign-receipts: ${(err as Error).message}\n`);
    return err instanceof ReceiptsUsageError ? RECEIPTS_EXIT.usage : RECEIPTS_EXIT.failed;
  }
}
