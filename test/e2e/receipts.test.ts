// Scope: evidence receipts end to end on a real Temporal dev server and the whole stack over real
// HTTP: a two-approver transfer approved and executed, a denied one and a cancelled one each get a
// receipt; `countersign receipts export` and `verify` run as real processes (tsx src/cli.ts)
// against the key the MCP role publishes; tampered files are refused naming the line and reason.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlattenedSign, type JSONWebKeySet } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/binding/call-binding.js';
import { RECEIPT_LOG_FILE_NAME } from '../../src/cli/receipts-command.js';
import type { Config } from '../../src/config.js';
import { RECEIPTS_JWKS_PATH } from '../../src/mcp/http.js';
import { jcsSha256, RECEIPT_TYP, verifyReceiptLines } from '@countersign/receipts';
import { generateReceiptJwk, parseReceiptKey } from '../../src/receipts/signing-key.js';
import type { Stack } from '../../src/stack.js';
import { parseTaskId } from '../../workflows/task-id.js';
import {
  clientFor,
  countersignCli,
  decide,
  receiptPayloadOf,
  startTestStack,
  testConfig,
  waitForTerminal,
  type WireTask,
} from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
let config: Config;
let jwksUrl: string;
const out = mkdtempSync(join(tmpdir(), 'receipts-e2e-'));
const tasks: Record<'approved' | 'denied' | 'cancelled', { taskId: string; memo: string }> = {} as never;

