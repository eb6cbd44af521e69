/**
 * Passkey step-up for high-risk approvals (WebAuthn Level 2, through `@simplewebauthn/server`): an
 * approver registers a passkey in the inbox, and approving a request that a step-up rule marks
 * (`deciders/approval-rules.ts` `stepUp`) needs a fresh user-verified assertion from one of their
 * passkeys over a **server-issued, single-use challenge**: `<binding digest>.<32 random bytes,
 * base64url>` (UTF-8 bytes, base64url on the wire), issued per decision attempt to one approver for
 * one request, expiring after {@link STEP_UP_CHALLENGE_MS}, and consumed by the first verification
 * that uses it, whether it verifies or not. So the signature covers exactly the call that will run,
 * and a captured assertion cannot approve anything else: not a later request for the identical
 * call (same digest), not the same request twice, even from an authenticator whose signature
 * counter stays 0 (many synced passkeys), where the counter check proves nothing. The verified
 * assertion becomes a `StepUpProof` stored with the vote (`store.ts`) and shown in the audit trail.
 *
 * Relying party: the RP ID is the host name of the service's public URL and the expected origin
 * its origin (WebAuthn §5.1.3: browsers refuse IP addresses as RP IDs, so step-up needs a host name,
 * e.g. `localhost` in development). Registration challenges are random and held in memory for
 * five minutes per approver, step-up challenges per approver and request (a ceremony in progress,
 * nothing durable: a ceremony is completed on the instance that began it, and a restart ends it).
 * Deliberately does not: offer passkey sign-in, attestation checks (`attestationType: 'none'`), or
 * step-up through the API or CLI (they cannot hold a passkey ceremony: such approvals are refused).
 */
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type AuthenticatorTransport,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoBase64URL } from '@simplewebauthn/server/helpers';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { AccessRequestRecord, ApprovalStore, StepUpProof } from '../store/store.js';

let browserScript: string | undefined;
/**
 * The browser half, `@simplewebauthn/browser`'s UMD bundle (global `SimpleWebAuthnBrowser`), served
 * by the inbox as `/approver/assets/webauthn.js` (same origin: the CSP allows only 'self' scripts).
 * Read once from the installed package. Throws if the package is missing.
 */
export function webauthnBrowserScript(): string {
  if (browserScript === undefined) {
    const entry = createRequire(import.meta.url).resolve('@simplewebauthn/browser');
    browserScript = readFileSync(join(dirname(entry), '..', 'dist', 'bundle', 'index.umd.min.js'), 'utf8');
  }
  return browserScript;
}

/** How long a registration ceremony may take, ms. */
export const PASSKEY_CEREMONY_MS = 5 * 60 * 1000;

/** How long a step-up challenge may be used after it was issued, ms. */
export const STEP_UP_CHALLENGE_MS = 2 * 60 * 1000;

/** Passkey registration and step-up verification for one service. */
export interface Passkeys {
  /** Options for `navigator.credentials.create` (via `startRegistration`) for `approver`. */
  registrationOptions(approver: string): Promise<PublicKeyCredentialCreationOptionsJSON>;
  /** Verify and store a new passkey; false when it does not verify (wrong challenge, origin, no user verification). */
  register(approver: string, response: RegistrationResponseJSON): Promise<boolean>;
  /**
   * Options for `navigator.credentials.get`, limited to `approver`'s passkeys, with a new
   * challenge for `approver` deciding `record` (module header); it replaces one issued to them
   * for that request before.
   */
  stepUpOptions(approver: string, record: AccessRequestRecord): Promise<PublicKeyCredentialRequestOptionsJSON>;
  /**
   * Verify an assertion for approving `record` as `approver`: one of their passkeys, over the
   * challenge last issued to them for `record` and not yet used or expired (it is consumed now),
   * user verified, this origin and RP ID. Returns the proof (and stores the new signature
   * counter), or null when anything does not verify.
   */
  verifyStepUp(approver: string, record: AccessRequestRecord, response: AuthenticationResponseJSON): Promise<StepUpProof | null>;
}

