// Scope: the Temporal worker as its own process (bench only): the approval workflow and the
// submission limiter, with the real activities (approval service over HTTP, Cedar, the ledger),
// the stack's payload codec and an explicit workflow cache size, which the bench prints; composed
// by the same root as the `worker` role (`src/compose.ts`), with the bench's own tools
// (wire_transfer on this role's ledger, no gateway) and no watchdog, as before the root.
// Prints `{"ready":true,"maxCachedWorkflows":...}` on stdout once polling; SIGTERM drains it.
import { createLogger } from '@countersign/http/log';
import { compose } from '../../src/compose.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { loadOrCreateSecrets } from '../../src/secrets.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { readSpec } from './spec.js';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

const spec = readSpec();
const { config } = spec;
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' });
const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
const ledger = openLedger(spec.ledgerFile);
const maxCachedWorkflows = spec.maxCachedWorkflows ?? 1000;
const composed = await compose(config, {
  logger,
  secrets,
  tools: {
    tools: createToolRegistry([createWireTransferTool(ledger)]),
    pdp: await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR }),
  },
  temporal: { address: spec.temporalAddress, connection: {} },
  worker: {
    approvalsUrl: spec.approvalsUrl,
    ...(spec.workflowBundlePath ? { workflowBundle: { codePath: spec.workflowBundlePath } } : {}),
    maxCachedWorkflows,
    ...(spec.heapSnapshotDir ? { workflowsInMainThread: true } : {}),
    watchdog: false,
  },
  front: false,
});
const { worker } = composed;

// bench/heap: a file `worker-<n>.request` in the snapshot folder asks for a heap snapshot of the
// thread running the workflows (this one). Not a signal: Temporal's runtime stops the worker on
// SIGINT, SIGTERM, SIGQUIT and SIGUSR2, and Node's SIGUSR1 starts the inspector.
let snapshots = 0;
if (spec.heapSnapshotDir) {
  const dir = spec.heapSnapshotDir;
  setInterval(() => {
    const request = join(dir, `worker-${snapshots + 1}.request`);
    if (!existsSync(request)) return;
    const n = ++snapshots;
    // 'figures': memory figures only (a snapshot leaves the RSS higher for the rest of the run)
    const withSnapshot = readFileSync(request, 'utf8') !== 'figures';
    const before = process.memoryUsage();
    (globalThis as { gc?: () => void }).gc?.();
    const mem = process.memoryUsage();
    const status = worker.worker.getStatus();
    // AsyncLocalStorage tags a promise made now carries (one per enabled instance in this thread)
    const tags = Object.getOwnPropertySymbols(new Promise(() => undefined)).filter((s) => s.description === 'kResourceStore').length;
    const file = withSnapshot ? writeHeapSnapshot(join(dir, `worker-${n}.heapsnapshot`)) : null;
    writeFileSync(
      join(dir, `worker-${n}.json.tmp`),
      JSON.stringify({
        file,
        rssBytes: before.rss,
        heapUsedBytes: before.heapUsed,
        rssAfterGcBytes: mem.rss,
        heapUsedAfterGcBytes: mem.heapUsed,
        externalBytes: mem.external,
        tagsOnNewPromise: tags,
        cachedWorkflows: status.numCachedWorkflows,
        inFlightActivities: status.numInFlightActivities,
      }),
    );
    renameSync(join(dir, `worker-${n}.json.tmp`), join(dir, `worker-${n}.json`));
  }, 250).unref();
}

process.once('SIGTERM', () => {
  void composed.close().finally(() => {
    ledger.close();
    process.exit(0);
  });
});
const o = worker.worker.options;
process.stdout.write(
  `${JSON.stringify({
    ready: true,
    maxCachedWorkflows,
    maxConcurrentWorkflowTaskExecutions:
      (o as { maxConcurrentWorkflowTaskExecutions?: number }).maxConcurrentWorkflowTaskExecutions ?? null,
    maxConcurrentActivityTaskExecutions:
      (o as { maxConcurrentActivityTaskExecutions?: number }).maxConcurrentActivityTaskExecutions ?? null,
    workflowThreadPoolSize: (o as { workflowThreadPoolSize?: number }).workflowThreadPoolSize ?? null,
    reuseV8Context: (o as { reuseV8Context?: boolean }).reuseV8Context ?? null,
  })}\n`,
);
