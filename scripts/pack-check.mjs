#!/usr/bin/env node
// `npm run pack:check`: installs `countersign/testing` as a team would, from `npm pack` output, in a
// fresh folder outside the repository, and runs the tests of docs/TESTING-YOUR-GATE.md there with
// the team's own vitest and `tsc --noEmit` under a plain strict tsconfig.
//
// 1. `npm run build`, then `npm pack` of the gate and of every workspace package (tarballs in the folder).
// 2. In the folder (default: a new temp dir; `--dir <path>` to choose, it must not exist):
//    `npm init -y`, `"type": "module"`, `npm i <tarballs>` (their runtime dependencies only), then
//    the team's development tools: vitest, typescript, @types/node (the versions this repository uses).
// 3. Writes the doc's `vitest.config.ts` and its complete example (`example-your-gate.test.ts`),
//    taken from docs/TESTING-YOUR-GATE.md itself, plus a `tsconfig.json` of just
//    `{"strict": true, "module": "NodeNext", "noEmit": true}`.
// 4. Runs `npx tsc --noEmit` and `npx vitest run` there. The Temporal test server is found or
//    installed by countersign/testing itself (`TEMPORAL_TEST_SERVER`, else the user's cache folder,
//    src/temporal/binaries.ts); `--fresh-cache` points XDG_CACHE_HOME at an empty folder to prove
//    the install. Fails when either exits non-zero or any output line holds `[ERROR]`.
// Prints the tarball sizes, the installed size, and how long the install and the runs took.
// Usage: node scripts/pack-check.mjs [--dir <path>] [--fresh-cache] [--keep]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const dirArg = args.includes('--dir') ? args[args.indexOf('--dir') + 1] : undefined;
const log = (line) => process.stdout.write(`${line}\n`);
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** Run `cmd args` in `cwd`, output to this process; returns its combined output (also checked for `[ERROR]`). */
function run(cmd, argv, cwd, env = {}) {
  const r = spawnSync(cmd, argv, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.status !== 0) {
    process.stdout.write(out);
    throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status} in ${cwd}`);
  }
  return out;
}

function duBytes(dir) {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += statSync(join(e.parentPath, e.name)).size;
  }
  return total;
}

/** The fenced ```ts block of docs/TESTING-YOUR-GATE.md that starts with `first`. */
function docBlock(first) {
  const doc = readFileSync(join(root, 'docs', 'TESTING-YOUR-GATE.md'), 'utf8');
  for (const m of doc.matchAll(/```ts\n([\s\S]*?)```/g)) if (m[1].startsWith(first)) return m[1];
  throw new Error(`docs/TESTING-YOUR-GATE.md has no ts block starting with ${first}`);
}

const dev = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies;
const team = dirArg ?? mkdtempSync(join(tmpdir(), 'team-gate-'));
if (dirArg !== undefined) {
  if (existsSync(team)) throw new Error(`${team} exists; pick a new folder`);
  mkdirSync(team, { recursive: true });
}
const tarballs = join(team, 'tarballs');
mkdirSync(tarballs);
const started = Date.now();
try {
  log(`pack-check in ${team}`);
  let t = Date.now();
  run('npm', ['run', '--silent', 'build'], root);
  const packed = JSON.parse(
    execFileSync(
      'npm',
      ['pack', '--workspaces', '--include-workspace-root', '--pack-destination', tarballs, '--ignore-scripts', '--json'],
      {
        cwd: root,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    ),
  );
  log(`  build + npm pack: ${seconds(Date.now() - t)}`);
  for (const p of packed)
    log(
      `  ${p.filename.padEnd(34)} ${(p.size / 1024).toFixed(0).padStart(6)} KiB packed, ${(p.unpackedSize / 1024).toFixed(0).padStart(6)} KiB unpacked, ${p.entryCount} files`,
    );

  run('npm', ['init', '-y'], team);
  run('npm', ['pkg', 'set', 'type=module'], team);
  t = Date.now();
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packed.map((p) => join(tarballs, p.filename))], team);
  const installMs = Date.now() - t;
  const runtimeBytes = duBytes(join(team, 'node_modules'));
  log(`  npm i <tarballs>: ${seconds(installMs)}, node_modules ${(runtimeBytes / 1024 / 1024).toFixed(0)} MiB (runtime dependencies only)`);
  t = Date.now();
  run(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--save-dev',
      `vitest@${dev.vitest}`,
      `typescript@${dev.typescript}`,
      `@types/node@${dev['@types/node']}`,
    ],
    team,
  );
  log(`  the team's dev tools (vitest, typescript, @types/node): ${seconds(Date.now() - t)}`);

  writeFileSync(join(team, 'vitest.config.ts'), docBlock('// vitest.config.ts').replace(/^\/\/ vitest\.config\.ts\n/, ''));
  writeFileSync(join(team, 'example-your-gate.test.ts'), docBlock("import { afterAll, beforeAll, expect, it } from 'vitest';"));
  writeFileSync(
    join(team, 'tsconfig.json'),
    `${JSON.stringify({ compilerOptions: { strict: true, module: 'NodeNext', noEmit: true } }, null, 2)}\n`,
  );

  const env = {};
  if (flag('--fresh-cache')) env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'team-gate-cache-'));
  t = Date.now();
  // Under a tsconfig without skipLibCheck, tsc also checks every .d.ts in node_modules. Temporal's
  // own @temporalio/common/lib/time.d.ts then fails to find the types of `ms` (TS7016, upstream
  // temporalio/sdk-typescript#1668), whoever imports it; that one is reported, any other error fails.
  const tscRun = spawnSync('npx', ['tsc', '--noEmit', '-p', '.'], { cwd: team, env: { ...process.env, ...env }, encoding: 'utf8' });
  const tsc = `${tscRun.stdout}${tscRun.stderr}`;
  const tscErrors = tsc.split('\n').filter((l) => /error TS\d+/.test(l));
  const upstream = tscErrors.filter((l) => /^node_modules\/@temporalio\/common\/lib\/time\.d\.ts.*error TS7016: .*'ms'/.test(l));
  const own = tscErrors.filter((l) => !upstream.includes(l));
  if (own.length > 0 || (tscRun.status !== 0 && tscErrors.length === 0)) {
    process.stdout.write(tsc);
    throw new Error(`npx tsc --noEmit failed in ${team}`);
  }
  log(
    `  npx tsc --noEmit: ${seconds(Date.now() - t)}, no error in Countersign's types or the team's tests${upstream.length > 0 ? ` (${upstream.length} in @temporalio/common's own time.d.ts: its 'ms' types, temporalio/sdk-typescript#1668)` : ''}`,
  );
  t = Date.now();
  const vitest = run('npx', ['vitest', 'run'], team, env);
  log(
    `  npx vitest run: ${seconds(Date.now() - t)}${env.XDG_CACHE_HOME ? ' (including the test server install into an empty cache)' : ''}`,
  );
  const summary = vitest.split('\n').filter((l) => /Test Files|Tests /.test(l));
  for (const l of summary) log(`    ${l.trim()}`);
  const errors = `${tsc}\n${vitest}`.split('\n').filter((l) => l.includes('[ERROR]'));
  if (errors.length > 0) throw new Error(`the runs printed [ERROR] lines:\n${errors.join('\n')}`);
  log(`pack-check ok in ${seconds(Date.now() - started)}`);
} catch (err) {
  process.stderr.write(`pack-check FAILED: ${err.message}\n`);
  process.exitCode = 1;
} finally {
  if (!flag('--keep') && dirArg === undefined) rmSync(team, { recursive: true, force: true });
}
