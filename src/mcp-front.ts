/**
 * The MCP front assembled from its parts, built only by the composition root (`src/compose.ts`,
 * for the `mcp` role, the embedded stack, the bench's MCP server, `countersign/testing`, the
 * hostile-input tests and the conformance profile): the task service (Temporal client side:
 * start, then the `taskCreated` update, with the configured submission limits), the gate
 * (`createMcpServerFactory`, both protocol faces) and the HTTP app (bearer verification, RFC 9728
 * metadata, the backend callback receiver) — this is the one `createMcpHttpApp` outside the
 * tests. A caller may replace the task service or the token verifier, or serve its own MCP server
 * factory (the conformance profile's fixtures) instead of the gate. It does not listen: the caller
 * serves `app.fetch`.
 */
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { JSONWebKeySet } from 'jose';
import { createTokenVerifier, type TokenVerifier } from './auth/verify-token.js';
import type { Config } from './config.js';
import { createMcpHttpApp, type McpHttpOptions } from './mcp/http.js';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import { createMcpServerFactory } from './mcp/server.js';
import { byEra, createLegacyServerFactory } from './mcp/legacy-server.js';
import { createSubmissionStateCodec } from './mcp/submission-input.js';
import { createTaskService } from './mcp/task-service.js';
import { createTaskFeed, type TaskFeed } from './mcp/task-feed.js';
import { createTaskSubscriptions, type TaskSubscriptions } from './mcp/task-subscriptions.js';
import { PollRateLimiter } from './mcp/poll-interval.js';
import { createTaskGetFastPath } from './mcp/task-get-fast-path.js';
import { createTemporalGuard } from './temporal/availability.js';
import type { PolicyDecisionPoint } from './policy/pdp.js';
import type { ToolRegistry } from './tools/registry.js';
import type { ApprovalWorkflowConfig } from '../workflows/types.js';
import type { AppMetrics } from './ops/metrics.js';
import { SubmissionLimitedError } from './mcp/submission-limiter.js';
import type { TaskService } from './mcp/task-service.js';
import type { GateDeps } from './mcp/gate.js';
import { hostname } from 'node:os';
import { createCallRecorder } from './policy/call-records.js';
import { createShadowPolicy } from './policy/shadow.js';
import { payloadCodecFromKeyList, type PayloadKeyEntry } from './temporal/payload-codec.js';
import type { FollowerReporter } from './mcp/follower-reports.js';

/** What {@link createMcpFront} needs beyond the configuration. */
export interface McpFrontParts {
  /** A Temporal client with the payload codec installed (the callback receiver delivers through it). */
  temporal: Client;
  /** What answers `/mcp`: the approval gate (the product) or a server factory of the caller's. */
  serve: GateServing | { factory: McpServerFactory };
  /**
   * From `secrets.json`: `dedupKey` keys workflow ids and sealed `requestState`; `callbackSecret`
   * verifies backend callbacks; `payloadKeys` (when `COUNTERSIGN_PAYLOAD_KEYS` is unset) encrypt call
   * records (`COUNTERSIGN_CALL_RECORD_DIR`).
   */
  secrets: { dedupKey: string; callbackSecret: string; payloadKeys?: PayloadKeyEntry[] };
  /**
   * Who may call: tokens verified against `oauth` (exact `iss`, `aud` containing this resource,
   * keys from `jwksUrl`, see `oauthOf`; its issuer is the advertised authorization server), or a
   * verifier of the caller's with the authorization servers to advertise.
   */
  auth: { oauth: { issuer: string; audience: string; jwksUrl: string } } | { verifier: TokenVerifier; authorizationServers: string[] };
  /** This endpoint's URL, the protected resource of RFC 9728 (e.g. `http://127.0.0.1:8787/mcp`). */
  resourceUrl: string;
  /** Parent logger; the gate logs as `part: mcp`, the HTTP app as `part: mcp-http`. */
  logger: Logger;
  /** Application metrics (`src/ops/metrics.ts`): here, submissions refused by a limit and open streams. Default: none. */
  metrics?: AppMetrics;
  /** The evidence receipts' public JWKS (`src/receipts/signing-key.ts`), served at `/.well-known/countersign-receipts.jwks.json`; absent: not served. */
  receiptsJwks?: JSONWebKeySet;
  /** OpenTelemetry tracer of the MCP server spans and callback spans (`src/mcp/tracing.ts`); unset: none. */
  tracer?: Tracer;
  /** Follower reports to the approval service (`src/mcp/follower-reports.ts`), closed with the front; unset: none. */
  followers?: FollowerReporter;
}

/**
 * The approval gate as the face of `/mcp`: both protocol eras, the task subscriptions and the
 * `tasks/get` fast path, over the approval task service this front builds from `workflowConfig`,
 * or over a task service of the caller's (the hostile tests' recording stand-in; then no task feed).
 */
