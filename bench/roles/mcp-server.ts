// Scope: one MCP server instance as its own process (bench only): the same gate, task service,
// limiter client and HTTP app the `mcp` role builds, composed by the same root (`src/compose.ts`)
// with the bench's own tools (wire_transfer on this role's ledger, no gateway), workflow tunables
// (no search attributes) and no receipts key, over the bench's Temporal server, approval service
// and token issuer. Holds no task state, so any number of these serve the same tasks. Reads
// tasks as the spec's configuration says (`COUNTERSIGN_TASK_READS`: record, or query for the read-CPU comparison).
// Prints `{"ready":true,"url":...,"origin":...}` on stdout once listening; SIGTERM stops it.
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { compose, workflowConfigOf } from '../../src/compose.js';
import { loadOrCreateSecrets } from '../../src/secrets.js';
import { createLogger } from '@countersign/http/log';
import { createAppMetrics } from '../../src/ops/metrics.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { TRACING_OFF } from '../../src/ops/tracing.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { readSpec } from './spec.js';
import { trace } from '@opentelemetry/api';

const spec = readSpec();
const { config } = spec;
const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'error' });
const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
const ledger = openLedger(spec.ledgerFile);
const tools = createToolRegistry([createWireTransferTool(ledger)]);
const pdp = await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR });

let fetchRef: (req: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
const server: ServerType = await new Promise((resolve) => {
  const s = serve({ fetch: (req: Request) => fetchRef(req), hostname: '127.0.0.1', port: 0 }, () => resolve(s));
});
const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const metrics = createAppMetrics();
const composed = await compose(config, {
  logger,
  secrets,
  metrics,
  tools: { tools, pdp },
  temporal: { address: spec.temporalAddress, connection: {} },
  // bench/heap --traced: a tracer makes the front start runs traced; no provider, so no span leaves
  ...(spec.traceRuns ? { tracing: { ...TRACING_OFF, enabled: true, tracer: trace.getTracer('countersign-bench') } } : {}),
  worker: false,
  front: {
    workflowConfig: workflowConfigOf(config, `${origin}/callbacks/arap`),
    resourceUrl: spec.resourceUrl,
    auth: { oauth: { issuer: spec.issuerUrl, audience: spec.resourceUrl, jwksUrl: `${spec.issuerUrl}/.well-known/jwks.json` } },
  },
});
const mcp = composed.front;
// Bench-only probes (this role file only, never the product): `/__bench/heap`, heap in use after a
// full GC, the memory the instance actually retains (RSS also counts garbage not yet collected);
// `/__bench/stats`, its open streams and task-feed watches. And `/metrics` as the mcp role serves it
// (`countersign_task_reads_total` by source), for the read scenarios.
const gc = (globalThis as { gc?: () => void }).gc;
fetchRef = async (req) => {
  const path = new URL(req.url).pathname;
  if (path === '/__bench/heap') {
    gc?.();
    const m = process.memoryUsage();
    return Response.json({ gc: gc !== undefined, heapUsedMiB: m.heapUsed / 2 ** 20, rssMiB: m.rss / 2 ** 20 });
  }
  if (path === '/__bench/stats') return Response.json(mcp.stats());
  if (path === '/metrics') return new Response(await metrics.registry.metrics(), { headers: { 'content-type': 'text/plain' } });
  return mcp.app.fetch(req);
};

process.once('SIGTERM', () => {
  (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
  server.close();
  void composed.close().finally(() => {
    ledger.close();
    process.exit(0);
  });
});
process.stdout.write(`${JSON.stringify({ ready: true, url: `${origin}/mcp`, origin })}\n`);
