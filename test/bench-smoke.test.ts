// Scope: keeps `npm run bench` from rotting: runs its smoke mode (tiny N, one run) against the
// real stack and checks the result shape. No timing assertions.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runBench } from '../bench/run.js';

const outDir = mkdtempSync(join(tmpdir(), 'countersign-bench-smoke-'));
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

const finite = (n: unknown) => typeof n === 'number' && Number.isFinite(n);

describe('bench smoke', () => {
  it('runs both scenarios and writes numeric results', async () => {
    const r = await runBench({ smoke: true, outDir, writeMarkdown: true, log: () => undefined });
    const json = JSON.parse(readFileSync(join(outDir, 'results.smoke.json'), 'utf8')) as typeof r;
    expect(json.mode).toBe('smoke');
    for (const f of [json.allowedCall.baseline.p50Ms, json.allowedCall.baseline.p99Ms, json.allowedCall.countersign.p50Ms, json.allowedCall.countersign.p99Ms, json.allowedCall.ratio.p50, json.allowedCall.ratio.p99]) {
      expect(finite(f)).toBe(true);
    }
    expect(json.taskCreation.levels.map((l) => l.concurrency)).toEqual([1, 4, 16]);
    for (const l of json.taskCreation.levels) {
      expect(finite(l.baselinePerSec) && l.baselinePerSec > 0).toBe(true);
      expect(finite(l.countersignPerSec) && l.countersignPerSec > 0).toBe(true);
      expect(finite(l.ratio)).toBe(true);
    }
    expect(json.taskCreation.cancelFailures).toBe(0);
    expect(finite(json.peakRss.benchProcessMiB)).toBe(true);
    expect(readFileSync(join(outDir, 'BENCHMARKS.md'), 'utf8')).toContain('Not yet implemented');
  });
});
