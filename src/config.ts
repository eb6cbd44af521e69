/**
 * Configuration: parsed once from the environment with zod at start-up. Every problem is listed
 * at once (`ConfigError.issues`), then the process exits; everything else receives the parsed
 * object. Durations are milliseconds; ports are TCP ports on `COUNTERSIGN_HOST`.
 *
 * The only module of the gate that reads `process.env`, besides `temporalBinaryOverrides` in
 * `src/temporal/binaries.ts` (where the Temporal binaries are, needed by scripts and tests before
 * any configuration exists, so kept apart from this module and what it imports). The approval
 * service's settings and the approver's command line variables are `@countersign/approvals`'.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { ApprovalsSettingsSchema } from '@countersign/approvals/config';
import { PROJECT_ROOT } from './project-root.js';
import { decodePayloadKey } from './temporal/payload-codec.js';
import { resolveTemporalProfile, type TemporalConnection } from './temporal/connect.js';
import { TracingSettingsError, tracingSettingsOf, type OtelEnv, type TracingSettings } from './ops/tracing.js';

const ms = (def: number) => z.coerce.number().int().positive().default(def);
const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);
/** An http(s) origin (no path, query or fragment; a trailing slash is dropped), e.g. `http://approvals:8788`. */
const origin = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://approvals:8788' })
  .refine((u) => {
    const p = new URL(u);
    return p.pathname === '/' && !p.search && !p.hash;
  }, 'must be an origin without path, query or fragment, e.g. http://approvals:8788')
  .transform((u) => u.replace(/\/+$/, ''))
  .optional();
const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional();

/** The OpenTelemetry SDK variables Countersign reads (`src/ops/tracing.ts`). */
export const OTEL_VARIABLES = [
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
] as const satisfies ReadonlyArray<keyof OtelEnv>;

/**
 * `COUNTERSIGN_PAYLOAD_KEYS`: JSON `[{"id":"k2","key":"<base64 of 32 bytes>"}, ...]`, first = the
 * current key (seals new payloads), the rest only decode. Messages never echo key material.
 */
const isPayloadKey = (k: string) => {
  try {
    return decodePayloadKey(k).length === 32;
  } catch {
    return false;
  }
};
const payloadKeys = z
  .string()
  .transform((text, ctx) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON array of {"id","key"} objects' });
      return z.NEVER;
    }
    return value;
  })
  .pipe(
    z
      .array(
        z.strictObject({
          id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'key id must be 1-64 of [A-Za-z0-9._-]'),
          key: z.string().refine(isPayloadKey, 'key must be base64 of exactly 32 bytes'),
        }),
      )
      .min(1, 'needs at least one key (the first is current)')
      .refine((list) => new Set(list.map((k) => k.id)).size === list.length, 'key ids must be unique'),
  )
  .optional();

