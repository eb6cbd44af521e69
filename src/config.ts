/**
 * Configuration: parsed once from the environment with zod at start-up. Every problem is listed
 * at once (`ConfigError.issues`), then the process exits; everything else receives the parsed
 * object. Durations are milliseconds; ports are TCP ports on `COUNTERSIGN_HOST`.
 */
import { resolve } from 'node:path';
import { z } from 'zod';
import { PROJECT_ROOT } from './temporal/binaries.js';

const ms = (def: number) => z.coerce.number().int().positive().default(def);
const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);

/** The environment variables Countersign reads, with defaults. */
export const ConfigSchema = z.object({
  COUNTERSIGN_DATA_DIR: z.string().default(resolve(PROJECT_ROOT, '.data')),
  COUNTERSIGN_HOST: z.string().default('127.0.0.1'),
  COUNTERSIGN_PORT: port(8787),
  COUNTERSIGN_APPROVALS_PORT: port(8788),
  COUNTERSIGN_ISSUER_PORT: port(8789),
  COUNTERSIGN_POLICY_DIR: z.string().default(resolve(PROJECT_ROOT, 'policies')),
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
  /** Answer to a client without the tasks extension: a degraded `CallToolResult` or -32021. */
  COUNTERSIGN_NO_TASKS_RESPONSE: z.enum(['degraded-result', 'error']).default('degraded-result'),
  /** Approval validity the reference approval service grants. */
  COUNTERSIGN_APPROVAL_VALIDITY_MS: ms(24 * 3_600_000),
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
