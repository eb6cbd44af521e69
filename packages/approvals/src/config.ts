/**
 * The approval service's own settings, parsed from the environment with zod: what this package
 * reads and nothing else. Three schemas, one per use:
 *
 * - {@link ApprovalsSettingsSchema}: how the service behaves (approval validity, callback delivery,
 *   trusted proxies, inbox OIDC sign-in, the Slack and email channels). The gate's embedded stack
 *   and its `serve --role approvals` parse these beside their own (`src/config.ts` of the gate
 *   composes this schema) and pass the parsed object to {@link approvalServiceOptions}.
 * - {@link ApprovalsServeConfigSchema}: the settings plus where `countersign-approvals serve` listens
 *   and keeps its data (`COUNTERSIGN_DATA_DIR`, `COUNTERSIGN_HOST`, `COUNTERSIGN_APPROVALS_PORT`,
 *   `COUNTERSIGN_APPROVALS_URL`, `LOG_LEVEL`).
 * - {@link ApprovalsClientEnvSchema}: what the approver's command line (`countersign approvals`,
 *   `countersign-approvals list|show|approve|deny`) reads, as raw strings.
 *
 * Every problem is listed at once ({@link ApprovalsConfigError}). Durations are milliseconds.
 * The only module of this package that reads `process.env` (by default; every loader takes `env`).
 */
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { z } from 'zod';

const ms = (def: number) => z.coerce.number().int().positive().default(def);
const port = (def: number) => z.coerce.number().int().min(0).max(65535).default(def);

/** `@hono/oidc-auth`'s settings (its `OidcAuthEnv`), read here and passed to it explicitly. */
export const OIDC_VARIABLES = [
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_AUTH_SECRET',
  'OIDC_AUTH_REFRESH_INTERVAL',
  'OIDC_AUTH_EXPIRES',
  'OIDC_REDIRECT_URI',
  'OIDC_SCOPES',
  'OIDC_COOKIE_PATH',
  'OIDC_COOKIE_NAME',
  'OIDC_COOKIE_DOMAIN',
  'OIDC_AUDIENCE',
  'OIDC_AUTH_EXTERNAL_URL',
  'OIDC_JWT_ALG',
] as const;

/** One of {@link OIDC_VARIABLES}. */
export type OidcVariable = (typeof OIDC_VARIABLES)[number];

/**
 * A comma-separated list of `key=value` pairs (`treasury=C0123,change-advisory=C0456`) as a
 * record; blanks around entries are ignored, and an entry without `=`, with an empty side, or a
 * repeated key is an issue naming it. Unset: empty.
 */
const keyValueList = (what: string) =>
  z
    .string()
    .default('')
    .transform((text, ctx) => {
      const out: Record<string, string> = {};
      for (const entry of text.split(',').map((e) => e.trim())) {
        if (entry === '') continue;
        const at = entry.indexOf('=');
        const key = at < 0 ? '' : entry.slice(0, at).trim();
        const value = at < 0 ? '' : entry.slice(at + 1).trim();
        if (key === '' || value === '') {
          ctx.addIssue({ code: 'custom', message: `entries must be ${what}; "${entry.slice(0, 80)}" is not` });
          return z.NEVER;
        }
        if (Object.hasOwn(out, key)) {
          ctx.addIssue({ code: 'custom', message: `"${key.slice(0, 80)}" is listed twice` });
          return z.NEVER;
        }
        out[key] = value;
      }
      return out;
    });

