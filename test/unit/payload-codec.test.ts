// Scope: src/temporal/payload-codec.ts (AES-256-GCM payload codec: round trip, key rotation, tamper and unknown-key rejection, random IVs, key-ring validation) and the COUNTERSIGN_PAYLOAD_KEYS parsing in src/config.ts.
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA_KEY,
  PayloadCodecError,
  generatePayloadKey,
  payloadCodecFromKeyList,
} from '../../src/temporal/payload-codec.js';

const SECRET = 'PLANTED-unit-3f1c9a';
const value = { binding: { tool: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo: SECRET } } };
const toPayload = (v: unknown): Payload => defaultPayloadConverter.toPayload(v)!;
const text = (p: Payload) => Buffer.from(p.data ?? []).toString('latin1') + JSON.stringify(p.metadata);
const meta = (p: Payload, k: string) => Buffer.from(p.metadata?.[k] ?? []).toString('utf8');

async function codecError(p: Promise<unknown>): Promise<PayloadCodecError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PayloadCodecError);
  return err as PayloadCodecError;
}

describe('AES-256-GCM payload codec', () => {
  const k1 = randomBytes(32);
  const codec = new AesGcmPayloadCodec({ keys: { k1 }, currentKeyId: 'k1' });

  it('round-trips payloads, and the sealed form carries no plaintext, only the key id and encoding', async () => {
    const plain = [toPayload(value), toPayload(null), toPayload(new Uint8Array([1, 2, 3]))];
    const sealed = await codec.encode(plain);
    expect(sealed).toHaveLength(3);
    for (const p of sealed) {
      expect(meta(p, 'encoding')).toBe(ENCRYPTED_ENCODING);
      expect(meta(p, KEY_ID_METADATA_KEY)).toBe('k1');
      expect(Object.keys(p.metadata ?? {}).sort()).toEqual(['encoding', KEY_ID_METADATA_KEY]);
    }
    expect(text(sealed[0]!)).not.toContain(SECRET);
    expect(text(sealed[0]!)).not.toContain('json/plain');
    const opened = await codec.decode(sealed);
    expect(opened).toEqual(plain.map((p) => ({ metadata: p.metadata, data: p.data })));
    expect(defaultPayloadConverter.fromPayload(opened[0]!)).toEqual(value);
    expect(await codec.encode([])).toEqual([]);
  });

  it('two encodings of the same payload differ (random IV)', async () => {
    const [a] = await codec.encode([toPayload(value)]);
    const [b] = await codec.encode([toPayload(value)]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
    expect(Buffer.from(a!.data!).subarray(1, 13).equals(Buffer.from(b!.data!).subarray(1, 13))).toBe(false);
  });

  it('rotation: a payload sealed with the old key still opens after a new current key is added; new payloads use the new key', async () => {
    const [old] = await codec.encode([toPayload(value)]);
    const rotated = new AesGcmPayloadCodec({ keys: { k1, k2: randomBytes(32) }, currentKeyId: 'k2' });
    expect(defaultPayloadConverter.fromPayload((await rotated.decode([old!]))[0]!)).toEqual(value);
    const [fresh] = await rotated.encode([toPayload(value)]);
    expect(meta(fresh!, KEY_ID_METADATA_KEY)).toBe('k2');
    // the old ring cannot open what the new key sealed
    expect((await codecError(codec.decode([fresh!]))).code).toBe('unknown-key');
  });

  it('an unknown key id is rejected with a clear error, never plaintext', async () => {
    const [sealed] = await codec.encode([toPayload(value)]);
    const other = new AesGcmPayloadCodec({ keys: { k9: randomBytes(32) }, currentKeyId: 'k9' });
    const err = await codecError(other.decode([sealed!]));
    expect(err.code).toBe('unknown-key');
    expect(err.message).toMatch(/unknown key id "k1"/);
  });

  it('tampered ciphertext, tag, IV or key id is rejected (authentication failed)', async () => {
    const [sealed] = await codec.encode([toPayload(value)]);
    const data = Buffer.from(sealed!.data!);
    for (const at of [1, 13, 20, data.length - 1]) {
      const bad = Buffer.from(data);
      bad[at] = bad[at]! ^ 0x01;
      const err = await codecError(codec.decode([{ ...sealed!, data: bad }]));
      expect(err.code).toBe('authentication-failed');
    }
    // same key bytes under another id: the key id is authenticated data
    const twin = new AesGcmPayloadCodec({ keys: { k1, k1b: k1 }, currentKeyId: 'k1' });
    const relabelled = { data: sealed!.data, metadata: { ...sealed!.metadata, [KEY_ID_METADATA_KEY]: new TextEncoder().encode('k1b') } };
    expect((await codecError(twin.decode([relabelled]))).code).toBe('authentication-failed');
    // the same id bound to a different key
    const impostor = new AesGcmPayloadCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });
    expect((await codecError(impostor.decode([sealed!]))).code).toBe('authentication-failed');
    // truncated
    expect((await codecError(codec.decode([{ ...sealed!, data: data.subarray(0, 20) }]))).code).toBe('malformed');
    const noId = { data: sealed!.data, metadata: { encoding: sealed!.metadata!.encoding! } };
    expect((await codecError(codec.decode([noId]))).code).toBe('malformed');
  });

  it('refuses a payload that was never sealed, so nobody can feed the worker plaintext input', async () => {
    const plain = toPayload(value);
    await expect(codec.decode([plain])).rejects.toMatchObject({ name: 'PayloadCodecError', code: 'unsealed' });
  });

  it('refuses a bad key ring: short key, missing current key, bad id, empty or duplicate list', () => {
    expect(() => new AesGcmPayloadCodec({ keys: { k1: randomBytes(16) }, currentKeyId: 'k1' })).toThrow(PayloadCodecError);
    expect(() => new AesGcmPayloadCodec({ keys: { k1 }, currentKeyId: 'k2' })).toThrow(/not in the key ring/);
    expect(() => new AesGcmPayloadCodec({ keys: { 'bad id': k1 }, currentKeyId: 'bad id' })).toThrow(/key id/);
    expect(() => payloadCodecFromKeyList([])).toThrow(/empty/);
    const e = generatePayloadKey();
    expect(() => payloadCodecFromKeyList([e, e])).toThrow(/twice/);
    expect(() => payloadCodecFromKeyList([{ id: 'k1', key: randomBytes(31).toString('base64') }])).toThrow(/32 bytes/);
  });

  it('payloadCodecFromKeyList: the first entry is current, later ones decode', async () => {
    const a = generatePayloadKey();
    const b = generatePayloadKey();
    const [byB] = await payloadCodecFromKeyList([b]).encode([toPayload(value)]);
    const ring = payloadCodecFromKeyList([a, b]);
    expect(ring.currentKeyId).toBe(a.id);
    expect(defaultPayloadConverter.fromPayload((await ring.decode([byB!]))[0]!)).toEqual(value);
    expect(a.id).toMatch(/^local-[0-9a-f]{8}$/);
    expect(Buffer.from(a.key, 'base64')).toHaveLength(32);
  });
});

