/**
 * The embedded stack behind `npm start`, the demo and the end-to-end tests, in one process
 * tree: a Temporal dev server (child process, SQLite file in the data folder) unless
 * `TEMPORAL_ADDRESS` names one; the worker; the MCP endpoint; the reference approval service
 * with its approver page; and a development token issuer (local ES256 key, JWKS endpoint).
 *
 * Secrets (dedup key, callback HMAC key, approval-service client token, approver secrets, the
 * Temporal payload encryption key) are generated on first start and kept in
 * `<data>/secrets.json` (mode 0600), so task ids, tokens and pending tasks stay valid across
 * restarts. Production runs the parts separately and gets these from its secret store (payload
 * keys: `COUNTERSIGN_PAYLOAD_KEYS`); `countersign serve --role …` (`stack-roles.ts`) runs each part
 * as its own process over the same data folder, from the building blocks exported here.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve, type ServerType } from '@hono/node-server';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { DefaultLogger, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createApprovalService, type ApprovalService } from './approvals/service.js';
import { approvalServiceExtras, generateApprovalMachineSecrets, type ApprovalMachineSecrets } from './approvals/stack-wiring.js';
import { loadOrCreateDevIssuer, type DevIssuer } from './auth/dev-issuer.js';
import { createArapHttpBackend } from './backends/arap-http-backend.js';
import type { Config } from './config.js';
import { createLogger } from './log.js';
import { createMcpFront } from './mcp-front.js';
import { createCedarPdp } from './policy/cedar-pdp.js';
import { startDevServer, type DevServer } from './temporal/dev-server.js';
import { generatePayloadKey, payloadCodecFromKeyList, type PayloadKeyEntry } from './temporal/payload-codec.js';
import { openLedger, type Ledger } from './tools/ledger.js';
import { startConfiguredGateway, toolEntityOf } from './gateway/wiring.js';
import { createWireTransferTool } from './tools/wire-transfer.js';
import { startApprovalWorker, type RunningWorker } from './worker.js';
import type { ApprovalWorkflowConfig } from '../workflows/types.js';

/** An approver identity of the reference approval service. */
export interface Approver {
  id: string;
  secret: string;
  groups: string[];
}

/** Secrets of one installation (`agents`, `itsmSecret`: resolvers that are not people). */
export interface StackSecrets extends ApprovalMachineSecrets {
  dedupKey: string;
  callbackSecret: string;
  approvalsClientToken: string;
  approvers: Approver[];
  /** Temporal payload codec keys, first = current (`COUNTERSIGN_PAYLOAD_KEYS` overrides). */
  payloadKeys: PayloadKeyEntry[];
}

/** The demo requester's subject. */
export const DEMO_REQUESTER = 'alice';

/** Read a complete secrets file, or undefined when it is absent or from before the current fields. */
function readSecrets(file: string): { secrets: StackSecrets; complete: boolean } | undefined {
  if (!existsSync(file)) return undefined;
  const secrets = JSON.parse(readFileSync(file, 'utf8')) as StackSecrets;
  return { secrets, complete: Boolean(secrets.payloadKeys?.length && secrets.agents && secrets.itsmSecret && secrets.inboxSessionKey) };
}

/** A private temp file next to `file` holding `value` (mode 0600), fully written. */
function writeTemp(file: string, value: unknown): string {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, JSON.stringify(value, null, 2), { mode: 0o600, flag: 'wx' });
  chmodSync(tmp, 0o600);
  return tmp;
}

