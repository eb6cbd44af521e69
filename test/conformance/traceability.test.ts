// Scope: the SEP-2848 traceability file conformance/sep-2848.yaml and its check
// (scripts/check-traceability.ts): in step with the seed, every MUST / MUST NOT traced to an
// existing test or marked not applicable with a reason; the conformance kit's copies
// (packages/conformance/traceability/) in step with it and with the seed's Reference Implementation
// section; and the check itself catches drift.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CHECK_IDS, referenceStatements, sepStatements } from '@countersign/conformance';
import {
  checkTraceability,
  findStatements,
  KIT_STATEMENTS_FILE,
  kitStatementsJson,
  parseTraceFile,
  referenceBullets,
  testTitles,
  TRACE_FILE,
} from '../../scripts/check-traceability.js';

const yaml = readFileSync(TRACE_FILE, 'utf8');

function checkEdited(edit: (text: string) => string, knownGaps?: string[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-trace-'));
  const file = join(dir, 'sep-2848.yaml');
  writeFileSync(file, edit(yaml));
  try {
    return checkTraceability({ traceFile: file, ...(knownGaps ? { knownGaps } : {}) }).problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('SEP-2848 traceability', () => {
  it('conformance/sep-2848.yaml traces every normative statement of the seed: counts match, every MUST and MUST NOT has a test or a reason, every named test exists', () => {
    const r = checkTraceability();
    expect(r.problems).toEqual([]);
    expect(r.counts.statements).toBe(78);
    expect(r.counts.byKeyword).toEqual({ MUST: 49, 'MUST NOT': 23, SHOULD: 5, 'SHOULD NOT': 1 });
    expect(r.counts.traced + r.counts.notApplicable).toBe(78);
  });

  it('the counting rule finds 78 statements, one of them glued to the word before it by the lost code spans', () => {
    const seed = readFileSync(checkTraceability().seedPath, 'utf8');
    expect(findStatements(seed)).toHaveLength(78);
    expect(seed.match(/\b(MUST|SHOULD)(\s+NOT)?\b/g)).toHaveLength(77);
    expect(findStatements(seed).some((s) => s.before.endsWith('model-immediate-response'))).toBe(true);
  });

  it('a statement not applicable to a server says why, and only vacuous statements are marked so (the client obligations are traced to the shipped client)', () => {
    const na = parseTraceFile(yaml).statements.filter((s) => s.notApplicable !== undefined);
    expect(na.map((s) => s.id)).toEqual(['S77']);
    for (const s of na) expect(s.notApplicable!.length).toBeGreaterThan(30);
  });

  it('the check fails on a test title that does not exist, an unknown check id, an untraced MUST, a removed entry, and a MUST resting only on a known gap', () => {
    expect(
      checkEdited((t) => t.replace('approve → completed approved-executed with exactly one ledger row', 'approve → something else')),
    ).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/S04: test\/e2e\/approval-flow\.test\.ts has no test titled "approve → something else"/),
      ]),
    );
    expect(checkEdited((t) => t.replace('"conf:discover-extensions"', '"conf:no-such-check"'))).toEqual(
      expect.arrayContaining([expect.stringMatching(/S01: no black-box check conf:no-such-check/)]),
    );
    expect(checkEdited((t) => t.replace(/(- id: S08\n(?: {4}.*\n)*?) {4}tests:\n {6}- .*\n/, '$1'))).toEqual(
      expect.arrayContaining(['S08 (MUST): no test and no not-applicable reason']),
    );
    expect(checkEdited((t) => t.replace(/ {2}- id: S78\n(?: {4}.*\n| {6}.*\n)*/, ''))).toEqual(
      expect.arrayContaining([expect.stringMatching(/the seed has 78 normative statements, conformance\/sep-2848\.yaml has 77/)]),
    );
    expect(
      checkEdited(
        (t) => t.replace(/(- id: S56\n(?: {4}.*\n)*? {4}tests:\n) {6}- .*\n/, '$1      - "conf:in-task-input"\n'),
        ['conf:in-task-input'],
      ),
    ).toEqual(expect.arrayContaining([expect.stringMatching(/S56: rests only on known gap/)]));
    expect(checkEdited((t) => t.replace('keyword: SHOULD NOT', 'keyword: SHOULD'))).toEqual(
      expect.arrayContaining([expect.stringMatching(/S77: keyword SHOULD, the seed's statement 77 is SHOULD NOT/)]),
    );
  });

  it("the kit reports against this file: its statements copy is what the file says, and each of the seed's seven Reference Implementation statements has a scenario in the kit", () => {
    const file = parseTraceFile(yaml);
    expect(readFileSync(KIT_STATEMENTS_FILE, 'utf8')).toBe(kitStatementsJson(file));
    expect(sepStatements().map((s) => s.id)).toEqual(file.statements.map((s) => s.id));
    const s04 = sepStatements().find((s) => s.id === 'S04')!;
    expect(s04.checks).toEqual(['conf:requestable-denial-returns-task', 'conf:every-response-conforms']);
    const bullets = referenceBullets(readFileSync(checkTraceability().seedPath, 'utf8'));
    expect(bullets).toHaveLength(7);
    expect(bullets[0]).toBe('a requestable denial returns a task without executing the tool;');
    expect(bullets[6]).toBe('submission input flows through the task input channel.');
    const ri = referenceStatements();
    expect(ri.map((r) => r.id)).toEqual(['RI1', 'RI2', 'RI3', 'RI4', 'RI5', 'RI6', 'RI7']);
    ri.forEach((r, i) => expect(r.text.replace(/\s+/g, '')).toBe(bullets[i]!.replace(/\s+/g, '')));
    for (const r of ri) {
      expect(r.checks.length, r.id).toBeGreaterThan(0);
      for (const c of r.checks) expect(CHECK_IDS, r.id).toContain(c);
    }
    expect(kitStatementsJson(parseTraceFile(yaml.replace('"conf:discover-extensions"', '"conf:capability-per-request"')))).not.toBe(
      kitStatementsJson(file),
    );
  });

  it('test titles are read from it(...) and test(...) calls, with escapes resolved', () => {
    const titles = testTitles(
      "it('a \\'quoted\\' title', () => {});\ntest(\"double\", () => {});\nit.each([[1]])('each %s', () => {});\nit(`tpl`, () => {});",
    );
    expect([...titles]).toEqual(["a 'quoted' title", 'double', 'each %s', 'tpl']);
  });
});