beforeAll(async () => {
  config = testConfig();
  stack = await startTestStack(config);
  jwksUrl = `${new URL(stack.urls.mcp).origin}${RECEIPTS_JWKS_PATH}`;
  const alice = await clientFor(stack, 'alice');
  const transfer = (memo: string, amount: number) => ({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo } });
  const open = async (amount: number) => {
    const memo = `receipt ${randomUUID().slice(0, 8)}`;
    const t = await alice.request<WireTask>('tools/call', transfer(memo, amount));
    expect(t.resultType).toBe('task');
    return { taskId: t.taskId, memo };
  };
  // over 100,000: two distinct treasury approvers (docs/APPROVERS.md)
  tasks.approved = await open(150_000);
  expect(await decide(stack, tasks.approved.memo, 'approve', 'bob')).toBe(200);
  expect(await decide(stack, tasks.approved.memo, 'approve', 'carol')).toBe(200);
  expect((await waitForTerminal(alice, tasks.approved.taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');
  tasks.denied = await open(60_000);
  expect(await decide(stack, tasks.denied.memo, 'deny', 'carol')).toBe(200);
  expect((await waitForTerminal(alice, tasks.denied.taskId)).result?._meta?.[DISPOSITION]).toBe('denied-not-executed');
  tasks.cancelled = await open(70_000);
  await alice.request('tasks/cancel', { taskId: tasks.cancelled.taskId });
  // receipts are issued for closed runs: wait for each run to close
  for (const t of Object.values(tasks)) {
    const ids = parseTaskId(t.taskId)!;
    await stack.temporal.workflow.getHandle(ids.workflowId, ids.runId).result();
  }
}, 120_000);
afterAll(async () => {
  await stack?.stop();
});

const cli = (args: string[]) =>
  countersignCli(['receipts', ...args], {
    COUNTERSIGN_DATA_DIR: config.COUNTERSIGN_DATA_DIR,
    TEMPORAL_ADDRESS: stack.urls.temporal,
    // decisions are read from the approval service's API (GET /access/v1/requests/:id/decisions)
    COUNTERSIGN_APPROVALS_URL: stack.urls.approvals,
  });

const payloadOf = receiptPayloadOf;
const linesOf = (file: string) => readFileSync(file, 'utf8').trim().split('\n');

describe('evidence receipts on the real stack', () => {
  const file = join(out, 'receipts.jsonl');

  it('export writes one receipt per terminal task with the binding digest, policy ids, each approval, the claim and the disposition, and no arguments', async () => {
    const r = await cli(['export', '--since', '1h', '--out', file]);
    expect(r.stderr).toContain('3 issued, 3 exported (seq 1..3)');
    expect(r.code).toBe(0);
    const payloads = linesOf(file).map(payloadOf);
    const byTask = new Map(payloads.map((p) => [p.task.taskId, p]));
    for (const p of payloads) {
      expect(JSON.stringify(p)).not.toContain('acct-991');
      for (const t of Object.values(tasks)) expect(JSON.stringify(p)).not.toContain(t.memo);
    }

    const approved = byTask.get(tasks.approved.taskId)!;
    expect(approved.task.status).toBe('completed');
    expect(approved.disposition).toBe('approved-executed');
    expect(approved.callBinding.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(approved.callBinding.tool).toBe('wire_transfer');
    expect(approved.policyDecisions).toEqual([
      { stage: 'initial', decision: 'deny', requestable: true, policyIds: ['wire-transfer-over-limit'] },
      expect.objectContaining({ stage: 're-evaluation', decision: 'allow', outcome: 'allow', policyIds: ['wire-transfer-permit'] }),
    ]);
    expect(approved.approvalRequests).toHaveLength(1);
    const req = approved.approvalRequests[0]!;
    expect(req.outcome).toBe('approved');
    expect(req.quorum?.required).toBe(2);
    expect(req.decisions.map((d) => [d.approver, d.decision, d.channel])).toEqual([
      ['bob', 'approve', 'api'],
      ['carol', 'approve', 'api'],
    ]);
    for (const d of req.decisions) expect(Date.parse(d.at)).not.toBeNaN();
    expect(approved.executionClaim).toMatchObject({ claimed: true, executionId: `${tasks.approved.taskId}/execution` });

    const denied = byTask.get(tasks.denied.taskId)!;
    expect(denied.disposition).toBe('denied-not-executed');
    expect(denied.executionClaim).toEqual({ claimed: false });
    expect(denied.approvalRequests[0]).toMatchObject({
      outcome: 'denied',
      decisions: [{ approver: 'carol', decision: 'deny', channel: 'api' }],
    });
    expect(denied.policyDecisions).toHaveLength(1);

    const cancelled = byTask.get(tasks.cancelled.taskId)!;
    expect(cancelled.task.status).toBe('cancelled');
    expect(cancelled.disposition).toBeNull();
    expect(cancelled.executionClaim).toEqual({ claimed: false });
    // the task ended before any answer; the backend request was cancelled with it
    expect(cancelled.approvalRequests).toMatchObject([{ generation: 1, outcome: 'cancelled', decisions: [] }]);
  });

  it('verify passes against the JWKS the MCP role publishes, and the CLI exports the same key set', async () => {
    const ok = await cli(['verify', file, '--jwks', jwksUrl]);
    expect(ok).toMatchObject({ stderr: '', code: 0 });
    expect(ok.stdout).toContain('ok: 3 receipt(s) verified, signatures and chain intact, from the start of the log');
    expect(ok.code).toBe(0);
    const published = await fetch(jwksUrl);
    expect(published.headers.get('content-type')).toBe('application/jwk-set+json');
    const body = (await published.json()) as JSONWebKeySet;
    expect(body.keys.map((k) => [k.kty, k.crv, k.alg, 'd' in k])).toEqual([['OKP', 'Ed25519', 'EdDSA', false]]);
    const jwksFile = join(out, 'jwks.json');
    expect((await cli(['jwks', '--out', jwksFile])).code).toBe(0);
    expect(JSON.parse(readFileSync(jwksFile, 'utf8'))).toEqual(body);
    expect((await cli(['verify', file, '--jwks', jwksFile])).code).toBe(0);
  });

  it('exporting again issues nothing new and writes the same receipts; --include-arguments discloses arguments that verify', async () => {
    const again = join(out, 'again.jsonl');
    const r = await cli(['export', '--since', '1h', '--out', again]);
    expect(r.stderr).toContain('0 issued, 3 exported');
    expect(readFileSync(again, 'utf8')).toBe(readFileSync(file, 'utf8'));
    const withArgs = join(out, 'with-arguments.jsonl');
    expect((await cli(['export', '--since', '1h', '--include-arguments', '--out', withArgs])).code).toBe(0);
    const first = JSON.parse(linesOf(withArgs)[0]!) as { arguments: { to: string } };
    expect(first.arguments.to).toBe('acct-991');
    expect((await cli(['verify', withArgs, '--jwks', jwksUrl])).code).toBe(0);
  });

  it('a changed field, a removed line and a signature from another key each fail verification naming the line and the reason', async () => {
    const lines = linesOf(file);
    const changed = JSON.parse(lines[1]!) as { payload: string };
    const p = payloadOf(lines[1]!);
    p.disposition = 'approved-executed';
    p.task.status = 'completed';
    changed.payload = Buffer.from(canonicalJson(p)).toString('base64url');
    const tampered = join(out, 'changed.jsonl');
    writeFileSync(tampered, [lines[0], JSON.stringify(changed), lines[2]].join('\n'));
    const r1 = await cli(['verify', tampered, '--jwks', jwksUrl]);
    expect(r1.code).toBe(1);
    expect(r1.stderr).toContain(`${tampered}:2: signature does not verify with the published key`);
    expect(r1.stderr).toContain('FAILED: 1 problem(s) in 3 receipt(s)');

    // the same checks in process (the CLI's verifier, packages/receipts/src/receipt.ts), on the real export
    const jwks = (await (await fetch(jwksUrl)).json()) as JSONWebKeySet;
    const removed = await verifyReceiptLines([lines[0], lines[2]].join('\n'), jwks);
    expect(removed.failures).toEqual([{ line: 2, reason: 'chain broken: seq 3 follows seq 1 (a receipt is missing or out of order)' }]);

    const other = await parseReceiptKey(JSON.stringify(await generateReceiptJwk()), 'other');
    const forged = await new FlattenedSign(new TextEncoder().encode(canonicalJson(payloadOf(lines[2]!))))
      .setProtectedHeader({ alg: 'EdDSA', kid: jwks.keys[0]!.kid!, typ: RECEIPT_TYP })
      .sign(other.privateKey);
    const foreign = await verifyReceiptLines([lines[0], lines[1], JSON.stringify(forged)].join('\n'), jwks);
    expect(foreign.failures).toEqual([{ line: 3, reason: 'signature does not verify with the published key' }]);
    expect((await verifyReceiptLines(lines.join('\n'), jwks)).ok).toBe(true);
  });

  it('bad input is a usage error with a clear message', async () => {
    const r = await cli(['export', '--since', 'last week']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--since "last week" is neither an ISO 8601 date-time/);
  });
});

describe('hidden values in exported receipts (docs/APPROVERS.md §Hidden values)', () => {
  const reference = `INV-${randomUUID().slice(0, 12)}`;
  let taskId: string;
  beforeAll(async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `hidden ${randomUUID().slice(0, 8)}`;
    const t = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 60_000, memo, reference },
    });
    taskId = t.taskId;
    expect(await decide(stack, memo, 'approve', 'bob')).toBe(200);
    expect((await waitForTerminal(alice, taskId)).result?._meta?.[DISPOSITION]).toBe('approved-executed');
    const ids = parseTaskId(taskId)!;
    await stack.temporal.workflow.getHandle(ids.workflowId, ids.runId).result();
  }, 60_000);

  const lineOf = (file: string) =>
    linesOf(file)
      .map((l) => JSON.parse(l) as { arguments: Record<string, unknown>; redacted?: string[] })
      .find((l) => payloadOf(JSON.stringify(l)).task.taskId === taskId)!;

  it('export --include-arguments writes a hidden field as its sha256: digest, named in redacted, and verify says those arguments were not checked', async () => {
    const file = join(out, 'hidden-digest.jsonl');
    const r = await cli(['export', '--since', '1h', '--include-arguments', '--out', file]);
    expect(r.code).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toContain(reference);
    const line = lineOf(file);
    expect(line.arguments['reference']).toBe(`sha256:${jcsSha256(reference)}`);
    expect(line.arguments['to']).toBe('acct-991');
    expect(line.redacted).toEqual(['/reference']);
    const v = await cli(['verify', file, '--jwks', jwksUrl]);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain('ok: 4 receipt(s) verified');
    expect(v.stdout).toMatch(/:4: disclosed arguments hide \/reference \(sha256: digests\): not checked against the binding digest/);
    expect(v.stdout + v.stderr).not.toContain(reference);
    // the issuing log (receipts.db and its WAL) holds receipts only, never an argument
    const logFiles = readdirSync(config.COUNTERSIGN_DATA_DIR).filter((f) => f.startsWith(RECEIPT_LOG_FILE_NAME));
    expect(logFiles).toContain(RECEIPT_LOG_FILE_NAME);
    for (const f of logFiles) expect(readFileSync(join(config.COUNTERSIGN_DATA_DIR, f)).toString('latin1')).not.toContain(reference);
  });

  it('export --include-arguments --include-hidden writes the real value, and those arguments verify against the binding digest', async () => {
    const file = join(out, 'hidden-clear.jsonl');
    expect((await cli(['export', '--since', '1h', '--include-arguments', '--include-hidden', '--out', file])).code).toBe(0);
    const line = lineOf(file);
    expect(line.arguments['reference']).toBe(reference);
    expect(line.redacted).toBeUndefined();
    const v = await cli(['verify', file, '--jwks', jwksUrl]);
    expect(v).toMatchObject({ code: 0, stderr: '' });
    expect(v.stdout).not.toContain('not checked');
    // a hidden value put back in clear under redacted is refused
    const forged = join(out, 'hidden-forged.jsonl');
    writeFileSync(
      forged,
      linesOf(file)
        .map((l) => (payloadOf(l).task.taskId === taskId ? JSON.stringify({ ...JSON.parse(l), redacted: ['/reference'] }) : l))
        .join('\n'),
    );
    const f = await cli(['verify', forged, '--jwks', jwksUrl]);
    expect(f.code).toBe(1);
    expect(f.stderr).toContain('redacted names "/reference", which the disclosed arguments do not hold as a sha256: digest');
  });

  it('--include-hidden without --include-arguments is a usage error', async () => {
    const r = await cli(['export', '--since', '1h', '--include-hidden']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--include-hidden needs --include-arguments');
  });
});