/** Hold `lock` (O_EXCL create) while `fn` runs; a lock older than 30 s is taken over (its holder died). */
function withFileLock<T>(lock: string, fn: () => T): T {
  const until = Date.now() + 30_000;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 30_000) unlinkSync(lock);
      } catch {
        // released meanwhile
      }
      if (Date.now() > until) throw new Error(`could not lock ${lock}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20); // synchronous 20 ms sleep
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * Load `<dataDir>/secrets.json`, creating it with fresh random values on first use. Safe when
 * several processes (the `serve --role` roles started together on an empty folder) race: the file
 * is written whole to a temp file and published with `link` (which fails if another process
 * published first, whose file is then read), so every process ends with the same secrets. Upgrading
 * an older file (missing fields) happens under a lock file and re-reads the result.
 */
export function loadOrCreateSecrets(dataDir: string): StackSecrets {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'secrets.json');
  const existing = readSecrets(file);
  if (existing?.complete) return existing.secrets;
  if (existing) {
    // a secrets.json from before the payload codec or the machine approvers: add what is missing, keep every other value
    return withFileLock(`${file}.lock`, () => {
      const now = readSecrets(file)!;
      if (now.complete) return now.secrets; // another process upgraded it meanwhile
      const old = now.secrets;
      const upgraded: StackSecrets = { ...generateApprovalMachineSecrets(), ...old, payloadKeys: old.payloadKeys?.length ? old.payloadKeys : [generatePayloadKey()] };
      renameSync(writeTemp(file, upgraded), file);
      return readSecrets(file)!.secrets;
    });
  }
  const rnd = () => randomBytes(32).toString('base64url');
  const secrets: StackSecrets = {
    dedupKey: rnd(),
    callbackSecret: rnd(),
    approvalsClientToken: rnd(),
    approvers: [
      { id: 'bob', secret: randomBytes(9).toString('base64url'), groups: ['treasury'] },
      { id: 'carol', secret: randomBytes(9).toString('base64url'), groups: ['treasury'] },
    ],
    payloadKeys: [generatePayloadKey()],
    ...generateApprovalMachineSecrets(),
  };
  const tmp = writeTemp(file, secrets);
  try {
    linkSync(tmp, file); // atomic publish; EEXIST: another process won the race
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  return loadOrCreateSecrets(dataDir); // the winner's file (complete, so this returns at once)
}

/** A running stack. `stop()` stops everything it started, in reverse order. */
export interface Stack {
  urls: { mcp: string; approvals: string; approverPage: string; issuer: string; jwks: string; temporal: string; temporalUi?: string };
  config: Config;
  secrets: StackSecrets;
  issuer: DevIssuer;
  ledger: Ledger;
  approvals: ApprovalService;
  temporal: Client;
  logger: Logger;
  /** Stop only the worker (tasks stay pending in Temporal). */
  stopWorker(): Promise<void>;
  /** Start a worker again after `stopWorker`. */
  startWorker(): Promise<void>;
  stop(): Promise<void>;
}

/** A fetch handler (hono's `app.fetch`). */
export type FetchFn = (req: Request) => Response | Promise<Response>;

/** Listen on `host:port` (0: a free port) serving `fetchRef.current`; a taken port names `variable`. */
export async function listen(host: string, port: number, fetchRef: { current: FetchFn }, variable: string): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: (req: Request) => fetchRef.current(req), port, hostname: host }, (info: AddressInfo) => resolve({ server, port: info.port }));
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`port ${port} on ${host} is already in use; set ${variable} to a free port`) : err),
    );
  });
}

/** Close `server`, dropping keep-alive connections. */
export function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    server.close(() => resolve());
  });
}

/** Temporal's core runtime logs every worker state change at INFO to stderr; keep warnings only. */
export function quietTemporalRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // already installed (a second stack in the same process)
  }
}

/**
 * The approval workflow's tunables from the configuration (fixed per run at its start, so replays
 * see the same values). `callbackBaseUrl`: where the backend's callbacks go, `<mcp origin>/callbacks/arap`.
 */
export function workflowConfigOf(config: Config, callbackBaseUrl: string): ApprovalWorkflowConfig {
  return {
    resultRetentionMs: config.COUNTERSIGN_RESULT_RETENTION_MS,
    clientPollIntervalMs: config.COUNTERSIGN_POLL_INTERVAL_MS,
    statusPollInitialMs: config.COUNTERSIGN_STATUS_POLL_INITIAL_MS,
    statusPollMaxMs: config.COUNTERSIGN_STATUS_POLL_MAX_MS,
    maxGenerations: config.COUNTERSIGN_MAX_GENERATIONS,
    retryBaseMs: config.COUNTERSIGN_RETRY_BASE_MS,
    retryMaxMs: config.COUNTERSIGN_RETRY_MAX_MS,
    executionTimeoutMs: config.COUNTERSIGN_EXECUTION_TIMEOUT_MS,
    maxRequestWindowMs: config.COUNTERSIGN_MAX_REQUEST_WINDOW_MS,
    callbackBaseUrl,
  };
}

/**
 * Which tokens the MCP endpoint accepts: the production authorization server when configured,
 * otherwise the embedded development issuer at `devIssuerUrl` (whose tokens are then not accepted at all).
 */
export function oauthOf(config: Config, devIssuerUrl: string, resourceUrl: string): { issuer: string; audience: string; jwksUrl: string } {
  const productionIssuer = config.COUNTERSIGN_OAUTH_ISSUER;
  return productionIssuer
    ? {
        issuer: productionIssuer,
        audience: config.COUNTERSIGN_OAUTH_AUDIENCE ?? resourceUrl,
        jwksUrl: config.COUNTERSIGN_OAUTH_JWKS_URL ?? `${productionIssuer.replace(/\/$/, '')}/.well-known/jwks.json`,
      }
    : { issuer: devIssuerUrl, audience: resourceUrl, jwksUrl: `${devIssuerUrl}/.well-known/jwks.json` };
}

/** Start the stack. Ports of 0 pick free ports (tests); the URLs report the real ones. */
export async function startStack(config: Config, opts: { workflowBundle?: WorkflowBundleWithSourceMap; logger?: Logger; temporalLog?: (line: string) => void } = {}): Promise<Stack> {
  const logger = opts.logger ?? createLogger();
  quietTemporalRuntime();
  mkdirSync(config.COUNTERSIGN_DATA_DIR, { recursive: true, mode: 0o700 });
  chmodSync(config.COUNTERSIGN_DATA_DIR, 0o700); // arguments at rest: owner only
  const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
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
    // Temporal
    let devServer: DevServer | undefined;
    let address = config.TEMPORAL_ADDRESS;
    if (!address) {
      devServer = await startDevServer({
        port: config.TEMPORAL_PORT || undefined,
        ...(config.TEMPORAL_UI_PORT ? { uiPort: config.TEMPORAL_UI_PORT } : {}),
        dbFile: join(config.COUNTERSIGN_DATA_DIR, 'temporal.db'),
        namespace: config.TEMPORAL_NAMESPACE,
        ...(opts.temporalLog ? { log: opts.temporalLog } : {}),
      });
      address = devServer.address;
      cleanups.push(() => devServer!.stop());
    }
    const connection = await Connection.connect({ address });
    cleanups.push(() => connection.close());
    if (devServer) {
      // Closed workflows must outlive every terminal task's retention; the dev server's default
      // namespace retention is shorter than ours may be. Production sets this on its namespace.
      const days = Math.ceil(config.COUNTERSIGN_RESULT_RETENTION_MS / 86_400_000) + 1;
      await connection.workflowService.updateNamespace({
        namespace: config.TEMPORAL_NAMESPACE,
        config: { workflowExecutionRetentionTtl: msToTs(days * 86_400_000) },
      });
    }
    // Every payload this stack's client and worker write is sealed with AES-256-GCM (issue 5 §6).
    const dataConverter = { payloadCodecs: [payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys)] };
    const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter });

    // Listeners first (ports may be 0), handlers bound once their URLs are known.
    const issuerRef: { current: FetchFn } = { current: () => new Response('starting', { status: 503 }) };
    const approvalsRef: { current: FetchFn } = { current: () => new Response('starting', { status: 503 }) };
    const mcpRef: { current: FetchFn } = { current: () => new Response('starting', { status: 503 }) };
    const issuerSrv = await listen(host, config.COUNTERSIGN_ISSUER_PORT, issuerRef, 'COUNTERSIGN_ISSUER_PORT');
    cleanups.push(() => closeServer(issuerSrv.server));
    const approvalsSrv = await listen(host, config.COUNTERSIGN_APPROVALS_PORT, approvalsRef, 'COUNTERSIGN_APPROVALS_PORT');
    cleanups.push(() => closeServer(approvalsSrv.server));
    const mcpSrv = await listen(host, config.COUNTERSIGN_PORT, mcpRef, 'COUNTERSIGN_PORT');
    cleanups.push(() => closeServer(mcpSrv.server));
    const issuerUrl = `http://${host}:${issuerSrv.port}`;
    const approvalsUrl = `http://${host}:${approvalsSrv.port}`;
    const mcpOrigin = `http://${host}:${mcpSrv.port}`;
    const resourceUrl = `${mcpOrigin}/mcp`;

    // Development token issuer
    const issuer = await loadOrCreateDevIssuer({ keyFile: join(config.COUNTERSIGN_DATA_DIR, 'dev-issuer-key.json'), issuer: issuerUrl, audience: resourceUrl });
    issuerRef.current = (req) => issuer.app.fetch(req);

    // Reference approval service
    const approvals = createApprovalService({
      dbPath: join(config.COUNTERSIGN_DATA_DIR, 'approvals.db'),
      clientToken: secrets.approvalsClientToken,
      callbackSecret: secrets.callbackSecret,
      approvers: secrets.approvers,
      approvalValidityMs: config.COUNTERSIGN_APPROVAL_VALIDITY_MS,
      publicBaseUrl: approvalsUrl,
      logger: logger.child({ part: 'approvals' }),
      ...approvalServiceExtras(config.COUNTERSIGN_DATA_DIR, secrets),
    });
    approvalsRef.current = (req) => approvals.app.fetch(req);
    drainCallbacks = () => approvals.drainCallbacks();
    const sweeper = setInterval(() => void approvals.sweep().catch(() => undefined), 5_000);
    sweeper.unref();
    cleanups.push(async () => {
      clearInterval(sweeper);
      await approvals.drainCallbacks().catch(() => undefined);
      approvals.close();
    });

    // Tools, policy, backend
    const ledger = openLedger(join(config.COUNTERSIGN_DATA_DIR, 'ledger.db'));
    cleanups.push(async () => ledger.close());
    const gateway = await startConfiguredGateway(config, [createWireTransferTool(ledger)], logger);
    cleanups.push(() => gateway.close());
    const tools = gateway.registry;
    const pdp = await createCedarPdp({ policyDir: config.COUNTERSIGN_POLICY_DIR, toolEntity: toolEntityOf(tools) });
    const backend = createArapHttpBackend({ baseUrl: approvalsUrl, clientToken: secrets.approvalsClientToken });

    const workflowConfig = workflowConfigOf(config, `${mcpOrigin}/callbacks/arap`);

    // Worker
    let worker: RunningWorker | undefined;
    const startWorker = async () => {
      worker = await startApprovalWorker({
        address: address!,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.COUNTERSIGN_TASK_QUEUE,
        deps: { backend, pdp, tools, logger: logger.child({ part: 'worker' }) },
        dataConverter,
        ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : {}),
      });
    };
    const stopWorker = async () => {
      await worker?.stop();
      worker = undefined;
    };
    await startWorker();
    cleanups.push(stopWorker);

    // MCP front
    const mcp = createMcpFront(config, { temporal, tools, pdp, secrets, workflowConfig, oauth: oauthOf(config, issuerUrl, resourceUrl), resourceUrl, logger });
    mcpRef.current = (req) => mcp.app.fetch(req);
    cleanups.push(() => mcp.close());

    return {
      urls: {
        mcp: resourceUrl,
        approvals: approvalsUrl,
        approverPage: `${approvalsUrl}/approver`,
        issuer: issuerUrl,
        jwks: `${issuerUrl}/.well-known/jwks.json`,
        temporal: address,
        ...(devServer?.uiPort ? { temporalUi: `http://${host}:${devServer.uiPort}` } : {}),
      },
      config,
      secrets,
      issuer,
      ledger,
      approvals,
      temporal,
      logger,
      stopWorker,
      startWorker,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
