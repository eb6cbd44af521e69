/**
 * The stack's parts as separately startable roles: one starter per role, the worker and the MCP
 * front built by the composition root (`src/compose.ts`) with the role's context (logger, secrets,
 * URLs, metrics, tracing) as its overrides, the others set up here; composed by the embedded stack (`startStack` in `src/stack.ts`, all roles in one process)
 * and run one per process by `countersign serve --role <role>` (`src/cli/serve-command.ts`, via
 * {@link startRole}), where each can be killed and restarted on its own against the same data
 * folder and SQLite files. Roles share the data folder (`secrets.json`, `dev-issuer-key.json`,
 * `temporal.db`, `approvals.db`, `ledger.db`); as separate processes they find each other by the
 * configured ports, which must therefore be fixed (non-zero) — a restarted role comes back on the
 * same URL.
 *
 * - `temporal`: the Temporal dev server on `<data>/temporal.db` at `TEMPORAL_PORT` (a restart
 *   resumes every workflow from that file), its namespace retention set to outlive task results;
 * - `worker`: the Temporal worker with the activities over the approval backend, Cedar and the ledger
 *   (run alone, it answers `/livez`, `/readyz`, `/metrics` at `COUNTERSIGN_WORKER_PORT`);
 * - `mcp`: the MCP endpoint and the backend-callback receiver at `COUNTERSIGN_PORT`;
 * - `approvals`: the reference approval service at `COUNTERSIGN_APPROVALS_PORT`, with its sweeper;
 * - `issuer`: the development token issuer at `COUNTERSIGN_ISSUER_PORT`.
 *
 * Every HTTP role also answers `/livez`, `/readyz` and `/metrics` (`src/ops/`, docs/OPERATIONS.md),
 * and every Temporal connection goes through `src/temporal/connect.ts` with the cluster's credentials.
 *
 * Deliberately does not: supervise or restart anything (an orchestrator or the fault harness does),
 * or pick ports (the embedded stack listens first and passes the real URLs in).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { DefaultLogger, makeTelemetryFilterString, Runtime, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Logger } from 'pino';
import { approvalServiceOptions, hostApprovalService, type ApprovalService } from '@countersign/approvals';
import { closeServer, listen, type FetchFn } from '@countersign/http/server-lifecycle';
import { loadOrCreateDevIssuer, type DevIssuer } from './auth/dev-issuer.js';
import { compose, roleUrls, temporalConnectionOf, type ComposeOverrides, type RoleUrls, type SharedTools } from './compose.js';
import type { Config } from './config.js';
import { openDataDir, type StackSecrets } from './secrets.js';
import { connectClient } from './temporal/connect.js';
import { startDevServer } from './temporal/dev-server.js';
import { checkNamespaceRetention, enforceNamespaceRetention, requiredRetentionMs } from './temporal/namespace-retention.js';
import { loadReceiptSigningKey } from './receipts/signing-key.js';
import type { RunningWorker } from './worker.js';
import { createAppMetrics, type AppMetrics } from './ops/metrics.js';
import { withOpsRoutes, type ReadinessCheck } from './ops/ops-routes.js';
import { startTracing, type Tracing } from './ops/tracing.js';

import type { Role } from './roles.js';

export { ROLES, type Role } from './roles.js';

/** Options of {@link startRole} beyond the configuration. URLs are absolute http(s) without a trailing slash. */
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

/** A running role: `url` is what it serves (Temporal and worker: `host:port`); `stop()` shuts it down gracefully. */
export interface RunningRole {
  role: Role;
  url: string;
  stop(): Promise<void>;
}

/** What every role starter receives: the configuration, the data folder's secrets, the URLs of all parts, and a parent logger. */
export interface RoleContext {
  config: Config;
  secrets: StackSecrets;
  urls: RoleUrls;
  logger: Logger;
  /** The process's application metrics (one registry per process or embedded stack); default: a fresh one per role. */
  metrics?: AppMetrics;
  /** The process's OpenTelemetry tracing (`src/ops/tracing.ts`, one per process or embedded stack); default: off. */
  tracing?: Tracing;
}

/**
 * Serve a role's HTTP handler: the embedded stack binds it to a listener it opened first, a
 * separate role listens on its fixed port. Resolves to the function that stops serving (drops
 * keep-alive connections). Rejects when the port is taken.
 */
export type Mount = (fetch: FetchFn) => Promise<() => Promise<void>>;

