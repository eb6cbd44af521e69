// Scope: the auditor's verifier on its own (`countersign-receipts verify`, src/cli.ts): a chain of
// receipts signed here with a fresh Ed25519 key verifies (exit 0), a tampered or reordered file
// fails naming the line (exit 1), and bad usage or an unreadable JWKS is exit 2. No gate involved.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runReceiptsCli } from '../src/cli.js';
import { callBindingDigest, receiptDigest, RECEIPT_ALG, signReceipt, type ReceiptPayload } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'countersign-receipts-cli-'));
const jwksFile = join(dir, 'jwks.json');
const lines: string[] = [];

function payload(seq: number, prev: string | null): ReceiptPayload {
  const principal = { iss: 'https://issuer.test', sub: 'alice' };
  const resource = { type: 'tool' as const, id: 'wire_transfer' };
  return {
    version: 1,
    seq,
    prev,
    issuedAt: '2036-12-05T04:00:00.000Z',
    task: {
      taskId: `t${seq}`,
      workflowId: `w${seq}`,
      runId: `r${seq}`,
      status: 'completed',
      createdAt: '2036-12-05T03:00:00.000Z',
      terminalAt: '2036-12-05T03:30:00.000Z',
    },
    callBinding: {
      digest: callBindingDigest({ tool: 'wire_transfer', arguments: { amount: seq }, principal, resource }),
      tool: 'wire_transfer',
      principal,
      resource,
    },
    policyDecisions: [{ stage: 'initial', decision: 'deny', requestable: true, policyIds: ['over-limit'] }],
    approvalMode: 'out-of-band',
    approvalRequests: [],
    inBandConfirmation: null,
    executionClaim: { claimed: false },
    disposition: 'denied-not-executed',
  };
}

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair(RECEIPT_ALG, { crv: 'Ed25519', extractable: true });
  const jwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(jwk, 'sha256');
  writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...jwk, kid, alg: RECEIPT_ALG, use: 'sig' }] }));
  let prev: string | null = null;
  for (const seq of [1, 2, 3]) {
    const p = payload(seq, prev);
    const jws = await signReceipt(p, { privateKey, kid });
    lines.push(JSON.stringify(seq === 2 ? { ...jws, arguments: { amount: 2 } } : jws));
    prev = receiptDigest(p);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe('countersign-receipts verify', () => {
  it('a signed, chained file verifies offline (exit 0), with disclosed arguments checked against the signed digest', async () => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await runReceiptsCli(['verify', file('ok.jsonl', `${lines.join('\n')}\n`), '--jwks', jwksFile])).toBe(0);
      expect(String(out.mock.calls.at(-1)?.[0])).toContain('ok: 3 receipt(s) verified');
    } finally {
      out.mockRestore();
    }
  });

  it('a removed receipt or changed arguments fail naming the line (exit 1)', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await runReceiptsCli(['verify', file('gap.jsonl', `${lines[0]}\n${lines[2]}\n`), '--jwks', jwksFile])).toBe(1);
      expect(err.mock.calls.map((c) => String(c[0])).join('')).toMatch(/gap\.jsonl:2: chain broken/);
      const forged = lines[1]!.replace('"amount":2', '"amount":2000');
      expect(await runReceiptsCli(['verify', file('forged.jsonl', `${lines[0]}\n${forged}\n`), '--jwks', jwksFile])).toBe(1);
      expect(err.mock.calls.map((c) => String(c[0])).join('')).toMatch(/forged\.jsonl:2: disclosed arguments do not match/);
    } finally {
      err.mockRestore();
    }
  });

  it('usage problems and an unreadable JWKS are exit 2', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await runReceiptsCli([])).toBe(2);
      expect(await runReceiptsCli(['verify', join(dir, 'ok.jsonl')])).toBe(2);
      expect(await runReceiptsCli(['verify', join(dir, 'ok.jsonl'), '--jwks', join(dir, 'missing.json')])).toBe(2);
    } finally {
      err.mockRestore();
    }
  });
});
