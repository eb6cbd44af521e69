// Scope: the baselines' worker as its own process (bench only), like the Countersign worker, so
// neither side's workflow tasks share a process with the bench clients: the raw Update-with-Start,
// same-shape and signal-then-query workflows of bench/workflows, with no-op activities, default
// data converter. Started by the same root as every worker (`src/compose.ts`), with everything
// Countersign adds replaced: its own workflow module and activities, no interceptors, no sinks,
// no watchdog, plain payloads. Prints `{"ready":true}` once polling; SIGTERM drains it.
import { fileURLToPath } from 'node:url';
import { createLogger } from '@countersign/http/log';
import { compose } from '../../src/compose.js';
import { BASELINE_QUEUE } from '../lib/context.js';
import { readSpec } from './spec.js';

const spec = readSpec();
const composed = await compose(
  { ...spec.config, COUNTERSIGN_TASK_QUEUE: BASELINE_QUEUE },
  {
    logger: createLogger({ level: process.env.LOG_LEVEL ?? 'error' }),
    dataConverter: {},
    temporal: { address: spec.temporalAddress, connection: {} },
    worker: {
      workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
      activities: { noopSubmit: async (id: string) => `submitted ${id}`, noopStep: async (step: string) => step },
      interceptors: {},
      sinks: {},
      maxCachedWorkflows: spec.maxCachedWorkflows ?? 1000,
      watchdog: false,
    },
    front: false,
  },
);
process.once('SIGTERM', () => {
  void composed.close().finally(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
