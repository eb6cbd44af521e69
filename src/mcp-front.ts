/**
 * The MCP front assembled from its parts, the one wiring shared by the `mcp` role
 * (`stack-roles.ts`: `serve --role mcp` and the embedded stack) and the bench's MCP server
 * process: the task service (Temporal client side: start, then the `taskCreated` update, with the configured submission
 * limits), the gate (`createMcpServerFactory`) and the HTTP app (bearer verification, RFC 9728
 * metadata, the backend callback receiver). It does not listen: the caller serves `app.fetch`.
 */
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { JSONWebKeySet } from 'jose';
import { createTokenVerifier } from './auth/verify-token.js';
import type { Config } from './config.js';
import { createMcpHttpApp } from './mcp/http.js';
import { createMcpServerFactory } from './mcp/server.js';
import { byEra, createLegacyServerFactory } from './mcp/legacy-server.js';
import { createSubmissionStateCodec } from './mcp/submission-input.js';
import { createTaskService } from './mcp/task-service.js';
import { createTaskFeed } from './mcp/task-feed.js';
import { createTaskSubscriptions } from './mcp/task-subscriptions.js';
import { PollRateLimiter } from './mcp/poll-interval.js';
import { createTaskGetFastPath } from './mcp/task-get-fast-path.js';
import { createTemporalGuard } from './temporal/availability.js';
import type { PolicyDecisionPoint } from './policy/pdp.js';
import type { ToolRegistry } from './tools/registry.js';
import type { ApprovalWorkflowConfig } from '../workflows/types.js';
import type { AppMetrics } from './ops/metrics.js';
import { SubmissionLimitedError } from './mcp/submission-limiter.js';
import type { TaskService } from './mcp/task-service.js';

/** What {@link createMcpFront} needs beyond the configuration. */
export interface McpFrontParts {
  /** A Temporal client with the payload codec installed. */
  temporal: Client;
  tools: ToolRegistry;
  pdp: PolicyDecisionPoint;
  /** From `secrets.json`: `dedupKey` keys workflow ids and sealed `requestState`; `callbackSecret` verifies backend callbacks. */
  secrets: { dedupKey: string; callbackSecret: string };
  /** The approval workflow's tunables, fixed per run at its start (see `workflowConfigOf`). */
  workflowConfig: ApprovalWorkflowConfig;
  /** Token verification: exact `iss`, `aud` containing this resource, keys from `jwksUrl` (see `oauthOf`). */
  oauth: { issuer: string; audience: string; jwksUrl: string };
  /** This endpoint's URL, the protected resource of RFC 9728 (e.g. `http://127.0.0.1:8787/mcp`). */
  resourceUrl: string;
  /** Parent logger; the gate logs as `part: mcp`, the HTTP app as `part: mcp-http`. */
  logger: Logger;
  /** Application metrics (`src/ops/metrics.ts`): here, submissions refused by a limit. Default: none. */
  metrics?: AppMetrics;
  /** The evidence receipts' public JWKS (`src/receipts/signing-key.ts`), served at `/.well-known/countersign-receipts.jwks.json`; absent: not served. */
  receiptsJwks?: JSONWebKeySet;
  /** OpenTelemetry tracer of the MCP server spans and callback spans (`src/mcp/tracing.ts`); unset: none. */
  tracer?: Tracer;
}

/** What one front holds open now: its `subscriptions/listen` streams and the runs its task feed watches. */
export interface McpFrontStats {
  subscriptions: { streams: number; followed: number };
  feed: { watches: number; caughtUp: number; longPolls: number };
}

/**
 * Build the MCP front. Returns the HTTP app, `close()` (ends the `subscriptions/listen` streams
 * gracefully, stops the task feed's watches, tears down the SDK handler) and `stats()` (for
 * metrics, the bench and tests). Never throws for configuration that `loadConfig` accepted.
 */
export function createMcpFront(config: Config, p: McpFrontParts): { app: Hono; close: () => Promise<void>; stats: () => McpFrontStats } {
  const feed = createTaskFeed({
    client: p.temporal,
    logger: p.logger.child({ part: 'task-feed' }),
    maxWatches: config.COUNTERSIGN_TASK_FEED_MAX_WATCHES,
  });
  const service = createTaskService({
    client: p.temporal,
    taskQueue: config.COUNTERSIGN_TASK_QUEUE,
    dedupKey: p.secrets.dedupKey,
    workflowConfig: p.workflowConfig,
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
    submissionLimits: {
      maxSubmissionsPerWindow: config.COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW,
      submissionWindowMs: config.COUNTERSIGN_SUBMISSION_WINDOW_MS,
      maxPendingPerPrincipal: config.COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL,
    },
  });
  const tasks = p.metrics ? countingRefusals(service, p.metrics) : service;
  const pollLimiter =
    config.COUNTERSIGN_POLL_RATE_LIMIT === 'on' ? new PollRateLimiter({ refillMs: config.COUNTERSIGN_POLL_INTERVAL_MS / 2 }) : undefined;
  const gateDeps = {
    tools: p.tools,
    pdp: p.pdp,
    tasks,
    logger: p.logger.child({ part: 'mcp' }),
    noTasksResponse: config.COUNTERSIGN_NO_TASKS_RESPONSE,
    ...(pollLimiter ? { pollLimiter } : {}),
  };
  const subscriptions = createTaskSubscriptions({
    tasks,
    logger: p.logger.child({ part: 'subscriptions' }),
    serverInfo: { name: 'countersign', version: '0.1.0' },
    limits: { maxPerPrincipal: config.COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL, maxStreams: config.COUNTERSIGN_SUBSCRIPTIONS_MAX },
  });
  p.metrics?.setSubscriptionStreamsSource(() => subscriptions.stats().streams);
  // 2026-07-28 requests get the modern face; `initialize`-era (2025-11-25) ones the legacy face (legacy-server.ts).
  const factory = byEra(
    createMcpServerFactory({ ...gateDeps, requestStateCodec: createSubmissionStateCodec(p.secrets.dedupKey) }),
    // same COUNTERSIGN_NO_TASKS_RESPONSE; the legacy face's `error` is -32600, not -32021
    createLegacyServerFactory({ ...gateDeps, sealKey: p.secrets.dedupKey }),
  );
  const http = createMcpHttpApp({
    factory,
    subscriptions,
    taskGetFastPath: createTaskGetFastPath({
      tasks,
      ...(pollLimiter ? { pollLimiter } : {}),
      serverInfo: { name: 'countersign', version: '0.1.0' },
      logger: gateDeps.logger,
    }),
    verifier: createTokenVerifier(p.oauth),
    resourceUrl: p.resourceUrl,
    authorizationServers: [p.oauth.issuer],
    temporal: p.temporal,
    callbackSecret: p.secrets.callbackSecret,
    logger: p.logger.child({ part: 'mcp-http' }),
    ...(p.receiptsJwks ? { receiptsJwks: p.receiptsJwks } : {}),
    ...(p.tracer ? { tracer: p.tracer } : {}),
  });
  return {
    app: http.app,
    async close() {
      subscriptions.closeAll();
      feed.close();
      await http.close();
      // the HTTP server writes the streams' last frames in promise jobs: let them reach their sockets
      await new Promise((resolve) => setImmediate(resolve));
    },
    stats: () => ({ subscriptions: subscriptions.stats(), feed: feed.stats() }),
  };
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
