/**
 * A software WebAuthn authenticator for tests (WebAuthn Level 2 §6): one ES256 (P-256) credential,
 * `none` attestation, user presence and verification always set, and a signature counter the test
 * controls — `0` forever by default, as many synced passkeys report, which the browser's virtual
 * authenticator cannot do. It answers the JSON options a relying party sends
 * (`navigator.credentials.create` / `.get` as `@simplewebauthn/browser` would) with the JSON
 * responses it posts back. Not a security device: the private key lives in this process.
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isoBase64URL, isoCBOR } from '@simplewebauthn/server/helpers';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';

type Bytes = Uint8Array<ArrayBuffer>;
const sha256 = (data: Uint8Array | string): Bytes => new Uint8Array(createHash('sha256').update(data).digest());
const u32 = (n: number): Bytes => new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
const concat = (...parts: Uint8Array[]): Bytes => new Uint8Array(Buffer.concat(parts));
const b64u = (bytes: Uint8Array | string): string =>
  isoBase64URL.fromBuffer(typeof bytes === 'string' ? new TextEncoder().encode(bytes) : new Uint8Array(bytes));

/** The authenticator. `signCount()` gives the counter of each assertion (default: always 0). */
export interface SoftwareAuthenticator {
  credentialId: string;
  /** A registration response to `navigator.credentials.create` options (`challenge` base64url). */
  register(options: { challenge: string }): RegistrationResponseJSON;
  /** An assertion for `navigator.credentials.get` options (`challenge` base64url). */
  assert(options: { challenge: string }): AuthenticationResponseJSON;
}

/** Create one for relying party `rpID` at `origin` (e.g. `localhost`, `http://localhost:8788`). */
export function softwareAuthenticator(opts: { rpID: string; origin: string; signCount?: () => number }): SoftwareAuthenticator {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const rawId = new Uint8Array(randomBytes(16));
  const credentialId = b64u(rawId);
  const rpIdHash = sha256(opts.rpID);
  const clientData = (type: string, challenge: string) => JSON.stringify({ type, challenge, origin: opts.origin, crossOrigin: false });
  const signCount = opts.signCount ?? (() => 0);
  return {
    credentialId,
    register({ challenge }) {
      const cose = isoCBOR.encode(
        new Map<number, number | Uint8Array>([
          [1, 2], // kty: EC2
          [3, -7], // alg: ES256
          [-1, 1], // crv: P-256
          [-2, isoBase64URL.toBuffer(jwk.x!)],
          [-3, isoBase64URL.toBuffer(jwk.y!)],
        ]),
      );
      const authData = concat(rpIdHash, new Uint8Array([0x45]), u32(0), new Uint8Array(16), new Uint8Array([0, rawId.length]), rawId, cose);
      const attestationObject = isoCBOR.encode(
        new Map<string, string | Uint8Array | Map<string, string>>([
          ['fmt', 'none'],
          ['attStmt', new Map<string, string>()],
          ['authData', authData],
        ]),
      );
      return {
        id: credentialId,
        rawId: credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: b64u(clientData('webauthn.create', challenge)),
          attestationObject: b64u(attestationObject),
          transports: ['internal'],
        },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform',
      };
    },
    assert({ challenge }) {
      const authenticatorData = concat(rpIdHash, new Uint8Array([0x05]), u32(signCount()));
      const clientDataJSON = clientData('webauthn.get', challenge);
      const signature = sign('sha256', concat(authenticatorData, sha256(clientDataJSON)), { key: privateKey, dsaEncoding: 'der' });
      return {
        id: credentialId,
        rawId: credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: b64u(clientDataJSON),
          authenticatorData: b64u(authenticatorData),
          signature: b64u(new Uint8Array(signature)),
        },
        clientExtensionResults: {},
        authenticatorAttachment: 'platform',
      };
    },
  };
}
