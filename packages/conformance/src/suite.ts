/**
 * Black-box conformance suite for SEP-2848 `io.modelcontextprotocol/tool-approval`.
 *
 * Speaks only the wire: JSON-RPC 2.0 over Streamable HTTP (protocol 2026-07-28, stateless, per-request
 * `_meta`), plus the small out-of-band test-hook contract of the package's TEST-HOOKS.md (list
 * pending approval requests, decide one: over HTTP, by a `--decide` command or in process;
 * optionally count a call's side effects). It imports nothing from Countersign, so it runs against
 * any server that implements the extension.
 *
 * Every check makes its own calls, told apart by a unique value in one argument (the marker field,
 * `memo` for Countersign's `wire_transfer`), so the checks run concurrently. Every MCP exchange is
 * recorded; at the end the vectors' verifier (`judge.ts`, `vectors/verify.mjs`) judges every
 * response the checks received, and the cross-cutting checks (envelope, disposition, artifacts,
 * stability, every other wire rule; ttl) fail on the violations of their rules.
 *
 * Used by `cli.ts` (the `countersign-conformance` command line) and, in the Countersign repository,
 * `test/conformance/black-box.test.ts`.
 */
import { randomBytes } from 'node:crypto';
import { backendArtifacts, cleanUp, Hooks, httpHooks, type CheckDef, type Ctx } from './context.js';
import { judgeExchanges, type Judgement } from './judge.js';
import { inputChecks } from './checks-input.js';
import { lifecycleChecks } from './checks-lifecycle.js';
import { observedChecks } from './checks-observed.js';
import {
  CheckFailure,
  CheckSkip,
  Recorder,
  Rpc,
  TASKS_EXT,
  type CheckResult,
  type CheckStatus,
  type SuiteOptions,
  type SuiteReport,
} from './wire.js';

const checks: CheckDef[] = [...lifecycleChecks, ...inputChecks, ...observedChecks];

/** Every check id, in run order. */
export const CHECK_IDS: readonly string[] = checks.map((c) => c.id);
/** `[id, title]` for listing. */
export const CHECK_TITLES: ReadonlyArray<readonly [string, string]> = checks.map((c) => [c.id, c.title] as const);

/** Format one result line. */
export function formatResult(r: CheckResult): string {
  return `${r.status.toUpperCase()} ${r.id} (${r.ms} ms) ${r.detail}`;
}

/** Run the suite. Never throws for a failing check; a check's unexpected exception is its failure. */
export async function runSuite(opts: SuiteOptions): Promise<SuiteReport> {
  const rec = new Recorder();
  const tasksCaps = { extensions: { [TASKS_EXT]: {} } };
  const a = new Rpc(opts.url, opts.token, tasksCaps, rec, 'A');
  const b = opts.tokenB ? new Rpc(opts.url, opts.tokenB, tasksCaps, rec, 'B') : undefined;
  const hooks = new Hooks(opts, opts.hooks ?? httpHooks(opts));
  const run = randomBytes(3).toString('hex');
  let n = 0;
  const log = opts.log ?? (() => {});
  const selected = checks.filter((c) => !opts.only || opts.only.includes(c.id));
  const unknownOnly = (opts.only ?? []).filter((id) => !CHECK_IDS.includes(id));
  if (unknownOnly.length) throw new Error(`unknown check ids: ${unknownOnly.join(', ')}`);
  let judgement: Judgement | undefined;
  const judged = (): Judgement =>
    (judgement ??= judgeExchanges(rec.exchanges, {
      approvers: opts.approvers.map((x) => x.id),
      backendArtifacts: backendArtifacts(hooks),
      untrusted: [...rec.untrusted, ...hooks.comments],
    }));

  const runOne = async (def: CheckDef): Promise<CheckResult> => {
    const ctx: Ctx = {
      opts,
      a,
      plain: a.withCapabilities({}),
      ...(b ? { b } : {}),
      hooks,
      rec,
      cleanup: [],
      marker: (label) => `conf ${run} ${label} ${++n}`,
      judged,
    };
    const t0 = Date.now();
    try {
      const detail = await def.run(ctx);
      return { id: def.id, status: 'pass', detail, ms: Date.now() - t0 };
    } catch (err) {
      const status: CheckStatus = err instanceof CheckSkip ? 'skip' : 'fail';
      const detail =
        err instanceof CheckSkip || err instanceof CheckFailure
          ? err.message
          : `unexpected ${(err as Error).name}: ${(err as Error).message}`;
      return { id: def.id, status, detail, ms: Date.now() - t0 };
    } finally {
      await cleanUp(ctx);
    }
  };

  const startedAt = new Date().toISOString();
  const results: CheckResult[] = [];
  const direct = selected.filter((c) => !c.crossCutting).map((def) => runOne(def));
  for (const p of direct) {
    const r = await p;
    results.push(r);
    log(formatResult(r));
  }
  for (const def of selected.filter((c) => c.crossCutting)) {
    const r = await runOne(def);
    results.push(r);
    log(formatResult(r));
  }
  const count = (s: CheckStatus) => results.filter((r) => r.status === s).length;
  const [passed, failed, skipped] = [count('pass'), count('fail'), count('skip')];
  const summary = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
  log(summary);
  const verifier = judged();
  return { results, passed, failed, skipped, summary, startedAt, endedAt: new Date().toISOString(), verifier };
}
