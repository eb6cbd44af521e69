// Scope: the baselines' worker as its own process (bench only), like the Countersign worker, so
// neither side's workflow tasks share a process with the bench clients: the raw Update-with-Start,
// same-shape and signal-then-query workflows of bench/workflows, with no-op activities, default
// data converter. Prints `{"ready":true}` once polling; SIGTERM drains it.
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { BASELINE_QUEUE } from '../lib/context.js';
import { readSpec } from './spec.js';

const spec = readSpec();
const connection = await NativeConnection.connect({ address: spec.temporalAddress });
const worker = await Worker.create({
  connection,
  namespace: spec.config.TEMPORAL_NAMESPACE,
  taskQueue: BASELINE_QUEUE,
  workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
  activities: { noopSubmit: async (id: string) => `submitted ${id}`, noopStep: async (step: string) => step },
  maxCachedWorkflows: spec.maxCachedWorkflows ?? 1000,
});
const running = worker.run();
process.once('SIGTERM', () => {
  worker.shutdown();
  void running.finally(() => {
    void connection.close().finally(() => process.exit(0));
  });
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
