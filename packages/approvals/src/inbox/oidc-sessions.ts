/**
 * Production sign-in for the approver inbox through an OpenID Connect provider, with
 * `@hono/oidc-auth` (authorization-code flow with PKCE, storage-less signed session cookie,
 * refresh against the IdP). Configuration, not code: the operator sets the library's `OIDC_*`
 * variables (issuer, client id and secret, redirect URI, session secret, scopes; see
 * docs/APPROVERS.md), parsed with the rest in `src/config.ts` and passed to the library explicitly;
 * `OIDC_ISSUER` switches the inbox to OIDC and `COUNTERSIGN_OIDC_APPROVER_CLAIM` names the claim
 * (`email` by default, `preferred_username` or `sub`).
 *
 * The claim's value must equal a configured approver id; that approver's groups apply. With
 * `email`, the ID token must also carry `email_verified: true` (else the sign-in names no
 * approver: many IdPs let users set an unverified address). `sub` is the recommended claim;
 * `preferred_username` is often user-editable at the IdP and safe only where it is not. The
 * inbox's CSRF token is an HMAC of the OIDC session (`sub`, session expiry) under our key.
 * Deliberately does not: provision approvers from IdP groups, or replace HTTP Basic on the API.
 */
import { createHmac } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import {
  getAuth,
  initOidcAuthMiddleware,
  oidcAuthMiddleware,
  processOAuthCallback,
  revokeSession,
  type OidcAuthEnv,
  type OidcClaimsHook,
} from '@hono/oidc-auth';
import { safeEqual, type Approver } from '../api/http-auth.js';
import type { InboxSession, SessionManager } from './session.js';
import type { OidcVariable } from '../config.js';

/** Claims that may name the approver. */
export const OIDC_APPROVER_CLAIMS = ['email', 'preferred_username', 'sub'] as const;
/** One of {@link OIDC_APPROVER_CLAIMS}. */
export type OidcApproverClaim = (typeof OIDC_APPROVER_CLAIMS)[number];

/** The configuration's OIDC variables (`src/config.ts`; a `Config` or a plain record of strings). */
export type OidcSettings = Readonly<Partial<Record<OidcVariable | 'COUNTERSIGN_OIDC_APPROVER_CLAIM', string>>>;

/** OIDC settings of the approval service. */
export interface OidcSignInOptions {
  /** ID-token claim whose value is the approver id; default `email`. */
  approverClaim?: OidcApproverClaim;
  /** Library settings (`OIDC_*`); the library falls back to its environment variable for each absent one. */
  env?: Partial<OidcAuthEnv>;
}

/**
 * OIDC options from the parsed configuration (`src/config.ts`: the `OIDC_*` variables and
 * `COUNTERSIGN_OIDC_APPROVER_CLAIM`, any record of optional strings), or undefined when
 * `OIDC_ISSUER` is unset or empty: the approver claim and every `OIDC_*` setting that is set, for
 * the library. Throws `Error` listing every missing or invalid variable (start-up stops).
 */
