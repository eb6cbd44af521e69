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

/**
 * What each `OIDC_*` variable means; they are `@hono/oidc-auth`'s settings, passed to it as given,
 * so the defaults named are its own.
 */
const OIDC_DESCRIPTIONS: Record<OidcVariable, string> = {
  OIDC_ISSUER:
    "approver inbox sign-in through OpenID Connect: your IdP's issuer URL (discovery must be available); setting it switches the inbox to OIDC, and then `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET` and `OIDC_AUTH_SECRET` are required (checked when the approval service starts; docs/APPROVERS.md#production-sign-in-oidc)",
  OIDC_CLIENT_ID: "the inbox's OAuth client id at the IdP",
  OIDC_CLIENT_SECRET: "the inbox's OAuth client secret",
  OIDC_AUTH_SECRET: 'at least 32 characters; signs the session cookie',
  OIDC_AUTH_REFRESH_INTERVAL: 'seconds between re-checks of a session with the IdP (default 900)',
  OIDC_AUTH_EXPIRES: 'session lifetime in seconds (default 86400)',
  OIDC_REDIRECT_URI: '`https://<approvals host>/approver/callback` (register it at the IdP)',
  OIDC_SCOPES: "scopes asked for, e.g. `openid email profile` (default: the IdP's `scopes_supported`)",
  OIDC_COOKIE_PATH: 'path of the session cookie (default `/`)',
  OIDC_COOKIE_NAME: 'name of the session cookie (default `oidc-auth`)',
  OIDC_COOKIE_DOMAIN: "domain of the session cookie (default the request's)",
  OIDC_AUDIENCE: 'audience asked for in the access token (Auth0 needs it; others rarely)',
  OIDC_AUTH_EXTERNAL_URL:
    "the service's public base URL behind a reverse proxy, for the redirect after sign-in (default the request's URL)",
  OIDC_JWT_ALG: 'algorithm of the session JWT (default `HS256`)',
};

/**
 * The environment variables that decide how the approval service behaves, with defaults. Each
 * carries its description (`.describe`), from which docs/PRODUCTION.md's and docs/APPROVERS.md's
 * settings tables are generated (`npm run docs:settings`, `scripts/settings-table.ts`).
 */
export const ApprovalsSettingsSchema = z.object({
  COUNTERSIGN_TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
    )
    .refine((list) => list.every((a) => isIP(a) !== 0), 'must be a comma-separated list of IP addresses')
    .describe(
      "reverse proxies in front of the approval service, comma-separated IP addresses (exact; `::ffff:`-mapped IPv4 counts as IPv4); only a connection from one of them has its `X-Forwarded-For` read, for the per-address sign-in throttle (docs/APPROVERS.md). Unset: none, the socket's address is the client's",
    ),
  COUNTERSIGN_APPROVAL_VALIDITY_MS: ms(24 * 3_600_000).describe('validity of a grant in the reference approval service'),
  COUNTERSIGN_PERMIT_TTL_MS: ms(15 * 60_000).describe(
    "how long an approver's counter-proposal stays usable: the client's narrower call within it, by the same principal, is approved once by the proposal (docs/APPROVERS.md#narrowing-a-request)",
  ),
  // The status-change callbacks (`api/callbacks.ts`, docs/APPROVERS.md): full jitter, each delay drawn
  // from [0, min(cap, base × 2^(n−1))) ms. The defaults keep retrying for about 16 hours, so a receiver
  // down for a deploy or an outage still gets its callbacks and the gate's slow fallback poll rarely
  // has to find them.
  COUNTERSIGN_CALLBACK_ATTEMPTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(200)
    .describe(
      "decision callbacks: attempts per callback, the first included, before it is given up (about 16 hours of retries; the workflow's status poll then finds the decision)",
    ),
  COUNTERSIGN_CALLBACK_BASE_DELAY_MS: ms(500).describe("bound of a callback's first retry delay (full jitter); doubles per failure"),
  COUNTERSIGN_CALLBACK_MAX_DELAY_MS: ms(600_000).describe('cap of that bound'),
  COUNTERSIGN_CALLBACK_TIMEOUT_MS: ms(5_000).describe(
    'per callback attempt; also how long an interrupted attempt waits before it is retried after a restart',
  ),
  COUNTERSIGN_CALLBACK_CONCURRENCY: z.coerce.number().int().min(1).max(1_000).default(16).describe('callback attempts in flight at once'),
  COUNTERSIGN_CALLBACK_RECEIVER_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(4)
    .describe('of those, to one receiver origin'),
  ...(Object.fromEntries(OIDC_VARIABLES.map((k) => [k, z.string().optional().describe(OIDC_DESCRIPTIONS[k])])) as Record<
    OidcVariable,
    z.ZodOptional<z.ZodString>
  >),
  COUNTERSIGN_OIDC_APPROVER_CLAIM: z
    .string()
    .optional()
    .describe(
      'which ID-token claim names the approver: `email` (default), `preferred_username` or `sub` (recommended); checked with the rest of OIDC',
    ),
  COUNTERSIGN_SLACK_BOT_TOKEN: z
    .string()
    .optional()
    .describe(
      'Slack messages and buttons for approvers (docs/APPROVERS.md#slack): the bot token (`xoxb-…`, scope `chat:write`); setting it switches Slack on, and then the signing secret and at least one channel are required (checked when the approval service starts)',
    ),
  COUNTERSIGN_SLACK_SIGNING_SECRET: z.string().optional().describe("the Slack app's signing secret (required with the token)"),
  COUNTERSIGN_SLACK_API_URL: z
    .url({ protocol: /^https?$/ })
    .default('https://slack.com/api/')
    .describe('Slack Web API base URL (tests point it at a local stand-in)'),
  COUNTERSIGN_SLACK_CHANNELS: keyValueList('group=channel id').describe(
    'approver group → Slack channel id, e.g. `treasury=C0123ABC,change-advisory=C0456DEF` (at least one); a group without a channel is not posted',
  ),
  COUNTERSIGN_SLACK_USERS: keyValueList('Slack user id=approver id').describe(
    "Slack user id → approver id, e.g. `U01AAAA=bob,U02BBBB=carol` (a member id from the user's Slack profile, **not** a display name); unmapped Slack users decide nothing",
  ),
  COUNTERSIGN_SMTP_URL: z
    .string()
    .regex(/^(smtps?:\/\/.+)?$/, 'must be an smtp:// or smtps:// URL')
    .optional()
    .describe(
      'approval mails with single-use decision links (docs/APPROVERS.md#email): nodemailer SMTP URL, `smtp://user:pass@host:587` (STARTTLS when the server offers it) or `smtps://user:pass@host:465`; setting it switches email on, and then at least one approver address is required',
    ),
  COUNTERSIGN_EMAIL_FROM: z.string().min(3).default('Countersign <countersign@localhost>').describe('`From:` of approval mails'),
  COUNTERSIGN_EMAIL_ADDRESSES: keyValueList('approver id=address').describe(
    'approver id → address, e.g. `bob=bob@example.com,carol=carol@example.com` (at least one)',
  ),
  COUNTERSIGN_EMAIL_LINK_TTL_MS: ms(24 * 3_600_000).describe("lifetime of an emailed decision link, never past the request's own deadline"),
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
