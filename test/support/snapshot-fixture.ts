// Scope: a working TaskSnapshot fixture shared by the unit tests of the MCP front.
import type { DenialReason, TaskSnapshot } from '../../workflows/types.js';

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
];