export function oidcOptionsFromEnv(env: OidcSettings): OidcSignInOptions | undefined {
  if (env.OIDC_ISSUER === undefined || env.OIDC_ISSUER === '') return undefined;
  const problems: string[] = [];
  for (const k of ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_AUTH_SECRET'] as const)
    if (!env[k]) problems.push(`${k} is required with OIDC_ISSUER`);
  if ((env.OIDC_AUTH_SECRET ?? '').length > 0 && (env.OIDC_AUTH_SECRET ?? '').length < 32)
    problems.push('OIDC_AUTH_SECRET must be at least 32 characters');
  const claim = env.COUNTERSIGN_OIDC_APPROVER_CLAIM ?? 'email';
  if (!(OIDC_APPROVER_CLAIMS as readonly string[]).includes(claim))
    problems.push(`COUNTERSIGN_OIDC_APPROVER_CLAIM must be one of ${OIDC_APPROVER_CLAIMS.join(', ')}`);
  if (problems.length > 0) throw new Error(`approver inbox OIDC configuration:\n  ${problems.join('\n  ')}`);
  const settings = Object.entries(env).filter(([k, v]) => k.startsWith('OIDC_') && v !== undefined && v !== '');
  return { approverClaim: claim as OidcApproverClaim, env: Object.fromEntries(settings) as Partial<OidcAuthEnv> };
}

/** An OIDC-backed {@link SessionManager} plus the routes it needs. */
export interface OidcSessionManager extends SessionManager {
  /** Runs first on every inbox request: binds the library's configuration and claims hook. */
  setup: MiddlewareHandler;
  /** `GET /approver/login`: starts the IdP flow when there is no session. */
  login: MiddlewareHandler;
  /** `GET /approver/callback`: finishes the flow (state, nonce and PKCE checked by the library). */
  callback: (c: Context) => Promise<Response>;
  /** Whether the request has an IdP session whose identity is not a configured approver. */
  signedInButNotApprover(c: Context): Promise<boolean>;
}

/** Create the OIDC session manager over the configured approvers; `key` keys CSRF tokens. */
export function createOidcSessionManager(opts: {
  key: string;
  approvers: readonly Approver[];
  oidc: OidcSignInOptions;
}): OidcSessionManager {
  const claim = opts.oidc.approverClaim ?? 'email';
  const csrfKey = createHmac('sha256', opts.key).update('countersign inbox oidc csrf v1').digest();
  const env: Partial<OidcAuthEnv> = {
    OIDC_COOKIE_PATH: '/approver',
    OIDC_REDIRECT_URI: '/approver/callback',
    ...opts.oidc.env,
  };
  const init = initOidcAuthMiddleware(env);
  /** The approver id an ID token names: empty when the claim is absent, or is an unverified email. */
  const approverOf = (claims: Record<string, unknown>): string => {
    const value = claims[claim];
    if (typeof value !== 'string') return '';
    if (claim === 'email' && claims['email_verified'] !== true) return '';
    return value;
  };
  const claimsHook: OidcClaimsHook = async (orig, claims) => ({
    sub: claims?.sub ?? orig?.sub ?? '',
    email: (claims?.['email'] as string | undefined) ?? orig?.email ?? '',
    approver: claims !== undefined ? approverOf(claims as Record<string, unknown>) : String(orig?.['approver'] ?? ''),
  });

  async function identity(c: Context): Promise<{ approverId: string; sid: string } | null> {
    const auth = await getAuth(c);
    if (auth === null) return null;
    const approverId = typeof auth['approver'] === 'string' ? auth['approver'] : '';
    return approverId === '' ? null : { approverId, sid: `${auth.sub ?? ''}|${auth.ssnexp}` };
  }
  const find = (id: string) => opts.approvers.find((a) => safeEqual(a.id, id)) ?? null;
  const csrfFor = (sid: string) => createHmac('sha256', csrfKey).update(sid).digest('base64url');

  return {
    setup: async (c, next) => {
      c.set('oidcClaimsHook', claimsHook);
      await init(c, next);
    },
    login: oidcAuthMiddleware(),
    callback: (c) => processOAuthCallback(c),
    async signIn() {
      return null; // passwords are not accepted in OIDC mode
    },
    async read(c): Promise<InboxSession | null> {
      const who = await identity(c);
      if (who === null) return null;
      const approver = find(who.approverId);
      return approver === null ? null : { approver, sid: who.sid, csrf: csrfFor(who.sid) };
    },
    async signOut(c) {
      await revokeSession(c).catch(() => undefined);
    },
    csrfMatches(session, token) {
      return typeof token === 'string' && token !== '' && safeEqual(token, session.csrf);
    },
    async signedInButNotApprover(c) {
      const who = await identity(c);
      return who !== null && find(who.approverId) === null;
    },
  };
}
