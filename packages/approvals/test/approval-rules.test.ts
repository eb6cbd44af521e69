// Scope: the operator's approval rules file (packages/approvals/src/deciders/approval-rules.ts): validation with clear
// errors naming the path, condition semantics, quorum selection, first-match risk rules, defaults.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ApprovalRulesError,
  conditionHolds,
  DEFAULT_APPROVAL_RULES,
  firstMatchingRiskRule,
  loadApprovalRules,
  matchingStepUpRule,
  parseApprovalRules,
  quorumReason,
  requiredApprovals,
  riskQuorumOverlaps,
  stepUpReason,
  type RequestFacts,
} from '../src/deciders/approval-rules.js';

const facts = (over: Partial<RequestFacts> = {}): RequestFacts => ({
  tool: 'wire_transfer',
  requester: 'alice',
  group: 'treasury',
  generation: 1,
  pendingMs: 0,
  arguments: { amount: 50_000, to: 'acct-991', nested: { country: 'DE' } },
  ...over,
});

function errorOf(text: string): string {
  try {
    parseApprovalRules(text, 'rules.json');
  } catch (err) {
    expect(err).toBeInstanceOf(ApprovalRulesError);
    return (err as Error).message;
  }
  throw new Error('expected an ApprovalRulesError');
}

describe('rules file validation', () => {
  it('an invalid file is refused with every problem and its JSON path', () => {
    const message = errorOf(
      JSON.stringify({
        quorum: [{ id: 'q', group: 'treasury', approvals: 1 }],
        risk: [{ id: 'r', when: [{ field: 'arguments.amount', lt: 5, gt: 1 }], decision: 'maybe' }],
        extra: true,
      }),
    );
    expect(message).toContain('rules.json is invalid:');
    expect(message).toMatch(/quorum\.0\.approvals: .*>=2/);
    expect(message).toContain('risk.0.when.0: a condition needs exactly one operator');
    expect(message).toMatch(/risk\.0\.decision: /);
    expect(message).toMatch(/extra/);
  });

  it('non-JSON, unknown fields in conditions and duplicate rule ids are refused', () => {
    expect(errorOf('{nope')).toMatch(/^rules.json: not valid JSON/);
    expect(errorOf(JSON.stringify({ risk: [{ id: 'r', when: [{ field: 'password', eq: 1 }], decision: 'approve' }] }))).toContain(
      'risk.0.when.0.field: field must be tool, requester, group, generation, pendingMs or arguments.<name>',
    );
    expect(
      errorOf(
        JSON.stringify({
          quorum: [{ id: 'same', group: 'g', approvals: 2 }],
          risk: [{ id: 'same', when: [{ field: 'tool', eq: 'x' }], decision: 'deny' }],
        }),
      ),
    ).toContain('rule id "same" is used twice');
  });

  it('a missing file means the default rules: transfers over 100,000 need two treasury approvers', () => {
    expect(loadApprovalRules(join(mkdtempSync(join(tmpdir(), 'rules-')), 'absent.json'))).toEqual(DEFAULT_APPROVAL_RULES);
    expect(requiredApprovals(DEFAULT_APPROVAL_RULES, facts({ arguments: { amount: 100_000.01 } }))).toEqual({
      approvals: 2,
      ruleId: 'four-eyes-large-transfers',
      reason: 'Four-eyes rule: transfers over $100,000 need two treasury approvers.',
    });
    expect(requiredApprovals(DEFAULT_APPROVAL_RULES, facts({ arguments: { amount: 100_000 } }))).toEqual({
      approvals: 1,
      ruleId: null,
      reason: null,
    });
    expect(requiredApprovals(DEFAULT_APPROVAL_RULES, facts({ group: 'ops', arguments: { amount: 500_000 } })).approvals).toBe(1);
  });

  it('a file on disk is loaded with defaults filled in', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rules-')), 'approval-rules.json');
    writeFileSync(file, JSON.stringify({ risk: [{ id: 'r', when: [{ field: 'tool', eq: 'wire_transfer' }], decision: 'deny' }] }));
    expect(loadApprovalRules(file)).toMatchObject({ quorum: [], riskIntervalMs: 30_000, risk: [{ id: 'r' }] });
  });
});

