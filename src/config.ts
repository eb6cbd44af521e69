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

/** `COUNTERSIGN_PORT`, `_APPROVALS_PORT`, `_ISSUER_PORT`: one row of the settings table. */
const PORTS = 'ports of the MCP endpoint, the approval service and the development issuer';
const ROLE_URLS =
  "`serve --role`: the origin (no path) at which other roles and clients reach the MCP front, the approval service and the development issuer, when roles run on different hosts or containers and `COUNTERSIGN_HOST` is only the listen address (`0.0.0.0`); unset: `http://COUNTERSIGN_HOST:<port>`. The MCP URL also sets the `/mcp` resource URL and the tokens' default audience, the issuer URL its tokens' `iss` (docs/OPERATIONS.md#containers)";
const TEMPORAL_PORTS = 'the embedded dev server: its frontend and Web UI ports';
const NAMESPACE_AND_QUEUE = "must be shared by one installation's instances and differ between installations";
const SUBSCRIPTIONS = '`subscriptions/listen` streams per caller, and in all, on one MCP instance; past either, -32000 with HTTP 429';
const RETRY = 'backoff of a re-evaluation answered `retry`: the first wait and the cap (with jitter; stops at approval expiry)';
const CIRCUIT =
  'that many unanswered calls in a row open a circuit: Temporal calls then fail at once with 503 for `_OPEN_MS` (allowed calls, which need no Temporal, keep working; docs/DESIGN.md §6)';
const STATUS_POLL =
  "fallback status poll: the first wait and the cap of its doubling backoff; one activity attempt (one action) per poll, about 25 over 7 days; a decision whose callback is lost is found within about the task's age, at most the cap (docs/DESIGN.md §4.3); lower the cap for a backend whose callbacks you do not trust";
const OTEL =
  "OpenTelemetry traces over OTLP/HTTP, the SDK's standard variables (docs/OPERATIONS.md#traces): off unless `OTEL_TRACES_EXPORTER` is `otlp`/`console` or an OTLP endpoint is set; `OTEL_SDK_DISABLED=true` turns them off. Parsed into `Config.TRACING` by `tracingSettingsOf` (`src/ops/tracing.ts`)";

/**
 * The environment variables the gate reads, with defaults (the approval service's are
 * `ApprovalsSettingsSchema`). Each carries its description (`.describe`); variables that share one
 * are one row of docs/PRODUCTION.md's settings table, which is generated from this schema
 * (`npm run docs:settings`, `scripts/settings-table.ts`; test/unit/settings-table.test.ts fails when
 * they disagree).
 */
