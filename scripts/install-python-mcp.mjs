#!/usr/bin/env node
// Installs the Python MCP SDK (`mcp` 2.3.0 from PyPI) into the git-ignored project folder
// `.tools/py-mcp` when it is not already there, for the Python client test
// (test/clients/python-mcp.test.ts). Override: PYTHON_MCP_PATH (a folder where `import mcp` gives
// 2.3.0) skips the install. Run once per `vitest run` from test/support/global-setup.ts, like
// scripts/install-temporal.mjs. Exits non-zero with a message naming what to install when
// Python's pip is missing or the install fails.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned version; the test drives exactly this package. */
const PYTHON_MCP_VERSION = '2.3.0';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = process.env.PYTHON_MCP_PATH || join(root, '.tools', 'py-mcp');
const installed = () => existsSync(target) && readdirSync(target).includes(`mcp-${PYTHON_MCP_VERSION}.dist-info`);

if (installed()) process.exit(0);
if (process.env.PYTHON_MCP_PATH) {
  console.error(`PYTHON_MCP_PATH=${target} holds no mcp ${PYTHON_MCP_VERSION}; unset it or install mcp==${PYTHON_MCP_VERSION} there.`);
  process.exit(2);
}

console.error(`installing mcp==${PYTHON_MCP_VERSION} from PyPI into .tools/py-mcp ...`);
for (const [cmd, ...pre] of [['python3', '-m', 'pip'], ['pip3'], ['pip']]) {
  const probe = spawnSync(cmd, [...pre, '--version'], { stdio: 'ignore' });
  if (probe.status !== 0) continue;
  const r = spawnSync(
    cmd,
    [
      ...pre,
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-warn-script-location',
      '--target',
      target,
      `mcp==${PYTHON_MCP_VERSION}`,
    ],
    { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' } },
  );
  if (r.status === 0 && installed()) process.exit(0);
  console.error(`pip install of mcp==${PYTHON_MCP_VERSION} failed (exit ${r.status}).`);
  process.exit(1);
}
console.error(
  `Python's pip was not found. Install Python 3.10+ with pip, or run: pip install --target .tools/py-mcp mcp==${PYTHON_MCP_VERSION}`,
);
process.exit(1);