/**
 * Temporal's core runtime logs every worker state change at INFO to stderr; keep warnings only,
 * unless `COUNTERSIGN_TEMPORAL_CORE_LOG` asks for more (a level, or a `tracing` filter string
 * whose most verbose level also becomes the SDK logger's level). With
 * `COUNTERSIGN_TEMPORAL_METRICS_ADDRESS` the runtime also serves its Prometheus metrics there
 * (once per process: the first call decides).
 */
export function quietTemporalRuntime(config?: Config): void {
  const bindAddress = config?.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS;
  const { filter, loggerLevel } = temporalCoreLogging(config?.COUNTERSIGN_TEMPORAL_CORE_LOG ?? 'WARN');
  try {
    Runtime.install({
      logger: new DefaultLogger(loggerLevel),
      telemetryOptions: {
        logging: { filter, forward: {} },
        ...(bindAddress ? { metrics: { prometheus: { bindAddress } } } : {}),
      },
    });
  } catch {
    // already installed (a second stack in the same process)
  }
}

const CORE_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
type CoreLevel = (typeof CORE_LEVELS)[number];

/**
 * The Temporal runtime's log settings from `COUNTERSIGN_TEMPORAL_CORE_LOG`: a bare level (any case)
 * sets the SDK core crates to it (an unknown word means `WARN`); a string with `=` or `,` is used as
 * the `tracing` filter as it is. `loggerLevel`: the most verbose level the filter names, so the
 * forwarded lines are not dropped again by the SDK logger.
 */
export function temporalCoreLogging(value: string): { filter: string; loggerLevel: CoreLevel } {
  const filter = /[=,]/.test(value) ? value : makeTelemetryFilterString({ core: coreLevel(value) });
  return { filter, loggerLevel: mostVerbose(filter) };
}
const coreLevel = (s: string): CoreLevel => ((CORE_LEVELS as readonly string[]).find((l) => l === s.toUpperCase()) as CoreLevel) ?? 'WARN';
/** The most verbose level named anywhere in a `tracing` filter string (`WARN` when none is). */
function mostVerbose(filter: string): CoreLevel {
  const named = filter
    .split(',')
    .map((d) => d.split('=').at(-1)!.toUpperCase())
    .filter((l): l is CoreLevel => (CORE_LEVELS as readonly string[]).includes(l));
  return CORE_LEVELS.find((l) => named.includes(l)) ?? 'WARN';
}

/** The Temporal runtime exporter's URL for `/metrics`, when configured. */
export function temporalMetricsUrlOf(config: Config): string | undefined {
  return config.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS ? `http://${config.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS}/metrics` : undefined;
}

/** `mount` with `/livez`, `/readyz` (over `checks`) and `/metrics` in front of the role's handler (`src/ops/ops-routes.ts`). */
export function withOps(mount: Mount, config: Config, metrics: AppMetrics, checks: ReadinessCheck[]): Mount {
  const temporalMetricsUrl = temporalMetricsUrlOf(config);
  const metricsToken = config.COUNTERSIGN_METRICS_TOKEN;
  return (fetch) =>
    mount(
      withOpsRoutes(fetch, {
        metrics,
        checks,
        ...(temporalMetricsUrl ? { temporalMetricsUrl } : {}),
        ...(metricsToken ? { metricsToken } : {}),
      }),
    );
}

/**
 * Readiness of an approval backend at `baseUrl`: any HTTP answer counts (the ARAP API has no
 * health route of its own); a refused or unanswered connection does not.
 */
export function backendReachable(baseUrl: string): ReadinessCheck {
  return {
    name: 'approval-backend',
    async check() {
      const res = await fetch(baseUrl, { method: 'GET', signal: AbortSignal.timeout(2000) }).catch(() => {
        throw new Error('approval backend unreachable');
      });
      await res.body?.cancel();
    },
  };
}

/**
 * The `temporal` role: the dev server on `<data>/temporal.db`, then the namespace's retention set
 * to one day past `COUNTERSIGN_RESULT_RETENTION_MS` (closed workflows must outlive every terminal
 * task's retention; the dev server's default is shorter; production sets this on its namespace).
 * `port` undefined: a free one; `uiPort` undefined or 0: no web UI. Throws when the binary is
 * missing, a port is taken or the server does not answer.
 */
