/**
 * Approver sessions for the inbox: after a password sign-in, a random session id (256 bits,
 * base64url) in a cookie set HTTP-only, `SameSite=Strict`, `Path=/approver`, and `Secure` when the
 * service's public URL is https (hono's cookie helper). The session lives server-side in the
 * approval store's SQLite file (`inbox_sessions`, keyed by the id's SHA-256, with its approver and
 * expiry) and is checked on every request: sign-out deletes it, so a copied cookie stops working
 * at once; expired rows are deleted when met and on each sign-in. Each session has a CSRF token,
 * the HMAC of its id under the inbox session key, that every form carries; hono's `csrf()` origin
 * check runs in front of it (see `routes.tsx`).
 * Deliberately does not: rate-limit sign-ins (`sign-in-throttle.ts` does), or speak OIDC
 * (`oidc-sessions.ts`).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { safeEqual, type Approver } from '../api/http-auth.js';
import type { InboxSessionStore } from '../store/store.js';

/** Cookie name of the inbox session. */
export const SESSION_COOKIE = 'countersign_session';
/** Default session lifetime: 8 h in seconds. */
export const DEFAULT_SESSION_TTL_SECONDS = 8 * 3600;

/** A signed-in approver. */
export interface InboxSession {
  approver: Approver;
  /** Random session id (base64url, 256 bits). */
  sid: string;
  /** Token for this session's forms. */
  csrf: string;
}

/** Session handling bound to one key. */
export interface SessionManager {
  /** Check `id`/`password` against the approvers (constant time); on success set the cookie. */
  signIn(c: Context, id: string, password: string): Promise<InboxSession | null>;
  /** The session the request's cookie proves, or null (absent, forged, expired, unknown approver). */
  read(c: Context): Promise<InboxSession | null>;
  /** End the session server-side and clear the cookie (with OIDC, revoke the IdP session). */
  signOut(c: Context): void | Promise<void>;
  /** Whether `token` is the CSRF token of `session` (constant time). */
  csrfMatches(session: InboxSession, token: unknown): boolean;
}

/**
 * Create the session manager.
 * @param key HMAC key material (≥ 32 bytes of entropy, `secrets.json` `inboxSessionKey`); keys CSRF tokens.
 * @param store where sessions live (the approval store's `sessions`).
 * @param secure set `Secure` on the cookie (true when served over https).
 */
export function createSessionManager(opts: {
  key: string;
  approvers: readonly Approver[];
  store: InboxSessionStore;
  secure: boolean;
  now?: () => number;
  ttlSeconds?: number;
}): SessionManager {
  const csrfKey = createHmac('sha256', opts.key).update('countersign inbox csrf v2').digest();
  const ttl = opts.ttlSeconds ?? DEFAULT_SESSION_TTL_SECONDS;
  const now = opts.now ?? Date.now;
  const csrfFor = (sid: string) => createHmac('sha256', csrfKey).update(sid).digest('base64url');
  const hashOf = (sid: string) => createHash('sha256').update(sid, 'utf8').digest('hex');

  function find(id: string, password: string | null): Approver | null {
    let found: Approver | null = null;
    for (const a of opts.approvers) {
      const ok = safeEqual(a.id, id) && (password === null || safeEqual(a.secret, password));
      if (ok && found === null) found = a;
    }
    return found;
  }

  return {
    async signIn(c, id, password) {
      const approver = find(id, password);
      if (approver === null) return null;
      const at = now();
      await opts.store.purgeExpired(at);
      const sid = randomBytes(32).toString('base64url');
      await opts.store.create(hashOf(sid), approver.id, at, at + ttl * 1000);
      setCookie(c, SESSION_COOKIE, sid, { httpOnly: true, sameSite: 'Strict', path: '/approver', secure: opts.secure, maxAge: ttl });
      return { approver, sid, csrf: csrfFor(sid) };
    },
    async read(c) {
      const sid = getCookie(c, SESSION_COOKIE);
      if (sid === undefined || sid === '' || sid.length > 100) return null;
      const approverId = await opts.store.get(hashOf(sid), now());
      if (approverId === undefined) return null;
      const approver = find(approverId, null);
      return approver === null ? null : { approver, sid, csrf: csrfFor(sid) };
    },
    async signOut(c) {
      const sid = getCookie(c, SESSION_COOKIE);
      if (sid !== undefined && sid !== '') await opts.store.delete(hashOf(sid));
      deleteCookie(c, SESSION_COOKIE, { path: '/approver', secure: opts.secure });
    },
    csrfMatches(session, token) {
      return typeof token === 'string' && token !== '' && safeEqual(token, session.csrf);
    },
  };
}
