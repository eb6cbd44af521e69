// Scope: `npm run bench:call-records [N]`: what a call record (src/policy/call-records.ts) costs,
// with the real AES-256-GCM payload codec and a real file in the OS temp folder, for N records
// (default 5,000) of the demo's allowed transfer ({to, amount, memo}). Prints, as JSON:
// - answerPathUs: wall time of `observe` per call, µs — what recording adds before the gate answers
//   (the outcome, the time and a place in the queue; the call reference, an HMAC of the binding
//   digest, is computed with the record, later), and answerPathCpuUs the CPU time of the same;
// - appendWallUs: wall time per record from the first observe until every record is on disk, µs
//   (written one after another, each a turn of the event loop later);
// - cpuUs: CPU time of this process (user + system) per record over the same span, µs;
// - bytesPerRecord: bytes on disk per record (one JSON line);
// plus the counter values, the cores and the load average. Runs on whatever else the machine is doing: compare runs on one machine.
// Deliberately does not: start Temporal or the front (a record involves neither), or measure reads.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@countersign/http/log';
import { approvalWorkflowId, createCallBinding } from '../src/binding/call-binding.js';
import { createAppMetrics } from '../src/ops/metrics.js';
import { createCallRecorder } from '../src/policy/call-records.js';
import type { AccessEvaluationRequest, Decision } from '../src/policy/pdp.js';
import { AesGcmPayloadCodec } from '../src/temporal/payload-codec.js';

const N = Number(process.argv[2] ?? 5000);
const WARMUP = 200;
const principal = { iss: 'http://127.0.0.1:8789', sub: 'alice' };
const ALLOW: Decision = { decision: 'allow', policyIds: ['wire-transfer-permit'] };
const dedupKey = randomBytes(32).toString('hex');

function call(i: number): { request: AccessEvaluationRequest; ref: () => string } {
  const args = { to: 'acct-100', amount: 10_000, memo: `demo ${(0x10000000 + i).toString(16)} small` };
  return {
    request: {
      subject: principal,
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: 'wire_transfer' },
      context: { arguments: args },
    },
    // as the gate's: the binding (JCS + SHA-256) and its HMAC, computed when the record is written
    ref: () =>
      approvalWorkflowId(
        dedupKey,
        createCallBinding({ tool: 'wire_transfer', arguments: args, principal, toolDescriptorDigest: 'sha256:bench' }).digest,
      ),
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-bench-call-records-'));
  const metrics = createAppMetrics();
  const recorder = createCallRecorder({
    dir,
    codec: new AesGcmPayloadCodec({ keys: { k1: randomBytes(32) }, currentKeyId: 'k1' }),
    instance: 'bench',
    logger: createLogger({ level: 'silent' }),
    metrics,
  });
  for (let i = 0; i < WARMUP; i++) {
    const c = call(-1 - i);
    recorder.observe(c.request, ALLOW, c.ref);
  }
  await recorder.idle();
  const warmBytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);

  const calls = Array.from({ length: N }, (_, i) => call(i));
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (const c of calls) recorder.observe(c.request, ALLOW, c.ref);
  const t1 = process.hrtime.bigint();
  const answerCpu = process.cpuUsage(cpu0);
  await recorder.idle();
  const t2 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const bytes = readdirSync(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0) - warmBytes;
  const counted = Object.fromEntries((await metrics.callRecords.get()).values.map((v) => [v.labels.result, v.value]));
  rmSync(dir, { recursive: true, force: true });
  const us = (ns: bigint) => Number(ns) / 1000 / N;
  process.stdout.write(
    `${JSON.stringify(
      {
        records: N,
        answerPathUs: Number(us(t1 - t0).toFixed(2)),
        answerPathCpuUs: Number(((answerCpu.user + answerCpu.system) / N).toFixed(2)),
        appendWallUs: Number(us(t2 - t0).toFixed(1)),
        cpuUs: Number(((cpu.user + cpu.system) / N).toFixed(1)),
        bytesPerRecord: Math.round(bytes / N),
        counted,
        node: process.version,
        cores: cpus().length,
        loadAverage1m: Number(loadavg()[0]!.toFixed(2)),
      },
      null,
      2,
    )}\n`,
  );
}

void main();
