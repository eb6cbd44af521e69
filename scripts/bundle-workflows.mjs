#!/usr/bin/env node
// `npm run build`'s last step: bundle the compiled workflows once into dist/workflow-bundle.js, so
// a compiled worker (`countersign serve --role worker`, `dev`, the image, `countersign/testing`)
// starts without webpack. The bundle is what `bundleWorkflows()` (src/worker.ts) makes at start
// from the same modules: workflows/index plus the OpenTelemetry workflow interceptors. Skipped when
// the bundle is newer than every compiled workflow module (an incremental build that changed none).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// It bundles the compiled dist/: under the countersign-source condition (an `npm run build` from a
// shell or process that runs the sources) @countersign/* would resolve to TypeScript, so run again without it.
const SOURCE = /--conditions[= ]countersign-source/g;
if (SOURCE.test(process.env.NODE_OPTIONS ?? '')) {
  const env = { ...process.env, NODE_OPTIONS: process.env.NODE_OPTIONS.replace(SOURCE, '').trim() };
  process.exit(spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { stdio: 'inherit', env }).status ?? 1);
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'workflow-bundle.js');
const inputs = readdirSync(join(root, 'dist', 'workflows'))
  .filter((f) => f.endsWith('.js'))
  .map((f) => join(root, 'dist', 'workflows', f));
const newest = Math.max(...inputs.map((f) => statSync(f).mtimeMs));
if (existsSync(out) && statSync(out).mtimeMs > newest) process.exit(0);
const started = Date.now();
const { bundleWorkflowCode } = await import('@temporalio/worker');
const { WORKFLOWS_PATH } = await import(join(root, 'dist', 'src', 'worker.js'));
const { WORKFLOW_TRACING_MODULE } = await import(join(root, 'dist', 'src', 'ops', 'tracing.js'));
const quiet = { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} };
const { code } = await bundleWorkflowCode({
  workflowsPath: WORKFLOWS_PATH,
  workflowInterceptorModules: [WORKFLOW_TRACING_MODULE],
  logger: quiet,
});
writeFileSync(out, code);
console.error(`bundled the workflows into dist/workflow-bundle.js (${Math.round(code.length / 1024)} KiB, ${Date.now() - started} ms)`);
