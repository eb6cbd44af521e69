/**
 * The stack's parts as separately startable roles (issue 6): each role is one process that can be
 * killed and restarted on its own against the same data folder and SQLite files. `countersign
 * serve --role <role>` (`src/cli/serve-command.ts`) runs one; `npm start` still runs them all in
 * one process (`startStack`). Roles share the data folder (`secrets.json`, `dev-issuer-key.json`,
 * `temporal.db`, `approvals.db`, `ledger.db`) and find each other by the configured ports, which
 * must therefore be fixed (non-zero) — a restarted role comes back on the same URL.
 *
 * - `temporal`: the Temporal dev server on `<data>/temporal.db` at `TEMPORAL_PORT` (a restart
 *   resumes every workflow from that file);
 * - `worker`: the Temporal worker with the activities over the approval backend, Cedar and the ledger;
 * - `mcp`: the MCP endpoint and the backend-callback receiver at `COUNTERSIGN_PORT`;
 * - `approvals`: the reference approval service at `COUNTERSIGN_APPROVALS_PORT`;
 * - `issuer`: the development token issuer at `COUNTERSIGN_ISSUER_PORT`.
 *
 * Deliberately does not: supervise or restart anything (an orchestrator or the fault harness does),
 * or pick ports.
 */
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createApprovalService } from './approvals/service.js';
import { approvalServiceExtras } from './approvals/stack-wiring.js';
import { loadOrCreateDevIssuer } from './auth/dev-issuer.js';
import { createArapHttpBackend } from './backends/arap-http-backend.js';
import type { Config } from './config.js';
import { createMcpFront } from './mcp-front.js';
import { createCedarPdp } from './policy/cedar-pdp.js';
import { closeServer, listen, loadOrCreateSecrets, oauthOf, quietTemporalRuntime, workflowConfigOf, type FetchFn, type StackSecrets } from './stack.js';
import { startDevServer } from './temporal/dev-server.js';
import { payloadCodecFromKeyList } from './temporal/payload-codec.js';
import { openLedger } from './tools/ledger.js';
import { startConfiguredGateway, toolEntityOf } from './gateway/wiring.js';
import { createWireTransferTool } from './tools/wire-transfer.js';
import { startApprovalWorker } from './worker.js';

/** The roles `serve --role` accepts. */
export const ROLES = ['temporal', 'worker', 'mcp', 'approvals', 'issuer'] as const;

/** One of {@link ROLES}. */
export type Role = (typeof ROLES)[number];

/** Options beyond the configuration. URLs are absolute http(s) without a trailing slash. */
export interface RoleOptions {
  logger: Logger;
  /** worker: base URL of the approval backend (default: the approval service at its port). */
  approvalsUrl?: string;
  /** mcp: base URL the backend's callbacks go to (default `<mcp origin>/callbacks/arap`). */
  callbackBaseUrl?: string;
  /** mcp: per-attempt timeout of the workflows' backend calls, ms (`ApprovalWorkflowConfig.backendCallTimeoutMs`). */
  backendCallTimeoutMs?: number;
  /** worker: a prebuilt workflow bundle: the JSON of `bundleWorkflows()`'s `{code, sourceMap}`. */
  workflowBundlePath?: string;
}

/** A running role: `url` is what it serves (Temporal: `host:port`); `stop()` shuts it down gracefully. */
export interface RunningRole {
  role: Role;
  url: string;
  stop(): Promise<void>;
}

