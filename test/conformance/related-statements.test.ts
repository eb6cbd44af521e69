// Scope: conformance/related-statements.json — the statements of the tasks extension, MCP elicitation
// and RFC 8707 that the change-gate work relies on, each naming the tests that prove it: every named
// test must exist (same rule as the SEP-2848 traceability check, scripts/check-traceability.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, testTitles } from '../../scripts/check-traceability.js';

interface Related {
  statements: Array<{ id: string; source: string; statement: string; tests: string[] }>;
}

const related = JSON.parse(readFileSync(join(ROOT, 'conformance', 'related-statements.json'), 'utf8')) as Related;

describe('related statements', () => {
  it('every related statement names at least one test, and every named test exists with exactly that title', () => {
    const missing: string[] = [];
    for (const s of related.statements) {
      expect(s.tests.length, s.id).toBeGreaterThan(0);
      for (const ref of s.tests) {
        const [file, title] = ref.split('::') as [string, string];
        const titles = testTitles(readFileSync(join(ROOT, file), 'utf8'));
        if (!titles.has(title)) missing.push(`${s.id}: ${ref}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('ids are unique', () => {
    const ids = related.statements.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
