/**
 * `countersign policy validate | replay`: trying a policy change before it applies
 * (docs/PRODUCTION.md §Trying a policy change).
 *
 * - `validate --policies <dir> [--schema FILE]`: Cedar's own validation of the folder against the
 *   schema (strict), its messages printed as Cedar gives them (`src/policy/cedar-validation.ts`).
 * - `replay --policies <dir> --since <when> [--live <dir>] [--schema FILE] [--json]
 *   [--max-changes N] [--fail-on from→to]… [--examples N]`: validates the candidate first (exit 3
 *   on an error, nothing replayed), then evaluates every call recorded since `--since` (the
 *   approval workflows' bindings, decoded through the payload codec: `src/policy/replay-source.ts`)
 *   under the live set (`--live`, default `COUNTERSIGN_POLICY_DIR`) and the candidate, and prints
 *   what would change per tool and principal (a table, or the `ReplayReport` as JSON with `--json`).
 *   With the gateway configuration (`COUNTERSIGN_CONFIG`) its upstreams are started for their
 *   tools' attributes, as the live PDP sees them.
 *
 * The schema: `--schema`, else `countersign.cedarschema` in the candidate folder, the live folder,
 * or the product's `policies/`; which one was used is always said (`validate`'s `ok:` line, the
 * replay table's last line, `schema` in `--json`): a candidate folder may ship a schema of its own.
 * Exit codes: {@link POLICY_EXIT}, also in each command's `--help`. Every option is checked before
 * Temporal is reached. Never prints arguments.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../config.js';

/**
 * Exit codes of `policy`: 0 ok; 1 Temporal unreachable, a history unreadable, or more call record
 * lines unreadable than `--allow-unreadable` (the replay is incomplete: a key left the ring); 2 usage: a missing
 * or malformed option, a `--since` in the future or before 1970, or a folder or file that does not
 * exist (`--policies`, `--live` or `COUNTERSIGN_POLICY_DIR`, `--schema`, `--call-records`; the
 * message names which); 3 a policy set does not validate or load (the candidate against the
 * schema, or the live set; the message names which); 4 the changes cross the threshold.
 */
export const POLICY_EXIT = { ok: 0, failed: 1, usage: 2, invalid: 3, threshold: 4 } as const;

/** The exit codes as `--help` shows them. */
const EXIT_CODES_HELP = `
Exit codes:
  0  ok
  1  Temporal unreachable, a history or call record folder unreadable, or more call record lines
     unreadable than --allow-unreadable (default 0): the replay did not see every call
  2  usage: a missing or malformed option, --since in the future or before 1970, or a folder or
     file that does not exist (--policies, --live / COUNTERSIGN_POLICY_DIR, --schema, --call-records)
  3  a policy set does not validate or load (the candidate, or the live set)
  4  the changes cross --max-changes or --fail-on (replay)`;

class UsageError extends Error {}

class InvalidPolicyError extends Error {}

/** The options of `policy replay`, as commander parses them. */
interface ReplayOptions {
  policies: string;
  since: string;
  live?: string;
  schema?: string;
  json?: boolean;
  callRecords?: string;
  maxChanges?: string;
  failOn?: string[];
  examples: string;
  allowUnreadable: string;
}

