// Scope: the Temporal worker as its own process (bench only): the approval workflow and the
// submission limiter, with the real activities (approval service over HTTP, Cedar, the ledger),
// the stack's payload codec and an explicit workflow cache size, which the bench prints.
// Prints `{"ready":true,"maxCachedWorkflows":...}` on stdout once polling; SIGTERM drains it.
import { createArapHttpBackend } from '../../src/backends/arap-http-backend.js';
import { createLogger } from '../../src/log.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { loadOrCreateSecrets } from '../../src/secrets.js';
import { payloadCodecFromKeyList } from '../../src/temporal/payload-codec.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { startApprovalWorker } from '../../src/worker.js';
import { readSpec } from './spec.js';

const spec = readSpec();
const { config } = spec;
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' });
const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
const ledger = openLedger(spec.ledgerFile);
const maxCachedWorkflows = spec.maxCachedWorkflows ?? 1000;
const worker = await startApprovalWorker({
  address: spec.temporalAddress,
  namespace: config.TEMPORAL_NAMESPACE,
  taskQueue: config.COUNTERSIGN_TASK_QUEUE,
  deps: {
    backend: createArapHttpBackend({ baseUrl: spec.approvalsUrl, clientToken: secrets.approvalsClientToken }),
    pdp: await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR }),
    tools: createToolRegistry([createWireTransferTool(ledger)]),
    logger: logger.child({ part: 'worker' }),
  },
  dataConverter: { payloadCodecs: [payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys)] },
  ...(spec.workflowBundlePath ? { workflowBundle: { codePath: spec.workflowBundlePath } as never } : {}),
  maxCachedWorkflows,
});

process.once('SIGTERM', () => {
  void worker.stop().finally(() => {
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