export type GateServing = {
  tools: ToolRegistry;
  pdp: PolicyDecisionPoint;
  /** A candidate policy set the gate evaluates beside `pdp` on every call, never enforced (`src/policy/shadow.ts`); absent: none. */
  shadowPdp?: PolicyDecisionPoint;
  /** `false`: no per-principal submission limits (`countersign/testing`); default the configured ones. */
  submissionLimits?: false;
  /**
   * `subscriptions/listen` of task ids: default this front's over its task service and the
   * configured limits; `false`, none (the SDK answers every listen); or the caller's (the hostile tests').
   */
  subscriptions?: false | TaskSubscriptions;
} & (
  | {
      /** The approval workflow's tunables, fixed per run at its start (see `workflowConfigOf`). */
      workflowConfig: ApprovalWorkflowConfig;
    }
  | { tasks: TaskService }
);

/** What one front holds open now: its `subscriptions/listen` streams and the runs its task feed watches. */
export interface McpFrontStats {
  subscriptions: { streams: number; followed: number };
  feed: { watches: number; caughtUp: number; longPolls: number };
}

/** A built front: see {@link createMcpFront}. */
export interface McpFront {
  /** The HTTP app of `/mcp`, the callback receiver and the metadata routes; serve its `fetch`. */
  app: Hono;
  /** What the gate answers over (`countersign/testing` calls the gate directly); undefined when a caller's factory serves. */
  gate: GateDeps | undefined;
  /** Ends the `subscriptions/listen` streams gracefully, stops the task feed's watches, tears down the SDK handler, then writes the call records still queued. */
  close(): Promise<void>;
  /** What the front holds open now (metrics, the bench, tests); zeros when a caller's factory serves. */
  stats(): McpFrontStats;
}

/** Build the MCP front. Never throws for configuration that `loadConfig` accepted. */
export function createMcpFront(config: Config, p: McpFrontParts): McpFront {
  const face: GateFace = 'factory' in p.serve ? callerFace(p.serve.factory) : gateFace(config, p, p.serve);
  const http = createMcpHttpApp({
    factory: face.factory,
    ...(face.subscriptions ? { subscriptions: face.subscriptions } : {}),
    ...(face.taskGetFastPath ? { taskGetFastPath: face.taskGetFastPath } : {}),
    verifier: 'verifier' in p.auth ? p.auth.verifier : createTokenVerifier(p.auth.oauth),
    resourceUrl: p.resourceUrl,
    authorizationServers: 'verifier' in p.auth ? p.auth.authorizationServers : [p.auth.oauth.issuer],
    temporal: p.temporal,
    callbackSecret: p.secrets.callbackSecret,
    logger: p.logger.child({ part: 'mcp-http' }),
    ...(p.receiptsJwks ? { receiptsJwks: p.receiptsJwks } : {}),
    ...(p.tracer ? { tracer: p.tracer } : {}),
  });
  return {
    app: http.app,
    gate: face.gate,
    async close() {
      face.subscriptions?.closeAll();
      p.followers?.close();
      face.feed?.close();
      await http.close();
      // records of calls already answered are written after their answers: finish them
      await face.gate?.callRecords?.idle();
      // the HTTP server writes the streams' last frames in promise jobs: let them reach their sockets
      await new Promise((resolve) => setImmediate(resolve));
    },
    stats: () => ({
      subscriptions: face.subscriptions?.stats() ?? { streams: 0, followed: 0 },
      feed: face.feed?.stats() ?? { watches: 0, caughtUp: 0, longPolls: 0 },
    }),
  };
}

/** What answers `/mcp` and what it holds open: the SDK's server factory, and for the gate its subscriptions, fast path and task feed. */
interface GateFace {
  factory: McpServerFactory;
  gate: GateDeps | undefined;
  subscriptions: TaskSubscriptions | undefined;
  taskGetFastPath: McpHttpOptions['taskGetFastPath'];
  feed: TaskFeed | undefined;
}

/** A caller's server factory answers every request: no gate, subscriptions, fast path or feed. */
function callerFace(factory: McpServerFactory): GateFace {
  return { factory, gate: undefined, subscriptions: undefined, taskGetFastPath: undefined, feed: undefined };
}