/** The environment variables that decide how the approval service behaves, with defaults. */
export const ApprovalsSettingsSchema = z.object({
  /**
   * Reverse proxies in front of the approval service, comma-separated IP addresses (exact; IPv4,
   * IPv6, `::ffff:`-mapped IPv4 counts as IPv4). Only a connection from one of them has its
   * `X-Forwarded-For` read, for the per-address sign-in throttle (`@countersign/http/client-address`).
   * Unset or empty: none, the socket's address is the client's.
   */
  COUNTERSIGN_TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
    )
    .refine((list) => list.every((a) => isIP(a) !== 0), 'must be a comma-separated list of IP addresses'),
  /** Approval validity the reference approval service grants. */
  COUNTERSIGN_APPROVAL_VALIDITY_MS: ms(24 * 3_600_000),
  /**
   * The service's status-change callbacks (`api/callbacks.ts`, docs/APPROVERS.md): attempts per
   * callback before it is given up (then the workflow's status poll finds the status), the first
   * retry's delay bound and the cap (full jitter: each delay is drawn from
   * [0, min(cap, base × 2^(n−1))) ms), the per-attempt timeout, and attempts in flight at once
   * overall and per receiver origin. The defaults keep retrying for about 16 hours (200 attempts,
   * 5 minutes apart on average once at the cap), so a receiver that is down for a deploy or an
   * outage still gets its callbacks, and the gate's slow fallback poll rarely has to find them.
   */
  COUNTERSIGN_CALLBACK_ATTEMPTS: z.coerce.number().int().min(1).max(1000).default(200),
  COUNTERSIGN_CALLBACK_BASE_DELAY_MS: ms(500),
  COUNTERSIGN_CALLBACK_MAX_DELAY_MS: ms(600_000),
  COUNTERSIGN_CALLBACK_TIMEOUT_MS: ms(5_000),
  COUNTERSIGN_CALLBACK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(16),
  COUNTERSIGN_CALLBACK_RECEIVER_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(4),
  /**
   * Approver inbox sign-in through OpenID Connect (`inbox/oidc-sessions.ts`): a non-empty
   * `OIDC_ISSUER` switches it on; then `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET` and `OIDC_AUTH_SECRET`
   * (at least 32 characters) are required, checked when the approval service starts. The other
   * `OIDC_*` variables are `@hono/oidc-auth`'s settings, passed to it as given (see docs/APPROVERS.md).
   */
  ...(Object.fromEntries(OIDC_VARIABLES.map((k) => [k, z.string().optional()])) as Record<OidcVariable, z.ZodOptional<z.ZodString>>),
  /** ID-token claim naming the approver: `email` (default), `preferred_username` or `sub`; checked with the rest of OIDC. */
  COUNTERSIGN_OIDC_APPROVER_CLAIM: z.string().optional(),
  /**
   * Slack channel of the approval service (`notify/slack.ts`, docs/APPROVERS.md): a non-empty bot
   * token (`xoxb-…`, scope `chat:write`) switches it on; then the signing secret and at least one
   * group channel are required (checked when the approval service starts).
   */
  COUNTERSIGN_SLACK_BOT_TOKEN: z.string().optional(),
  COUNTERSIGN_SLACK_SIGNING_SECRET: z.string().optional(),
  /** Slack Web API base URL (tests point it at a local stand-in). */
  COUNTERSIGN_SLACK_API_URL: z.url({ protocol: /^https?$/ }).default('https://slack.com/api/'),
  /** Approver group → Slack channel id: `treasury=C0123,change-advisory=C0456`. */
  COUNTERSIGN_SLACK_CHANNELS: keyValueList('group=channel id'),
  /** Slack user id → approver id: `U01ABC=bob,U02DEF=carol`. Unmapped Slack users decide nothing. */
  COUNTERSIGN_SLACK_USERS: keyValueList('Slack user id=approver id'),
  /**
   * Email channel (`notify/email.ts`): a non-empty SMTP URL (`smtp://user:pass@host:587`,
   * `smtps://host:465`) switches it on; then at least one approver address is required.
   */
  COUNTERSIGN_SMTP_URL: z
    .string()
    .regex(/^(smtps?:\/\/.+)?$/, 'must be an smtp:// or smtps:// URL')
    .optional(),
  /** `From:` of approval emails. */
  COUNTERSIGN_EMAIL_FROM: z.string().min(3).default('Countersign <countersign@localhost>'),
  /** Approver id → email address: `bob=bob@example.com,carol=carol@example.com`. */
  COUNTERSIGN_EMAIL_ADDRESSES: keyValueList('approver id=address'),
  /** Lifetime of an emailed decision link (never past the request's deadline). */
  COUNTERSIGN_EMAIL_LINK_TTL_MS: ms(24 * 3_600_000),
});

