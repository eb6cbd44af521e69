/**
 * The embedded stack behind `npm start`, the demo and the end-to-end tests: every role of
 * `src/stack-roles.ts` in one process (the Temporal dev server as a child process, SQLite file in
 * the data folder, unless `TEMPORAL_ADDRESS` names one; the worker; the MCP endpoint; the reference
 * approval service with its approver page; the development token issuer), composed from the same
 * role starters `countersign serve --role …` runs one per process. What this file adds: ports of 0
 * (it listens first, then hands the real URLs to the roles), one set of tools and one ledger shared
 * by the worker and the MCP front, a worker that can be stopped and started again, and the stop order.
 *
 * Secrets come from `<data>/secrets.json` (`src/secrets.ts`); listeners from `packages/http/src/server-lifecycle.ts`.
 * Deliberately does not: set anything up itself that a role starter sets up.
 */
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { ApprovalService } from '@countersign/approvals';
import type { DevIssuer } from './auth/dev-issuer.js';
import type { Config } from './config.js';
import { createLogger } from '@countersign/http/log';
import { openDataDir, type StackSecrets } from './secrets.js';
import { closeServer, listen, type FetchFn } from '@countersign/http/server-lifecycle';
import { openToolParts, urlsAt } from './compose.js';
import {
  quietTemporalRuntime,
  startApprovalsRole,
  startIssuerRole,
  startMcpRole,
  startTemporalRole,
  startWorkerRole,
  type Mount,
  type RoleContext,
} from './stack-roles.js';
import type { Ledger } from './tools/ledger.js';
import type { ChangeStore } from './tools/change-store.js';
import { createAppMetrics, type AppMetrics } from './ops/metrics.js';
import { startTracing } from './ops/tracing.js';
import type { ReadinessCheck } from './ops/ops-routes.js';

/** The demo requester's subject. */
export const DEMO_REQUESTER = 'alice';

