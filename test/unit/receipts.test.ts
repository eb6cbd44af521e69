// Scope: evidence receipts without a stack: JCS canonical payloads, EdDSA flattened JWS with an
// RFC 7638 kid, the issuing log's hash chain (in a SQLite file and in a real PostgreSQL), and
// offline verification refusing each kind of tampering with its own reason (src/receipts/).
import { execFile } from 'node:child_process';
import { createHash, createPrivateKey } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FlattenedSign } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, jcsSha256 } from '../../src/binding/call-binding.js';
import { parseSince } from '../../src/cli/receipts-command.js';
import {
  receiptDigest,
  RECEIPT_TYP,
  signReceipt,
  verifyReceiptLines,
  type ReceiptEvidence,
  type ReceiptPayload,
} from '@countersign/receipts';
import { openReceiptLog, type ReceiptLog } from '../../src/receipts/receipt-log.js';
import { generateReceiptJwk, loadReceiptSigningKey, parseReceiptKey, type ReceiptSigningKey } from '../../src/receipts/signing-key.js';
import { startPostgres, type Postgres } from '../support/postgres.js';

const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const principal = { iss: 'https://idp.example.test', sub: 'alice' };
const args = { to: 'acct-991', amount: 50_000, memo: 'invoice 7' };

function evidence(n: number, over: Partial<ReceiptEvidence> = {}): ReceiptEvidence {
  const resource = { type: 'tool' as const, id: 'wire_transfer' };
  return {
    task: {
      taskId: `t${n}.run`,
      workflowId: `approval-${n}`,
      runId: 'run',
      status: 'completed',
      createdAt: `2026-12-01T00:0${n}:00.000Z`,
      terminalAt: `2026-12-01T01:0${n}:00.000Z`,
    },
    callBinding: {
      digest: jcsSha256({ tool: 'wire_transfer', arguments: { ...args, n }, principal, resource }),
      tool: 'wire_transfer',
      principal,
      resource,
    },
    policyDecisions: [
      { stage: 'initial', decision: 'deny', requestable: true, policyIds: ['wire-transfer-over-limit'] },
      { stage: 're-evaluation', decision: 'allow', outcome: 'allow', policyIds: ['wire-transfer-permit'], at: '2026-12-01T01:00:00.000Z' },
    ],
    approvalMode: 'out-of-band',
    approvalRequests: [
      {
        generation: 1,
        requestId: `ar_${n}`,
        outcome: 'approved',
        quorum: { required: 1, rule: null },
        decisions: [{ approver: 'bob', decision: 'approve', channel: 'inbox', at: '2026-12-01T00:30:00.000Z' }],
      },
    ],
    inBandConfirmation: null,
    executionClaim: { claimed: true, at: '2026-12-01T01:00:01.000Z', executionId: `t${n}.run/execution` },
    disposition: 'approved-executed',
    ...over,
  };
}

const opened: ReceiptLog[] = [];
afterEach(async () => {
  for (const l of opened.splice(0)) await l.close();
});

/** Where a new, empty log lives: a fresh SQLite file. */
const sqliteLocation = async () => join(mkdtempSync(join(tmpdir(), 'receipts-')), 'receipts.db');

async function open(location: string): Promise<ReceiptLog> {
  const log = await openReceiptLog(location);
  opened.push(log);
  return log;
}

async function logWith(key: ReceiptSigningKey, n: number, location?: string): Promise<{ log: ReceiptLog; lines: string[] }> {
  const log = await open(location ?? (await sqliteLocation()));
  for (let i = 1; i <= n; i++) await log.issue(evidence(i), key, new Date(Date.UTC(2026, 11, 1, 2, i)));
  return { log, lines: (await log.since(0)).map((r) => JSON.stringify(r.jws)) };
}

// The PostgreSQL log (COUNTERSIGN_RECEIPTS_DATABASE_URL) runs the same tests on a real server, one database per test.
let postgres: Postgres | undefined;
let databases = 0;
beforeAll(async () => {
  postgres = await startPostgres(mkdtempSync(join(tmpdir(), 'receipts-pg-')), { maxConnections: 40 });
});
afterAll(() => postgres?.stop());
const postgresLocation = async () => {
  const name = `receipts_${++databases}`;
  postgres!.createDatabase(name);
  return postgres!.url(name);
};