function wholeNumber(text: string, option: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${option} ${JSON.stringify(text)}: expected a whole number`);
  return Number(text);
}

/**
 * `path`, the value of `option` (an option name such as `--live`, or a setting with what it is),
 * when it is an existing folder (`kind` `folder`) or file (`file`); throws a UsageError naming
 * `option` and the path otherwise (exit 2).
 */
function existing(path: string, option: string, kind: 'folder' | 'file'): string {
  let isKind: boolean;
  try {
    const st = statSync(path);
    isKind = kind === 'folder' ? st.isDirectory() : st.isFile();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(`${option} ${JSON.stringify(path)}: ${code === 'ENOENT' ? `no such ${kind}` : (err as Error).message}`);
  }
  if (!isKind) throw new UsageError(`${option} ${JSON.stringify(path)}: not a ${kind}`);
  return path;
}

/** Where the schema a folder was validated with came from: `--schema`, the folder itself, the live folder, or the product's `policies/`. */
export type SchemaFrom = 'option' | 'own' | 'live' | 'product';

/** The schema a folder was validated with: the file and where it came from ({@link SchemaFrom}). */
export interface SchemaUsed {
  file: string;
  from: SchemaFrom;
}

/** `schema` in words for the operator: `policies/countersign.cedarschema (the candidate folder's own schema)`. */
function schemaInWords(schema: SchemaUsed, folderWord: string): string {
  const from = {
    option: '--schema',
    own: `the ${folderWord}'s own schema`,
    live: "the live folder's schema",
    product: "the product's schema",
  }[schema.from];
  return `${schema.file} (${from})`;
}

/**
 * Validate `dir` against `schemaOption` or the first `countersign.cedarschema` found in `dir`,
 * `liveDir` and the product's `policies/`, printing Cedar's messages to stderr; returns the schema
 * used; throws InvalidPolicyError when there is an error, a UsageError when no schema is found.
 */
async function validateOrThrow(dir: string, schemaOption: string | undefined, liveDir: string): Promise<SchemaUsed> {
  const [{ schemaFileFor, validatePolicyDir, SCHEMA_FILE_NAME }, { PROJECT_ROOT }] = await Promise.all([
    import('../policy/cedar-validation.js'),
    import('../project-root.js'),
  ]);
  const productDir = join(PROJECT_ROOT, 'policies');
  const file = schemaFileFor(dir, schemaOption, [liveDir, productDir]);
  if (file === undefined) throw new UsageError(`no countersign.cedarschema for ${dir}: pass --schema`);
  const from: SchemaFrom =
    schemaOption !== undefined
      ? 'option'
      : file === join(dir, SCHEMA_FILE_NAME)
        ? 'own'
        : file === join(liveDir, SCHEMA_FILE_NAME)
          ? 'live'
          : 'product';
  const v = await validatePolicyDir(dir, file);
  for (const w of v.warnings) process.stderr.write(`countersign policy: warning: ${w}\n`);
  for (const e of v.errors) process.stderr.write(`countersign policy: error: ${e}\n`);
  if (v.errors.length > 0) throw new InvalidPolicyError(`${dir} does not validate against ${file}: ${v.errors.length} error(s)`);
  return { file, from };
}

/** The live folder (`--live`, else the setting) checked to exist; a UsageError names the option or the setting (exit 2). */
function liveFolderOf(config: Config, live: string | undefined): string {
  return live !== undefined
    ? existing(live, '--live', 'folder')
    : existing(config.COUNTERSIGN_POLICY_DIR, 'COUNTERSIGN_POLICY_DIR (the live policy folder; --live compares with another)', 'folder');
}

async function replay(config: Config, o: ReplayOptions): Promise<number> {
  const [{ parseSince }, replayModule] = await Promise.all([import('./receipts-command.js'), import('../policy/replay.js')]);
  const { parseTransitionPattern, replayCalls, thresholdBreaches, formatReplayTable } = replayModule;
  let sinceMs: number;
  let failOn;
  try {
    sinceMs = parseSince(o.since, Date.now());
    failOn = (o.failOn ?? []).map(parseTransitionPattern);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const maxChanges = o.maxChanges === undefined ? undefined : wholeNumber(o.maxChanges, '--max-changes');
  const examplesPerChange = wholeNumber(o.examples, '--examples');
  const allowUnreadable = wholeNumber(o.allowUnreadable, '--allow-unreadable');
  existing(o.policies, '--policies', 'folder');
  const liveDir = liveFolderOf(config, o.live);
  if (o.schema !== undefined) existing(o.schema, '--schema', 'file');
  // an explicit folder that does not exist is a typo, not "no call records" (the setting's may not be made yet)
  if (o.callRecords !== undefined) existing(o.callRecords, '--call-records', 'folder');
  const schema = await validateOrThrow(o.policies, o.schema, liveDir);

  const [
    { openTemporalReader },
    { createCedarPdp, PolicyLoadError },
    { recordedCallsSince },
    { readCallRecords },
    { startConfiguredGateway, toolEntityOf },
    { configFileEnv },
    { createLogger },
  ] = await Promise.all([
    import('./temporal-reader.js'),
    import('../policy/cedar-pdp.js'),
    import('../policy/replay-source.js'),
    import('../policy/call-records.js'),
    import('../gateway/wiring.js'),
    import('../config.js'),
    import('@countersign/http/log'),
  ]);
  const reader = await openTemporalReader(config);
  // upstream tools' attributes (annotation hints), as the live PDP sees them; native tools have none
  let gateway;
  try {
    gateway = config.COUNTERSIGN_CONFIG
      ? await startConfiguredGateway(config, [], createLogger({ level: 'warn' }), configFileEnv())
      : undefined;
    const toolEntity = gateway ? toolEntityOf(gateway.registry) : undefined;
    // a load error names the set: the live one (--live or the setting) or the candidate (--policies)
    const load = async (policyDir: string, which: string) => {
      try {
        return await createCedarPdp({ policyDir, ...(toolEntity ? { toolEntity } : {}) });
      } catch (err) {
        if (err instanceof PolicyLoadError) throw new InvalidPolicyError(`${which}: ${err.message}`);
        throw err;
      }
    };
    const live = await load(liveDir, `the live policy set (${o.live !== undefined ? '--live' : 'COUNTERSIGN_POLICY_DIR'} ${liveDir})`);
    const candidate = await load(o.policies, `the candidate (--policies ${o.policies})`);
    const fromHistories = await recordedCallsSince(reader.temporal, reader.codec, sinceMs);
    // the embedded stack's (`countersign dev`) folder when the setting is unset and it exists
    const devRecords = join(config.COUNTERSIGN_DATA_DIR, 'call-records');
    const recordsDir = o.callRecords ?? config.COUNTERSIGN_CALL_RECORD_DIR ?? (existsSync(devRecords) ? devRecords : undefined);
    const fromRecords = recordsDir ? await readCallRecords(recordsDir, reader.codec, sinceMs) : { calls: [], unreadable: 0 };
    const calls = [...fromHistories, ...fromRecords.calls].sort((a, b) => a.at.localeCompare(b.at) || a.ref.localeCompare(b.ref));
    const report = await replayCalls(calls, live, candidate, { examplesPerChange });
    const sources = {
      workflowHistories: fromHistories.length,
      callRecords: fromRecords.calls.length,
      unreadableCallRecords: fromRecords.unreadable,
      callRecordDir: recordsDir ?? null,
    };
    process.stdout.write(
      o.json
        ? `${JSON.stringify({ ...report, sources, schema }, null, 2)}\n`
        : `${formatReplayTable(report)}Read ${sources.workflowHistories} call(s) from workflow histories (calls that opened a task) and ${sources.callRecords} from call records (${recordsDir ? `${recordsDir}${sources.unreadableCallRecords > 0 ? `; ${sources.unreadableCallRecords} line(s) unreadable` : ''}` : 'none: COUNTERSIGN_CALL_RECORD_DIR is unset, so calls that opened no task are not seen'}).\nThe candidate validated against ${schemaInWords(schema, 'candidate folder')}.\n`,
    );
    const breaches = thresholdBreaches(report, { ...(maxChanges !== undefined ? { maxChanges } : {}), failOn });
    for (const b of breaches) process.stderr.write(`countersign policy replay: threshold crossed: ${b}\n`);
    if (breaches.length > 0) return POLICY_EXIT.threshold;
    if (sources.unreadableCallRecords > allowUnreadable) {
      // a gate that saw only part of the calls must not pass: e.g. records sealed with a key no longer in the ring
      process.stderr.write(
        `countersign policy replay: ${sources.unreadableCallRecords} call record line(s) in ${recordsDir ?? ''} could not be read (a payload key no longer in COUNTERSIGN_PAYLOAD_KEYS, or a damaged line), more than --allow-unreadable ${allowUnreadable}: the replay did not see every call\n`,
      );
      return POLICY_EXIT.failed;
    }
    return POLICY_EXIT.ok;
  } finally {
    await gateway?.close();
    await reader.close();
  }
}

/** Register `policy validate | replay` on `program`; `config` loads the server configuration (exits 2 on a bad one). */
export function registerPolicyCommand(program: Command, config: () => Promise<Config>): void {
  const policy = program
    .command('policy')
    .description('try a policy change before it applies: Cedar validation, replay over recorded calls');
  const run = (fn: () => Promise<number | void>) => async () => {
    let code: number;
    try {
      code = (await fn()) ?? POLICY_EXIT.ok;
    } catch (err) {
      process.stderr.write(`countersign policy: ${(err as Error).message}\n`);
      code = err instanceof UsageError ? POLICY_EXIT.usage : err instanceof InvalidPolicyError ? POLICY_EXIT.invalid : POLICY_EXIT.failed;
    }
    process.exitCode = code;
  };
  policy
    .command('validate')
    .description("Cedar's validation of a policy folder against the schema (strict), Cedar's messages as they are")
    .requiredOption('--policies <dir>', 'the folder of *.cedar files')
    .option('--schema <file>', 'Cedar schema (default countersign.cedarschema in the folder, the live folder, or the product policies/)')
    .addHelpText('after', EXIT_CODES_HELP)
    .action((o: { policies: string; schema?: string }) =>
      run(async () => {
        const cfg = await config();
        existing(o.policies, '--policies', 'folder');
        if (o.schema !== undefined) existing(o.schema, '--schema', 'file');
        const schema = await validateOrThrow(o.policies, o.schema, cfg.COUNTERSIGN_POLICY_DIR);
        process.stdout.write(`ok: ${o.policies} validates against ${schemaInWords(schema, 'folder')}\n`);
      })(),
    );
  policy
    .command('replay')
    .description('evaluate a candidate policy folder against the calls recorded since a time; report what would change')
    .requiredOption('--policies <dir>', 'the candidate folder of *.cedar files')
    .requiredOption('--since <when>', 'ISO 8601 date-time (2026-12-01T00:00:00Z), ISO 8601 duration (P7D) or 30m / 24h / 7d')
    .option('--live <dir>', 'the policy folder to compare with (default COUNTERSIGN_POLICY_DIR)')
    .option(
      '--schema <file>',
      'Cedar schema (default countersign.cedarschema in the candidate folder, the live folder, or the product policies/)',
    )
    .option('--call-records <dir>', 'the call records of calls that opened no task (default COUNTERSIGN_CALL_RECORD_DIR)')
    .option('--json', 'print the report as JSON')
    .option('--max-changes <n>', 'exit 4 when more than n calls would change')
    .option(
      '--fail-on <from→to>',
      'exit 4 when any call would change so (repeatable; outcomes allowed, in-band, requestable, denied, or *)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--examples <n>', 'examples per change', '3')
    .option('--allow-unreadable <n>', 'call record lines that may be unreadable before the replay exits 1', '0')
    .addHelpText('after', EXIT_CODES_HELP)
    .action((o: ReplayOptions) => run(async () => replay(await config(), o))());
}
