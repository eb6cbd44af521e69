/**
 * Encryption at rest for Temporal payloads (docs/DESIGN.md §4.2, "sensitive durable state"; docs/PRODUCTION.md, payload encryption):
 * a `PayloadCodec` that seals every payload with AES-256-GCM before it leaves the process and
 * opens it on the way back. Install the same codec on every client and worker
 * (`dataConverter: { payloadCodecs: [codec] }`).
 *
 * What it protects — everything the SDK runs through the codec, which is every user payload the
 * server stores in history or returns: workflow inputs (the call binding with the complete tool
 * arguments and the principal), workflow and activity results (the terminal result with the tool's
 * output), activity inputs, signal / update / query arguments and results, and the memo (the SDK
 * encodes memo fields with the codec on start and decodes them on describe; the owner hash kept there
 * is not secret anyway).
 *
 * What it deliberately does not protect: search attributes (indexed in plain text by the server;
 * we set none), the SDK's patch markers (only a patch id), workflow ids (an HMAC of the binding), task queue and activity type names, timer
 * and event metadata, and failure `message` / stack trace text (the SDK's default failure converter
 * leaves those outside the payloads; our failures carry fixed texts, never argument values). It does
 * not hide payload sizes, and it is not a signature over history: anyone holding a key can forge.
 *
 * Wire format of an encrypted payload: metadata `encoding: binary/encrypted` and
 * `encryption-key-id: <id>`; data `0x01 ‖ IV (12 bytes, random) ‖ ciphertext ‖ GCM tag (16 bytes)`
 * over the JSON `{m: {<metadata key>: base64}, d: base64}` of the original payload, with the key id
 * as additional authenticated data. Encoding always uses the current key; decoding accepts any key
 * in the ring, so keys rotate by adding a new current key and keeping old ones until no retained
 * history needs them. A payload that is not sealed is refused on decode (`PayloadCodecError('unsealed')`):
 * otherwise anyone able to start a workflow on the server (e.g. with the `temporal` CLI) could hand
 * the worker a forged call binding. An encrypted payload with an unknown key id or that fails
 * authentication throws as well — the codec never returns unverified plaintext.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';

/** `encoding` metadata value of a payload sealed by this codec. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Metadata key naming the key that sealed the payload. */
export const KEY_ID_METADATA_KEY = 'encryption-key-id';

const FORMAT_VERSION = 0x01;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** Why a payload could not be opened (or the codec could not be built); never crosses the wire. */
export type PayloadCodecErrorCode = 'unknown-key' | 'authentication-failed' | 'malformed' | 'invalid-key-ring' | 'unsealed';

/** Thrown by the codec. Messages name the key id at most, never key material or payload content. */
export class PayloadCodecError extends Error {
  constructor(
    readonly code: PayloadCodecErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'PayloadCodecError';
  }
}

/** Key ring: `keys` maps key id → 32-byte AES key; `currentKeyId` seals new payloads. */
export interface PayloadCodecOptions {
  keys: Record<string, Buffer>;
  currentKeyId: string;
}

/** One key as configured (`COUNTERSIGN_PAYLOAD_KEYS`, `secrets.json`): id and base64 of 32 bytes. */
export interface PayloadKeyEntry {
  id: string;
  key: string;
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** AES-256-GCM payload codec with key rotation. See the module header for format and scope. */
export class AesGcmPayloadCodec implements PayloadCodec {
  readonly #keys = new Map<string, Buffer>();
  readonly #currentKeyId: string;

  /** Throws `PayloadCodecError('invalid-key-ring')` on a key that is not 32 bytes, a bad id, or a missing current key. */
  constructor(opts: PayloadCodecOptions) {
    for (const [id, key] of Object.entries(opts.keys)) {
      if (!KEY_ID_PATTERN.test(id))
        throw new PayloadCodecError('invalid-key-ring', `payload key id ${JSON.stringify(id.slice(0, 64))} must be 1-64 of [A-Za-z0-9._-]`);
      if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES)
        throw new PayloadCodecError('invalid-key-ring', `payload key ${id} must be exactly ${KEY_BYTES} bytes`);
      this.#keys.set(id, Buffer.from(key)); // own copy: a caller zeroing its buffer must not break us
    }
    if (!this.#keys.has(opts.currentKeyId))
      throw new PayloadCodecError('invalid-key-ring', `current payload key ${opts.currentKeyId} is not in the key ring`);
    this.#currentKeyId = opts.currentKeyId;
  }

  /** Id of the key new payloads are sealed with. */
  get currentKeyId(): string {
    return this.#currentKeyId;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.#seal(p));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => this.#open(p));
  }

