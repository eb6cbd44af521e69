// Scope: src/policy/call-records.ts on its own, with the real AES-256-GCM payload codec and real
// files in a temporary folder: what a record holds (and that no argument is on disk in the clear),
// which decisions are recorded, reading back for replay, the size limit, unreadable lines and the
// retention of day files. The whole path through the gate and `policy replay` is
// test/e2e/policy-replay-call-records.test.ts.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@countersign/http/log';
import { createAppMetrics, type AppMetrics } from '../../src/ops/metrics.js';
import { createCallRecorder, MAX_RECORD_BYTES, readCallRecords, type CallRecorder } from '../../src/policy/call-records.js';
import type { AccessEvaluationRequest, Decision } from '../../src/policy/pdp.js';
import { AesGcmPayloadCodec } from '../../src/temporal/payload-codec.js';

const codec = new AesGcmPayloadCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' });
const logger = createLogger({ level: 'silent' });
const alice = { iss: 'https://issuer.example', sub: 'alice' };

const ALLOW: Decision = { decision: 'allow', policyIds: ['wire-transfer-permit'] };
const DENY: Decision = { decision: 'deny', nextAction: 'none', reasons: ['blocked'], policyIds: ['wire-transfer-blocked'] };
const REQUESTABLE: Decision = {
  decision: 'deny',
  nextAction: 'request',
  reasons: ['over the limit'],
  policyIds: ['wire-transfer-over-limit'],
  accessRequest: { approverGroup: 'treasury', requestTtlMs: 604_800_000, reason: 'over the limit', policyId: 'wire-transfer-over-limit' },
};
const IN_BAND: Decision = { ...REQUESTABLE, accessRequest: { ...REQUESTABLE.accessRequest!, approvalMode: 'in-band' } };

function request(args: Record<string, unknown>, tool = 'wire_transfer'): AccessEvaluationRequest {
  return { subject: alice, action: { name: 'tools/call' }, resource: { type: 'tool', id: tool }, context: { arguments: args } };
}

function recorder(opts: { now?: () => number; retentionDays?: number; instance?: string } = {}): {
  dir: string;
  rec: CallRecorder;
  metrics: AppMetrics;
} {
  const dir = join(mkdtempSync(join(tmpdir(), 'countersign-call-records-unit-')), 'records');
  const metrics = createAppMetrics();
  const rec = createCallRecorder({ dir, codec, instance: opts.instance ?? 'front-1', logger, metrics, ...opts });
  return { dir, rec, metrics };
}

async function counted(metrics: AppMetrics, result: string): Promise<number> {
  const m = await metrics.callRecords.get();
  return m.values.find((v) => v.labels.result === result)?.value ?? 0;
}

const filesOf = (dir: string) => readdirSync(dir).sort();