export async function startTemporalRole(
  config: Config,
  opts: { port?: number; uiPort?: number; log?: (line: string) => void } = {},
): Promise<{ address: string; uiPort?: number; stop(): Promise<void> }> {
  const server = await startDevServer({
    ...(opts.port ? { port: opts.port } : {}),
    ...(opts.uiPort ? { uiPort: opts.uiPort } : {}),
    dbFile: join(config.COUNTERSIGN_DATA_DIR, 'temporal.db'),
    namespace: config.TEMPORAL_NAMESPACE,
    ...(opts.log ? { log: opts.log } : {}),
  });
  try {
    const connection = await Connection.connect({ address: server.address });
    try {
      await connection.workflowService.updateNamespace({
        namespace: config.TEMPORAL_NAMESPACE,
        config: { workflowExecutionRetentionTtl: msToTs(requiredRetentionMs(config.COUNTERSIGN_RESULT_RETENTION_MS)) },
      });
    } finally {
      await connection.close();
    }
  } catch (err) {
    await server.stop();
    throw err;
  }
  return { address: server.address, ...(server.uiPort ? { uiPort: server.uiPort } : {}), stop: () => server.stop() };
}

/**
 * Check the external cluster's namespace retention (`src/temporal/namespace-retention.ts`) per
 * `COUNTERSIGN_NAMESPACE_RETENTION_CHECK`: `warn` logs, `fail` throws `NamespaceRetentionError`,
 * `off` skips. When the namespace cannot be described (missing, or the credentials may not read
 * it), `fail` throws that error and `warn` logs it and lets the worker start.
 */
async function checkExternalRetention(ctx: RoleContext): Promise<void> {
  const { config } = ctx;
  const mode = config.COUNTERSIGN_NAMESPACE_RETENTION_CHECK;
  if (mode === 'off') return;
  const connection = await connectClient(ctx.urls.temporalAddress, temporalConnectionOf(config));
  try {
    const report = await checkNamespaceRetention(connection, config.TEMPORAL_NAMESPACE, config.COUNTERSIGN_RESULT_RETENTION_MS).catch(
      (err: unknown) => {
        if (mode === 'fail') throw err;
        ctx.logger.warn(
          { part: 'worker', namespace: config.TEMPORAL_NAMESPACE, err: (err as Error).message },
          'could not read the namespace retention; not checked',
        );
        return undefined;
      },
    );
    if (!report) return;
    enforceNamespaceRetention(report, mode, (message) =>
      ctx.logger.warn(
        { part: 'worker', namespace: report.namespace, retentionMs: report.retentionMs, requiredMs: report.requiredMs },
        message,
      ),
    );
  } finally {
    await connection.close();
  }
}

/**
 * The `worker` role: a Temporal worker at `urls.temporalAddress` whose activities call the approval
 * backend at `approvalsUrl` (default `urls.approvalsUrl`), Cedar and the ledger, with the workflow-task
 * watchdog when configured (`compose` with `front: false`). `parts`: shared tools (the embedded
 * stack's, left open on stop); otherwise its own, closed on stop. Against an
 * external cluster it first checks the namespace's retention ({@link checkExternalRetention}).
 * Resolves once it polls; `stop()` drains it. Throws when Temporal is unreachable, and
 * `NamespaceRetentionError` when the retention is short and the check is `fail`.
 */
export async function startWorkerRole(
  ctx: RoleContext,
  opts: { approvalsUrl?: string; workflowBundle?: WorkflowBundleWithSourceMap; parts?: SharedTools } = {},
): Promise<{ stop(): Promise<void>; checks: ReadinessCheck[]; worker: RunningWorker }> {
  const { config } = ctx;
  if (config.TEMPORAL_ADDRESS) await checkExternalRetention(ctx);
  const approvalsUrl = opts.approvalsUrl ?? ctx.urls.approvalsUrl;
  const composed = await compose(config, {
    ...roleParts(ctx),
    ...(opts.parts ? { tools: opts.parts } : {}),
    worker: { approvalsUrl, ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : {}) },
    front: false,
  });
  const { worker } = composed;
  return {
    worker,
    checks: [{ name: 'worker', check: () => worker.ready() }, backendReachable(approvalsUrl)],
    stop: () => composed.close(),
  };
}

/**
 * The `mcp` role: a Temporal client with the payload codec, and the MCP front (`src/mcp-front.ts`),
 * composed with `worker: false` (search attributes on the runs when the namespace has them), served
 * through `mount`, with the open-tasks gauge and `/readyz` over the client; allowed calls run inline here, so it has the tools too (`parts` as for
 * {@link startWorkerRole}). `callbackBaseUrl` defaults to `<mcp origin>/callbacks/arap`. It also
 * publishes the evidence receipts' public key (`src/receipts/signing-key.ts`, generated in the data
 * folder on first start unless `COUNTERSIGN_RECEIPTS_KEY_FILE` names one). Resolves once it serves;
 * `temporal` is its client. Throws when Temporal is unreachable, the port is taken or the receipt key file is unusable.
 */