  #seal(payload: Payload): Payload {
    const key = this.#keys.get(this.#currentKeyId)!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(this.#currentKeyId));
    const body = Buffer.concat([cipher.update(serialize(payload)), cipher.final()]);
    return {
      metadata: { encoding: utf8.encode(ENCRYPTED_ENCODING), [KEY_ID_METADATA_KEY]: utf8.encode(this.#currentKeyId) },
      data: Buffer.concat([Buffer.of(FORMAT_VERSION), iv, body, cipher.getAuthTag()]),
    };
  }

  #open(payload: Payload): Payload {
    const encoding = payload.metadata?.encoding;
    if (!encoding || fromUtf8.decode(encoding) !== ENCRYPTED_ENCODING) {
      throw new PayloadCodecError('unsealed', 'refusing a payload that is not sealed by this codec');
    }
    const rawId = payload.metadata?.[KEY_ID_METADATA_KEY];
    if (!rawId) throw new PayloadCodecError('malformed', 'encrypted payload has no encryption-key-id');
    const keyId = fromUtf8.decode(rawId);
    const key = this.#keys.get(keyId);
    if (!key)
      throw new PayloadCodecError(
        'unknown-key',
        `encrypted payload uses unknown key id ${JSON.stringify(keyId.slice(0, 64))}; add that key to the payload key ring`,
      );
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < 1 + IV_BYTES + TAG_BYTES || data[0] !== FORMAT_VERSION)
      throw new PayloadCodecError('malformed', 'encrypted payload has an unknown format');
    const iv = data.subarray(1, 1 + IV_BYTES);
    const tag = data.subarray(data.length - TAG_BYTES);
    const body = data.subarray(1 + IV_BYTES, data.length - TAG_BYTES);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(keyId));
      decipher.setAuthTag(tag);
      plain = Buffer.concat([decipher.update(body), decipher.final()]);
    } catch {
      throw new PayloadCodecError(
        'authentication-failed',
        `encrypted payload failed authentication with key ${keyId} (tampered, or sealed with a different key of that id)`,
      );
    }
    return deserialize(plain);
  }
}

/**
 * Build the codec from a configured key list; the first entry is the current key. Throws
 * `PayloadCodecError('invalid-key-ring')` on an empty list, a duplicate id, or a key that is not
 * base64 of exactly 32 bytes.
 */
export function payloadCodecFromKeyList(list: readonly PayloadKeyEntry[]): AesGcmPayloadCodec {
  const first = list[0];
  if (!first) throw new PayloadCodecError('invalid-key-ring', 'the payload key list is empty');
  const keys: Record<string, Buffer> = {};
  for (const { id, key } of list) {
    if (Object.hasOwn(keys, id)) throw new PayloadCodecError('invalid-key-ring', `payload key id ${id} appears twice`);
    keys[id] = decodePayloadKey(key);
  }
  return new AesGcmPayloadCodec({ keys, currentKeyId: first.id });
}

/** Decode a base64 (or base64url) key; throws `PayloadCodecError('invalid-key-ring')` unless it is 32 bytes. */
export function decodePayloadKey(text: string): Buffer {
  const key = /^[A-Za-z0-9+/_-]{43}=?$/.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0);
  if (key.length !== KEY_BYTES)
    throw new PayloadCodecError('invalid-key-ring', `a payload key must be base64 of exactly ${KEY_BYTES} bytes`);
  return key;
}

/** A fresh key list entry with a random 32-byte key (the embedded stack's generated secret). */
export function generatePayloadKey(): PayloadKeyEntry {
  return { id: `local-${randomBytes(4).toString('hex')}`, key: randomBytes(KEY_BYTES).toString('base64') };
}

function aad(keyId: string): Buffer {
  return Buffer.from(`countersign-payload-v1:${keyId}`, 'utf8');
}

function serialize(p: Payload): Buffer {
  const m: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) m[k] = Buffer.from(v).toString('base64');
  return Buffer.from(JSON.stringify({ m, d: Buffer.from(p.data ?? new Uint8Array()).toString('base64') }), 'utf8');
}

function deserialize(plain: Buffer): Payload {
  let parsed: { m?: Record<string, string>; d?: string };
  try {
    parsed = JSON.parse(plain.toString('utf8')) as typeof parsed;
  } catch {
    throw new PayloadCodecError('malformed', 'decrypted payload is not a payload envelope');
  }
  const metadata: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(parsed.m ?? {})) metadata[k] = new Uint8Array(Buffer.from(v, 'base64'));
  return { metadata, data: new Uint8Array(Buffer.from(parsed.d ?? '', 'base64')) };
}
