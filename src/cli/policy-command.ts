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
 * or the product's `policies/`. Exit codes: {@link POLICY_EXIT}. Never prints arguments.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Config } from '../config.js';

/** Exit codes of `policy`: 0 ok; 1 Temporal unreachable or a history unreadable; 2 usage; 3 the policy set does not validate; 4 the changes cross the threshold. */
export const POLICY_EXIT = { ok: 0, failed: 1, usage: 2, invalid: 3, threshold: 4 } as const;

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
}

function wholeNumber(text: string, option: string): number {
  if (!/^\d+$/.test(text)) throw new UsageError(`${option} ${JSON.stringify(text)}: expected a whole number`);
  return Number(text);
}

/** Validate `dir` and print Cedar's messages to stderr; throws InvalidPolicyError when there is an error. */
async function validateOrThrow(dir: string, schemaOption: string | undefined, fallbackDirs: string[]): Promise<void> {
  const [{ schemaFileFor, validatePolicyDir }, { PROJECT_ROOT }, { join }] = await Promise.all([
    import('../policy/cedar-validation.js'),
    import('../project-root.js'),
    import('node:path'),
  ]);
  const schema = schemaFileFor(dir, schemaOption, [...fallbackDirs, join(PROJECT_ROOT, 'policies')]);
  if (schema === undefined) throw new UsageError(`no countersign.cedarschema for ${dir}: pass --schema`);
  const v = await validatePolicyDir(dir, schema);
  for (const w of v.warnings) process.stderr.write(`countersign policy: warning: ${w}\n`);
  for (const e of v.errors) process.stderr.write(`countersign policy: error: ${e}\n`);
  if (v.errors.length > 0) throw new InvalidPolicyError(`${dir} does not validate against ${schema}: ${v.errors.length} error(s)`);
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
  const liveDir = o.live ?? config.COUNTERSIGN_POLICY_DIR;
  await validateOrThrow(o.policies, o.schema, [liveDir]);

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
    let live, candidate;
    try {
      live = await createCedarPdp({ policyDir: liveDir, ...(toolEntity ? { toolEntity } : {}) });
      candidate = await createCedarPdp({ policyDir: o.policies, ...(toolEntity ? { toolEntity } : {}) });
    } catch (err) {
      if (err instanceof PolicyLoadError) throw new InvalidPolicyError(err.message);
      throw err;
    }
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
        ? `${JSON.stringify({ ...report, sources }, null, 2)}\n`
        : `${formatReplayTable(report)}Read ${sources.workflowHistories} call(s) from workflow histories (calls that opened a task) and ${sources.callRecords} from call records (${recordsDir ? `${recordsDir}${sources.unreadableCallRecords > 0 ? `; ${sources.unreadableCallRecords} line(s) unreadable` : ''}` : 'none: COUNTERSIGN_CALL_RECORD_DIR is unset, so calls that opened no task are not seen'}).\n`,
    );
    const breaches = thresholdBreaches(report, { ...(maxChanges !== undefined ? { maxChanges } : {}), failOn });
    for (const b of breaches) process.stderr.write(`countersign policy replay: threshold crossed: ${b}\n`);
    return breaches.length > 0 ? POLICY_EXIT.threshold : POLICY_EXIT.ok;
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
    .action((o: { policies: string; schema?: string }) =>
      run(async () => {
        const cfg = await config();
        await validateOrThrow(o.policies, o.schema, [cfg.COUNTERSIGN_POLICY_DIR]);
        process.stdout.write(`ok: ${o.policies} validates\n`);
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
    .action((o: ReplayOptions) => run(async () => replay(await config(), o))());
}
