/**
 * The composition root. Whatever runs Countersign's parts builds them here, in one order —
 * Temporal connection → client → worker → MCP front — from the configuration, and changes a part
 * by an override that replaces it rather than by wiring its own: the roles and the embedded stack
 * (`src/stack-roles.ts`, `src/stack.ts`), the bench's role processes and its wait-actions scenario
 * (`bench/`), `countersign/testing` (`src/testing/gate-test-env.ts`), the hostile-input tests' app
 * (`test/hostile/apps.ts`) and the conformance profile (`conformance/profile/profile.ts`).
 * `src/worker.ts` (the one `Worker.create`) and `src/mcp-front.ts` (the one front) are built only
 * from here (`test/unit/composition-root.test.ts` checks it).
 *
 * Also here: what the parts derive from the configuration — where the parts are ({@link roleUrls}),
 * the cluster's credentials, the data converter, the workflow's tunables, which tokens are accepted
 * — and the tools and policy the worker and the front share ({@link openToolParts}).
 *
 * Deliberately does not: listen, serve `/livez` `/readyz` `/metrics`, start the Temporal dev server,
 * the approval service or the token issuer (the role starters do), or read `process.env`.
 */
import { join } from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { NativeConnection, WorkerOptions, WorkflowBundleOption } from '@temporalio/worker';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import type { JSONWebKeySet } from 'jose';
import type { Logger } from 'pino';
import { createLogger } from '@countersign/http/log';
import { createActivities, type ApprovalActivities } from '../activities/activities.js';
import { createLimiterActivities } from '../activities/limiter-activities.js';
import type { ApprovalWorkflowConfig } from '../workflows/types.js';
import type { ApprovalBackend } from './backends/approval-backend.js';
import { createArapHttpBackend } from './backends/arap-http-backend.js';
import { configFileEnv, type Config } from './config.js';
import type { Gateway } from './gateway/gateway.js';
import { startConfiguredGateway, toolEntityOf } from './gateway/wiring.js';
import { createMcpFront, type McpFront, type McpFrontParts } from './mcp-front.js';
import { arapReportSender, createFollowerReporter } from './mcp/follower-reports.js';
import type { TaskService } from './mcp/task-service.js';
import type { TaskSubscriptions } from './mcp/task-subscriptions.js';
import type { AppMetrics } from './ops/metrics.js';
import { TRACING_OFF, type Tracing } from './ops/tracing.js';
import { createCedarPdp, PolicyLoadError } from './policy/cedar-pdp.js';
import type { PolicyDecisionPoint } from './policy/pdp.js';
import { openDataDir, type StackSecrets } from './secrets.js';
import { connectClient, type TemporalConnection } from './temporal/connect.js';
import { payloadCodecFromKeyList } from './temporal/payload-codec.js';
import { searchAttributesEnabled } from './temporal/search-attributes.js';
import { startWorkflowTaskWatchdog, type HoldAction, type WorkflowTaskWatchdog } from './temporal/workflow-task-watchdog.js';
import { openChangeStore, type ChangeStore } from './tools/change-store.js';
import { openLedger, type Ledger } from './tools/ledger.js';
import type { ToolRegistry } from './tools/registry.js';
import { createSubmitChangeTool } from './tools/submit-change.js';
import { createWireTransferTool } from './tools/wire-transfer.js';
import { startApprovalWorker, type RunningWorker } from './worker.js';

/** Where the parts are: absolute URLs without a trailing slash, and Temporal's `host:port`. */
export interface RoleUrls {
  mcpOrigin: string;
  /** The MCP endpoint, `<mcpOrigin>/mcp` (the RFC 9728 protected resource and the tokens' audience). */
  resourceUrl: string;
  approvalsUrl: string;
  issuerUrl: string;
  temporalAddress: string;
}