export const GateSettingsSchema = z.object({
  COUNTERSIGN_PORT: port(8787).describe(PORTS),
  COUNTERSIGN_APPROVALS_PORT: port(8788).describe(PORTS),
  COUNTERSIGN_ISSUER_PORT: port(8789).describe(PORTS),
  COUNTERSIGN_HOST: z.string().default('127.0.0.1').describe('address every embedded service binds to and names in its URLs'),
  COUNTERSIGN_DATA_DIR: z
    .string()
    .default(resolve(PROJECT_ROOT, '.data'))
    .describe('state folder (created mode 0700); the default is under the project root'),
  COUNTERSIGN_POLICY_DIR: z.string().default(resolve(PROJECT_ROOT, 'policies')).describe('Cedar policy files'),
  COUNTERSIGN_CALL_RECORD_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'call records: a folder where the front keeps every call that opens no task (allowed, denied, or requestable and ended without one), one file per instance and UTC day, arguments encrypted by the payload codec, for policy replay (docs/PRODUCTION.md#trying-a-policy-change); unset: none, except that `countersign dev` (npm start) uses call-records in the data folder',
    ),
  COUNTERSIGN_CALL_RECORD_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3650)
    .default(30)
    .describe('call records: day files older than this many days are deleted (checked when a record opens a new UTC day)'),
  COUNTERSIGN_SHADOW_POLICY_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'shadow mode: a candidate folder of Cedar policies evaluated beside the live ones on every call, disagreements logged and counted, never enforced (docs/PRODUCTION.md#shadow-policies); unset: none',
    ),
  COUNTERSIGN_CONFIG: z
    .string()
    .min(1)
    .optional()
    .describe('gateway configuration file: upstream MCP servers behind the gate (docs/GATEWAY.md); unset: native tools only'),
  COUNTERSIGN_RECEIPTS_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Ed25519 private key (PKCS#8 PEM or a private OKP JWK) signing evidence receipts; unset: generated as `<data>/receipts-signing-key.json`. Set it when MCP instances do not share one data folder, so they all publish the key `receipts export` signs with (docs/APPROVERS.md#evidence-receipts)',
    ),
  COUNTERSIGN_RECEIPTS_DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\/\S+$/i, 'a PostgreSQL connection URL: postgresql://user:password@host:port/database')
    .optional()
    .describe(
      'PostgreSQL database holding the receipts issuing log (`postgresql://user:password@host:port/database`); unset: `<data>/receipts.db` (SQLite). Set it when the instances that run `receipts export` share no data folder (docs/APPROVERS.md#evidence-receipts)',
    ),
  TEMPORAL_ADDRESS: z
    .string()
    .optional()
    .describe(
      'use this Temporal frontend (`host:port`) instead of starting a dev server; also from a Temporal CLI profile (docs/OPERATIONS.md#connecting-to-temporal)',
    ),
  COUNTERSIGN_SEARCH_ATTRIBUTES: z
    .enum(['auto', 'on', 'off'])
    .default('auto')
    .describe(
      'typed search attributes on approval workflows (`src/temporal/search-attributes.ts`): `auto` (upserted when registered on the namespace, checked at MCP start), `on`, `off` (docs/OPERATIONS.md#search-attributes-approval-tasks-in-the-web-ui)',
    ),
  COUNTERSIGN_MCP_URL: origin.describe(ROLE_URLS),
  COUNTERSIGN_APPROVALS_URL: origin.describe(ROLE_URLS),
  COUNTERSIGN_ISSUER_URL: origin.describe(ROLE_URLS),
  COUNTERSIGN_NAMESPACE_RETENTION_CHECK: z
    .enum(['warn', 'fail', 'off'])
    .default('warn')
    .describe(
      "at worker start against an external cluster: the namespace's retention must be at least `COUNTERSIGN_RESULT_RETENTION_MS` + 1 day; `warn` logs, `fail` refuses to start, `off` (docs/OPERATIONS.md#namespace-retention)",
    ),
  COUNTERSIGN_WORKER_PORT: port(8790).describe(
    '`serve --role worker`: its `/livez`, `/readyz`, `/metrics` (the other roles serve them on their own port)',
  ),
  COUNTERSIGN_WORKFLOW_SUMMARY: z
    .enum(['off', 'sealed'])
    .default('off')
    .describe(
      '`sealed`: a Web UI summary line on each approval workflow, encrypted by the payload codec like every payload, so the UI shows it only through a codec server (docs/OPERATIONS.md#search-attributes-approval-tasks-in-the-web-ui)',
    ),
  ...(Object.fromEntries(OTEL_VARIABLES.map((k) => [k, z.string().optional().describe(OTEL)])) as Record<
    keyof OtelEnv,
    z.ZodOptional<z.ZodString>
  >),
  COUNTERSIGN_TEMPORAL_METRICS_ADDRESS: z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'must be host:port')
    .optional()
    .describe(
      "`host:port` of the Temporal SDK runtime's Prometheus exporter (the Rust core's worker metrics: polls, task latencies, slots), appended to each role's `/metrics`; unset: off",
    ),
  COUNTERSIGN_METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces (it is sent as a bearer token)')
    .optional()
    .describe(
      "bearer token every role's `/metrics` then requires (`Authorization: Bearer <token>`; 401 without it), so the approval analytics and counts are not read by whoever reaches a port; unset: `/metrics` open (bind the ports to an internal network) (docs/OPERATIONS.md#metrics)",
    ),
  COUNTERSIGN_WORKER_WATCHDOG_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400_000)
    .default(30_000)
    .describe(
      'between checks of the workflow-task watchdog (`src/temporal/workflow-task-watchdog.ts`): a run whose workflow task this worker took and keeps leaving unanswered gets the worker replaced in-process; 0 off; needs Temporal server 1.30+ with `TemporalReportedProblems` (docs/OPERATIONS.md#a-workflow-task-nobody-answers)',
    ),
  COUNTERSIGN_TEMPORAL_CORE_LOG: z
    .string()
    .regex(
      /^(?:(?:[A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)*=)?(?:trace|debug|info|warn|error))(?:,(?:[A-Za-z_][\w]*(?:::[A-Za-z_][\w]*)*=)?(?:trace|debug|info|warn|error))*$/i,
      'must be a level (TRACE, DEBUG, INFO, WARN, ERROR) or a filter of level and target=level directives, like WARN,temporalio_sdk_core=DEBUG',
    )
    .default('WARN')
    .describe(
      "what the Temporal SDK's core logs to stderr: a level (`DEBUG`) or a `tracing` filter (`WARN,temporalio_sdk_core::worker::workflow=DEBUG`); DEBUG writes several lines per workflow task (docs/OPERATIONS.md#a-workflow-task-nobody-answers)",
    ),
  TEMPORAL_PORT: port(7233).describe(TEMPORAL_PORTS),
  TEMPORAL_UI_PORT: port(8233).describe(TEMPORAL_PORTS),
  COUNTERSIGN_RESULT_RETENTION_MS: ms(24 * 3_600_000).describe('how long a terminal result stays retrievable (SEP-2848 resultRetention)'),
  COUNTERSIGN_MAX_GENERATIONS: z.coerce.number().int().min(1).max(10).default(3).describe('submissions per task (1 + chained requests)'),
  COUNTERSIGN_POLL_INTERVAL_MS: ms(2_000).describe(
    'the `pollIntervalMs` suggested while something is about to happen, and the least ever suggested; a task waiting for a person suggests a tenth of its time since the last change (`src/mcp/poll-interval.ts`, docs/DESIGN.md §4.5)',
  ),
  COUNTERSIGN_POLL_INTERVAL_MAX_MS: ms(60_000).describe('the most `pollIntervalMs` a waiting task suggests, however long it has waited'),
  COUNTERSIGN_POLL_RATE_LIMIT: z
    .enum(['on', 'off'])
    .default('on')
    .describe(
      'refuse `tasks/get` of one task by one caller past a burst of 10 and faster than half the base interval, and any `tasks/get` of a caller answered "unknown task" past a burst of 20 and faster than once a second: -32000 with HTTP 429 and `Retry-After` (SEP-2663 allows it); `off`',
    ),
  COUNTERSIGN_TASK_READS: z
    .enum(['record', 'query'])
    .default('record')
    .describe(
      "how `tasks/get` reads an open task: `record` (the run's memo, one describe, no worker, no action; while the task is polled often, this instance's history long-poll with no call per read) or `query` (a workflow query per read: a worker answers, one Temporal Cloud action each)",
    ),
  COUNTERSIGN_TASK_FEED_MAX_WATCHES: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .default(5000)
    .describe(
      'runs one MCP instance watches by history long-poll (push streams, often-polled tasks); 0: every read describes, nothing is pushed',
    ),
  COUNTERSIGN_SUBSCRIPTIONS_PER_PRINCIPAL: z.coerce.number().int().min(0).max(10_000).default(16).describe(SUBSCRIPTIONS),
  COUNTERSIGN_SUBSCRIPTIONS_MAX: z.coerce.number().int().min(0).max(1_000_000).default(2000).describe(SUBSCRIPTIONS),
  COUNTERSIGN_FOLLOWER_REPORT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe(
      'how often, at most, the MCP endpoint tells the approval service that a client read a waiting task or holds a subscription to it (one report per task per interval, no Temporal action; the inbox shows it, the `unfollowed` rule reads it, docs/APPROVERS.md#who-is-waiting); 0 sends none',
    ),
  COUNTERSIGN_RETRY_BASE_MS: ms(5_000).describe(RETRY),
  COUNTERSIGN_RETRY_MAX_MS: ms(600_000).describe(RETRY),
  COUNTERSIGN_MAX_REQUEST_WINDOW_MS: ms(30 * 86_400_000).describe(
    "cap on any request window a policy's `@request_ttl` or the backend asks for",
  ),
  COUNTERSIGN_TEMPORAL_CALL_TIMEOUT_MS: ms(5_000).describe(
    'deadline of `tasks/*` calls to Temporal (`src/temporal/availability.ts`); past it, or with Temporal down, the answer is HTTP 503 with `Retry-After` and a retryable JSON-RPC error (`data.retryAfterSeconds`); nothing was changed',
  ),
  COUNTERSIGN_TEMPORAL_CIRCUIT_FAILURES: z.coerce.number().int().min(1).max(100).default(3).describe(CIRCUIT),
  COUNTERSIGN_TEMPORAL_CIRCUIT_OPEN_MS: ms(10_000).describe(CIRCUIT),
  COUNTERSIGN_CREATE_WAIT_MS: ms(10_000).describe(
    "how long `tools/call` waits for the workflow to confirm a new task before a retryable `-32603` with HTTP 503; its `data.taskStarted` says whether the task exists, and the client's retry of the same call joins it (docs/DESIGN.md §3.1)",
  ),
  COUNTERSIGN_EXECUTION_TIMEOUT_MS: ms(60_000).describe(
    "after the claim; past it: `outcome-unknown` (a long-running tool's own timeout instead, docs/CHANGE-GATE.md)",
  ),
  COUNTERSIGN_CHANGE_STEP_MS: ms(1_500).describe('pace of one step of a `submit_change` execution (docs/CHANGE-GATE.md)'),
  COUNTERSIGN_WORKER_SHUTDOWN_GRACE_MS: ms(30_000).describe(
    "how long a stopping worker (a deploy, the process ending) waits for a running tool before it stops anyway (long-running tools get their abort signal at 80% of it; the abandoned attempt ends `outcome-unknown` by the timeout above, or as the tool's idempotency hook says, never re-run). A worker the workflow-task watchdog replaces is not bound by it: its running tools finish uncancelled, up to the execution timeout above or a long-running tool's own (docs/OPERATIONS.md#a-workflow-task-nobody-answers)",
  ),
  COUNTERSIGN_WORKER_MAX_CACHED_WORKFLOWS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(1000)
    .describe(
      "workflow runs the worker keeps cached (Temporal `maxCachedWorkflows`); every open approval task and every per-principal limiter is one. Past it, runs are evicted and replay their history on their next workflow task; size it above your pending backlog plus active principals. Memory grows with it, about 0.55 MiB RSS per untraced run (bench/perf-notes.md §Where the worker's memory goes). Under heavy eviction, Temporal sometimes rejects a callback's update as one the worker did not process (retried), and in load runs about one approved run in 200–300 was left with a workflow task no worker answered for minutes (the workflow-task watchdog replaces the worker that holds it: docs/OPERATIONS.md#a-workflow-task-nobody-answers)",
    ),
  COUNTERSIGN_STATUS_POLL_INITIAL_MS: ms(15_000).describe(STATUS_POLL),
  COUNTERSIGN_STATUS_POLL_MAX_MS: ms(12 * 3_600_000).describe(STATUS_POLL),
  COUNTERSIGN_NO_TASKS_RESPONSE: z
    .enum(['approval-tools', 'degraded-result', 'error'])
    .default('approval-tools')
    .describe(
      'clients without tasks: `approval-tools` (the approval opened, followed with `approval_status` / `approval_cancel`), `degraded-result` (guidance, nothing opened) or `error` (-32021). Also applies to 2025-11-25 calls without `params.task`, where `error` is -32600 (task augmentation required)',
    ),
  COUNTERSIGN_MAX_SUBMISSIONS_PER_WINDOW: z.coerce
    .number()
    .int()
    .positive()
    .default(20)
    .describe(
      'new approval tasks a principal may open per sliding window, counted across every instance; past it, a non-requestable denial (joining a pending task never counts)',
    ),
  COUNTERSIGN_SUBMISSION_WINDOW_MS: ms(3_600_000).describe('that window'),
  COUNTERSIGN_MAX_PENDING_PER_PRINCIPAL: z.coerce
    .number()
    .int()
    .positive()
    .default(50)
    .describe('approval tasks a principal may have pending at once'),
  TEMPORAL_NAMESPACE: z.string().default('default').describe(NAMESPACE_AND_QUEUE),
  COUNTERSIGN_TASK_QUEUE: z.string().default('countersign-approvals').describe(NAMESPACE_AND_QUEUE),
  LOG_LEVEL: logLevel.describe('pino level of the process logger, to stderr; tokens and arguments redacted; unset: `info`'),
  COUNTERSIGN_OAUTH_ISSUER: z
    .url()
    .optional()
    .describe('production authorization server: only its tokens are accepted (exact `iss`); unset: the embedded development issuer'),
  COUNTERSIGN_OAUTH_JWKS_URL: z
    .url()
    .optional()
    .describe('its keys; cached, refetched on an unknown `kid` (30 s cooldown); unset: `<issuer>/.well-known/jwks.json`'),
  COUNTERSIGN_OAUTH_AUDIENCE: z
    .string()
    .min(1)
    .optional()
    .describe('the `aud` (RFC 8707 resource) tokens must carry; unset: the `/mcp` URL'),
  COUNTERSIGN_PAYLOAD_KEYS: payloadKeys.describe(
    'Temporal payload encryption keys, JSON `[{"id":"k2","key":"<base64 of 32 bytes>"}, …]`; the first seals, all decode; unset: the key generated in `<data>/secrets.json` (docs/PRODUCTION.md#payload-encryption)',
  ),
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