export async function startMcpRole(
  ctx: RoleContext,
  opts: { mount: Mount; callbackBaseUrl?: string; backendCallTimeoutMs?: number; parts?: SharedTools; extraChecks?: ReadinessCheck[] },
): Promise<{ temporal: Client; stop(): Promise<void> }> {
  const { config } = ctx;
  const receiptsKey = await loadReceiptSigningKey({
    dataDir: config.COUNTERSIGN_DATA_DIR,
    keyFile: config.COUNTERSIGN_RECEIPTS_KEY_FILE,
  });
  const metrics = ctx.metrics ?? createAppMetrics();
  const { temporal, front, close } = await compose(config, {
    ...roleParts(ctx),
    metrics,
    ...(opts.parts ? { tools: opts.parts } : {}),
    worker: false,
    front: {
      receiptsJwks: receiptsKey.jwks,
      ...(opts.callbackBaseUrl ? { callbackBaseUrl: opts.callbackBaseUrl } : {}),
      ...(opts.backendCallTimeoutMs ? { backendCallTimeoutMs: opts.backendCallTimeoutMs } : {}),
    },
  });
  metrics.setOpenTasksSource(
    async () => (await temporal.workflow.count("WorkflowType = 'approvalWorkflow' AND ExecutionStatus = 'Running'")).count,
  );
  const checks: ReadinessCheck[] = [
    { name: 'temporal', check: async () => void (await temporal.workflowService.getSystemInfo({})) },
    ...(opts.extraChecks ?? []),
  ];
  const unmount = await withOps(
    opts.mount,
    config,
    metrics,
    checks,
  )((req, env) => front.app.fetch(req, env as object)).catch(async (err: unknown) => {
    await close();
    throw err;
  });
  return {
    temporal,
    async stop() {
      // the front first: its subscriptions/listen streams end gracefully while their connections
      // are still open (the listener's close drops every connection at once)
      await front.close();
      await unmount();
      await close();
    },
  };
}

/** What every composition of a role takes from its context: the logger, secrets, URLs, metrics and tracing of the process. */
function roleParts(ctx: RoleContext): Pick<ComposeOverrides, 'logger' | 'secrets' | 'urls' | 'metrics' | 'tracing'> {
  return {
    logger: ctx.logger,
    secrets: ctx.secrets,
    urls: ctx.urls,
    ...(ctx.metrics ? { metrics: ctx.metrics } : {}),
    ...(ctx.tracing ? { tracing: ctx.tracing } : {}),
  };
}

/**
 * The `approvals` role: the reference approval service of `@countersign/approvals`, hosted as that
 * package hosts it (`approvalServiceOptions`, `hostApprovalService`: `<data>/approvals.db`, the
 * approvers and machine secrets of `secrets.json`, the rules file, its notification channels when
 * configured, and its sweeper), served through `mount` at `urls.approvalsUrl` with this gate's
 * `/livez`, `/readyz` and `/metrics` (the callback outbox gauge) in front.
 * `stop()` stops serving, lets in-flight callbacks land, then closes the database. Throws when the
 * port is taken or the OIDC configuration is incomplete.
 */
export async function startApprovalsRole(
  ctx: RoleContext,
  opts: { mount: Mount },
): Promise<{ approvals: ApprovalService; stop(): Promise<void> }> {
  const { config, secrets } = ctx;
  const hosted = hostApprovalService(
    approvalServiceOptions(config, secrets, {
      dataDir: config.COUNTERSIGN_DATA_DIR,
      publicBaseUrl: ctx.urls.approvalsUrl,
      logger: ctx.logger.child({ part: 'approvals' }),
    }),
  );
  const approvals = hosted.service;
  const shut = () => hosted.stop();
  const metrics = ctx.metrics ?? createAppMetrics();
  metrics.setCallbackOutboxSource(() => approvals.store.callbacks.counts());
  metrics.setBreakGlassReviewsSource(() => approvals.store.breakGlass.counts(Date.now()));
  metrics.setApprovalAnalyticsSource(() => approvals.metricsSnapshot());
  const unmount = await withOps(
    opts.mount,
    config,
    metrics,
    [],
  )((req, env) => approvals.app.fetch(req, env as object)).catch(async (err: unknown) => {
    await shut();
    throw err;
  });
  return {
    approvals,
    async stop() {
      await unmount();
      await shut();
    },
  };
}

/**
 * The `issuer` role: the development token issuer (ES256 key in `<data>/dev-issuer-key.json`, `iss`
 * = `urls.issuerUrl`, `aud` = `urls.resourceUrl`) with its JWKS, served through `mount`.
 */
