/**
 * The signed link of an approval email: a compact JWS (RFC 7515; a JWT, RFC 7519) signed with
 * HS256 under the `emailLinkKey` of `secrets.json` (`src/secrets.ts`), carried in the link's path.
 * Claims: `iss` = the approval service's base URL, `aud` = {@link EMAIL_LINK_AUDIENCE}, `sub` = the
 * addressed approver id, `rid` = the access request id, `jti` (random, single use: recorded in the
 * store when the link decides, `ChannelStore.consumeEmailLink`), `iat`, `exp` (the link lifetime,
 * never past the request's own deadline).
 *
 * A link is only a pointer with an addressee: opening it decides nothing, and deciding through it
 * also needs the addressee's inbox session (`email-link-routes.tsx`).
 * Deliberately does not: encrypt (the claims name a request id and an approver id, nothing more).
 */
import { randomBytes } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';

/** `aud` of every email decision link. */
export const EMAIL_LINK_AUDIENCE = 'urn:countersign:email-decision-link';

/** The verified claims of a link. */
export interface EmailLinkClaims {
  /** Access request id. */
  requestId: string;
  /** Addressed approver id. */
  approver: string;
  /** Single-use id. */
  jti: string;
  /** Expiry, ms since epoch. */
  expiresAtMs: number;
}

/** Why a link is refused: bad signature, audience, issuer or shape (`invalid`), or past its `exp` (`expired`). */
export type EmailLinkError = 'invalid' | 'expired';

/** Signs and verifies links under one key. */
export interface EmailLinkSigner {
  /** A token for `approver` on `requestId`, issued at `nowMs` and expiring at `expiresAtMs` (ms since epoch, whole seconds used). */
  sign(requestId: string, approver: string, expiresAtMs: number, nowMs: number): Promise<string>;
  /** The claims of `token` at `nowMs`, or why it is refused. Never throws. */
  verify(token: string, nowMs: number): Promise<EmailLinkClaims | EmailLinkError>;
}

/**
 * Create a signer. `key`: the secret (≥ 32 bytes of entropy, base64url text as stored in
 * `secrets.json`); `issuer`: the approval service's base URL. Throws `Error` on an empty key.
 */
export function createEmailLinkSigner(key: string, issuer: string): EmailLinkSigner {
  if (key === '') throw new Error('the email link key must be non-empty');
  const secret = new TextEncoder().encode(key);
  return {
    sign(requestId, approver, expiresAtMs, nowMs) {
      return new SignJWT({ rid: requestId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(EMAIL_LINK_AUDIENCE)
        .setSubject(approver)
        .setJti(randomBytes(16).toString('base64url'))
        .setIssuedAt(Math.floor(nowMs / 1000))
        .setExpirationTime(Math.floor(expiresAtMs / 1000))
        .sign(secret);
    },
    async verify(token, nowMs) {
      if (token.length > 2048) return 'invalid';
      try {
        const { payload } = await jwtVerify(token, secret, {
          algorithms: ['HS256'],
          issuer,
          audience: EMAIL_LINK_AUDIENCE,
          currentDate: new Date(nowMs),
          requiredClaims: ['sub', 'jti', 'exp'],
        });
        const rid = payload['rid'];
        if (typeof rid !== 'string' || rid === '' || payload.sub === undefined || payload.jti === undefined || payload.exp === undefined)
          return 'invalid';
        return { requestId: rid, approver: payload.sub, jti: payload.jti, expiresAtMs: payload.exp * 1000 };
      } catch (err) {
        return err instanceof errors.JWTExpired ? 'expired' : 'invalid';
      }
    },
  };
}