/** The URLs every role derives from the configuration. Throws when a port is 0. */
export function roleUrls(config: Config): { mcpOrigin: string; resourceUrl: string; approvalsUrl: string; issuerUrl: string; temporalAddress: string } {
  const host = config.COUNTERSIGN_HOST;
  for (const [name, port] of Object.entries({ COUNTERSIGN_PORT: config.COUNTERSIGN_PORT, COUNTERSIGN_APPROVALS_PORT: config.COUNTERSIGN_APPROVALS_PORT, COUNTERSIGN_ISSUER_PORT: config.COUNTERSIGN_ISSUER_PORT })) {
    if (port === 0) throw new Error(`${name} must be a fixed port when the roles run as separate processes`);
  }
  if (!config.TEMPORAL_ADDRESS && config.TEMPORAL_PORT === 0) throw new Error('TEMPORAL_PORT must be a fixed port (or set TEMPORAL_ADDRESS)');
  const mcpOrigin = `http://${host}:${config.COUNTERSIGN_PORT}`;
  return {
    mcpOrigin,
    resourceUrl: `${mcpOrigin}/mcp`,
    approvalsUrl: `http://${host}:${config.COUNTERSIGN_APPROVALS_PORT}`,
    issuerUrl: `http://${host}:${config.COUNTERSIGN_ISSUER_PORT}`,
    temporalAddress: config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`,
  };
}

function dataConverterOf(config: Config, secrets: StackSecrets) {
  return { payloadCodecs: [payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys)] };
}

async function serveFetch(config: Config, port: number, variable: string, fetch: FetchFn): Promise<() => Promise<void>> {
  const { server } = await listen(config.COUNTERSIGN_HOST, port, { current: fetch }, variable);
  return () => closeServer(server);
}

/**
 * Start `role`. Resolves once it serves (Temporal: answers; worker: polls). Throws when a port is
 * taken, Temporal is unreachable, or the configuration lacks a fixed port.
 */
export async function startRole(role: Role, config: Config, opts: RoleOptions): Promise<RunningRole> {
  const urls = roleUrls(config);
  const dataDir = config.COUNTERSIGN_DATA_DIR;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700); // arguments at rest: owner only
  const secrets = loadOrCreateSecrets(dataDir);
  const log = opts.logger.child({ part: role });
  quietTemporalRuntime();
  switch (role) {
    case 'temporal': {
      if (config.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is set: there is no dev server to run');
      const server = await startDevServer({ port: config.TEMPORAL_PORT, dbFile: join(dataDir, 'temporal.db'), namespace: config.TEMPORAL_NAMESPACE });
      const connection = await Connection.connect({ address: server.address });
      const days = Math.ceil(config.COUNTERSIGN_RESULT_RETENTION_MS / 86_400_000) + 1;
      await connection.workflowService.updateNamespace({ namespace: config.TEMPORAL_NAMESPACE, config: { workflowExecutionRetentionTtl: msToTs(days * 86_400_000) } });
      await connection.close();
      return { role, url: server.address, stop: () => server.stop() };
    }
    case 'worker': {
      const ledger = openLedger(join(dataDir, 'ledger.db'));
      const gateway = await startConfiguredGateway(config, [createWireTransferTool(ledger)], log);
      const pdp = await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR, toolEntity: toolEntityOf(gateway.registry) });
      const worker = await startApprovalWorker({
        address: urls.temporalAddress,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.COUNTERSIGN_TASK_QUEUE,
        deps: {
          backend: createArapHttpBackend({ baseUrl: opts.approvalsUrl ?? urls.approvalsUrl, clientToken: secrets.approvalsClientToken }),
          pdp,
          tools: gateway.registry,
          logger: log,
        },
        dataConverter: dataConverterOf(config, secrets),
        ...(opts.workflowBundlePath ? { workflowBundle: JSON.parse(readFileSync(opts.workflowBundlePath, 'utf8')) as WorkflowBundleWithSourceMap } : {}),
      });
      return {
        role,
        url: urls.temporalAddress,
        async stop() {
          await worker.stop();
          await gateway.close();
          ledger.close();
        },
      };
    }
    case 'mcp': {
      const connection = await Connection.connect({ address: urls.temporalAddress });
      const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverterOf(config, secrets) });
      const ledger = openLedger(join(dataDir, 'ledger.db')); // allowed calls run inline here
      const gateway = await startConfiguredGateway(config, [createWireTransferTool(ledger)], log);
      const tools = gateway.registry;
      const pdp = await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR, toolEntity: toolEntityOf(tools) });
      const workflowConfig = {
        ...workflowConfigOf(config, opts.callbackBaseUrl ?? `${urls.mcpOrigin}/callbacks/arap`),
        ...(opts.backendCallTimeoutMs ? { backendCallTimeoutMs: opts.backendCallTimeoutMs } : {}),
      };
      const oauth = oauthOf(config, urls.issuerUrl, urls.resourceUrl);
      const mcp = createMcpFront(config, { temporal, tools, pdp, secrets, workflowConfig, oauth, resourceUrl: urls.resourceUrl, logger: log });
      const close = await serveFetch(config, config.COUNTERSIGN_PORT, 'COUNTERSIGN_PORT', (req) => mcp.app.fetch(req));
      return {
        role,
        url: urls.resourceUrl,
        async stop() {
          await close();
          await mcp.close();
          await connection.close();
          await gateway.close();
          ledger.close();
        },
      };
    }
    case 'approvals': {
      const approvals = createApprovalService({
        dbPath: join(dataDir, 'approvals.db'),
        clientToken: secrets.approvalsClientToken,
        callbackSecret: secrets.callbackSecret,
        approvers: secrets.approvers,
        approvalValidityMs: config.COUNTERSIGN_APPROVAL_VALIDITY_MS,
        publicBaseUrl: urls.approvalsUrl,
        logger: log,
        ...approvalServiceExtras(dataDir, secrets),
      });
      const sweeper = setInterval(() => void approvals.sweep().catch(() => undefined), 5_000);
      sweeper.unref();
      const close = await serveFetch(config, config.COUNTERSIGN_APPROVALS_PORT, 'COUNTERSIGN_APPROVALS_PORT', (req) => approvals.app.fetch(req));
      return {
        role,
        url: urls.approvalsUrl,
        async stop() {
          clearInterval(sweeper);
          await close();
          await approvals.drainCallbacks().catch(() => undefined);
          approvals.close();
        },
      };
    }
    case 'issuer': {
      const issuer = await loadOrCreateDevIssuer({ keyFile: join(dataDir, 'dev-issuer-key.json'), issuer: urls.issuerUrl, audience: urls.resourceUrl });
      const close = await serveFetch(config, config.COUNTERSIGN_ISSUER_PORT, 'COUNTERSIGN_ISSUER_PORT', (req) => issuer.app.fetch(req));
      return { role, url: urls.issuerUrl, stop: close };
    }
  }
}