const payloadOf = (line: string): ReceiptPayload =>
  JSON.parse(Buffer.from((JSON.parse(line) as { payload: string }).payload, 'base64url').toString('utf8')) as ReceiptPayload;

async function keyPair(): Promise<ReceiptSigningKey> {
  return parseReceiptKey(JSON.stringify(await generateReceiptJwk()), 'test-key');
}

describe('canonical JSON (RFC 8785)', () => {
  it('serializes the RFC 8785 §3.2.3 sample exactly as the RFC prints it', () => {
    const sample = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    ) as unknown;
    expect(canonicalJson(sample)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });
});

describe('receipt signing key', () => {
  it('kid is the RFC 7638 thumbprint: SHA-256 of the required members {crv, kty, x} in lexicographic order', async () => {
    const key = await keyPair();
    const x = key.publicJwk.x!;
    const expected = createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
    expect(key.kid).toBe(expected);
    expect(key.jwks.keys).toEqual([{ kty: 'OKP', crv: 'Ed25519', x, kid: expected, alg: 'EdDSA', use: 'sig' }]);
    expect(JSON.stringify(key.jwks)).not.toContain('"d"');
  });

  it('a PKCS#8 PEM file and the same key as a JWK load to the same kid', async () => {
    const jwk = await generateReceiptJwk();
    const pem = createPrivateKey({ key: jwk as never, format: 'jwk' })
      .export({ format: 'pem', type: 'pkcs8' })
      .toString();
    const dir = mkdtempSync(join(tmpdir(), 'receipt-key-'));
    writeFileSync(join(dir, 'k.pem'), pem);
    const fromPem = await loadReceiptSigningKey({ dataDir: dir, keyFile: join(dir, 'k.pem') });
    const fromJwk = await parseReceiptKey(JSON.stringify(jwk), 'jwk');
    expect(fromPem.kid).toBe(fromJwk.kid);
  });

  it('without a configured file, one key is generated in the data folder and reused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'receipt-key-'));
    const first = await loadReceiptSigningKey({ dataDir: dir });
    const again = await loadReceiptSigningKey({ dataDir: dir });
    expect(again.kid).toBe(first.kid);
  });

  it('a key file that is not an Ed25519 private key is refused naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'receipt-key-'));
    writeFileSync(join(dir, 'ec.json'), JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'c' }));
    await expect(loadReceiptSigningKey({ dataDir: dir, keyFile: join(dir, 'ec.json') })).rejects.toThrow(
      /ec\.json is not a private Ed25519 JWK/,
    );
  });
});

describe.each([
  { store: 'a SQLite file', location: sqliteLocation },
  { store: 'PostgreSQL', location: postgresLocation },
])('the issuing log in $store', ({ location }) => {
  it('chains each receipt to the digest of the one before, starting from null, and never issues a task twice', async () => {
    const key = await keyPair();
    const { log, lines } = await logWith(key, 3, await location());
    const payloads = lines.map(payloadOf);
    expect(payloads.map((p) => p.seq)).toEqual([1, 2, 3]);
    expect(payloads[0]!.prev).toBeNull();
    expect(payloads[1]!.prev).toBe(`sha-256:${createHash('sha256').update(canonicalJson(payloads[0])).digest('hex')}`);
    expect(payloads[2]!.prev).toBe(receiptDigest(payloads[1]!));
    const again = await log.issue(evidence(2), key);
    expect(again.seq).toBe(2);
    expect(await log.since(0)).toHaveLength(3);
    expect(await log.has('t2.run')).toBe(true);
    expect(await log.has('t9.run')).toBe(false);
  });

  it('two issuers on one log at the same time still build one chain, and a task issued by both gets one receipt', async () => {
    const key = await keyPair();
    const where = await location();
    const a = await open(where);
    const b = await open(where);
    await Promise.all([1, 2, 3, 4].flatMap((n) => [a.issue(evidence(n), key), b.issue(evidence(n === 4 ? 4 : n + 4), key)]));
    const lines = (await a.since(0)).map((r) => JSON.stringify(r.jws));
    expect(lines).toHaveLength(7);
    expect(await verifyReceiptLines(lines.join('\n'), key.jwks)).toMatchObject({ ok: true, count: 7 });
  });

  it('signs the JCS bytes of the payload, with header alg EdDSA, the kid and the receipt typ; arguments are not in it', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 1, await location());
    const jws = JSON.parse(lines[0]!) as { protected: string; payload: string };
    const text = Buffer.from(jws.payload, 'base64url').toString('utf8');
    expect(text).toBe(canonicalJson(JSON.parse(text)));
    expect(JSON.parse(Buffer.from(jws.protected, 'base64url').toString('utf8'))).toEqual({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYP });
    expect(text).not.toContain('acct-991');
  });

  it('since() returns a contiguous piece of the chain from the first task that ended at or after the time', async () => {
    const key = await keyPair();
    const { log } = await logWith(key, 3, await location());
    expect((await log.since(Date.parse('2026-12-01T01:02:00.000Z'))).map((r) => r.seq)).toEqual([2, 3]);
    expect(await log.since(Date.parse('2026-12-02T00:00:00.000Z'))).toEqual([]);
    expect(await log.latestTerminalAtMs()).toBe(Date.parse('2026-12-01T01:03:00.000Z'));
  });

  it('an empty log has no latest terminal time and exports nothing', async () => {
    const log = await open(await location());
    expect(await log.latestTerminalAtMs()).toBeNull();
    expect(await log.since(0)).toEqual([]);
  });
});