/** A running stack. `stop()` stops everything it started, in reverse order. */
export interface Stack {
  urls: { mcp: string; approvals: string; approverPage: string; issuer: string; jwks: string; temporal: string; temporalUi?: string };
  config: Config;
  secrets: StackSecrets;
  issuer: DevIssuer;
  ledger: Ledger;
  /** The change register of `submit_change`. */
  changes: ChangeStore;
  approvals: ApprovalService;
  temporal: Client;
  logger: Logger;
  /** The stack's application metrics, served at `/metrics` on every listener (src/ops/). */
  metrics: AppMetrics;
  /** Stop only the worker (tasks stay pending in Temporal). */
  stopWorker(): Promise<void>;
  /** Start a worker again after `stopWorker`. */
  startWorker(): Promise<void>;
  /**
   * Replace the running worker with a fresh one (what the workflow-task watchdog does for a run the
   * worker holds, `src/temporal/workflow-task-watchdog.ts`); its identity, as Temporal records it on
   * the workflow tasks it starts, is returned. Throws when no worker runs.
   */
  replaceWorker(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Start the stack. Ports of 0 pick free ports (tests); the URLs report the real ones.
 * `workflowBundle`: a prebuilt bundle (tests build one per file); `logger`: default stderr at
 * the configuration's `LOG_LEVEL`; `temporalLog`: receives the dev server's output lines. Throws (after stopping what
 * it started) when a port is taken, Temporal cannot start or be reached, or the policies do not parse.
 */
export async function startStack(
  config: Config,
  opts: { workflowBundle?: WorkflowBundleWithSourceMap; logger?: Logger; temporalLog?: (line: string) => void } = {},
): Promise<Stack> {
  const logger = opts.logger ?? createLogger({ level: config.LOG_LEVEL });
  quietTemporalRuntime(config);
  const secrets = openDataDir(config.COUNTERSIGN_DATA_DIR);
  const cleanups: Array<() => Promise<void>> = [];
  let drainCallbacks: (() => Promise<void>) | undefined;
  const stop = async () => {
    // Let in-flight approval callbacks land while the MCP server and worker still answer them.
    await drainCallbacks?.().catch(() => undefined);
    for (const c of cleanups.reverse()) await c().catch((e) => logger.warn({ err: (e as Error).message }, 'shutdown step failed'));
    cleanups.length = 0;
  };
  try {
    const host = config.COUNTERSIGN_HOST;
    let temporalServer: Awaited<ReturnType<typeof startTemporalRole>> | undefined;
    if (!config.TEMPORAL_ADDRESS) {
      temporalServer = await startTemporalRole(config, {
        port: config.TEMPORAL_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        ...(opts.temporalLog ? { log: opts.temporalLog } : {}),
      });
      cleanups.push(() => temporalServer!.stop());
    }
    const address = config.TEMPORAL_ADDRESS ?? temporalServer!.address;

    // Listeners first (ports may be 0), each handler bound by its role once the URLs are known.
    const listener = async (port: number, variable: string): Promise<{ port: number; mount: Mount }> => {
      const ref: { current: FetchFn } = { current: () => new Response('starting', { status: 503 }) };
      const srv = await listen(host, port, ref, variable);
      let open = true;
      const close = async () => {
        if (!open) return;
        open = false;
        await closeServer(srv.server);
      };
      cleanups.push(close); // also when its role never starts
      return {
        port: srv.port,
        mount: async (fetch) => {
          ref.current = fetch;
          return close;
        },
      };
    };
    const issuerL = await listener(config.COUNTERSIGN_ISSUER_PORT, 'COUNTERSIGN_ISSUER_PORT');
    const approvalsL = await listener(config.COUNTERSIGN_APPROVALS_PORT, 'COUNTERSIGN_APPROVALS_PORT');
    const mcpL = await listener(config.COUNTERSIGN_PORT, 'COUNTERSIGN_PORT');
    const urls = urlsAt(host, { mcp: mcpL.port, approvals: approvalsL.port, issuer: issuerL.port }, address);
    const metrics = createAppMetrics();
    const tracing = startTracing(config.TRACING);
    cleanups.push(() => tracing.shutdown()); // runs last: flushes what the other parts traced
    const ctx: RoleContext = { config, secrets, urls, logger, metrics, tracing };

    const { issuer, stop: stopIssuer } = await startIssuerRole(ctx, { mount: issuerL.mount });
    cleanups.push(stopIssuer);
    const { approvals, stop: stopApprovals } = await startApprovalsRole(ctx, { mount: approvalsL.mount });
    drainCallbacks = () => approvals.drainCallbacks();
    cleanups.push(stopApprovals);

    // One ledger, tool registry and policy engine for the worker and the MCP front.
    const parts = await openToolParts(config, logger);
    cleanups.push(() => parts.close());

    let worker: Awaited<ReturnType<typeof startWorkerRole>> | undefined;
    const startWorker = async () => {
      worker = await startWorkerRole(ctx, { parts, ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : {}) });
    };
    const stopWorker = async () => {
      await worker?.stop();
      worker = undefined;
    };
    await startWorker();
    cleanups.push(stopWorker);

    // One process: the MCP port's /readyz also answers for the worker and its approval backend.
    const workerChecks: ReadinessCheck[] = ['worker', 'approval-backend'].map((name) => ({
      name,
      check: async () => {
        const c = worker?.checks.find((w) => w.name === name);
        if (!c) throw new Error('worker stopped');
        await c.check();
      },
    }));
    const mcp = await startMcpRole(ctx, { mount: mcpL.mount, parts, extraChecks: workerChecks });
    cleanups.push(() => mcp.stop());

    return {
      urls: {
        mcp: urls.resourceUrl,
        approvals: urls.approvalsUrl,
        approverPage: `${urls.approvalsUrl}/approver`,
        issuer: urls.issuerUrl,
        jwks: `${urls.issuerUrl}/.well-known/jwks.json`,
        temporal: address,
        ...(temporalServer?.uiPort ? { temporalUi: `http://${host}:${temporalServer.uiPort}` } : {}),
      },
      config,
      secrets,
      issuer,
      ledger: parts.ledger,
      changes: parts.changes,
      approvals,
      temporal: mcp.temporal,
      logger,
      metrics,
      stopWorker,
      async replaceWorker() {
        if (!worker) throw new Error('no worker runs');
        await worker.worker.replace();
        return worker.worker.identity();
      },
      startWorker,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
