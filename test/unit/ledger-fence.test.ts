// Scope: the ledger's side of the tool idempotency hook: `settle` answers the recorded
// transfer or fences the execution id, and `wire_transfer.resolveExecution` reports the same
// result `execute` did, never writing a row itself.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { LedgerError, openLedger } from '../../src/tools/ledger.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';

describe('ledger settle / fence', () => {
  it('settling a recorded execution returns its row and writes nothing', () => {
    const ledger = openLedger(':memory:');
    ledger.record({ executionId: 'task-1/execution', taskId: 'task-1', to: 'acct-991', amount: 50000 });
    const s = ledger.settle('task-1/execution');
    expect('entry' in s && s.entry).toMatchObject({ executionId: 'task-1/execution', amountCents: 5_000_000, to: 'acct-991' });
    expect(ledger.count()).toBe(1);
  });

  it('settling an execution that never recorded fences it: a late record is refused with LedgerError fenced, and settle keeps answering not executed', () => {
    const ledger = openLedger(':memory:');
    expect(ledger.settle('task-2/execution')).toEqual({ fenced: true });
    let err: unknown;
    try {
      ledger.record({ executionId: 'task-2/execution', taskId: 'task-2', to: 'acct-991', amount: 50000 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LedgerError);
    expect((err as LedgerError).code).toBe('fenced');
    expect(ledger.countByTask('task-2')).toBe(0);
    expect(ledger.settle('task-2/execution')).toEqual({ fenced: true });
    // other execution ids are unaffected
    expect(ledger.record({ executionId: 'task-3/execution', to: 'acct-991', amount: 1 }).duplicate).toBe(false);
  });

  it('wire_transfer.resolveExecution reports the recorded transfer exactly as execute did, or not executed', async () => {
    const ledger = openLedger(':memory:');
    const tool = createWireTransferTool(ledger);
    const ran = await tool.execute({ to: 'acct-991', amount: 50000, memo: 'm' }, { taskId: 'task-4', executionId: 'task-4/execution' });
    expect(await tool.resolveExecution!('task-4/execution')).toEqual({ executed: true, result: ran });
    expect(await tool.resolveExecution!('task-5/execution')).toEqual({ executed: false });
    await expect(
      tool.execute({ to: 'acct-991', amount: 50000 }, { taskId: 'task-5', executionId: 'task-5/execution' }),
    ).rejects.toMatchObject({ code: 'fenced' });
    expect(ledger.count()).toBe(1);
  });

  it('the invocation audit trail counts every entry into wire_transfer — a duplicate the ledger deduplicates and a fenced attempt included — so a second run cannot hide', async () => {
    const ledger = openLedger(':memory:');
    const tool = createWireTransferTool(ledger);
    const args = { to: 'acct-991', amount: 50000, memo: 'm' } as const;
    await tool.execute(args, { taskId: 'task-8', executionId: 'task-8/execution' });
    await tool.execute(args, { taskId: 'task-8', executionId: 'task-8/execution' }); // a re-run: no second row…
    expect(ledger.countByTask('task-8')).toBe(1);
    expect(ledger.invocationsByTask('task-8')).toBe(2); // …but two invocations
    expect(ledger.invocationsByExecution('task-8/execution')).toBe(2);
    await tool.resolveExecution!('task-9/execution'); // fenced
    await expect(tool.execute(args, { taskId: 'task-9', executionId: 'task-9/execution' })).rejects.toMatchObject({ code: 'fenced' });
    expect(ledger.invocationsByTask('task-9')).toBe(1); // the refused attempt is on the trail
    expect(ledger.countByTask('task-9')).toBe(0);
    expect(ledger.invocationsByTask('task-10')).toBe(0); // resolveExecution is not an invocation
  });

  it('an invocation is committed on its own before the effect: visible to another connection even when the transfer then fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-ledger-'));
    const path = join(dir, 'ledger.db');
    const ledger = openLedger(path);
    const reader = openLedger(path);
    try {
      const tool = createWireTransferTool(ledger);
      // a conflicting reuse of an execution id: record throws, the invocation row stays
      await tool.execute({ to: 'acct-991', amount: 1 }, { taskId: 'task-11', executionId: 'task-11/execution' });
      await expect(
        tool.execute({ to: 'acct-992', amount: 1 }, { taskId: 'task-11', executionId: 'task-11/execution' }),
      ).rejects.toMatchObject({ code: 'conflict' });
      expect(reader.invocationsByTask('task-11')).toBe(2);
      expect(reader.countByTask('task-11')).toBe(1);
    } finally {
      ledger.close();
      reader.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Regression: the fence check made record a read-then-write transaction, which SQLite
  // cannot upgrade while another connection writes: it failed at once (an execution-error) instead
  // of waiting busy_timeout like the plain insert before it. Both now begin IMMEDIATE.
  it('record and settle wait for a concurrent writer to finish instead of failing at once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-ledger-'));
    const path = join(dir, 'ledger.db');
    const ledger = openLedger(path);
    try {
      for (const op of [
        () => ledger.record({ executionId: 'task-6/execution', to: 'acct-991', amount: 1 }),
        () => ledger.settle('task-7/execution'),
      ]) {
        // another process holds the write lock for 400 ms
        const holder = spawn(
          process.execPath,
          [
            '-e',
            `const D=require('better-sqlite3');const d=new D(${JSON.stringify(path)});d.exec('BEGIN EXCLUSIVE');process.stdout.write('locked');setTimeout(()=>{d.exec('ROLLBACK');process.exit(0)},400)`,
          ],
          { cwd: PROJECT_ROOT },
        );
        await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
        const t0 = Date.now();
        expect(op).not.toThrow();
        expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
        await new Promise((r) => holder.once('exit', r));
      }
      expect(ledger.count()).toBe(1);
      expect(ledger.settle('task-7/execution')).toEqual({ fenced: true });
    } finally {
      ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