describe('the issuing log in PostgreSQL, across a server crash', () => {
  it('a log opened before PostgreSQL was SIGKILLed and started again keeps its chain and issues the next receipt after it', async () => {
    const key = await keyPair();
    const { log } = await logWith(key, 2, await postgresLocation());
    await postgres!.kill();
    await expect(log.issue(evidence(3), key)).rejects.toThrow();
    postgres!.start();
    // the pool's broken connections are replaced; the lost attempt left no row and no hole
    const third = await log.issue(evidence(3), key);
    expect(third.seq).toBe(3);
    const lines = (await log.since(0)).map((r) => JSON.stringify(r.jws));
    expect(await verifyReceiptLines(lines.join('\n'), key.jwks)).toMatchObject({ ok: true, count: 3 });
  });
});

describe('verifying a file', () => {
  it('an untouched export verifies from the start of the log; a piece from the middle reports its anchor', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 3);
    const all = await verifyReceiptLines(lines.join('\n'), key.jwks);
    expect(all).toEqual({ ok: true, count: 3, anchor: { seq: 1, prev: null }, failures: [], unchecked: [] });
    const tail = await verifyReceiptLines(lines.slice(1).join('\n'), key.jwks);
    expect(tail).toMatchObject({ ok: true, count: 2, anchor: { seq: 2, prev: payloadOf(lines[1]!).prev } });
  });

  it('a changed field fails on that line: the signature no longer verifies', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 3);
    const jws = JSON.parse(lines[1]!) as { payload: string };
    const p = payloadOf(lines[1]!);
    p.disposition = 'denied-not-executed';
    jws.payload = Buffer.from(canonicalJson(p)).toString('base64url');
    const r = await verifyReceiptLines([lines[0], JSON.stringify(jws), lines[2]].join('\n'), key.jwks);
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([{ line: 2, reason: 'signature does not verify with the published key' }]);
  });

  it('a removed line breaks the chain at the line after it', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 3);
    const r = await verifyReceiptLines([lines[0], lines[2]].join('\n'), key.jwks);
    expect(r.failures).toEqual([{ line: 2, reason: 'chain broken: seq 3 follows seq 1 (a receipt is missing or out of order)' }]);
  });

  it('a receipt re-signed with another key under the published kid fails; one under its own kid names the unknown kid', async () => {
    const key = await keyPair();
    const other = await keyPair();
    const { lines } = await logWith(key, 2);
    const forged = await new FlattenedSign(new TextEncoder().encode(canonicalJson(payloadOf(lines[1]!))))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYP })
      .sign(other.privateKey);
    const r = await verifyReceiptLines([lines[0], JSON.stringify(forged)].join('\n'), key.jwks);
    expect(r.failures).toEqual([{ line: 2, reason: 'signature does not verify with the published key' }]);
    const own = await signReceipt(payloadOf(lines[1]!), other);
    const r2 = await verifyReceiptLines([lines[0], JSON.stringify(own)].join('\n'), key.jwks);
    expect(r2.failures).toEqual([{ line: 2, reason: `no key with kid "${other.kid}" in the JWKS` }]);
  });

  it('a validly signed receipt whose prev is not the digest of the line before fails the chain', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 2);
    const p = payloadOf(lines[1]!);
    p.prev = `sha-256:${'0'.repeat(64)}`;
    const r = await verifyReceiptLines([lines[0], JSON.stringify(await signReceipt(p, key))].join('\n'), key.jwks);
    expect(r.failures).toEqual([
      {
        line: 2,
        reason: `chain broken: prev sha-256:${'0'.repeat(64)} is not the digest of the receipt before (${receiptDigest(payloadOf(lines[0]!))})`,
      },
    ]);
  });

  it('a signed payload that is not in JCS form is refused', async () => {
    const key = await keyPair();
    const p = payloadOf((await logWith(key, 1)).lines[0]!);
    const pretty = await new FlattenedSign(new TextEncoder().encode(JSON.stringify(p, null, 1)))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYP })
      .sign(key.privateKey);
    const r = await verifyReceiptLines(JSON.stringify(pretty), key.jwks);
    expect(r.failures).toEqual([{ line: 1, reason: 'signed payload is not in JCS canonical form (RFC 8785)' }]);
  });

  it('disclosed arguments pass only when they hash to the signed binding digest', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 1);
    const disclosed = { ...(JSON.parse(lines[0]!) as object), arguments: { ...args, n: 1 } };
    expect((await verifyReceiptLines(JSON.stringify(disclosed), key.jwks)).ok).toBe(true);
    const altered = { ...disclosed, arguments: { ...args, n: 1, amount: 5 } };
    expect((await verifyReceiptLines(JSON.stringify(altered), key.jwks)).failures).toEqual([
      { line: 1, reason: 'disclosed arguments do not match the signed call binding digest' },
    ]);
  });

  it('a line with an unprotected header naming another kid, or any member outside the flattened JWS shape, is refused', async () => {
    const key = await keyPair();
    const other = await keyPair();
    const { lines } = await logWith(key, 1);
    const withHeader = { ...(JSON.parse(lines[0]!) as object), header: { kid: other.kid } };
    expect((await verifyReceiptLines(JSON.stringify(withHeader), key.jwks)).failures).toEqual([
      { line: 1, reason: 'unprotected JWS header is not allowed: every header parameter must be in "protected"' },
    ]);
    const withExtra = { ...(JSON.parse(lines[0]!) as object), note: 'ok' };
    expect((await verifyReceiptLines(JSON.stringify(withExtra), key.jwks)).failures).toEqual([
      { line: 1, reason: 'unexpected member "note": a receipt line holds only protected, payload, signature, arguments and redacted' },
    ]);
  });

  it('a file re-signed with another key fails against a JWKS that labels that key with the real kid: the kid is not its thumbprint', async () => {
    const key = await keyPair();
    const other = await keyPair();
    const { lines } = await logWith(key, 1);
    const forged = await new FlattenedSign(new TextEncoder().encode(canonicalJson(payloadOf(lines[0]!))))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYP })
      .sign(other.privateKey);
    const relabelled = { keys: [{ ...other.publicJwk, kid: key.kid }] };
    const r = await verifyReceiptLines(JSON.stringify(forged), relabelled);
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([
      { line: 1, reason: `the JWKS key labelled kid "${key.kid}" is refused: its RFC 7638 thumbprint is "${other.kid}"` },
    ]);
  });

  it('a receipt whose protected header has no kid fails as "missing kid", even when its signature is good', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 1);
    const noKid = await new FlattenedSign(new TextEncoder().encode(canonicalJson(payloadOf(lines[0]!))))
      .setProtectedHeader({ alg: 'EdDSA', typ: RECEIPT_TYP })
      .sign(key.privateKey);
    expect((await verifyReceiptLines(JSON.stringify(noKid), key.jwks)).failures).toEqual([
      { line: 1, reason: 'missing kid: the protected header names no key' },
    ]);
  });

  it('a line that repeats a member name is refused naming the line and the path, even when the last copies verify', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 2);
    const second = JSON.parse(lines[1]!) as { payload: string };
    const fakePayload = Buffer.from(canonicalJson({ ...payloadOf(lines[1]!), disposition: 'denied' })).toString('base64url');
    // a reader keeping the first member sees the fake payload; JSON.parse keeps the last, which verifies
    const twoPayloads = lines[1]!.replace('{', `{"payload":"${fakePayload}",`);
    expect((JSON.parse(twoPayloads) as { payload: string }).payload).toBe(second.payload);
    const disclosed = JSON.stringify({ ...(JSON.parse(lines[0]!) as object), arguments: { ...args, n: 1 } });
    const twoAmounts = disclosed.replace('"amount":50000', '"amount":5,"amount":50000');
    expect(await verifyReceiptLines(`${twoAmounts}\n${twoPayloads}\n`, key.jwks)).toMatchObject({
      ok: false,
      failures: [
        {
          line: 1,
          reason:
            'duplicate object key at $.arguments.amount: a receipt line must not repeat a member name (JSON readers disagree on which one counts)',
        },
        {
          line: 2,
          reason:
            'duplicate object key at $.payload: a receipt line must not repeat a member name (JSON readers disagree on which one counts)',
        },
      ],
    });
    expect((await verifyReceiptLines(`${disclosed}\n${lines[1]!}\n`, key.jwks)).ok).toBe(true);
  });

  it('countersign receipts verify refuses a file whose line repeats a member, naming the file, the line and the path, and exits 1', async () => {
    const key = await keyPair();
    const { lines } = await logWith(key, 2);
    const fakePayload = Buffer.from(canonicalJson({ ...payloadOf(lines[1]!), disposition: 'denied' })).toString('base64url');
    const dir = mkdtempSync(join(tmpdir(), 'receipts-cli-'));
    const file = join(dir, 'receipts.jsonl');
    const jwks = join(dir, 'jwks.json');
    writeFileSync(file, `${lines[0]!}\n${lines[1]!.replace('{', `{"payload":"${fakePayload}",`)}\n`);
    writeFileSync(jwks, JSON.stringify(key.jwks));
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [
          '--conditions=countersign-source',
          '--import',
          'tsx',
          join(PROJECT_ROOT, 'src', 'cli.ts'),
          'receipts',
          'verify',
          file,
          '--jwks',
          jwks,
        ],
        { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME } },
        (err, _stdout, stderr) => resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stderr }),
      );
    });
    expect(code).toBe(1);
    expect(stderr).toContain(`${file}:2: duplicate object key at $.payload: a receipt line must not repeat a member name`);
    expect(stderr).not.toContain(`${file}:1:`);
  });

  it('garbage and an empty file fail with their reasons', async () => {
    const key = await keyPair();
    expect((await verifyReceiptLines('{"a":1}\nnot json\n', key.jwks)).failures).toEqual([
      { line: 1, reason: 'not a flattened JWS (protected, payload, signature)' },
      { line: 2, reason: 'not JSON' },
    ]);
    expect((await verifyReceiptLines('\n', key.jwks)).failures).toEqual([{ line: 0, reason: 'the file holds no receipt' }]);
  });
});