/** Parsed {@link ApprovalsSettingsSchema}. */
export type ApprovalsSettings = z.infer<typeof ApprovalsSettingsSchema>;

/** An http(s) origin (no path, query or fragment; a trailing slash is dropped). */
const origin = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://approvals:8788' })
  .refine((u) => {
    const p = new URL(u);
    return p.pathname === '/' && !p.search && !p.hash;
  }, 'must be an origin without path, query or fragment, e.g. http://approvals:8788')
  .transform((u) => u.replace(/\/+$/, ''))
  .optional();

/** What `countersign-approvals serve` reads: the settings, and where it listens and keeps its data. */
export const ApprovalsServeConfigSchema = ApprovalsSettingsSchema.extend({
  /** The data folder holding `secrets.json` (written by the gate's stack or an operator), `approvals.db` and the rules file; default `.data` in the current directory. */
  COUNTERSIGN_DATA_DIR: z.string().default(resolve('.data')),
  COUNTERSIGN_HOST: z.string().default('127.0.0.1'),
  COUNTERSIGN_APPROVALS_PORT: port(8788),
  /** The origin at which approvers and the gate reach this service (its links); default `http://COUNTERSIGN_HOST:COUNTERSIGN_APPROVALS_PORT`. */
  COUNTERSIGN_APPROVALS_URL: origin,
  /** pino level of the process logger; unset: `info`. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
});

/** Parsed {@link ApprovalsServeConfigSchema}. */
export type ApprovalsServeConfig = z.infer<typeof ApprovalsServeConfigSchema>;

/** Thrown by this module's loaders with every problem found (`NAME: message`). */
export class ApprovalsConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ApprovalsConfigError';
  }
}

function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const r = schema.safeParse(env);
  if (!r.success) throw new ApprovalsConfigError(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  return r.data;
}

/** The service settings from `env` (default `process.env`). Throws {@link ApprovalsConfigError}. */
export function loadApprovalsSettings(env: Record<string, string | undefined> = process.env): ApprovalsSettings {
  return parseEnv(ApprovalsSettingsSchema, env);
}

/** What `countersign-approvals serve` reads, from `env` (default `process.env`). Throws {@link ApprovalsConfigError}. */
export function loadApprovalsServeConfig(env: Record<string, string | undefined> = process.env): ApprovalsServeConfig {
  return parseEnv(ApprovalsServeConfigSchema, env);
}

/**
 * What the approver's command line reads, as raw strings: its credential
 * (`COUNTERSIGN_APPROVER=id:secret` or `COUNTERSIGN_AGENT_TOKEN`) and where the service is
 * (`COUNTERSIGN_APPROVALS_URL`, else `COUNTERSIGN_HOST` and `COUNTERSIGN_APPROVALS_PORT`). The
 * command checks their form itself, since its errors carry its own exit codes.
 */
export const ApprovalsClientEnvSchema = z.object({
  COUNTERSIGN_HOST: z.string().optional(),
  COUNTERSIGN_APPROVALS_PORT: z.string().optional(),
  COUNTERSIGN_APPROVALS_URL: z.string().optional(),
  COUNTERSIGN_APPROVER: z.string().optional(),
  COUNTERSIGN_AGENT_TOKEN: z.string().optional(),
});

/** Parsed {@link ApprovalsClientEnvSchema}. */
export type ApprovalsClientEnv = z.infer<typeof ApprovalsClientEnvSchema>;

/** The approvals client's variables from `env` (default `process.env`); never throws (each is an optional string). */
export function loadApprovalsClientEnv(env: Record<string, string | undefined> = process.env): ApprovalsClientEnv {
  return parseEnv(ApprovalsClientEnvSchema, env);
}
