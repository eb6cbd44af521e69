// Scope: the load run's own judgements (bench/load/), which must be able to fail: the exactly-once
// check over a real ledger file (src/tools/ledger.ts) and the mix of the open-model traffic.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkExactlyOnce, readToolRecords } from '../../bench/load/exactly-once.js';
import { parseMix, weightedSequence } from '../../bench/load/traffic.js';
import { openLedger, type Ledger } from '../../src/tools/ledger.js';

let dir: string;
let ledger: Ledger;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-load-check-'));
  ledger = openLedger(join(dir, 'ledger.db'));
});
afterEach(() => {
  ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One execution as the tool records it: a tool entry, then its ledger row. */
function execute(executionId: string, memo: string): void {
  ledger.recordInvocation({ executionId, taskId: `task-${memo}` });
  ledger.record({ executionId, taskId: `task-${memo}`, to: 'acct-200', amount: 50_000, memo });
}

describe('exactly-once check of a load run', () => {
  it('passes when every approved call executed once and nothing unapproved executed', () => {
    execute('e1', 'gated-1');
    execute('e2', 'gated-2');
    const r = checkExactlyOnce(
      [
        { memo: 'gated-1', approved: true },
        { memo: 'gated-2', approved: true },
        { memo: 'gated-3', approved: false },
      ],
      readToolRecords(dir),
    );
    expect(r).toMatchObject({ ok: true, approved: 2, executedOnce: 2 });
  });

  it('fails, naming the call, when an approved call never executed, executed twice, or its tool was entered twice', () => {
    execute('e1', 'twice');
    execute('e2', 'twice');
    execute('e3', 'entered-twice');
    ledger.recordInvocation({ executionId: 'e3', taskId: 'task-entered-twice' });
    const r = checkExactlyOnce(
      [
        { memo: 'never', approved: true },
        { memo: 'twice', approved: true },
        { memo: 'entered-twice', approved: true },
      ],
      readToolRecords(dir),
    );
    expect(r.ok).toBe(false);
    expect(r.notExecuted).toEqual(['never']);
    expect(r.executedMoreThanOnce).toEqual(['twice', 'entered-twice']);
    expect(r.executedOnce).toBe(0);
  });

  it('reports an approved task still unfinished when following stopped as not finished, apart from the safety verdict', () => {
    execute('e1', 'done');
    const r = checkExactlyOnce(
      [
        { memo: 'done', approved: true },
        { memo: 'slow', approved: true, unfinished: true },
      ],
      readToolRecords(dir),
    );
    expect(r).toMatchObject({ ok: true, executedOnce: 1, notFinished: ['slow'], notExecuted: [] });
  });

  it('fails when a gated call that was not approved executed', () => {
    execute('e1', 'unapproved');
    const r = checkExactlyOnce([{ memo: 'unapproved', approved: false }], readToolRecords(dir));
    expect(r.ok).toBe(false);
    expect(r.executedWithoutApproval).toEqual(['unapproved']);
  });
});

describe('traffic mix', () => {
  it('sends each kind in exact proportion to its weight over one cycle', () => {
    const next = weightedSequence(parseMix('get=6,allowed=3,gated=1', ['get', 'allowed', 'gated'] as const));
    const counts: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
      const k = next();
      counts[k] = (counts[k] ?? 0) + 1;
    }
    expect(counts).toEqual({ get: 60, allowed: 30, gated: 10 });
  });

  it('refuses a mix with an unknown kind or no positive weight', () => {
    expect(() => parseMix('get=6,posts=3', ['get', 'allowed', 'gated'] as const)).toThrow(/bad entry "posts=3"/);
    expect(() => parseMix('get=0', ['get', 'allowed', 'gated'] as const)).toThrow(/every weight is 0/);
  });
});
