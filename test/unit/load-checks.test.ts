// Scope: the load run's own judgements (bench/load/), which must be able to fail: the exactly-once
// check over a real ledger file (src/tools/ledger.ts), the mix of the open-model traffic, and the
// report's memory table (one column per process of the target).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkExactlyOnce, readToolRecords } from '../../bench/load/exactly-once.js';
import { memorySection } from '../../bench/load/report.js';
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

describe('memory table of the load report', () => {
  it("has one column per process of a cluster run, in the layout order, with each one's end / warm-up ratio", () => {
    const names = ['approvals', 'issuer', 'worker-1', 'worker-2', 'mcp-1', 'mcp-2', 'temporal', 'postgres'];
    const rss = (base: number) => Object.fromEntries(names.map((n, i) => [n, base + i]));
    const lines = memorySection({
      processes: names.map((name, i) => ({ name, pid: 100 + i, role: name })),
      memory: [
        { label: 'start', atS: 0, rssMiB: rss(10) },
        { label: 'after warm-up', atS: 60, rssMiB: { ...rss(100), 'mcp-2': null } },
        { label: 'end', atS: 120, rssMiB: rss(100) },
      ],
    });
    expect(lines).toContain(`| point | at (s) | ${names.join(' | ')} |`);
    expect(lines).toContain(`|---|---:|${'---:|'.repeat(names.length)}`);
    expect(lines).toContain('| after warm-up | 60 | 100 | 101 | 102 | 103 | 104 | – | 106 | 107 |');
    const growth = lines.find((l) => l.startsWith('RSS at the end / after warm-up:'));
    expect(growth).toBe(
      'RSS at the end / after warm-up: approvals 1.00×, issuer 1.00×, worker-1 1.00×, worker-2 1.00×, mcp-1 1.00×, mcp-2 –, temporal 1.00×, postgres 1.00×.',
    );
  });

  it('keeps the two columns main and temporal for a run recorded before --target', () => {
    const lines = memorySection({
      memory: [
        { label: 'after warm-up', atS: 60, mainMiB: 200, temporalMiB: 100 },
        { label: 'end', atS: 600, mainMiB: 220, temporalMiB: 100 },
      ],
    });
    expect(lines).toContain('| point | at (s) | main | temporal |');
    expect(lines).toContain('| end | 600 | 220 | 100 |');
    expect(lines).toContain('RSS at the end / after warm-up: main 1.10×, temporal 1.00×.');
  });
});