describe('COUNTERSIGN_PAYLOAD_KEYS', () => {
  const key = randomBytes(32).toString('base64');

  it('parses a JSON key list (first = current) and is undefined when unset', () => {
    const list = [
      { id: 'k2', key },
      { id: 'k1', key: randomBytes(32).toString('base64url') },
    ];
    expect(loadConfig({ COUNTERSIGN_PAYLOAD_KEYS: JSON.stringify(list) }).COUNTERSIGN_PAYLOAD_KEYS).toEqual(list);
    expect(loadConfig({}).COUNTERSIGN_PAYLOAD_KEYS).toBeUndefined();
  });

  it('rejects invalid lists without echoing key material', () => {
    const bad = [
      'not json ' + key,
      '[]',
      JSON.stringify([{ id: 'k1', key: key.slice(0, 20) }]),
      JSON.stringify([
        { id: 'k1', key },
        { id: 'k1', key },
      ]),
      JSON.stringify([{ id: 'has space', key }]),
      JSON.stringify({ id: 'k1', key }),
    ];
    for (const v of bad) {
      const err = (() => {
        try {
          loadConfig({ COUNTERSIGN_PAYLOAD_KEYS: v });
          return null;
        } catch (e) {
          return e;
        }
      })();
      expect(err, v).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.join('\n')).toMatch(/COUNTERSIGN_PAYLOAD_KEYS/);
      expect((err as ConfigError).message).not.toContain(key.slice(0, 20));
    }
  });
});
