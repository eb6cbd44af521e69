// Scope: the fault matrix's oracle (`violationsOf`, test/faults/trials.ts) can fail. Fed the
// observations a broken worker produces — the execute activity retried (maximumAttempts 3) without
// the attempt > 1 refusal, so the tool runs twice under one execution id and the UNIQUE ledger
// deduplicates the second row — it must report violations; fed a correct run, none.
import { describe, expect, it } from 'vitest';
import { expectationOf, violationsOf, type TaskOutcome } from './trials.js';

const task = (over: Partial<TaskOutcome>): TaskOutcome => ({
  taskId: 'abc123.run-1',
  status: 'completed',
  disposition: 'approved-executed',
  ledgerRows: 1,
  invocations: 1,
  backendRows: 1,
  backendPerGeneration: { 1: 1 },
  lost: false,
  ...over,
});

describe('fault oracle', () => {
  it('the mutation pattern (tool run twice, the ledger deduplicated the second row) is a violation at every point', () => {
    const twice = task({ invocations: 2, ledgerRows: 1, disposition: 'approved-executed' });
    for (const point of ['tool.effect.before', 'tool.effect.after', 'worker.evaluate.after'] as const) {
      expect(violationsOf(twice, expectationOf(point)), point).toContain('2 tool invocations (at most once)');
    }
    expect(violationsOf(twice)).toContain('2 tool invocations (at most once)'); // even without an expectation
  });

  it('a re-run after the claim that looks clean on the ledger (retry invoked the tool once, approved-executed) is a violation where the point predicts execution-error', () => {
    // worker.execute.before: killed before the tool; a retrying worker runs it once → 1 row, 1 invocation
    const retried = task({ invocations: 1, ledgerRows: 1, disposition: 'approved-executed' });
    expect(violationsOf(retried)).toEqual([]); // the invariants alone cannot see it …
    expect(violationsOf(retried, expectationOf('worker.execute.before'))).toEqual([
      'disposition approved-executed, expected execution-error',
      '1 ledger rows, expected 0',
      '1 invocations, expected 0',
    ]); // … the point's expectation does
  });

  it('the correct outcomes of the lost-execution points have no violation', () => {
    expect(
      violationsOf(task({ disposition: 'execution-error', ledgerRows: 0, invocations: 0 }), expectationOf('worker.execute.before')),
    ).toEqual([]);
    expect(
      violationsOf(task({ disposition: 'execution-error', ledgerRows: 0, invocations: 1 }), expectationOf('tool.effect.before')),
    ).toEqual([]);
    expect(violationsOf(task({}), expectationOf('tool.effect.after'))).toEqual([]);
  });

  it('contradictions and losses are violations: a denial with a ledger row, approved-executed without one, a doubled backend request, a lost task', () => {
    expect(violationsOf(task({ disposition: 'denied-not-executed', ledgerRows: 1 }))).toContain(
      'denied-not-executed, but the tool was invoked or wrote a row',
    );
    expect(violationsOf(task({ ledgerRows: 0 }))).toContain('approved-executed without its ledger row');
    expect(violationsOf(task({ invocations: 0 }))).toContain('1 ledger rows but 0 invocations');
    expect(violationsOf(task({ backendPerGeneration: { 1: 2 }, backendRows: 2 }))).toContain('generation 1: 2 backend requests');
    expect(violationsOf(task({ lost: true }))).toContain('task lost');
  });
});
