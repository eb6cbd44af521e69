// Scope: packages/client/src/execution-outcome.ts — what a finished task means for whether the tool ran
// (SEP-2848 §Execution disposition), the table a client acts on.
import { describe, expect, it } from 'vitest';
import { executionOutcome } from '@countersign/client';

const completed = (disposition?: unknown) => ({
  status: 'completed',
  result: { _meta: disposition === undefined ? {} : { 'io.modelcontextprotocol/tool-approval-disposition': disposition } },
});

describe('execution outcome of a task', () => {
  it.each([
    ['approved-executed', 'executed', false],
    ['denied-not-executed', 'not-executed', true],
    ['execution-error', 'possibly-executed', false],
    ['outcome-unknown', 'possibly-executed', false],
  ] as const)('a completed task with disposition %s is %s (may call again: %s)', (disposition, outcome, mayCallAgain) => {
    expect(executionOutcome(completed(disposition))).toEqual({ outcome, disposition, mayCallAgain });
  });

  it('a client that does not recognize a disposition value treats the operation as possibly executed and does not call again', () => {
    for (const d of ['approved-maybe', 'Approved-Executed', 42, undefined]) {
      expect(executionOutcome(completed(d))).toMatchObject({ outcome: 'possibly-executed', mayCallAgain: false });
    }
    expect(executionOutcome({ status: 'completed' })).toMatchObject({ outcome: 'possibly-executed', mayCallAgain: false });
  });

  it('cancelled and failed tasks did not run; working and input_required are pending', () => {
    expect(executionOutcome({ status: 'cancelled' }).outcome).toBe('not-executed');
    expect(executionOutcome({ status: 'failed' }).outcome).toBe('not-executed');
    expect(executionOutcome({ status: 'working' })).toMatchObject({ outcome: 'pending', mayCallAgain: false });
    expect(executionOutcome({ status: 'input_required' }).outcome).toBe('pending');
  });
});
