// Scope: what `countersign policy replay` prints: the human-readable table (`formatReplayTable`)
// writes recorded data — tools, principals, approver groups, policy ids, call references and
// times — with control, format and bidi characters escaped, so a recorded call cannot drive or
// reorder the operator's terminal (the JSON report is JSON-escaped already).
import { describe, expect, it } from 'vitest';
import type { Decision, PolicyDecisionPoint } from '../../src/policy/pdp.js';
import { formatReplayTable, printable, replayCalls, type RecordedCall } from '../../src/policy/replay.js';

/** Every character a terminal or the bidi algorithm acts on but the table's own line feeds: C0 (ESC, BEL, CR), DEL, C1 (CSI, OSC), bidi embeddings, overrides and isolates. */
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

const pdp = (decision: Decision): PolicyDecisionPoint => ({ evaluate: () => Promise.resolve(decision) });

describe('policy replay table', () => {
  it('a recorded call whose principal, tool, approver group, policy ids and reference hold terminal escapes and bidi overrides prints no raw ESC, BEL, C1 or bidi control in the table', async () => {
    const hostile = '\u001b[2J\u001b]0;pwned\u0007';
    const call: RecordedCall = {
      ref: `approval-1\u009b31m\r`,
      at: `2026-12-01T00:00:00.000Z\u202e`,
      tool: `wire_transfer\u2066\u001b[1A`,
      principal: { iss: 'https://idp.example.test', sub: `mallory${hostile}\u202eevil\nfake line` },
      arguments: { amount: 1 },
    };
    const live = pdp({ decision: 'allow', policyIds: [`permit\u001b[31m`] });
    const candidate = pdp({
      decision: 'deny',
      nextAction: 'request',
      reasons: ['over the limit'],
      policyIds: [`over-limit\u0007`],
      accessRequest: { approverGroup: `treasury\u001b]8;;http://x\u0007`, requestTtlMs: 60_000, reason: 'r', policyId: 'over-limit' },
    });
    const report = await replayCalls([call], live, candidate);
    expect(report.changed).toBe(1);
    const table = formatReplayTable(report);
    expect(table).not.toMatch(RAW);
    // the values are still there, made visible: the operator sees what was recorded
    expect(table).toContain('mallory\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\u{202e}evil\\u{a}fake line');
    expect(table).toContain('wire_transfer\\u{2066}\\u{1b}[1A');
    expect(table).toContain('requestable (treasury\\u{1b}]8;;http://x\\u{7}) [over-limit\\u{7}]');
    expect(table).toContain('allowed [permit\\u{1b}[31m]');
    expect(table).toContain('approval-1\\u{9b}31m\\u{d}');
    // the head, the change, its example, a blank line and the totals: a recorded CR or LF cannot add or overwrite a line
    expect(table.split('\n')).toHaveLength(6);
  });

  it('printable leaves plain text and U+0020 as they are and escapes every other space, zero-width and line separator', () => {
    expect(printable('https://idp.example.test|alice smith')).toBe('https://idp.example.test|alice smith');
    expect(printable('a\u00a0b\u200bc\u2028d\ne')).toBe('a\\u{a0}b\\u{200b}c\\u{2028}d\\u{a}e');
  });
});