/** The approval gate's face (see {@link GateServing}). */
function gateFace(config: Config, p: McpFrontParts, serving: GateServing): GateFace {
  const { service, feed } =
    'tasks' in serving
      ? { service: serving.tasks, feed: undefined }
      : approvalTaskService(config, p, serving.workflowConfig, serving.submissionLimits);
  const tasks = p.metrics ? countingRefusals(service, p.metrics) : service;
  const pollLimiter =
    config.COUNTERSIGN_POLL_RATE_LIMIT === 'on' ? new PollRateLimiter({ refillMs: config.COUNTERSIGN_POLL_INTERVAL_MS / 2 }) : undefined;
  const gateDeps: GateDeps = {
    tools: serving.tools,
    pdp: serving.pdp,
    tasks,
    logger: p.logger.child({ part: 'mcp' }),
    noTasksResponse: config.COUNTERSIGN_NO_TASKS_RESPONSE,
    ...(pollLimiter ? { pollLimiter } : {}),
    ...(p.followers ? { followers: p.followers } : {}),
    ...(serving.shadowPdp
      ? {
          shadow: createShadowPolicy({
            pdp: serving.shadowPdp,
            logger: p.logger.child({ part: 'shadow-policy' }),
            ...(p.metrics ? { metrics: p.metrics } : {}),
          }),
        }
      : {}),
    ...(config.COUNTERSIGN_CALL_RECORD_DIR
      ? {
          callRecords: createCallRecorder({
            dir: config.COUNTERSIGN_CALL_RECORD_DIR,
            codec: payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? p.secrets.payloadKeys ?? []),
            instance: `${hostname()}-${process.pid}`,
            retentionDays: config.COUNTERSIGN_CALL_RECORD_RETENTION_DAYS,
            logger: p.logger.child({ part: 'call-records' }),
            ...(p.metrics ? { metrics: p.metrics } : {}),
          }),
        }
      : {}),
  };
  const subscriptions =
    serving.subscriptions !== undefined
      ? serving.subscriptions || undefined
      : createTaskSubscriptions({
          tasks,
          logger: p.logger.child({ part: 'subscriptions' }),
          serverInfo: { name: 'countersign', version: '0.1.0' },
          limits: { maxPerPrincipal: config.COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL, maxStreams: config.COUNTERSIGN_SUBSCRIPTIONS_MAX },
          ...(p.followers ? { followers: p.followers } : {}),
        });
  if (subscriptions) p.metrics?.setSubscriptionStreamsSource(() => subscriptions.stats().streams);
  // 2026-07-28 requests get the modern face; `initialize`-era (2025-11-25) ones the legacy face (legacy-server.ts).
  const factory = byEra(
    createMcpServerFactory({ ...gateDeps, requestStateCodec: createSubmissionStateCodec(p.secrets.dedupKey) }),
    // same COUNTERSIGN_NO_TASKS_RESPONSE; the legacy face's `error` is -32600, not -32021
    createLegacyServerFactory({ ...gateDeps, sealKey: p.secrets.dedupKey }),
  );
  const taskGetFastPath = createTaskGetFastPath({
    tasks,
    ...(pollLimiter ? { pollLimiter } : {}),
    serverInfo: { name: 'countersign', version: '0.1.0' },
    logger: gateDeps.logger,
    ...(p.followers ? { followers: p.followers } : {}),
  });
  return { factory, gate: gateDeps, subscriptions, taskGetFastPath, feed };
}

/** The task service of the approval gate over `p.temporal`, with this front's task feed (its reads and `notifications/tasks`). */
function approvalTaskService(
  config: Config,
  p: McpFrontParts,
  workflowConfig: ApprovalWorkflowConfig,
  limits: false | undefined,
): { service: TaskService; feed: TaskFeed } {
  const feed = createTaskFeed({
    client: p.temporal,
    logger: p.logger.child({ part: 'task-feed' }),
    maxWatches: config.COUNTERSIGN_TASK_FEED_MAX_WATCHES,
  });
  const service = createTaskService({
    client: p.temporal,
    taskQueue: config.COUNTERSIGN_TASK_QUEUE,
    dedupKey: p.secrets.dedupKey,
    workflowConfig,
    createWaitMs: config.COUNTERSIGN_CREATE_WAIT_MS,
    reads: config.COUNTERSIGN_TASK_READS,
    ...(p.metrics ? { onRead: (source: string) => p.metrics?.taskReads.inc({ source }) } : {}),
    feed,
    pollInterval: { baseMs: config.COUNTERSIGN_POLL_INTERVAL_MS, maxMs: config.COUNTERSIGN_POLL_INTERVAL_MAX_MS },
    workflowSummary: config.COUNTERSIGN_WORKFLOW_SUMMARY === 'sealed',
    traceRuns: p.tracer !== undefined,
    guard: createTemporalGuard({
      client: p.temporal,
      callTimeoutMs: config.COUNTERSIGN_TEMPORAL_CALL_TIMEOUT_MS,
      failureThreshold: config.COUNTERSIGN_TEMPORAL_CIRCUIT_FAILURES,
      openMs: config.COUNTERSIGN_TEMPORAL_CIRCUIT_OPEN_MS,
    }),
    ...(limits === false
      ? {}
      : {
          submissionLimits: {
            maxSubmissionsPerWindow: config.COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW,
            submissionWindowMs: config.COUNTERSIGN_SUBMISSION_WINDOW_MS,
            maxPendingPerPrincipal: config.COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL,
          },
        }),
  });
  return { service, feed };
}

/** `tasks` with every submission refused by a per-principal limit counted (by limit, never by principal). */
function countingRefusals(tasks: TaskService, metrics: AppMetrics): TaskService {
  return {
    ...tasks,
    createOrJoin: (...args) =>
      tasks.createOrJoin(...args).catch((err: unknown) => {
        if (err instanceof SubmissionLimitedError) metrics.submissionsRefused.inc({ limit: err.reason });
        throw err;
      }),
  };
}
