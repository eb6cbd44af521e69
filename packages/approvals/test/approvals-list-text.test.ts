// Scope: the `approvals list` table of the approver's command line (listText, src/cli/approvals-command.ts),
// laid out by cli-table3.
import { describe, expect, it } from 'vitest';
import { listText, type ApprovalItem } from '../src/cli/approvals-command.js';

/** A pending request as `GET /access/v1/approvals/pending` lists it, expiring in two days. */
function item(id: string, requester: string): ApprovalItem {
  return {
    id,
    tool: 'wire_transfer',
    requester,
    arguments: { amount: 50_000, to: 'acct-991' },
    reason: 'over the limit',
    justification: null,
    approver_group: 'treasury',
    required_approvals: 1,
    approvals: [],
    created_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + 2 * 86_400_000).toISOString(),
  };
}

describe('approvals list', () => {
  it('lays the requests out in columns two spaces apart, a header first and the count last, with no trailing blanks', () => {
    const lines = listText([item('ar_1', 'alice'), item('ar_22', 'bob')]).split('\n');
    expect(lines.slice(0, 3).map((l) => l.slice(0, 53))).toEqual([
      'ID     TOOL           REQUESTER  REQUEST             ',
      'ar_1   wire_transfer  alice      50,000.00 → acct-991',
      'ar_22  wire_transfer  bob        50,000.00 → acct-991',
    ]);
    expect(lines[0]).toMatch(/APPROVALS {2}EXPIRES$/);
    expect(lines[1]).toMatch(/ {2}0\/1 {8}.+ left$/);
    expect(lines.slice(3)).toEqual(['2 waiting for your decision.', '']);
  });

  it('keeps the columns aligned as a terminal shows them: a requester in wide characters takes two columns a character', () => {
    const [, wide, narrow] = listText([item('ar_1', '山田太郎花子'), item('ar_2', 'bob')]).split('\n');
    // six wide characters fill the twelve columns 'bob' and nine blanks fill
    expect(wide).toContain('ar_1  wire_transfer  山田太郎花子  50,000.00');
    expect(narrow).toContain('ar_2  wire_transfer  bob           50,000.00');
  });
});
