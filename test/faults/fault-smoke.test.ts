// Scope: the reduced fault-injection run of `npm test`: one trial of six matrix points
// on the real stack run as separate processes (`countersign serve --role …`), each killed with
// SIGKILL and restarted. `npm run faults` runs the full matrix (≥ 20 trials per point).
import { describe, expect, it } from 'vitest';
import { runMatrix } from './matrix.js';
import { expectationOf, type PointId } from './trials.js';

const SMOKE: PointId[] = [
  'worker.submit.after',
  'approvals.submit.after-store',
  'mcp.create.after-start',
  'tool.effect.before',
  'tool.effect.after',
  'callback.replay',
];

describe('fault-injection smoke (one trial per point)', () => {
  it('no doubled backend request, no doubled or missing ledger row, no lost task when the worker, approval service or MCP server is killed mid-step, and a replayed callback changes nothing', async () => {
    const run = await runMatrix({ points: SMOKE, trials: 1, command: 'vitest test/faults/fault-smoke.test.ts' });
    const failures = run.results.flatMap((r) => r.violations.map((v) => `${r.point}: ${v}`));
    expect(failures).toEqual([]);
    for (const s of run.summaries) {
      const e = expectationOf(s.point);
      expect(s.lost, s.point).toBe(0);
      expect(s.maxBackendPerGeneration, s.point).toBe(1);
      expect(s.maxLedgerRows, s.point).toBe(e.ledger);
      expect(s.maxInvocations, s.point).toBe(e.invocations);
      // a worker killed after the ledger commit reports the recorded transfer; one killed in the
      // tool before it is fenced: execution-error, nothing written
      expect(s.outcomes, s.point).toEqual({ [e.expect]: s.tasks });
    }
    // every kill was a real SIGKILL at the named point (violations would say otherwise)
    for (const r of run.results) if (r.point !== 'callback.replay') expect(r.notes.join(' '), r.point).toMatch(/SIGKILLed/);
    expect(run.summaries.map((s) => s.point)).toEqual(SMOKE);
  }, 420_000);
});