/** The environment variables the gate reads, with defaults (the approval service's are `ApprovalsSettingsSchema`). */
export const GateSettingsSchema = z.object({
  COUNTERSIGN_DATA_DIR: z.string().default(resolve(PROJECT_ROOT, '.data')),
  COUNTERSIGN_HOST: z.string().default('127.0.0.1'),
  COUNTERSIGN_PORT: port(8787),
  COUNTERSIGN_APPROVALS_PORT: port(8788),
  COUNTERSIGN_ISSUER_PORT: port(8789),
  /**
   * `serve --role`: the URL (origin, no path) at which the other roles and clients reach a role that
   * runs on another host or container; unset: `http://COUNTERSIGN_HOST:<its port>`. Needed when the
   * roles run in separate containers (docker-compose.yml), where `COUNTERSIGN_HOST` is the listen
   * address (`0.0.0.0`) and each role has its own host name. `COUNTERSIGN_MCP_URL` gives the MCP
   * front's origin (the endpoint is `<origin>/mcp`, the tokens' default audience);
   * `COUNTERSIGN_APPROVALS_URL` the approval service's (the worker's backend and its ARAP links);
   * `COUNTERSIGN_ISSUER_URL` the development issuer's (its tokens' `iss`, the JWKS the MCP front reads).
   */
  COUNTERSIGN_MCP_URL: origin,
  COUNTERSIGN_APPROVALS_URL: origin,
  COUNTERSIGN_ISSUER_URL: origin,
  /** `serve --role worker`: the worker's HTTP port for `/livez`, `/readyz`, `/metrics` (the other roles serve them on their own port). */
  COUNTERSIGN_WORKER_PORT: port(8790),
  /**
   * `host:port` where the Temporal SDK runtime's Prometheus exporter listens (worker metrics of the
   * Rust core: polls, task latencies, slots); appended to each role's `/metrics`. Unset: off.
   */
  COUNTERSIGN_TEMPORAL_METRICS_ADDRESS: z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'must be host:port')
    .optional(),
  /**
   * What the Temporal SDK runtime (its Rust core) logs to stderr: a level (`WARN`, `INFO`, `DEBUG`,
   * `TRACE`) or a `tracing` filter (`WARN,temporalio_sdk_core::worker::workflow=DEBUG`). Default
   * `WARN`. For diagnosing a worker (docs/OPERATIONS.md §A workflow task nobody answers); DEBUG
   * writes several lines per workflow task.
   */
  COUNTERSIGN_TEMPORAL_CORE_LOG: z
    .string()
    .regex(
      /^(?:(?:[A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)*=)?(?:trace|debug|info|warn|error))(?:,(?:[A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)*=)?(?:trace|debug|info|warn|error))*$/i,
      'must be a level (TRACE, DEBUG, INFO, WARN, ERROR) or a filter of level and target=level directives, like WARN,temporalio_sdk_core=DEBUG',
    )
    .default('WARN'),
  COUNTERSIGN_POLICY_DIR: z.string().default(resolve(PROJECT_ROOT, 'policies')),
  /**
   * Ed25519 private key that signs evidence receipts (PKCS#8 PEM or a private OKP JWK; docs/APPROVERS.md
   * §Evidence receipts). Unset: `<data>/receipts-signing-key.json`, generated on first use.
   */
  COUNTERSIGN_RECEIPTS_KEY_FILE: z.string().min(1).optional(),
  /** Gateway configuration file: upstream MCP servers behind the gate (docs/GATEWAY.md); unset: native tools only. */
  COUNTERSIGN_CONFIG: z.string().min(1).optional(),
  /** Use this Temporal frontend instead of starting a dev server (host:port). */
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  COUNTERSIGN_TASK_QUEUE: z.string().default('countersign-approvals'),
  /**
   * Typed search attributes on approval workflows (`src/temporal/search-attributes.ts`): `auto`
   * (upsert when registered on the namespace, checked at MCP start), `on`, `off`.
   */
  COUNTERSIGN_SEARCH_ATTRIBUTES: z.enum(['auto', 'on', 'off']).default('auto'),
  /**
   * What the worker does at start, against an external cluster (`TEMPORAL_ADDRESS`), when the
   * namespace's retention is shorter than `COUNTERSIGN_RESULT_RETENTION_MS` + 1 day
   * (`src/temporal/namespace-retention.ts`): `warn` (log and run), `fail` (refuse to start), `off`.
   */
  COUNTERSIGN_NAMESPACE_RETENTION_CHECK: z.enum(['warn', 'fail', 'off']).default('warn'),
  /**
   * The Temporal Web UI summary line of each approval workflow (`workflowSummaryOf`,
   * `src/mcp/task-service.ts`): `off` (default) or `sealed` — set, and encrypted by the payload
   * codec like every payload, so the UI shows it only through a codec server (docs/OPERATIONS.md).
   */
  COUNTERSIGN_WORKFLOW_SUMMARY: z.enum(['off', 'sealed']).default('off'),
  /** How long a terminal result stays retrievable (SEP-2848 resultRetention). */
  COUNTERSIGN_RESULT_RETENTION_MS: ms(24 * 3_600_000),
  /**
   * `pollIntervalMs` suggested to clients while something is about to happen, and the least ever
   * suggested; a task waiting for a person suggests a tenth of its time since the last change, up
   * to `COUNTERSIGN_POLL_INTERVAL_MAX_MS` (`src/mcp/poll-interval.ts`).
   */
  COUNTERSIGN_POLL_INTERVAL_MS: ms(2_000),
  /** The most `pollIntervalMs` a waiting task suggests, however long it has waited. */
  COUNTERSIGN_POLL_INTERVAL_MAX_MS: ms(60_000),
  /**
   * Refuse `tasks/get` of one task by one caller past a burst of 10 reads and then more than one a
   * second (-32000, HTTP 429, `Retry-After`; SEP-2663 allows it): `on` (default) or `off`.
   */
  COUNTERSIGN_POLL_RATE_LIMIT: z.enum(['on', 'off']).default('on'),
  /**
   * How `tasks/get` reads an open task: `record` (default) — the task record in the run's memo, one
   * DescribeWorkflowExecution, no worker and no billable query (`src/mcp/task-reads.ts`), and, while
   * a task is polled often, this instance's history long-poll of it with no call per read
   * (`src/mcp/task-feed.ts`); `query` — a workflow query per read (a worker answers; one Temporal
   * Cloud action each), the path before the record.
   */
  COUNTERSIGN_TASK_READS: z.enum(['record', 'query']).default('record'),
  /** Runs one MCP instance watches at once by history long-poll (push streams and often-polled tasks). */
  COUNTERSIGN_TASK_FEED_MAX_WATCHES: z.coerce.number().int().min(0).max(1_000_000).default(5000),
  /** `subscriptions/listen` streams one caller may hold open on one MCP instance. */
  COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: z.coerce.number().int().min(0).max(10_000).default(16),
  /** `subscriptions/listen` streams one MCP instance holds open at once. */
  COUNTERSIGN_SUBSCRIPTIONS_MAX: z.coerce.number().int().min(0).max(1_000_000).default(2000),
  /**
   * Fallback backend status poll (callbacks normally arrive first): the first wait, and the cap of
   * its doubling backoff. The poll is one activity retried with that backoff (one Temporal action
   * per attempt, nothing in history; docs/DESIGN.md §4.3): 7 days of waiting cost about 25
   * attempts with the 12 h cap. A decision whose callback is lost is found within about the task's
   * age, and at most 12 h; lower the cap for a backend whose callbacks you do not trust.
   */
  COUNTERSIGN_STATUS_POLL_INITIAL_MS: ms(15_000),
  COUNTERSIGN_STATUS_POLL_MAX_MS: ms(12 * 3_600_000),
  /** Maximum submissions per task (1 + chained requests). */
  COUNTERSIGN_MAX_GENERATIONS: z.coerce.number().int().min(1).max(10).default(3),
  COUNTERSIGN_RETRY_BASE_MS: ms(5_000),
  COUNTERSIGN_RETRY_MAX_MS: ms(600_000),
  COUNTERSIGN_EXECUTION_TIMEOUT_MS: ms(60_000),
  /** How long a stopping worker waits for in-flight activities (a hung tool) before it stops anyway. */
  COUNTERSIGN_WORKER_SHUTDOWN_GRACE_MS: ms(30_000),
  /**
   * Workflow runs the worker keeps in its sticky cache (Temporal `maxCachedWorkflows`). Every open
   * approval task and every per-principal limiter is a run: past this number, runs are evicted and
   * their next workflow task or `tasks/get` query replays the history (docs/LOAD.md).
   */
  COUNTERSIGN_WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /**
   * Between two checks of the workflow-task watchdog (`src/temporal/workflow-task-watchdog.ts`): a
   * run whose workflow task this worker took and keeps leaving unanswered gets the worker replaced.
   * 0 turns it off. Needs Temporal server 1.30+ with `TemporalReportedProblems` (docs/OPERATIONS.md
   * §A workflow task nobody answers).
   */
  COUNTERSIGN_WORKER_WATCHDOG_MS: z.coerce.number().int().min(0).max(86_400_000).default(30_000),
  /** Pace of one step of a `submit_change` execution (docs/CHANGE-GATE.md), ms. */
  COUNTERSIGN_CHANGE_STEP_MS: ms(1_500),
  COUNTERSIGN_MAX_REQUEST_WINDOW_MS: ms(30 * 86_400_000),
  /** How long `tools/call` waits for the approval workflow to confirm the task. */
  COUNTERSIGN_CREATE_WAIT_MS: ms(10_000),
  /**
   * Deadline of the MCP front's other Temporal calls (`tasks/*`); past it the method answers a
   * retryable error with HTTP 503 and `Retry-After` (`src/temporal/availability.ts`).
   */
  COUNTERSIGN_TEMPORAL_CALL_TIMEOUT_MS: ms(5_000),
  /** Consecutive unanswered Temporal calls that open the front's circuit (fail fast). */
  COUNTERSIGN_TEMPORAL_CIRCUIT_FAILURES: z.coerce.number().int().min(1).max(100).default(3),
  /** How long the circuit stays open before one call is let through again. */
  COUNTERSIGN_TEMPORAL_CIRCUIT_OPEN_MS: ms(10_000),
  /**
   * Answer to a requestable denial for a client without the tasks extension: `approval-tools`
   * (default) opens the approval and lists `approval_status` / `approval_cancel` to follow it
   * (src/mcp/approval-tools.ts); `degraded-result` an `isError` result that opens nothing;
   * `error` -32021.
   */
  COUNTERSIGN_NO_TASKS_RESPONSE: z.enum(['approval-tools', 'degraded-result', 'error']).default('approval-tools'),
  /**
   * Production: the OAuth 2.1 authorization server whose access tokens the MCP endpoint accepts
   * (exact `iss`). Unset: the embedded development issuer.
   */
  COUNTERSIGN_OAUTH_ISSUER: z.url().optional(),
  /** Its JWKS; default `<issuer>/.well-known/jwks.json`. Refetched on an unknown `kid`. */
  COUNTERSIGN_OAUTH_JWKS_URL: z.url().optional(),
  /** The `aud` tokens must carry (RFC 8707 resource); default this server's `/mcp` URL. */
  COUNTERSIGN_OAUTH_AUDIENCE: z.string().min(1).optional(),
  /**
   * Per-principal submission limits, shared by every instance (SEP-2848 approval-request
   * amplification): new approval tasks per sliding window, the window, and pending tasks at once.
   * Past either limit a call gets a non-requestable denial; joining a pending task never counts.
   */
  COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: z.coerce.number().int().positive().default(20),
  COUNTERSIGN_SUBMISSION_WINDOW_MS: ms(3_600_000),
  COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: z.coerce.number().int().positive().default(50),
  /** Temporal payload encryption keys (production); unset: the key generated in `<data>/secrets.json`. */
  COUNTERSIGN_PAYLOAD_KEYS: payloadKeys,
  /**
   * OpenTelemetry traces (docs/OPERATIONS.md §Traces), the SDK's standard variables: off unless
   * `OTEL_TRACES_EXPORTER` is `otlp`/`console` or an OTLP endpoint is set; `OTEL_SDK_DISABLED=true`
   * turns them off. Parsed into `Config.TRACING` by `tracingSettingsOf` (`src/ops/tracing.ts`).
   */
  ...(Object.fromEntries(OTEL_VARIABLES.map((k) => [k, z.string().optional()])) as Record<keyof OtelEnv, z.ZodOptional<z.ZodString>>),
  /** pino level of the process logger; unset: `info` for the stack and its roles. */
  LOG_LEVEL: logLevel,
});