/** URLs of the parts on `host` at the given ports (`temporalAddress` as given). */
export function urlsAt(host: string, ports: { mcp: number; approvals: number; issuer: number }, temporalAddress: string): RoleUrls {
  const mcpOrigin = `http://${host}:${ports.mcp}`;
  return {
    mcpOrigin,
    resourceUrl: `${mcpOrigin}/mcp`,
    approvalsUrl: `http://${host}:${ports.approvals}`,
    issuerUrl: `http://${host}:${ports.issuer}`,
    temporalAddress,
  };
}

/**
 * The URLs every role derives from the configuration: `http://COUNTERSIGN_HOST:<port>` per role,
 * or the role's `COUNTERSIGN_MCP_URL` / `COUNTERSIGN_APPROVALS_URL` / `COUNTERSIGN_ISSUER_URL` when
 * set (roles in separate containers). Throws when a port is 0.
 */
export function roleUrls(config: Config): RoleUrls {
  for (const [name, port] of Object.entries({
    COUNTERSIGN_PORT: config.COUNTERSIGN_PORT,
    COUNTERSIGN_APPROVALS_PORT: config.COUNTERSIGN_APPROVALS_PORT,
    COUNTERSIGN_ISSUER_PORT: config.COUNTERSIGN_ISSUER_PORT,
  })) {
    if (port === 0) throw new Error(`${name} must be a fixed port when the roles run as separate processes`);
  }
  if (!config.TEMPORAL_ADDRESS && config.TEMPORAL_PORT === 0)
    throw new Error('TEMPORAL_PORT must be a fixed port (or set TEMPORAL_ADDRESS)');
  const local = urlsAt(
    config.COUNTERSIGN_HOST,
    { mcp: config.COUNTERSIGN_PORT, approvals: config.COUNTERSIGN_APPROVALS_PORT, issuer: config.COUNTERSIGN_ISSUER_PORT },
    config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`,
  );
  const mcpOrigin = config.COUNTERSIGN_MCP_URL ?? local.mcpOrigin;
  return {
    ...local,
    mcpOrigin,
    resourceUrl: `${mcpOrigin}/mcp`,
    approvalsUrl: config.COUNTERSIGN_APPROVALS_URL ?? local.approvalsUrl,
    issuerUrl: config.COUNTERSIGN_ISSUER_URL ?? local.issuerUrl,
  };
}

/**
 * The credentials and TLS of the configured Temporal cluster (`TEMPORAL_CONNECTION`), applied only
 * when the cluster is external (`TEMPORAL_ADDRESS`, from the environment or a profile): the
 * embedded dev server is plain gRPC on 127.0.0.1 whatever the environment says.
 */
export function temporalConnectionOf(config: Config): TemporalConnection {
  return config.TEMPORAL_ADDRESS ? config.TEMPORAL_CONNECTION : {};
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

/** The Temporal data converter of this installation: the AES-256-GCM payload codec over `COUNTERSIGN_PAYLOAD_KEYS` or the generated key. */
export function dataConverterOf(config: Config, secrets: Pick<StackSecrets, 'payloadKeys'>) {
  return { payloadCodecs: [payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys)] };
}

/** The tools and the policy that judges calls of them: what the worker's activities and the front's gate both use. */
export interface SharedTools {
  tools: ToolRegistry;
  pdp: PolicyDecisionPoint;
  /** The shadow policy set (`COUNTERSIGN_SHADOW_POLICY_DIR`), evaluated by the front's gate beside `pdp`, never enforced; absent: none. */
  shadowPdp?: PolicyDecisionPoint;
}

/** The {@link SharedTools} of an installation, with the stores they own: the ledger (`<data>/ledger.db`), the tool registry over it, and Cedar. */
export interface ToolParts extends SharedTools {
  ledger: Ledger;
  /** The change register of `submit_change` (`<data>/changes.db`). */
  changes: ChangeStore;
  /** The native tools and, with `COUNTERSIGN_CONFIG`, the gateway's upstream tools (`src/gateway/`). */
  tools: ToolRegistry;
  /** Stop the gateway's upstream connections (and processes) and close the ledger. */
  close(): Promise<void>;
}

/**
 * The Cedar PDP over `policyDir`; a {@link PolicyLoadError} is thrown again (same class, same
 * `file`) with `which` first — the folder and the setting that names it — so a startup error says
 * whether the live or the shadow set is to blame: `the shadow policy folder
 * (COUNTERSIGN_SHADOW_POLICY_DIR, …): cannot read policy folder /x: ENOENT…`.
 */
async function policySetOf(policyDir: string, which: string, toolEntity: ReturnType<typeof toolEntityOf>): Promise<PolicyDecisionPoint> {
  try {
    return await createCedarPdp({ policyDir, toolEntity });
  } catch (err) {
    if (err instanceof PolicyLoadError) throw new PolicyLoadError(`${which}: ${err.message}`, err.file);
    throw err;
  }
}

/**
 * Open the {@link ToolParts}: the ledger, the gateway over the native tools (with the upstreams of
 * `COUNTERSIGN_CONFIG`, if set) and the Cedar PDP that sees upstream tools' attributes. The caller
 * calls `close()`. Throws a `PolicyLoadError` naming the folder and its setting when the policy or
 * the shadow policy folder does not load, or when the configuration file is invalid
 * (`GatewayConfigError`, every problem listed).
 */
export async function openToolParts(config: Config, logger: Logger): Promise<ToolParts> {
  const ledger = openLedger(join(config.COUNTERSIGN_DATA_DIR, 'ledger.db'));
  const changes = openChangeStore(join(config.COUNTERSIGN_DATA_DIR, 'changes.db'));
  let gateway: Gateway | undefined;
  try {
    const native = [createWireTransferTool(ledger), createSubmitChangeTool(changes, { stepMs: config.COUNTERSIGN_CHANGE_STEP_MS })];
    gateway = await startConfiguredGateway(config, native, logger, configFileEnv());
    const toolEntity = toolEntityOf(gateway.registry);
    const pdp = await policySetOf(config.COUNTERSIGN_POLICY_DIR, 'the policy folder (COUNTERSIGN_POLICY_DIR)', toolEntity);
    const shadowPdp = config.COUNTERSIGN_SHADOW_POLICY_DIR
      ? await policySetOf(
          config.COUNTERSIGN_SHADOW_POLICY_DIR,
          'the shadow policy folder (COUNTERSIGN_SHADOW_POLICY_DIR, evaluated beside the live one, never enforced)',
          toolEntity,
        )
      : undefined;
    const opened = gateway;
    return {
      ledger,
      changes,
      tools: opened.registry,
      pdp,
      ...(shadowPdp ? { shadowPdp } : {}),
      async close() {
        await opened.close();
        ledger.close();
        changes.close();
      },
    };
  } catch (err) {
    await gateway?.close();
    ledger.close();
    changes.close();
    throw err;
  }
}

/** The activities of the approval workflow and the submission limiter, as {@link compose} builds them by default. */
export type ComposedActivities = ApprovalActivities & ReturnType<typeof createLimiterActivities>;

/** How {@link compose} reaches Temporal. Every field replaces one default. */
export interface TemporalOverrides {
  /** The frontend's `host:port`; default `urls.temporalAddress`. */
  address?: string;
  /** API key, TLS and gRPC metadata; default {@link temporalConnectionOf} the configuration. */
  connection?: TemporalConnection;
  /** A client to use as it is (the time-skipping test server's, a recording stand-in): no client connection is made, and it is not closed. */
  client?: Client;
  /** A worker connection to use as it is (the time-skipping test server's): not closed; the worker then cannot be replaced and has no watchdog. */
  workerConnection?: NativeConnection;
}

/** The worker's parts {@link compose} replaces. */
export interface WorkerOverrides {
  /** The approval backend the activities call; default the ARAP adapter over `approvalsUrl` with the data folder's client token. */
  backend?: ApprovalBackend;
  /** Base URL of the ARAP approval backend (absolute, no trailing slash); default `urls.approvalsUrl`. */
  approvalsUrl?: string;
  /**
   * The activities by name, instead of the approval workflow's and the limiter's (then `backend`
   * and the tools are not used); or a function of those, e.g. to wrap one.
   */
  activities?: object | ((composed: ComposedActivities) => object);
  /** A prebuilt workflow bundle (`{code}` or `{codePath}`); default the build's, else `workflowsPath` (default the approval workflows) bundled at start. */
  workflowBundle?: WorkflowBundleOption;
  /** Another workflow module to bundle at start (the bench's baseline workflows). */
  workflowsPath?: string;
  /** Worker interceptors instead of the tracing's (for workflows other than Countersign's). */
  interceptors?: WorkerOptions['interceptors'];
  /** Injected sinks instead of the tracing exporter's and `countersignMetrics`. */
  sinks?: WorkerOptions['sinks'];
  /** Workflow cache size; default `COUNTERSIGN_WORKER_MAX_CACHED_WORKFLOWS`. */
  maxCachedWorkflows?: number;
  /** Run the workflows in the main thread (the SDK's `debugMode`; heap snapshots of the bench only). Default false. */
  workflowsInMainThread?: boolean;
  /** `false`: no workflow-task watchdog; default one when `COUNTERSIGN_WORKER_WATCHDOG_MS` > 0 and the worker connects itself. */
  watchdog?: false;
}

/** The front's parts {@link compose} replaces. */
export interface FrontOverrides {
  /** The approval workflow's tunables; default {@link workflowConfigOf} the configuration, with search attributes when the namespace has them. */
  workflowConfig?: ApprovalWorkflowConfig;
  /** Where the backend's callbacks go; default `<urls.mcpOrigin>/callbacks/arap`. Unused with `workflowConfig`. */
  callbackBaseUrl?: string;
  /** Per-attempt timeout of the workflows' backend calls, ms (`ApprovalWorkflowConfig.backendCallTimeoutMs`). Unused with `workflowConfig`. */
  backendCallTimeoutMs?: number;
  /** The protected resource (`…/mcp`); default `urls.resourceUrl`. */
  resourceUrl?: string;
  /** Who may call; default tokens of {@link oauthOf} the configuration (the development issuer at `urls.issuerUrl` unless a production one is set). */
  auth?: McpFrontParts['auth'];
  /** The task service instead of the approval one over the client (then no task feed is built). */
  tasks?: TaskService;
  /** `false`: no per-principal submission limits (`countersign/testing`). */
  submissionLimits?: false;
  /** `false`: no `subscriptions/listen` of task ids; or subscriptions of the caller's instead of the front's own. */
  subscriptions?: false | TaskSubscriptions;
  /** An MCP server factory of the caller's (the conformance profile's fixtures) answering `/mcp` instead of the gate; built over the composed client. */
  server?: (temporal: Client) => McpServerFactory;
  /** The evidence receipts' public JWKS to publish; default none. */
  receiptsJwks?: JSONWebKeySet;
  /** Where follower reports go (the approval service's base URL, `src/mcp/follower-reports.ts`); default `urls.approvalsUrl`. */
  approvalsUrl?: string;
}

/** What {@link compose} may be told beyond the configuration. Every field replaces one default; none is required. */
export interface ComposeOverrides {
  /** Parent logger of every part; default stderr at `LOG_LEVEL`. */
  logger?: Logger;
  /**
   * Secrets instead of `secrets.json`'s: each field a part needs is read here first, and the data
   * folder's `secrets.json` is opened (and created) only for a field given nowhere else.
   */
  secrets?: Partial<StackSecrets>;
  /** Where the parts are; default {@link roleUrls} the configuration, read only when a default part needs one. */
  urls?: RoleUrls;
  /** Application metrics the parts count into; default none. */
  metrics?: AppMetrics;
  /** The process's OpenTelemetry tracing; default off. */
  tracing?: Tracing;
  /** The data converter of the client and the worker; default {@link dataConverterOf} (the payload codec). `{}` is the SDK's, payloads in plain text. */
  dataConverter?: DataConverter;
  temporal?: TemporalOverrides;
  /** The tools and policy to share (the embedded stack's, a test's): left open by `close()`. Default: {@link openToolParts}, closed by `close()`. */
  tools?: SharedTools;
  /** The worker's overrides, or `false`: no worker. */
  worker?: WorkerOverrides | false;
  /** The front's overrides, or `false`: no client and no front. */
  front?: FrontOverrides | false;
}

/** The Temporal worker of a composition: the polling worker (see `RunningWorker`), and its watchdog when it has one. */
export interface ComposedWorker {
  worker: RunningWorker;
  watchdog: WorkflowTaskWatchdog | undefined;
}

/** The client and the front of a composition. */
export interface ComposedFront {
  /** The Temporal client with the data converter (and the tracing's interceptors). */
  temporal: Client;
  /** The MCP front; its `close()` may be called before the composition's (a role ends its streams before its listener closes) and runs once. */
  front: McpFront;
}

/** Everything {@link compose} built; `close()` undoes it in reverse order (front, watchdog, worker, client connection, the tools it opened) and may be called twice. */
export interface Composition extends ComposedWorker, ComposedFront {
  close(): Promise<void>;
}

/** A composition without a worker (`worker: false`). */
export interface FrontComposition extends ComposedFront {
  close(): Promise<void>;
}

/** A composition without a front (`front: false`). */
export interface WorkerComposition extends ComposedWorker {
  close(): Promise<void>;
}

/**
 * Compose Countersign's parts (module header): connect a client (unless one is lent), start the
 * worker (unless `worker: false`; resolves once it polls), then build the front (unless `front:
 * false`; it does not listen: serve `front.app.fetch`). Resolves to the parts and `close()`.
 * Throws after closing what it had built when Temporal is unreachable, the worker cannot register,
 * the policies or the gateway configuration do not load, or the data folder cannot be opened.
 * The overloads type the parts by a literal `false`: `{ worker: false }` has no `worker`,
 * `{ front: false }` no `temporal` or `front`.
 */
export function compose(config: Config, overrides: ComposeOverrides & { worker: false }): Promise<FrontComposition>;
export function compose(config: Config, overrides: ComposeOverrides & { front: false }): Promise<WorkerComposition>;
export function compose(config: Config, overrides?: ComposeOverrides): Promise<Composition>;
export async function compose(
  config: Config,
  overrides: ComposeOverrides = {},
): Promise<{ temporal?: Client; front?: McpFront; worker?: RunningWorker; watchdog?: WorkflowTaskWatchdog; close(): Promise<void> }> {
  const logger = overrides.logger ?? createLogger({ level: config.LOG_LEVEL });
  const tracing = overrides.tracing ?? TRACING_OFF;
  const once = <T>(open: () => T): (() => T) => {
    let value: { v: T } | undefined;
    return () => (value ??= { v: open() }).v;
  };
  const dataFolder = once(() => openDataDir(config.COUNTERSIGN_DATA_DIR));
  const secret = <K extends keyof StackSecrets>(name: K): StackSecrets[K] => overrides.secrets?.[name] ?? dataFolder()[name];
  const urls = once(() => overrides.urls ?? roleUrls(config));
  const address = () => overrides.temporal?.address ?? urls().temporalAddress;
  const settings = () => overrides.temporal?.connection ?? temporalConnectionOf(config);
  const dataConverter = once(() => overrides.dataConverter ?? dataConverterOf(config, { payloadKeys: secret('payloadKeys') }));

  const cleanups: Array<() => Promise<void>> = [];
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const c of cleanups.reverse())
        await c().catch((e: unknown) => logger.warn({ err: (e as Error).message }, 'shutdown step failed'));
    })());

  let opened: Promise<SharedTools> | undefined;
  const tools = (): Promise<SharedTools> =>
    (opened ??= overrides.tools
      ? Promise.resolve(overrides.tools)
      : openToolParts(config, logger).then((parts) => {
          cleanups.unshift(() => parts.close()); // closed last
          return parts;
        }));

  try {
    const composed: { temporal?: Client; front?: McpFront; worker?: RunningWorker; watchdog?: WorkflowTaskWatchdog } = {};
    let connection: Connection | undefined;
    if (overrides.front !== false && !overrides.temporal?.client) {
      connection = await connectClient(address(), settings());
      const own = connection;
      cleanups.push(() => own.close());
    }
    const temporal =
      overrides.front === false
        ? undefined
        : (overrides.temporal?.client ??
          new Client({
            connection,
            namespace: config.TEMPORAL_NAMESPACE,
            dataConverter: dataConverter(),
            ...(tracing.enabled ? { interceptors: { workflow: tracing.clientInterceptors } } : {}),
          }));

    if (overrides.worker !== false) Object.assign(composed, await composeWorker(overrides.worker ?? {}));
    if (temporal && overrides.front !== false) {
      composed.temporal = temporal;
      composed.front = await composeFront(temporal, connection, overrides.front ?? {});
    }
    return { ...composed, close };
  } catch (err) {
    await close();
    throw err;
  }

  async function composeWorker(o: WorkerOverrides): Promise<ComposedWorker> {
    const lent = overrides.temporal?.workerConnection;
    // aborted by the worker's stop(), never by a replacement (RunningWorker.stop)
    const stopping = new AbortController();
    const activities =
      typeof o.activities === 'function'
        ? o.activities(await approvalActivities(o, stopping.signal))
        : (o.activities ?? (await approvalActivities(o, stopping.signal)));
    const worker = await startApprovalWorker({
      connection: lent ? { lent } : { address: address(), settings: settings() },
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.COUNTERSIGN_TASK_QUEUE,
      activities,
      dataConverter: dataConverter(),
      shutdownGraceMs: config.COUNTERSIGN_WORKER_SHUTDOWN_GRACE_MS,
      // the caller's own activities (the bench's baseline): the default drain, no tools opened
      ...(o.activities && typeof o.activities !== 'function' ? {} : { drainMs: await longestExecutionMs() }),
      onStopping: () => stopping.abort(),
      maxCachedWorkflows: o.maxCachedWorkflows ?? config.COUNTERSIGN_WORKER_MAX_CACHED_WORKFLOWS,
      tracing,
      ...(o.workflowBundle ? { workflowBundle: o.workflowBundle } : {}),
      ...(o.workflowsPath ? { workflowsPath: o.workflowsPath } : {}),
      ...(o.interceptors ? { interceptors: o.interceptors } : {}),
      ...(o.sinks ? { sinks: o.sinks } : {}),
      ...(overrides.metrics ? { metrics: overrides.metrics } : {}),
      ...(o.workflowsInMainThread ? { workflowsInMainThread: true } : {}),
    });
    cleanups.push(() => worker.stop());
    const holds = overrides.metrics?.workflowTaskHolds;
    const watchdog =
      o.watchdog !== false && !lent && config.COUNTERSIGN_WORKER_WATCHDOG_MS > 0
        ? startWorkflowTaskWatchdog({
            // the current worker's client: a replaced worker's is closed once it has stopped
            connection: {
              get workflowService() {
                return worker.connection.workflowService;
              },
            },
            namespace: config.TEMPORAL_NAMESPACE,
            taskQueue: config.COUNTERSIGN_TASK_QUEUE,
            identity: () => worker.identity(),
            replace: () => worker.replace(),
            status: () => worker.status(),
            ...(holds ? { onAction: (action: HoldAction) => holds.inc({ action }) } : {}),
            logger: logger.child({ part: 'worker' }),
            intervalMs: config.COUNTERSIGN_WORKER_WATCHDOG_MS,
          })
        : undefined;
    if (watchdog) cleanups.push(async () => watchdog.stop());
    return { worker, watchdog };
  }

  /**
   * The longest start-to-close timeout of a tool execution, ms: the execution timeout, or a
   * long-running tool's own. How long a replaced worker lets its activities run (`startApprovalWorker`
   * `drainMs`); the other activities (backend, policy, limiter calls) are shorter, and retried if cut.
   */
  async function longestExecutionMs(): Promise<number> {
    const { tools: registry } = await tools();
    return Math.max(config.COUNTERSIGN_EXECUTION_TIMEOUT_MS, ...registry.list().map((t) => t.longRunning?.timeoutMs ?? 0));
  }

  async function approvalActivities(o: WorkerOverrides, stopping: AbortSignal): Promise<ComposedActivities> {
    const { tools: registry, pdp } = await tools();
    const backend =
      o.backend ?? createArapHttpBackend({ baseUrl: o.approvalsUrl ?? urls().approvalsUrl, clientToken: secret('approvalsClientToken') });
    return {
      ...createActivities({
        backend,
        pdp,
        tools: registry,
        logger: logger.child({ part: 'worker' }),
        ...(tracing.enabled ? { tracer: tracing.tracer } : {}),
        stopping,
      }),
      ...createLimiterActivities(),
    };
  }

  async function composeFront(temporal: Client, connection: Connection | undefined, o: FrontOverrides): Promise<McpFront> {
    const resourceUrl = o.resourceUrl ?? urls().resourceUrl;
    const serve: McpFrontParts['serve'] = o.server
      ? { factory: o.server(temporal) }
      : {
          ...(await tools()),
          ...(o.tasks ? { tasks: o.tasks } : { workflowConfig: o.workflowConfig ?? (await defaultWorkflowConfig(o, connection)) }),
          ...(o.submissionLimits === false ? { submissionLimits: false as const } : {}),
          ...(o.subscriptions !== undefined ? { subscriptions: o.subscriptions } : {}),
        };
    const followers =
      o.server || config.COUNTERSIGN_FOLLOWER_REPORT_MS === 0
        ? undefined
        : createFollowerReporter({
            send: arapReportSender({
              baseUrl: () => o.approvalsUrl ?? urls().approvalsUrl,
              clientToken: () => secret('approvalsClientToken'),
            }),
            intervalMs: config.COUNTERSIGN_FOLLOWER_REPORT_MS,
            logger: logger.child({ part: 'follower-reports' }),
          });
    const front = createMcpFront(config, {
      temporal,
      serve,
      ...(followers ? { followers } : {}),
      secrets: {
        dedupKey: secret('dedupKey'),
        callbackSecret: secret('callbackSecret'),
        ...(config.COUNTERSIGN_CALL_RECORD_DIR && !config.COUNTERSIGN_PAYLOAD_KEYS ? { payloadKeys: secret('payloadKeys') } : {}),
      },
      auth: o.auth ?? { oauth: oauthOf(config, urls().issuerUrl, resourceUrl) },
      resourceUrl,
      logger,
      ...(overrides.metrics ? { metrics: overrides.metrics } : {}),
      ...(o.receiptsJwks ? { receiptsJwks: o.receiptsJwks } : {}),
      ...(tracing.enabled ? { tracer: tracing.tracer } : {}),
    });
    const closeFront = once(() => front.close());
    cleanups.push(closeFront);
    return { ...front, close: closeFront };
  }

  /** The configured tunables; search attributes when the namespace registers them (asked over the composition's own connection only). */
  async function defaultWorkflowConfig(o: FrontOverrides, connection: Connection | undefined): Promise<ApprovalWorkflowConfig> {
    const searchAttributes = connection
      ? await searchAttributesEnabled(config.COUNTERSIGN_SEARCH_ATTRIBUTES, connection, config.TEMPORAL_NAMESPACE, logger)
      : false;
    return {
      ...workflowConfigOf(config, o.callbackBaseUrl ?? `${urls().mcpOrigin}/callbacks/arap`),
      ...(o.backendCallTimeoutMs ? { backendCallTimeoutMs: o.backendCallTimeoutMs } : {}),
      ...(searchAttributes ? { searchAttributes } : {}),
    };
  }
}
