// Scope: `npm run faults` — the full fault-injection matrix. Options:
//   --trials N          trials per point (default 20)
//   --points a,b        only these points (default all; ids in trials.ts POINTS)
//   --parallel N        split the points over N harness clusters run side by side (default 1);
//                       each cluster is its own Temporal server, roles and data folder
//   --report PATH       write the Markdown report there (default docs/RELIABILITY.md when all
//                       points ran with ≥ 20 trials; otherwise none unless given)
//   --json PATH         also write every trial as JSON (default docs/reliability-results.json when
//                       the report goes to docs/RELIABILITY.md: the data behind it, kept in the repo)
//   --render a.json,…   run nothing: merge earlier --json outputs, re-check every task with the
//                       current oracle (violationsOf), and write the report
//                       (--command names the run that produced them)
// Exits 1 when any trial has a violation.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { machineLine, runMatrix, summarize, type MatrixRun } from './matrix.js';
import { renderReport } from './report.js';
import { expectationOf, POINTS, violationsOf, type PointId } from './trials.js';
import type { TrialResult } from './trials.js';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const trials = Number(arg('trials') ?? 20);
const parallel = Number(arg('parallel') ?? 1);
const points = (arg('points')?.split(',') ?? POINTS.map((p) => p.id)) as PointId[];
for (const p of points) if (!POINTS.some((x) => x.id === p)) throw new Error(`unknown point ${p}`);
const command = `npm run faults${
  process.argv.length > 2
    ? ` -- ${process.argv
        .slice(2)
        .filter((a, i, all) => a !== '--json' && all[i - 1] !== '--json')
        .join(' ')}`
    : ''
}`;

const progress = (r: TrialResult) =>
  process.stderr.write(
    `${r.point} #${r.trial}: ${r.tasks.map((t) => `${t.disposition || t.status} ledger=${t.ledgerRows} invocations=${t.invocations} backend=${t.backendRows}`).join('; ')}` +
      `${r.violations.length ? ` VIOLATION ${r.violations.join(' | ')}` : ''}${r.unexpected.length ? ` unexpected ${r.unexpected.join(',')}` : ''} (${(r.ms / 1000).toFixed(1)} s)\n`,
  );

/** Rough seconds per trial, to balance shards: worker kills wait out a sticky queue and a timeout. */
const COST: Partial<Record<PointId, number>> = {
  'approvals.kill': 5,
  'approvals.submit.after-store': 8,
  'mcp.create.after-start': 11,
  'callback.replay': 1,
  'temporal.kill': 7,
  'worker.submit.before': 16,
};

async function runSharded(): Promise<MatrixRun> {
  const shards: PointId[][] = Array.from({ length: parallel }, () => []);
  const load = new Array<number>(parallel).fill(0);
  for (const p of [...points].sort((a, b) => (COST[b] ?? 17) - (COST[a] ?? 17))) {
    const i = load.indexOf(Math.min(...load));
    shards[i]!.push(p);
    load[i]! += COST[p] ?? 17;
  }
  const dir = mkdtempSync(join(tmpdir(), 'countersign-faults-shards-'));
  const files = await Promise.all(
    shards.map(
      (ps, i) =>
        new Promise<string>((resolve) => {
          const json = join(dir, `shard-${i}.json`);
          const child = spawn(
            process.execPath,
            [
              '--import',
              'tsx',
              fileURLToPath(import.meta.url),
              '--trials',
              String(trials),
              '--points',
              ps.join(','),
              '--json',
              json,
              '--report',
              '-',
            ],
            { cwd: PROJECT_ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
          );
          child.once('exit', () => resolve(json));
        }),
    ),
  );
  return merged(files); // a shard that wrote nothing throws here
}

/** Merge earlier runs' JSON (shards of one run) into one; every task is re-checked with the current oracle. */
function merged(files: string[]): MatrixRun {
  const runs = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as MatrixRun);
  const order = (r: TrialResult) => POINTS.findIndex((p) => p.id === r.point) * 1e6 + r.trial;
  const results = runs.flatMap((r) => r.results).sort((a, b) => order(a) - order(b));
  for (const r of results) {
    const again = r.tasks.flatMap((t) =>
      violationsOf({ ...t, invocations: t.invocations ?? Number.NaN }, expectationOf(r.point)).map(
        (v) => `${t.taskId.slice(0, 12)}…: ${v}`,
      ),
    );
    r.violations = [...new Set([...r.violations, ...again])];
  }
  const startedAt = runs.map((r) => r.startedAt).sort()[0] ?? '';
  const finishedAt =
    runs
      .map((r) => r.finishedAt)
      .sort()
      .at(-1) ?? '';
  return {
    startedAt,
    finishedAt,
    command: arg('command') ?? (render && runs.length === 1 ? runs[0]!.command : command),
    machine: `${runs[0]?.machine ?? machineLine()}${runs.length > 1 ? `; ${runs.length} clusters side by side` : ''}`,
    summaries: summarize(results),
    results,
  };
}

const render = arg('render');
const run = render
  ? merged(render.split(','))
  : parallel > 1
    ? await runSharded()
    : await runMatrix({ points, trials, command, onTrial: progress });
const full = render ? new Set(run.results.map((r) => r.point)).size === POINTS.length : points.length === POINTS.length && trials >= 20;
const reportArg = arg('report');
const reportPath = reportArg === '-' ? undefined : (reportArg ?? (full ? join(PROJECT_ROOT, 'docs/RELIABILITY.md') : undefined));
if (reportPath) writeFileSync(reportPath, renderReport(run));
const jsonPath =
  arg('json') ??
  (reportPath === join(PROJECT_ROOT, 'docs/RELIABILITY.md') && !render ? join(PROJECT_ROOT, 'docs/reliability-results.json') : undefined);
if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify(run)}\n`);
const violations = run.summaries.reduce((n, s) => n + s.violations, 0);
process.stderr.write(
  `\n${run.summaries.map((s) => `${s.point}: ${s.trials} trials, ${JSON.stringify(s.outcomes)}, max invocations ${s.maxInvocations}, violations ${s.violations}`).join('\n')}\n`,
);
process.stderr.write(`total: ${run.results.length} trials, ${violations} violations${reportPath ? `; report ${reportPath}` : ''}\n`);
process.exit(violations ? 1 : 0);
