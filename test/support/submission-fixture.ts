// A port submission of a $50,000 wire_transfer by alice, for tests of what the gate sends an approval service.
import type { SubmissionBody } from '../../src/backends/approval-backend.js';

/** The submission, with `overrides` laid over it. */
export function transferSubmission(overrides: Partial<SubmissionBody> = {}): SubmissionBody {
  return {
    tool: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50_000 },
    requester: { iss: 'https://issuer.example', sub: 'alice' },
    approverGroup: 'treasury',
    reason: 'r',
    expiresAt: '2026-01-01T00:00:00Z',
    bindingDigest: 'b'.repeat(64),
    generation: 1,
    ...overrides,
  };
}
