// Scope: the kit's one rule set, without a server under test: every response the suite records is
// judged by the static vectors' verifier (src/judge.ts over vectors/verify.mjs) — a violation names
// the vector rule id, the JSON path and the check it fails; an earlier terminal answer is paired with
// a later one only when it arrived before the later request was sent — and the kit's command line
// runs the vectors (`countersign-conformance vectors [dir] [--json]`).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RULES } from '../vectors/verify.mjs';
import { EVERY_RESPONSE_CHECK, judgeExchanges, RULE_OWNERS } from '../src/judge.js';
import { AUTHZ, DISPOSITION, type Exchange, type Obj } from '../src/wire.js';

const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const createdAt = '2026-12-02T04:00:00.000Z';
let clock = 0;
/** A recorded exchange of `method` answered `result`, sent and received at the next ticks. */
function exchange(method: string, params: Obj, result: Obj): Exchange {
  const id = clock + 1;
  const request = { jsonrpc: '2.0', id, method, params: { ...params, _meta: { 'io.modelcontextprotocol/clientCapabilities': caps } } };
  const message = { jsonrpc: '2.0', id, result };
  const sent = clock++;
  return { sent, seq: clock++, who: 'A', method, params, request, httpStatus: 200, raw: JSON.stringify(message), message, result };
}
const envelope = { reason: 'insufficient_authorization', remediation: 'available', remediationHints: [{ type: 'task' }] };
const task = (status: string, extra: Obj = {}): Obj => ({
  taskId: 't1',
  status,
  createdAt,
  lastUpdatedAt: createdAt,
  ttlMs: 600_000,
  ...extra,
});
const working = () =>
  exchange(
    'tools/call',
    { name: 'wire_transfer' },
    { resultType: 'task', ...task('working'), statusMessage: 'Awaiting approval.', _meta: { [AUTHZ]: envelope } },
  );
const completed = (text: string) =>
  exchange(
    'tasks/get',
    { taskId: 't1' },
    {
      resultType: 'complete',
      ...task('completed'),
      result: { content: [{ type: 'text', text }], _meta: { [DISPOSITION]: 'approved-executed' } },
    },
  );
const run = { approvers: ['bob'], backendArtifacts: ['ar_secretRequest1'], untrusted: [] };

describe('every response judged by the vectors’ verifier', () => {
  it('a conforming exchange sequence has no violation, and every verifier rule is listed with the check it rests on', () => {
    const j = judgeExchanges([working(), completed('The transfer ran.')], run);
    expect(j.violations).toEqual([]);
    expect(j.responses).toBe(2);
    expect(j.rules.map((r) => r.id)).toEqual(Object.keys(RULES));
    expect(j.rules.find((r) => r.id === 'terminal.stable')?.check).toBe('conf:terminal-state-stable');
    expect(j.rules.find((r) => r.id === 'task.fields')?.check).toBe(EVERY_RESPONSE_CHECK);
  });

  it('a violation names the vector rule id, the JSON path, the method and the check that fails on it', () => {
    const leaky = exchange(
      'tasks/get',
      { taskId: 't1' },
      { resultType: 'complete', ...task('working'), statusMessage: 'Approved by bob; it has been executed.', _meta: { [AUTHZ]: envelope } },
    );
    const j = judgeExchanges([working(), leaky], run);
    expect(j.violations.map((v) => [v.rule, v.path, v.method, v.check])).toEqual([
      ['artifacts.no-approver-identity', '$.result.statusMessage', 'tasks/get', 'conf:no-backend-artifacts'],
      ['artifacts.no-approver-identity', '$.result.statusMessage', 'tasks/get', 'conf:no-backend-artifacts'],
      ['pending.not-completed', '$.result.statusMessage', 'tasks/get', 'conf:pending-not-presented-completed'],
    ]);
  });

  it('once a task was answered terminal, a later answer that differs violates terminal.stable; an answer to a request sent before the terminal one arrived is not compared', () => {
    const created = working();
    const first = completed('The transfer ran.');
    const overlapping: Exchange = { ...completed('The transfer ran again.'), sent: first.seq - 1 };
    const later = completed('The transfer ran twice.');
    const j = judgeExchanges([created, first, overlapping, later], run);
    expect(j.violations.map((v) => [v.rule, v.path, v.seq])).toEqual([['terminal.stable', '$.result', later.seq]]);
  });

  it('the backend artifacts the hooks showed are looked for in every response (artifacts.none)', () => {
    const j = judgeExchanges(
      [
        exchange(
          'tasks/get',
          { taskId: 't1' },
          { resultType: 'complete', ...task('working'), statusMessage: 'Request ar_secretRequest1 pending.' },
        ),
      ],
      run,
    );
    expect(j.violations.map((v) => [v.rule, v.path, v.check])).toEqual([['artifacts.none', '$', 'conf:no-backend-artifacts']]);
  });

  it('the rules the cross-cutting checks own are the ones the vectors’ author mapped to them', () => {
    const byCheck: Record<string, string[]> = {};
    for (const [rule, check] of Object.entries(RULE_OWNERS)) (byCheck[check!] ??= []).push(rule);
    expect(byCheck).toEqual({
      'conf:envelope-on-nonterminal': ['envelope.pending'],
      'conf:envelope-only-on-denials': ['envelope.terminal'],
      'conf:disposition-on-completed': ['disposition.present', 'disposition.body-agrees', 'disposition.only-completed'],
      'conf:pending-not-presented-completed': ['pending.not-completed'],
      'conf:no-backend-artifacts': ['artifacts.none', 'artifacts.no-approver-identity'],
      'conf:terminal-state-stable': ['terminal.stable'],
    });
  });
});

describe('countersign-conformance vectors', () => {
  const bin = fileURLToPath(new URL('../bin/countersign-conformance.mjs', import.meta.url));
  const kit = (...args: string[]) =>
    spawnSync(process.execPath, ['--conditions=countersign-source', bin, 'vectors', ...args], { encoding: 'utf8' });

  it('runs the kit’s own vectors and exits 0; --json prints the report; a path without vectors exits 2', () => {
    const plain = kit();
    expect({ code: plain.status, last: plain.stdout.trim().split('\n').at(-1) }).toMatchObject({
      code: 0,
      last: expect.stringMatching(/^\d+ passed, 0 failed$/),
    });
    const json = kit('--json');
    const report = JSON.parse(json.stdout) as { passed: number; failed: unknown[]; malformed: unknown[] };
    expect({ code: json.status, failed: report.failed, malformed: report.malformed }).toEqual({ code: 0, failed: [], malformed: [] });
    expect(report.passed).toBeGreaterThanOrEqual(100);
    const none = kit(fileURLToPath(new URL('../src', import.meta.url)));
    expect({ code: none.status, out: none.stdout }).toMatchObject({
      code: 2,
      out: expect.stringMatching(/^MALFORMED .*holds no \*\.json vector files$/m),
    });
  });
});