/**
 * Everything the gate's processes read: its own settings, and the approval service's
 * (`ApprovalsSettingsSchema` of `@countersign/approvals`, owned and documented there), since the
 * embedded stack and `serve --role approvals` host that service.
 */
export const ConfigSchema = GateSettingsSchema.extend(ApprovalsSettingsSchema.shape);

/**
 * Parsed configuration. `TEMPORAL_CONNECTION`: the API key, TLS and gRPC metadata of the Temporal
 * connection, resolved with `TEMPORAL_ADDRESS` and `TEMPORAL_NAMESPACE` from the SDK's environment
 * configuration (`src/temporal/connect.ts`); empty for the embedded dev server. `TRACING`: the
 * OpenTelemetry export parsed from the `OTEL_*` variables; undefined when tracing is off (the default).
 */
export type Config = z.infer<typeof ConfigSchema> & { TEMPORAL_CONNECTION: TemporalConnection; TRACING?: TracingSettings | undefined };

/** Thrown by `loadConfig` with every problem found. */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parse `env` with `schema`; throws `ConfigError` listing every problem as `NAME: message`. */
function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const r = schema.safeParse(env);
  if (!r.success) throw new ConfigError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return r.data;
}

/**
 * Parse `env` (default `process.env`). Throws `ConfigError` listing every invalid variable.
 * Temporal's address, namespace and credentials come from the SDK's environment configuration:
 * the `TEMPORAL_*` variables over the profile `TEMPORAL_PROFILE` of the Temporal CLI's config file
 * (`TEMPORAL_CONFIG_FILE`, default `~/.config/temporalio/temporal.toml`); a profile naming an
 * address counts as `TEMPORAL_ADDRESS` (no dev server is started). A bad file, missing named
 * profile or unreadable certificate is a `ConfigError` issue named `TEMPORAL_PROFILE`. The
 * `OTEL_*` variables become `TRACING` (`tracingSettingsOf`, `src/ops/tracing.ts`); an unsupported
 * exporter, protocol or sampler, or a malformed endpoint or key=value list, is an issue naming its
 * variable (never echoing a header value).
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  let profile: ReturnType<typeof resolveTemporalProfile> = { connection: {} };
  let profileIssue: string | undefined;
  try {
    profile = resolveTemporalProfile(env);
  } catch (err) {
    profileIssue = `TEMPORAL_PROFILE: ${(err as Error).message}`;
  }
  const merged = {
    ...env,
    TEMPORAL_ADDRESS: profile.address ?? env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: profile.namespace ?? env.TEMPORAL_NAMESPACE,
  };
  let parsed: z.infer<typeof ConfigSchema>;
  try {
    parsed = parseEnv(ConfigSchema, merged);
  } catch (err) {
    if (err instanceof ConfigError && profileIssue) throw new ConfigError([...err.issues, profileIssue]);
    throw err;
  }
  if (profileIssue) throw new ConfigError([profileIssue]);
  let tracing: TracingSettings | undefined;
  try {
    tracing = tracingSettingsOf(parsed);
  } catch (err) {
    if (err instanceof TracingSettingsError) throw new ConfigError(err.issues);
    throw err;
  }
  return { ...parsed, TEMPORAL_CONNECTION: profile.connection, ...(tracing ? { TRACING: tracing } : {}), ...overrides };
}

/**
 * Every setting at its default, over `overrides`, reading neither the environment nor a Temporal
 * profile: the configuration of a composition held inside a process (`countersign/testing`, whose
 * parts must not change with the machine it runs on). Throws nothing.
 */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return { ...ConfigSchema.parse({}), TEMPORAL_CONNECTION: {}, ...overrides };
}

/**
 * The process environment, for the `{"fromEnv": "VAR"}` references of a gateway configuration file
 * (`src/gateway/config-file.ts`): those name variables the operator chooses, so they cannot be
 * listed in {@link ConfigSchema}. Everything else reads the parsed {@link Config}.
 */
export function configFileEnv(): Readonly<Record<string, string | undefined>> {
  return process.env;
}