/** Create the passkey part for a service at `publicBaseUrl` (absolute http(s) URL). */
export function createPasskeys(opts: { store: ApprovalStore; publicBaseUrl: string; now: () => number }): Passkeys {
  const { store, now } = opts;
  const url = new URL(opts.publicBaseUrl);
  const rpID = url.hostname;
  const origin = url.origin;
  const pending = new Map<string, { challenge: string; untilMs: number }>();
  /** Step-up challenges issued and not yet used, by approver and request: the signed text and its expiry. */
  const stepUps = new Map<string, { text: string; untilMs: number }>();
  const stepUpKey = (approver: string, record: AccessRequestRecord) => JSON.stringify([approver, record.id]);

  return {
    async registrationOptions(approver) {
      const options = await generateRegistrationOptions({
        rpName: 'Countersign approvals',
        rpID,
        userName: approver,
        attestationType: 'none',
        excludeCredentials: (await store.passkeys.forApprover(approver)).map((p) => ({
          id: p.id,
          transports: p.transports as AuthenticatorTransport[],
        })),
        authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
      });
      pending.set(approver, { challenge: options.challenge, untilMs: now() + PASSKEY_CEREMONY_MS });
      return options;
    },

    async register(approver, response) {
      const ceremony = pending.get(approver);
      pending.delete(approver);
      if (ceremony === undefined || ceremony.untilMs <= now()) return false;
      try {
        const result = await verifyRegistrationResponse({
          response,
          expectedChallenge: ceremony.challenge,
          expectedOrigin: origin,
          expectedRPID: rpID,
          requireUserVerification: true,
        });
        if (!result.verified) return false;
        const c = result.registrationInfo.credential;
        await store.passkeys.add({
          id: c.id,
          approver,
          publicKey: c.publicKey,
          counter: c.counter,
          transports: c.transports ?? [],
          createdAtMs: now(),
        });
        return true;
      } catch {
        return false;
      }
    },

    async stepUpOptions(approver, record) {
      const at = now();
      for (const [key, issued] of stepUps) if (issued.untilMs <= at) stepUps.delete(key);
      const text = `${record.body.binding_digest}.${isoBase64URL.fromBuffer(randomBytes(32))}`;
      stepUps.set(stepUpKey(approver, record), { text, untilMs: at + STEP_UP_CHALLENGE_MS });
      const passkeys = await store.passkeys.forApprover(approver);
      return generateAuthenticationOptions({
        rpID,
        challenge: text,
        userVerification: 'required',
        allowCredentials: passkeys.map((p) => ({ id: p.id, transports: p.transports as AuthenticatorTransport[] })),
      });
    },

    async verifyStepUp(approver, record, response) {
      const key = stepUpKey(approver, record);
      const issued = stepUps.get(key);
      stepUps.delete(key); // single use: consumed by this attempt, whatever its outcome
      if (issued === undefined || issued.untilMs <= now()) return null;
      const passkey = await store.passkeys.get(response.id);
      if (passkey === undefined || passkey.approver !== approver || record.stepUpRule === null) return null;
      try {
        const result = await verifyAuthenticationResponse({
          response,
          expectedChallenge: isoBase64URL.fromUTF8String(issued.text),
          expectedOrigin: origin,
          expectedRPID: rpID,
          credential: {
            id: passkey.id,
            publicKey: new Uint8Array(passkey.publicKey),
            counter: passkey.counter,
            transports: passkey.transports as AuthenticatorTransport[],
          },
          requireUserVerification: true,
        });
        if (!result.verified || !result.authenticationInfo.userVerified) return null;
        await store.passkeys.setCounter(passkey.id, result.authenticationInfo.newCounter);
        return {
          method: 'webauthn',
          credential_id: passkey.id,
          user_verified: true,
          challenge: issued.text,
          binding_digest: record.body.binding_digest,
          request_id: record.id,
          rule: record.stepUpRule,
          verified_at: new Date(now()).toISOString(),
        };
      } catch {
        return null;
      }
    },
  };
}