export async function startIssuerRole(ctx: RoleContext, opts: { mount: Mount }): Promise<{ issuer: DevIssuer; stop(): Promise<void> }> {
  const issuer = await loadOrCreateDevIssuer({
    keyFile: join(ctx.config.COUNTERSIGN_DATA_DIR, 'dev-issuer-key.json'),
    issuer: ctx.urls.issuerUrl,
    audience: ctx.urls.resourceUrl,
  });
  const unmount = await withOps(
    opts.mount,
    ctx.config,
    ctx.metrics ?? createAppMetrics(),
    [],
  )((req, env) => issuer.app.fetch(req, env as object));
  return { issuer, stop: unmount };
}

/** Listen on `port` of `host` (fixed) serving `fetch`; `variable` names the port's setting in the error when it is taken. */
function listenAt(host: string, port: number, variable: string): Mount {
  return async (fetch) => {
    const { server } = await listen(host, port, { current: fetch }, variable);
    return () => closeServer(server);
  };
}

/**
 * Start `role` as its own process's only part, on the configured fixed ports. Resolves once it
 * serves (Temporal: answers; worker: polls). Throws when a port is taken, Temporal is unreachable,
 * or the configuration lacks a fixed port. Tracing (`OTEL_*`, `src/ops/tracing.ts`) starts with the
 * role and is flushed by `stop()`.
 */
export async function startRole(role: Role, config: Config, opts: RoleOptions): Promise<RunningRole> {
  const urls = roleUrls(config);
  const secrets = openDataDir(config.COUNTERSIGN_DATA_DIR);
  const ctx: RoleContext = {
    config,
    secrets,
    urls,
    logger: opts.logger,
    metrics: createAppMetrics(),
    tracing: startTracing(config.TRACING),
  };
  const host = config.COUNTERSIGN_HOST;
  quietTemporalRuntime(config);
  const running = await startRoleIn(role, ctx, opts, host).catch(async (err: unknown) => {
    await ctx.tracing!.shutdown();
    throw err;
  });
  return {
    ...running,
    async stop() {
      await running.stop();
      await ctx.tracing!.shutdown(); // flushes the spans still batched
    },
  };
}

/** {@link startRole}'s work once the process's context (metrics, tracing) exists. */
async function startRoleIn(role: Role, ctx: RoleContext, opts: RoleOptions, host: string): Promise<RunningRole> {
  const { config, urls } = ctx;
  switch (role) {
    case 'temporal': {
      if (config.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is set: there is no dev server to run');
      const server = await startTemporalRole(config, { port: config.TEMPORAL_PORT });
      return { role, url: server.address, stop: () => server.stop() };
    }
    case 'worker': {
      const workflowBundle = opts.workflowBundlePath
        ? (JSON.parse(readFileSync(opts.workflowBundlePath, 'utf8')) as WorkflowBundleWithSourceMap)
        : undefined;
      const worker = await startWorkerRole(ctx, {
        ...(opts.approvalsUrl ? { approvalsUrl: opts.approvalsUrl } : {}),
        ...(workflowBundle ? { workflowBundle } : {}),
      });
      // the worker serves no API: its own port only for /livez, /readyz, /metrics
      const unmount = await withOps(
        listenAt(host, config.COUNTERSIGN_WORKER_PORT, 'COUNTERSIGN_WORKER_PORT'),
        config,
        ctx.metrics!,
        worker.checks,
      )(() => new Response('not found', { status: 404 })).catch(async (err: unknown) => {
        await worker.stop();
        throw err;
      });
      return {
        role,
        url: urls.temporalAddress,
        async stop() {
          await unmount();
          await worker.stop();
        },
      };
    }
    case 'mcp': {
      const mcp = await startMcpRole(ctx, {
        mount: listenAt(host, config.COUNTERSIGN_PORT, 'COUNTERSIGN_PORT'),
        ...(opts.callbackBaseUrl ? { callbackBaseUrl: opts.callbackBaseUrl } : {}),
        ...(opts.backendCallTimeoutMs ? { backendCallTimeoutMs: opts.backendCallTimeoutMs } : {}),
      });
      return { role, url: urls.resourceUrl, stop: () => mcp.stop() };
    }
    case 'approvals': {
      const approvals = await startApprovalsRole(ctx, {
        mount: listenAt(host, config.COUNTERSIGN_APPROVALS_PORT, 'COUNTERSIGN_APPROVALS_PORT'),
      });
      return { role, url: urls.approvalsUrl, stop: () => approvals.stop() };
    }
    case 'issuer': {
      const issuer = await startIssuerRole(ctx, { mount: listenAt(host, config.COUNTERSIGN_ISSUER_PORT, 'COUNTERSIGN_ISSUER_PORT') });
      return { role, url: urls.issuerUrl, stop: () => issuer.stop() };
    }
  }
}
