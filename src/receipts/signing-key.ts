/**
 * The receipt signing key: one Ed25519 key pair (JWS `alg` EdDSA, RFC 8037) and the public JWK
 * Set a verifier needs (RFC 7517 §5), `kid` = RFC 7638 SHA-256 JWK thumbprint.
 *
 * Loaded from a configured file (`COUNTERSIGN_RECEIPTS_KEY_FILE`: a PKCS#8 PEM private key, or a
 * private OKP JWK in JSON), or, when none is configured, from `<data>/receipts-signing-key.json`,
 * generated there on first use (mode 0600) like the other development secrets (`src/secrets.ts`).
 *
 * Deliberately does not: rotate keys (publish the old public key next to the new one yourself:
 * `verify` accepts any key of the JWKS it is given), or log the private key.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  importPKCS8,
  type CryptoKey,
  type JSONWebKeySet,
  type JWK,
} from 'jose';

import { RECEIPT_ALG } from '@countersign/receipts';

/** JWS algorithm of every receipt (RFC 8037 §3.1), `@countersign/receipts`'. */
export { RECEIPT_ALG };

/** File name of the generated key inside the data folder. */
export const RECEIPT_KEY_FILE_NAME = 'receipts-signing-key.json';

/** A loaded receipt signing key. */
export interface ReceiptSigningKey {
  /** The private key, for `jose` signing. */
  privateKey: CryptoKey;
  /** RFC 7638 thumbprint (SHA-256, base64url) of the public key: the JWS `kid`. */
  kid: string;
  /** The public key as a JWK: `{kty: "OKP", crv: "Ed25519", x, kid, alg: "EdDSA", use: "sig"}`. */
  publicJwk: JWK;
  /** `{keys: [publicJwk]}`: what `GET /.well-known/countersign-receipts.jwks.json` serves. */
  jwks: JSONWebKeySet;
}

/** A key file that cannot be used; the message names the file and what is wrong with it. */
export class ReceiptKeyError extends Error {
  override readonly name = 'ReceiptKeyError';
}

function isEd25519PrivateJwk(jwk: JWK): boolean {
  return jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && typeof jwk.x === 'string' && typeof jwk.d === 'string';
}

/** The public half of a private OKP JWK (only the RFC 8037 public members). */
function publicOf(jwk: JWK): JWK {
  return { kty: 'OKP', crv: 'Ed25519', x: jwk.x! };
}

async function fromPrivateJwk(jwk: JWK): Promise<ReceiptSigningKey> {
  const privateKey = (await importJWK(jwk, RECEIPT_ALG)) as CryptoKey;
  const pub = publicOf(jwk);
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const publicJwk: JWK = { ...pub, kid, alg: RECEIPT_ALG, use: 'sig' };
  return { privateKey, kid, publicJwk, jwks: { keys: [publicJwk] } };
}

/**
 * Parse a key file's text: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) or a private Ed25519 JWK.
 * Throws {@link ReceiptKeyError} naming `file` when it is neither.
 */
export async function parseReceiptKey(text: string, file: string): Promise<ReceiptSigningKey> {
  if (text.includes('-----BEGIN PRIVATE KEY-----')) {
    let key: CryptoKey;
    try {
      key = await importPKCS8(text, RECEIPT_ALG, { extractable: true });
    } catch (err) {
      throw new ReceiptKeyError(`receipt signing key ${file} is not an Ed25519 PKCS#8 private key: ${(err as Error).message}`);
    }
    return fromPrivateJwk(await exportJWK(key));
  }
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
  } catch {
    throw new ReceiptKeyError(`receipt signing key ${file} is neither a PEM private key nor JSON`);
  }
  if (!isEd25519PrivateJwk(jwk))
    throw new ReceiptKeyError(`receipt signing key ${file} is not a private Ed25519 JWK (kty OKP, crv Ed25519, x, d)`);
  return fromPrivateJwk(jwk);
}

/** A fresh Ed25519 key pair as a private JWK (for the generated file and for tests). */
export async function generateReceiptJwk(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(RECEIPT_ALG, { crv: 'Ed25519', extractable: true });
  return exportJWK(privateKey);
}

/**
 * Load the receipt signing key: `keyFile` when given (must exist; PEM or JWK), else
 * `<dataDir>/receipts-signing-key.json`, created with a fresh key on first use (atomic: temp file
 * + link, so processes racing on an empty folder end with the same key). Throws
 * {@link ReceiptKeyError} for an unusable file, the file system's error otherwise.
 */
export async function loadReceiptSigningKey(opts: { dataDir: string; keyFile?: string | undefined }): Promise<ReceiptSigningKey> {
  if (opts.keyFile !== undefined) {
    let text: string;
    try {
      text = await readFile(opts.keyFile, 'utf8');
    } catch (err) {
      throw new ReceiptKeyError(
        `cannot read receipt signing key ${opts.keyFile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    return parseReceiptKey(text, opts.keyFile);
  }
  const file = join(opts.dataDir, RECEIPT_KEY_FILE_NAME);
  try {
    return await parseReceiptKey(await readFile(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(await generateReceiptJwk(), null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process published first: use its key
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return parseReceiptKey(await readFile(file, 'utf8'), file);
}
