// Scope: keeps `npm run bench` from rotting: runs its smoke mode (tiny N, one run) against the
// real stack, with the worker and MCP servers as their own processes, and checks that every
// scenario produced numbers and the report has every section. No timing assertions.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBench } from '../bench/run.js';

const outDir = mkdtempSync(join(tmpdir(), 'countersign-bench-smoke-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

const finite = (n: unknown) => typeof n === 'number' && Number.isFinite(n);
const positive = (n: unknown) => finite(n) && (n as number) > 0;

describe('bench smoke', () => {
  it('runs every scenario and writes numeric results, the plot and the report', { timeout: 240_000 }, async () => {
    await runBench({ smoke: true, outDir, writeMarkdown: true, log: () => undefined });
    const json = JSON.parse(readFileSync(join(outDir, 'results.smoke.json'), 'utf8')) as Awaited<ReturnType<typeof runBench>>;
    expect(json.mode).toBe('smoke');
    expect(json.machine.cores).toBeGreaterThan(0);

    const a = json.allowedCall;
    for (const f of [
      a.baseline.p50Ms,
      a.baseline.p99Ms,
      a.baselineWithJwt.p50Ms,
      a.countersign.p50Ms,
      a.countersign.p99Ms,
      a.ratio.p50,
      a.ratio.p99,
      a.ratioVsJwtBaseline.p50,
    ])
      expect(positive(f)).toBe(true);

    // the gateway scenario: both upstream kinds, direct and through the gateway
    for (const k of ['stdio', 'http'] as const) {
      const g = json.gatewayCall[k];
      for (const f of [g.direct.p50Ms, g.gateway.p50Ms, g.ratio.p50, g.benchCpuMsPerCall.direct, g.benchCpuMsPerCall.gateway])
        expect(positive(f)).toBe(true);
    }

    expect(json.taskCreation.levels.map((l) => l.concurrency)).toEqual([1, 4, 16]);
    for (const l of json.taskCreation.levels) {
      expect(positive(l.baselinePerSec) && positive(l.countersignPerSec) && positive(l.ratio)).toBe(true);
      expect(positive(l.countersignLatencyMs.p99Ms) && positive(l.baselineLatencyMs.p50Ms)).toBe(true);
      expect(positive(l.shapedPerSec) && positive(l.ratioVsShaped)).toBe(true);
      expect(positive(l.cpuMsPerTask.countersign.temporal)).toBe(true);
    }
    expect(json.taskCreation.cancelFailures).toBe(0);

    const ar = json.approveResult;
    expect(positive(ar.baseline.p50Ms) && positive(ar.countersign.p50Ms) && positive(ar.ratio.p99)).toBe(true);
    expect(positive(ar.shaped.p50Ms) && positive(ar.ratioVsShaped.p50)).toBe(true);
    expect(Object.keys(ar.dispositions)).toEqual(['approved-executed']);

    const x = json.actions;
    expect(Object.keys(x.approved.outcomes)).toEqual(['completed approved-executed']);
    expect(Object.keys(x.denied.outcomes)).toEqual(['completed denied-not-executed']);
    // counted from real histories: every task started a run, and only an approved one ran the tool
    expect(x.approved.perTask.workflowStarted).toBeGreaterThanOrEqual(1);
    expect(x.approved.activities.executeTool).toBe(1);
    expect(x.denied.activities.executeTool).toBeUndefined();
    expect(x.approved.total).toBeGreaterThan(x.denied.total);

    const n = json.approveNotify;
    expect(positive(n.notification.p50Ms) && positive(n.result.p50Ms) && positive(n.ratio.p50)).toBe(true);
    expect(Object.keys(n.dispositions)).toEqual(['approved-executed']);
    // a subscribed task is followed from its record and A's task feed, never by a query
    expect(n.subscribedQueryReads).toBe(0);
    expect(Object.values(n.subscribedReads).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

    const w = json.waitActions;
    expect(w.waits.map((x) => x.wait)).toEqual(['1 min', '1 h', '1 day', '7 days']);
    for (const x of w.waits) {
      expect(x.disposition).toBe('approved-executed');
      expect(x.fixed.workflowStarted).toBe(1);
      expect(x.pollAttempts).toBeGreaterThanOrEqual(1);
      expect(x.total.subscribed).toBe(x.total.record);
      expect(x.total.query).toBeCloseTo(x.total.record + x.clientReads, 2);
    }
    // longer waits: more poll attempts and reads, never fewer
    for (let i = 1; i < w.waits.length; i++) {
      expect(w.waits[i]!.pollAttempts).toBeGreaterThanOrEqual(w.waits[i - 1]!.pollAttempts);
      expect(w.waits[i]!.clientReads).toBeGreaterThan(w.waits[i - 1]!.clientReads);
    }
    expect(positive(w.ratio.record) && positive(w.ratio.today)).toBe(true);

    const rc = json.readCpu;
    for (const p of [rc.record, rc.query, rc.describe]) {
      expect(p.reads).toBeGreaterThan(0);
      expect(p.errors).toBe(0);
      expect(positive(p.latencyMs.p50Ms) && positive(p.cpuMsPerRead.stack)).toBe(true);
    }
    expect(rc.record.sources.query ?? 0).toBe(0);
    expect(rc.query.sources.query).toBe(rc.query.reads);
    expect(positive(rc.ratio.raw)).toBe(true);

    const s = json.scaleOut;
    expect(positive(s.oneInstancePerSec) && positive(s.twoInstancesPerSec) && positive(s.ratio)).toBe(true);
    expect(s.crossInstance.readOnB).toBe(s.crossInstance.createdOnA);
    expect(s.crossInstance.cancelledOnB).toBe(s.crossInstance.createdOnA);
    expect(s.requestsPerUpstream.every((n) => n > 0)).toBe(true);

    const b = json.backlog;
    expect(b.pending).toBe(40);
    expect(b.points.at(-1)!.pending).toBe(40);
    expect(positive(b.tasksGet.p99Ms) && positive(b.bareQuery.p99Ms) && positive(b.describeQuery.p99Ms) && positive(b.ratio.p99)).toBe(
      true,
    );
    expect(
      positive(b.points.at(-1)!.mcpRssMiB) && positive(b.points.at(-1)!.workerRssMiB) && positive(b.points.at(-1)!.mcpHeapAfterGcMiB),
    ).toBe(true);
    expect(b.workerSettings.maxCachedWorkflows).toBeGreaterThan(0);

    for (const p of ['mcp-a', 'mcp-b', 'mcp-q', 'worker', 'temporal', 'bench']) expect(positive(json.peakRssMiB[p])).toBe(true);

    expect(readFileSync(join(outDir, 'task-creation.smoke.svg'), 'utf8')).toMatch(/^<svg[\s\S]*<polyline[\s\S]*<\/svg>\n$/);
    const md = readFileSync(join(outDir, 'BENCHMARKS.md'), 'utf8');
    for (const h of [
      '## Allowed-call overhead',
      '## Task creation',
      '## Approve → result',
      '## Approve → notification',
      '## Temporal actions per task',
      '## Temporal actions by wait length (simulated time)',
      '## Read CPU: task record vs query',
      '## Scale-out',
      '## Backlog',
      '## Peak memory per process',
    ])
      expect(md).toContain(h);
    expect(md).toContain('| gateway allowed call vs the upstream called directly (stdio, same SDK client) |');
    expect(md).toContain('| gateway allowed call vs the upstream called directly (Streamable HTTP, same SDK client) |');
    expect(md).not.toContain('NaN');
  });
});