describe('--since', () => {
  const now = Date.parse('2026-12-01T12:00:00.000Z');
  it('accepts an ISO 8601 date-time, an ISO 8601 duration and a short duration, and refuses anything else naming the forms', () => {
    expect(parseSince('2026-11-30T00:00:00Z', now)).toBe(Date.parse('2026-11-30T00:00:00Z'));
    expect(parseSince('PT1H', now)).toBe(now - 3_600_000);
    expect(parseSince('7d', now)).toBe(now - 7 * 86_400_000);
    expect(() => parseSince('yesterday', now)).toThrow(/neither an ISO 8601 date-time with offset .* nor a short duration/);
  });

  it('refuses a time in the future and one before 1970 (an overflowing duration) as usage errors, and accepts now itself', () => {
    expect(() => parseSince('2026-12-01T12:00:01Z', now)).toThrow(
      '--since "2026-12-01T12:00:01Z" is in the future (it is now 2026-12-01T12:00:00.000Z)',
    );
    for (const text of ['99999999d', '999999999d', `${'9'.repeat(400)}d`, 'P99999999D', '1969-12-31T23:59:59Z'])
      expect(() => parseSince(text, now), text).toThrow(`--since ${JSON.stringify(text)} reaches back before 1970-01-01T00:00:00Z`);
    expect(parseSince('0s', now)).toBe(now);
    expect(parseSince('2026-12-01T12:00:00Z', now)).toBe(now);
  });
});