describe('conditions and matching', () => {
  it('each operator compares a fact; missing or non-scalar fields never match', () => {
    const f = facts();
    expect(conditionHolds({ field: 'arguments.amount', gt: 49_999 }, f)).toBe(true);
    expect(conditionHolds({ field: 'arguments.amount', gte: 50_000 }, f)).toBe(true);
    expect(conditionHolds({ field: 'arguments.amount', lt: 50_000 }, f)).toBe(false);
    expect(conditionHolds({ field: 'arguments.amount', lte: 50_000 }, f)).toBe(true);
    expect(conditionHolds({ field: 'arguments.to', in: ['acct-991'] }, f)).toBe(true);
    expect(conditionHolds({ field: 'arguments.to', notIn: ['acct-991'] }, f)).toBe(false);
    expect(conditionHolds({ field: 'arguments.nested.country', eq: 'DE' }, f)).toBe(true);
    expect(conditionHolds({ field: 'requester', eq: 'alice' }, f)).toBe(true);
    expect(conditionHolds({ field: 'arguments.missing', notIn: ['x'] }, f)).toBe(false);
    expect(conditionHolds({ field: 'arguments.nested', eq: 'x' }, f)).toBe(false);
    expect(conditionHolds({ field: 'arguments.to', gt: 1 }, f)).toBe(false);
    expect(conditionHolds({ field: 'arguments.toString', eq: 'x' }, f)).toBe(false); // own properties only
  });

  it('the largest matching quorum wins; the first matching risk rule decides', () => {
    const rules = parseApprovalRules(
      JSON.stringify({
        quorum: [
          { id: 'two', group: 'treasury', when: [{ field: 'arguments.amount', gt: 10_000 }], approvals: 2 },
          { id: 'three', group: 'treasury', tool: 'wire_transfer', when: [{ field: 'arguments.amount', gt: 40_000 }], approvals: 3 },
          { id: 'other-tool', group: 'treasury', tool: 'other', approvals: 5 },
        ],
        risk: [
          { id: 'first', when: [{ field: 'arguments.to', eq: 'acct-991' }], decision: 'deny' },
          { id: 'second', when: [{ field: 'arguments.amount', gt: 1 }], decision: 'approve' },
        ],
      }),
    );
    expect(requiredApprovals(rules, facts())).toMatchObject({ approvals: 3, ruleId: 'three' });
    expect(firstMatchingRiskRule(rules, facts())?.id).toBe('first');
    expect(firstMatchingRiskRule(rules, facts({ arguments: { amount: 5, to: 'x' } }))?.id).toBe('second');
    expect(firstMatchingRiskRule(rules, facts({ arguments: { amount: 0, to: 'x' } }))).toBeNull();
  });
});

describe('the reason of the rule that applies', () => {
  it("a quorum rule's own reason is the request's reason", () => {
    const rules = parseApprovalRules(
      JSON.stringify({ quorum: [{ id: 'big', group: 'treasury', approvals: 2, reason: '  Big transfers need two people.  ' }] }),
    );
    expect(requiredApprovals(rules, facts()).reason).toBe('Big transfers need two people.');
  });

  it('a quorum rule without a reason gets a built-in four-eyes sentence from its count, group, tool and conditions', () => {
    const rule = parseApprovalRules(
      JSON.stringify({
        quorum: [
          {
            id: 'eu-large',
            group: 'treasury',
            tool: 'wire_transfer',
            when: [
              { field: 'arguments.amount', gte: 250_000 },
              { field: 'arguments.nested.country', in: ['DE', 'FR'] },
            ],
            approvals: 3,
          },
        ],
      }),
    ).quorum[0]!;
    expect(quorumReason(rule)).toBe(
      'Four-eyes rule eu-large: wire_transfer requests with amount at least 250,000 and nested.country is one of DE, FR need 3 distinct treasury approvers.',
    );
  });

  it('a step-up rule gives its reason, else says a passkey is needed and names the rule', () => {
    const rules = parseApprovalRules(
      JSON.stringify({
        stepUp: [{ id: 'pk', tool: 'wire_transfer', reason: 'Money leaves the company: confirm with your passkey.' }, { id: 'all' }],
      }),
    );
    expect(stepUpReason(matchingStepUpRule(rules, facts())!)).toBe('Money leaves the company: confirm with your passkey.');
    expect(stepUpReason(matchingStepUpRule(rules, facts({ tool: 'other' }))!)).toBe('Approving needs your passkey (rule all).');
  });

  it('an empty or over-long reason is refused with its path', () => {
    expect(errorOf(JSON.stringify({ quorum: [{ id: 'q', group: 'g', approvals: 2, reason: ' ' }] }))).toContain('quorum.0.reason');
    expect(errorOf(JSON.stringify({ stepUp: [{ id: 's', reason: 'x'.repeat(501) }] }))).toContain('stepUp.0.reason');
  });
});

describe('risk rules that bypass quorums (L5)', () => {
  const quorum = DEFAULT_APPROVAL_RULES.quorum.filter((q) => q.id === 'four-eyes-large-transfers'); // treasury, wire_transfer, amount gt 100000, 2 approvals
  const withRisk = (risk: unknown[]) => parseApprovalRules(JSON.stringify({ quorum, risk }));

  it('an approve rule without an amount bound below the quorum threshold overlaps the quorum rule; bounded, other-tool, other-group and deny rules do not', () => {
    const rules = withRisk([
      { id: 'to-only', when: [{ field: 'arguments.to', in: ['acct-payroll'] }], decision: 'approve' },
      { id: 'under-150k', when: [{ field: 'arguments.amount', lt: 150_000 }], decision: 'approve' },
      { id: 'under-30k', when: [{ field: 'arguments.amount', lt: 30_000 }], decision: 'approve' },
      { id: 'at-most-100k', when: [{ field: 'arguments.amount', lte: 100_000 }], decision: 'approve' },
      { id: 'other-tool', tool: 'send_email', when: [{ field: 'arguments.to', eq: 'x' }], decision: 'approve' },
      { id: 'ops-only', when: [{ field: 'group', eq: 'ops' }], decision: 'approve' },
      { id: 'exact-amount', when: [{ field: 'arguments.amount', in: [50, 200_000] }], decision: 'approve' },
      { id: 'deny-all-big', when: [{ field: 'arguments.amount', gt: 0 }], decision: 'deny' },
    ]);
    expect(riskQuorumOverlaps(rules)).toEqual([
      { risk: 'to-only', quorum: 'four-eyes-large-transfers' },
      { risk: 'under-150k', quorum: 'four-eyes-large-transfers' },
      { risk: 'exact-amount', quorum: 'four-eyes-large-transfers' },
    ]);
  });
});
