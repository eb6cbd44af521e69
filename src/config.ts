/**
 * Configuration: parsed once from the environment with zod at start-up. Every problem is listed
 * at once (`ConfigError.issues`), then the process exits; everything else receives the parsed
 * object. Durations are milliseconds; ports are TCP ports on `COUNTERSIGN_HOST`.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from './temporal/binaries.js';
import { decodePayloadKey } from './temporal/payload-codec.js';

const ms = (def: number) => z.coerce.number().int().positive().default(def);
const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);

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

/** The environment variables Countersign reads, with defaults. */
export const ConfigSchema = z.object({
  COUNTERSIGN_DATA_DIR: z.string().default(resolve(PROJECT_ROOT, '.data')),
  COUNTERSIGN_HOST: z.string().default('127.0.0.1'),
  COUNTERSIGN_PORT: port(8787),
  COUNTERSIGN_APPROVALS_PORT: port(8788),
  COUNTERSIGN_ISSUER_PORT: port(8789),
  COUNTERSIGN_POLICY_DIR: z.string().default(resolve(PROJECT_ROOT, 'policies')),
  /** Gateway configuration file: upstream MCP servers behind the gate (docs/GATEWAY.md); unset: native tools only. */
  COUNTERSIGN_CONFIG: z.string().min(1).optional(),
  /** Use this Temporal frontend instead of starting a dev server (host:port). */
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  COUNTERSIGN_TASK_QUEUE: z.string().default('countersign-approvals'),
  /** How long a terminal result stays retrievable (SEP-2848 resultRetention). */
  COUNTERSIGN_RESULT_RETENTION_MS: ms(24 * 3_600_000),
  /** `pollIntervalMs` suggested to clients. */
  COUNTERSIGN_POLL_INTERVAL_MS: ms(2_000),
  /** Fallback backend status poll: first delay and cap (callbacks normally arrive first). */
  COUNTERSIGN_STATUS_POLL_INITIAL_MS: ms(15_000),
  COUNTERSIGN_STATUS_POLL_MAX_MS: ms(3_600_000),
  /** Maximum submissions per task (1 + chained requests). */
  COUNTERSIGN_MAX_GENERATIONS: z.coerce.number().int().min(1).max(10).default(3),
  COUNTERSIGN_RETRY_BASE_MS: ms(5_000),
  COUNTERSIGN_RETRY_MAX_MS: ms(600_000),
  COUNTERSIGN_EXECUTION_TIMEOUT_MS: ms(60_000),
  COUNTERSIGN_MAX_REQUEST_WINDOW_MS: ms(30 * 86_400_000),
  /** How long `tools/call` waits for the approval workflow to confirm the task. */
  COUNTERSIGN_CREATE_WAIT_MS: ms(10_000),
  /**
   * Answer to a requestable denial for a client without the tasks extension: `approval-tools`
   * (default) opens the approval and lists `approval_status` / `approval_cancel` to follow it
   * (src/mcp/approval-tools.ts); `degraded-result` an `isError` result that opens nothing;
   * `error` -32021.
   */
  COUNTERSIGN_NO_TASKS_RESPONSE: z.enum(['approval-tools', 'degraded-result', 'error']).default('approval-tools'),
  /** Approval validity the reference approval service grants. */
  COUNTERSIGN_APPROVAL_VALIDITY_MS: ms(24 * 3_600_000),
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
});

/** Parsed configuration. */
export type Config = z.infer<typeof ConfigSchema>;

/** Thrown by `loadConfig` with every problem found. */
export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parse `env` (default `process.env`). Throws `ConfigError` listing every invalid variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const r = ConfigSchema.safeParse(env);
  if (!r.success) throw new ConfigError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return { ...r.data, ...overrides };
}