describe('call records', () => {
  it('a record holds the time, tool, principal, keyed call reference and outcome, and the arguments only encrypted: no argument name or value is in the file', async () => {
    const { dir, rec, metrics } = recorder({ now: () => Date.parse('2026-12-04T10:00:00.000Z') });
    const planted = { to: 'acct-PLANTED-7c1e', amount: 73_919.42, memo: 'PLANTED memo 5b2d', beneficiary_name: 'PLANTED-name' };
    rec.observe(request(planted), ALLOW, () => 'approval-0123abcd');
    await rec.idle();
    expect(filesOf(dir)).toEqual(['calls-2026-12-04-front-1.jsonl']);
    const text = readFileSync(join(dir, 'calls-2026-12-04-front-1.jsonl'), 'utf8');
    for (const plain of ['acct-PLANTED-7c1e', '73919.42', 'PLANTED memo 5b2d', 'PLANTED-name', 'beneficiary_name', 'memo', 'json/plain'])
      expect(text).not.toContain(plain);
    const record = JSON.parse(text) as Record<string, unknown>;
    expect(record).toMatchObject({
      v: 1,
      at: '2026-12-04T10:00:00.000Z',
      ref: 'approval-0123abcd',
      tool: 'wire_transfer',
      principal: alice,
      outcome: 'allowed',
    });
    expect(Object.keys(record).sort()).toEqual(['at', 'outcome', 'payload', 'principal', 'ref', 'tool', 'v']);
    const encoding = Buffer.from((record.payload as { metadata: Record<string, string> }).metadata.encoding!, 'base64').toString();
    expect(encoding).toBe('binary/encrypted');
    expect(await counted(metrics, 'written')).toBe(1);
  });

  it('only calls that open no task are recorded: allowed and plainly denied, not requestable or in band', async () => {
    const { dir, rec } = recorder({ now: () => Date.parse('2026-12-04T10:00:00.000Z') });
    rec.observe(request({ n: 1 }), ALLOW, () => 'r1');
    rec.observe(request({ n: 2 }), DENY, () => 'r2');
    rec.observe(request({ n: 3 }), REQUESTABLE, () => 'r3');
    rec.observe(request({ n: 4 }), IN_BAND, () => 'r4');
    await rec.idle();
    const lines = readFileSync(join(dir, filesOf(dir)[0]!), 'utf8')
      .trim()
      .split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { ref: string; outcome: string }).outcome)).toEqual(['allowed', 'denied']);
  });

  it('observe returns before the record is written (off the answer path); idle resolves once it is on disk', async () => {
    const { dir, rec } = recorder();
    rec.observe(request({ to: 'acct-1' }), ALLOW, () => 'r1');
    expect(existsSync(dir)).toBe(false);
    await rec.idle();
    expect(filesOf(dir)).toHaveLength(1);
  });

  it('replay reads the records back through the codec, arguments as the gate evaluated them, oldest first, from or after --since', async () => {
    let clock = Date.parse('2026-12-03T23:59:00.000Z');
    const { dir, rec } = recorder({ now: () => clock });
    rec.observe(request({ to: 'acct-old', amount: 1 }), ALLOW, () => 'r-old');
    await rec.idle();
    clock = Date.parse('2026-12-04T00:01:00.000Z');
    rec.observe(request({ to: 'acct-2', amount: 2, nested: { tags: ['a', 'b'] } }), DENY, () => 'r2');
    clock = Date.parse('2026-12-04T00:00:30.000Z');
    rec.observe(request({ to: 'acct-1', amount: 1.5 }), ALLOW, () => 'r1');
    await rec.idle();
    expect(filesOf(dir)).toEqual(['calls-2026-12-03-front-1.jsonl', 'calls-2026-12-04-front-1.jsonl']);

    const read = await readCallRecords(dir, codec, Date.parse('2026-12-04T00:00:00.000Z'));
    expect(read.unreadable).toBe(0);
    expect(read.calls).toEqual([
      { ref: 'r1', at: '2026-12-04T00:00:30.000Z', tool: 'wire_transfer', principal: alice, arguments: { to: 'acct-1', amount: 1.5 } },
      {
        ref: 'r2',
        at: '2026-12-04T00:01:00.000Z',
        tool: 'wire_transfer',
        principal: alice,
        arguments: { to: 'acct-2', amount: 2, nested: { tags: ['a', 'b'] } },
      },
    ]);
    expect((await readCallRecords(dir, codec, 0)).calls.map((c) => c.ref)).toEqual(['r-old', 'r1', 'r2']);
  });

  it('a missing folder reads as no calls', async () => {
    expect(await readCallRecords(join(tmpdir(), `countersign-none-${randomBytes(6).toString('hex')}`), codec, 0)).toEqual({
      calls: [],
      unreadable: 0,
    });
  });

  it('a record over the size limit is skipped and counted, and the next call is recorded', async () => {
    const { dir, rec, metrics } = recorder({ now: () => Date.parse('2026-12-04T10:00:00.000Z') });
    rec.observe(request({ blob: 'x'.repeat(MAX_RECORD_BYTES) }), ALLOW, () => 'big');
    rec.observe(request({ to: 'acct-1' }), ALLOW, () => 'small');
    await rec.idle();
    expect(await counted(metrics, 'skipped')).toBe(1);
    expect(await counted(metrics, 'written')).toBe(1);
    expect((await readCallRecords(dir, codec, 0)).calls.map((c) => c.ref)).toEqual(['small']);
  });

  it('a line that is not a record, or that another key sealed, is counted unreadable and the rest are read', async () => {
    const { dir, rec } = recorder({ now: () => Date.parse('2026-12-04T10:00:00.000Z') });
    rec.observe(request({ to: 'acct-1' }), ALLOW, () => 'mine');
    await rec.idle();
    const other = createCallRecorder({
      dir,
      codec: new AesGcmPayloadCodec({ keys: { k9: randomBytes(32) }, currentKeyId: 'k9' }),
      instance: 'front-2',
      logger,
      now: () => Date.parse('2026-12-04T10:00:01.000Z'),
    });
    other.observe(request({ to: 'acct-2' }), ALLOW, () => 'foreign');
    await other.idle();
    writeFileSync(join(dir, 'calls-2026-12-04-front-3.jsonl'), '{"truncated":\nnot json\n');
    writeFileSync(join(dir, 'notes.txt'), 'not a day file, not read\n');
    const read = await readCallRecords(dir, codec, 0);
    expect(read.calls.map((c) => c.ref)).toEqual(['mine']);
    expect(read.unreadable).toBe(3);
  });

  it('each front instance writes its own file, its name made safe for a file name', async () => {
    const { dir, rec } = recorder({ instance: 'mcp/host:8787', now: () => Date.parse('2026-12-04T10:00:00.000Z') });
    rec.observe(request({ to: 'acct-1' }), ALLOW, () => 'r1');
    await rec.idle();
    expect(filesOf(dir)).toEqual(['calls-2026-12-04-mcp_host_8787.jsonl']);
  });

  it('when a new UTC day begins, day files older than the retention are deleted and newer ones kept', async () => {
    let clock = Date.parse('2026-11-20T12:00:00.000Z');
    const { dir, rec } = recorder({ retentionDays: 7, now: () => clock });
    for (const day of ['2026-11-20', '2026-11-27', '2026-11-28']) {
      clock = Date.parse(`${day}T12:00:00.000Z`);
      rec.observe(request({ day }), ALLOW, () => day);
      await rec.idle();
    }
    // a file of another instance of an expired day goes too; unrelated files stay
    writeFileSync(join(dir, 'calls-2026-11-01-front-2.jsonl'), '');
    writeFileSync(join(dir, 'README'), '');
    clock = Date.parse('2026-12-04T00:00:05.000Z');
    rec.observe(request({ day: 'today' }), ALLOW, () => 'today');
    await rec.idle();
    expect(filesOf(dir)).toEqual([
      'README',
      'calls-2026-11-27-front-1.jsonl',
      'calls-2026-11-28-front-1.jsonl',
      'calls-2026-12-04-front-1.jsonl',
    ]);
  });
});
