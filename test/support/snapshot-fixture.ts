// Scope: TaskSnapshot fixtures shared by the tests of the MCP front and of the wire: a working
// snapshot, every denial reason, and every kind of result a completed task can hold.
import { executionLostFencedResult } from '../../workflows/execution-resolution.js';
import {
  answerDiscardedResult,
  deniedResult,
  executedResult,
  executionErrorResult,
  notExecutedResult,
  outcomeUnknownResult,
} from '../../workflows/results.js';
import type { DenialReason, StoredCallToolResult, TaskSnapshot } from '../../workflows/types.js';

/** A pending (`working`, awaiting approval) snapshot; `over` replaces any field. */
export function workingSnapshot(over: Partial<TaskSnapshot> = {}): TaskSnapshot {
  return {
    status: 'working',
    phase: 'awaiting-approval',
    ownerKey: '9'.repeat(64),
    policyReason: 'Transfers over $25,000 require treasury approval.',
    createdAt: '2026-06-02T10:30:00.000Z',
    lastUpdatedAt: '2026-06-02T10:30:00.000Z',
    ttlMs: 604_800_000,
    pollIntervalMs: 15_000,
    generation: 1,
    claimed: false,
    ...over,
  };
}

/** Every denial reason a terminal denial can carry (`DenialReason` in workflows/types.ts), listed once for the tests. */
export const DENIAL_REASONS: DenialReason[] = [
  'backend-denied',
  'request-expired',
  'approval-expired',
  'policy-denied',
  'request-chain-exhausted',
  'tool-changed',
  'binding-invalid',
  'input-declined',
  'request-unfollowed',
];

/**
 * Every kind of stored result a completed task can hold, named for test titles: the templates of
 * workflows/results.ts and workflows/execution-resolution.ts, a tool's own result (ran; and ran,
 * reported an error), and one denial per {@link DENIAL_REASONS}.
 */
export const TERMINAL_RESULTS: Array<{ name: string; result: StoredCallToolResult }> = [
  {
    name: 'approved-executed',
    result: executedResult({
      content: [{ type: 'text', text: 'Transfer of $50,000 to acct-991 posted.' }],
      structuredContent: { transferId: 't-1' },
    }),
  },
  {
    name: 'execution-error (the tool reported an error)',
    result: executedResult({ content: [{ type: 'text', text: 'Insufficient funds.' }], isError: true }),
  },
  { name: 'execution-error (the tool threw)', result: executionErrorResult() },
  { name: 'execution-error (lost and fenced before it took effect)', result: executionLostFencedResult() },
  { name: 'execution-error (the call never reached the tool)', result: notExecutedResult() },
  { name: 'execution-error (the tool ran; its answer was discarded)', result: answerDiscardedResult(12_582_912, 10_485_760) },
  { name: 'outcome-unknown', result: outcomeUnknownResult() },
  ...DENIAL_REASONS.map((r) => ({ name: `denied-not-executed (${r})`, result: deniedResult(r) })),
];
