/**
 * The SEP-2848 traceability check: `conformance/sep-2848.yaml` against the seed text,
 * the black-box suite's check ids and the vitest test titles.
 *
 * Fails (returns problems; the CLI exits 1) when:
 * - the seed's normative statements differ from the file: their number, or, entry by entry, the
 *   keyword, the section heading, or the anchor (the words just before the keyword);
 * - a MUST / MUST NOT (or SHOULD / SHOULD NOT) entry has neither `tests` nor `not-applicable`, or
 *   has both;
 * - a named test does not exist: `conf:<id>` not in `CHECK_IDS` of the conformance kit
 *   (`@countersign/conformance`, packages/conformance),
 *   `<file>::<title>` without an `it(...)`/`test(...)` of exactly that title in that file;
 * - a statement's only black-box evidence is a known gap (KNOWN_GAPS in
 *   test/conformance/black-box.test.ts), i.e. a check Countersign is known to fail;
 * - the kit's copy of the statements (packages/conformance/traceability/sep-2848.json, what its
 *   report lists) differs from what this file says (`--write-kit` regenerates it);
 * - the kit's Reference Implementation statements (packages/conformance/traceability/
 *   reference-implementation.json) are not the seed's seven bullets, in order, or one has no check.
 *
 * Counting rule, shared with the file's header: every match of
 * /(?<![A-Z])(MUST|SHOULD)(\s+NOT)?(?![A-Z])/g in the seed is one statement.
 *
 * Usage: `npm run conformance:trace [-- --write-kit]` (also run by `npm test` through
 * test/conformance/traceability.test.ts). Deliberately does not judge whether a test is a good proof:
 * that is review; this keeps the file honest and in step.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHECK_IDS, type ReferenceStatement, type SepStatement } from '@countersign/conformance';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const TRACE_FILE = join(ROOT, 'conformance', 'sep-2848.yaml');
/** The kit's copies (packages/conformance/traceability/). */
export const KIT_STATEMENTS_FILE = join(ROOT, 'packages', 'conformance', 'traceability', 'sep-2848.json');
export const KIT_REFERENCE_FILE = join(ROOT, 'packages', 'conformance', 'traceability', 'reference-implementation.json');

/** The counting rule. */
export const NORMATIVE_KEYWORD = /(?<![A-Z])(MUST|SHOULD)(\s+NOT)?(?![A-Z])/g;

/** The seed's top-level headings, each a line of its own; a statement's section is the last one before it. */
export const SEED_HEADINGS = [
  'Abstract',
  'Motivation',
  'Use cases',
  'Specification',
  'Relationship to existing specifications',
  'Server-side flow (informative)',
  'Extension identifier and capability',
  'Denied-but-requestable returns a task',
  'The task handle is not authority',
  'Collecting submission input',
  'Lifecycle and task status',
  'Execution disposition',
  'Completion: re-evaluate, then execute',
  'Cancellation',
  'What the client carries',
  'End-to-end example',
  'Example binding: AuthZEN ARAP (non-normative)',
  'Rationale',
  'Limitations and Open Questions',
  'Backward Compatibility',
  'Reference Implementation',
  'Security Implications',
  'References',
];

/** One normative statement found in the seed. */
export interface SeedStatement {
  index: number;
  keyword: string;
  section: string;
  /** Whitespace-collapsed seed text before the keyword. */
  before: string;
}

/** Apply the counting rule. */
export function findStatements(seed: string): SeedStatement[] {
  const headings: Array<{ at: number; name: string }> = [];
  let offset = 0;
  for (const line of seed.split('\n')) {
    if (SEED_HEADINGS.includes(line.trim())) headings.push({ at: offset, name: line.trim() });
    offset += line.length + 1;
  }
  const out: SeedStatement[] = [];
  for (const m of seed.matchAll(NORMATIVE_KEYWORD)) {
    const at = m.index;
    out.push({
      index: out.length,
      keyword: m[0].replace(/\s+/g, ' '),
      section: headings.filter((h) => h.at < at).at(-1)?.name ?? '(before any heading)',
      before: seed.slice(0, at).replace(/\s+/g, ' ').trimEnd(),
    });
  }
  return out;
}

/** One entry of the traceability file. */
export interface TraceEntry {
  id: string;
  section: string;
  keyword: string;
  anchor: string;
  paraphrase: string;
  tests: string[];
  notApplicable?: string;
  note?: string;
  line: number;
}

export interface TraceFile {
  header: Record<string, string>;
  statements: TraceEntry[];
}

function scalar(raw: string, line: number): string {
  const v = raw.trim();
  if (v.startsWith('"')) {
    try {
      return JSON.parse(v) as string;
    } catch {
      throw new Error(`line ${line}: bad double-quoted string`);
    }
  }
  if (v.startsWith("'") || v.startsWith('|') || v.startsWith('>') || v.startsWith('[') || v.startsWith('{')) {
    throw new Error(`line ${line}: unsupported YAML (use plain or double-quoted scalars)`);
  }
  return v;
}

/**
 * Parse the file's YAML subset: top-level `key: value` pairs and `statements:`, a list of
 * mappings whose `tests:` is a list of scalars. Anything else is an error naming the line.
 */
export function parseTraceFile(text: string): TraceFile {
  const header: Record<string, string> = {};
  const statements: TraceEntry[] = [];
  let cur: (Partial<TraceEntry> & { tests: string[]; line: number }) | undefined;
  let inStatements = false;
  let inTests = false;
  const lines = text.split('\n');
  const push = () => {
    if (!cur) return;
    for (const k of ['id', 'section', 'keyword', 'anchor', 'paraphrase'] as const) {
      if (!cur[k]) throw new Error(`line ${cur.line}: entry without ${k}`);
    }
    statements.push(cur as TraceEntry);
  };
  lines.forEach((raw, i) => {
    const n = i + 1;
    if (/^\s*(#.*)?$/.test(raw)) return;
    let m: RegExpMatchArray | null;
    if ((m = raw.match(/^([a-z][a-z-]*):\s*(.*)$/))) {
      inStatements = m[1] === 'statements';
      if (inStatements) {
        if (m[2]!.trim() !== '') throw new Error(`line ${n}: statements: must start a list`);
      } else header[m[1]!] = scalar(m[2]!, n);
      return;
    }
    if (!inStatements) throw new Error(`line ${n}: unexpected indentation`);
    if ((m = raw.match(/^ {2}- id:\s*(.+)$/))) {
      push();
      cur = { id: scalar(m[1]!, n), tests: [], line: n };
      inTests = false;
      return;
    }
    if (cur && (m = raw.match(/^ {4}([a-z][a-z-]*):\s*(.*)$/))) {
      const [key, value] = [m[1]!, m[2]!];
      inTests = key === 'tests';
      if (inTests) {
        if (value.trim() !== '') throw new Error(`line ${n}: tests: must start a list`);
        return;
      }
      const v = scalar(value, n);
      switch (key) {
        case 'section':
        case 'keyword':
        case 'anchor':
        case 'paraphrase':
        case 'note':
          cur[key] = v;
          return;
        case 'not-applicable':
          cur.notApplicable = v;
          return;
        default:
          throw new Error(`line ${n}: unknown field ${key}`);
      }
    }
    if (cur && inTests && (m = raw.match(/^ {6}- (.+)$/))) {
      cur.tests.push(scalar(m[1]!, n));
      return;
    }
    throw new Error(`line ${n}: cannot parse: ${raw.slice(0, 80)}`);
  });
  push();
  return { header, statements };
}

/** Unescape the body of a JS string literal (the escapes test titles use). */
function unescapeJs(s: string): string {
  return s.replace(/\\(u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)/g, (_, e: string) => {
    if (e.startsWith('u{')) return String.fromCodePoint(parseInt(e.slice(2, -1), 16));
    if (e.startsWith('u') && e.length === 5) return String.fromCharCode(parseInt(e.slice(1), 16));
    if (e.startsWith('x') && e.length === 3) return String.fromCharCode(parseInt(e.slice(1), 16));
    return ({ n: '\n', t: '\t', r: '\r' } as Record<string, string>)[e] ?? e;
  });
}

/** Titles of `it(...)` / `test(...)` calls (incl. `.only/.skip/.concurrent/.each(...)`) in a test source. */
export function testTitles(source: string): Set<string> {
  const titles = new Set<string>();
  const re =
    /\b(?:it|test)(?:\.(?:only|skip|concurrent|sequential|fails|todo))*(?:\.each\((?:[^()]|\([^()]*\))*\))?\(\s*(['"`])((?:\\[\s\S]|(?!\1)[\s\S])*?)\1/g;
  for (const m of source.matchAll(re)) titles.add(unescapeJs(m[2]!));
  return titles;
}

/** The known gaps declared by the black-box test (keys of its KNOWN_GAPS object). */
export function knownGaps(blackBoxSource: string): string[] {
  const block = blackBoxSource.match(/const KNOWN_GAPS[^=]*=\s*\{([\s\S]*?)\n\};/);
  if (!block) throw new Error('test/conformance/black-box.test.ts declares no KNOWN_GAPS object');
  return [...block[1]!.matchAll(/^\s*'(conf:[a-z0-9-]+)'\s*:/gm)].map((m) => m[1]!);
}

export interface CheckReport {
  problems: string[];
  counts: {
    statements: number;
    byKeyword: Record<string, number>;
    traced: number;
    notApplicable: number;
    mustTraced: number;
    mustNotApplicable: number;
  };
  seedPath: string;
}

/**
 * Run the whole check. `seedPath` defaults to the shared seed when present, else the copy in
 * conformance/; `knownGaps` defaults to the black-box test's KNOWN_GAPS.
 */
export function checkTraceability(opts: { seedPath?: string; traceFile?: string; knownGaps?: string[] } = {}): CheckReport {
  const problems: string[] = [];
  const file = parseTraceFile(readFileSync(opts.traceFile ?? TRACE_FILE, 'utf8'));
  const copyPath = join(ROOT, file.header['seed-copy'] ?? 'conformance/sep-2848.seed.txt');
  const sharedPath = file.header.seed ? resolve(ROOT, file.header.seed) : undefined;
  const seedPath = opts.seedPath ?? (sharedPath && existsSync(sharedPath) ? sharedPath : copyPath);
  const seed = readFileSync(seedPath, 'utf8');
  if (!opts.seedPath && seedPath !== copyPath && existsSync(copyPath) && readFileSync(copyPath, 'utf8') !== seed) {
    problems.push(
      `the seed ${file.header.seed} differs from ${file.header['seed-copy']}: re-check the trace against the new text, then refresh the copy`,
    );
  }
  const found = findStatements(seed);
  const entries = file.statements;
  if (found.length !== entries.length) {
    problems.push(`the seed has ${found.length} normative statements, ${TRACE_FILE.slice(ROOT.length + 1)} has ${entries.length}`);
  }
  const ids = new Set<string>();
  entries.forEach((e, i) => {
    const want = `S${String(i + 1).padStart(2, '0')}`;
    if (e.id !== want) problems.push(`${e.id} (line ${e.line}): expected id ${want} (entries follow seed order)`);
    if (ids.has(e.id)) problems.push(`${e.id}: duplicate id`);
    ids.add(e.id);
    const s = found[i];
    if (!s) return;
    if (e.keyword !== s.keyword) problems.push(`${e.id}: keyword ${e.keyword}, the seed's statement ${i + 1} is ${s.keyword}`);
    if (e.section.split(' / ')[0] !== s.section) problems.push(`${e.id}: section "${e.section}", the seed puts it under "${s.section}"`);
    if (!s.before.endsWith(e.anchor.replace(/\s+/g, ' ')))
      problems.push(`${e.id}: anchor "${e.anchor}" is not what precedes the seed's statement ${i + 1} ("…${s.before.slice(-40)}")`);
  });

  // tests
  const titleCache = new Map<string, Set<string> | null>();
  const titlesOf = (file: string) => {
    if (!titleCache.has(file)) {
      const p = join(ROOT, file);
      titleCache.set(file, existsSync(p) && /\.test\.ts$/.test(file) ? testTitles(readFileSync(p, 'utf8')) : null);
    }
    return titleCache.get(file)!;
  };
  const gaps = opts.knownGaps ?? knownGaps(readFileSync(join(ROOT, 'test', 'conformance', 'black-box.test.ts'), 'utf8'));
  const isMust = (k: string) => k === 'MUST' || k === 'MUST NOT';
  let traced = 0;
  let notApplicable = 0;
  let mustTraced = 0;
  let mustNotApplicable = 0;
  for (const e of entries) {
    const hasTests = e.tests.length > 0;
    const na = e.notApplicable !== undefined && e.notApplicable.trim().length > 0;
    if (!hasTests && !na) problems.push(`${e.id} (${e.keyword}): no test and no not-applicable reason`);
    if (hasTests && na) problems.push(`${e.id}: both tests and not-applicable`);
    if (hasTests) traced++;
    if (na) notApplicable++;
    if (isMust(e.keyword) && hasTests) mustTraced++;
    if (isMust(e.keyword) && na) mustNotApplicable++;
    for (const t of e.tests) {
      if (t.startsWith('conf:')) {
        if (!CHECK_IDS.includes(t)) problems.push(`${e.id}: no black-box check ${t} in the conformance kit (packages/conformance)`);
        continue;
      }
      const sep = t.indexOf('::');
      if (sep < 0) {
        problems.push(`${e.id}: "${t}" is neither conf:<id> nor <file>::<title>`);
        continue;
      }
      const [f, title] = [t.slice(0, sep), t.slice(sep + 2)];
      const titles = titlesOf(f);
      if (!titles) problems.push(`${e.id}: no test file ${f}`);
      else if (!titles.has(title)) problems.push(`${e.id}: ${f} has no test titled "${title}"`);
    }
    if (hasTests && e.tests.every((t) => gaps.includes(t))) problems.push(`${e.id}: rests only on known gap(s) ${e.tests.join(', ')}`);
  }
  if (!opts.traceFile) problems.push(...kitProblems(file, seed));
  const byKeyword: Record<string, number> = {};
  for (const s of found) byKeyword[s.keyword] = (byKeyword[s.keyword] ?? 0) + 1;
  return { problems, counts: { statements: found.length, byKeyword, traced, notApplicable, mustTraced, mustNotApplicable }, seedPath };
}

/** The kit's statements file (packages/conformance/traceability/sep-2848.json) as this trace file implies it, formatted. */
export function kitStatementsJson(file: TraceFile): string {
  const statements: SepStatement[] = file.statements.map((e) => ({
    id: e.id,
    section: e.section,
    keyword: e.keyword as SepStatement['keyword'],
    paraphrase: e.paraphrase,
    checks: e.tests.filter((t) => t.startsWith('conf:')),
  }));
  const doc = {
    about:
      'Every normative statement (MUST / SHOULD, optionally NOT) of SEP-2848 with the checks of this kit that cover it; generated from conformance/sep-2848.yaml of the Countersign repository (npm run conformance:trace -- --write-kit), which also names the server-side tests behind the statements no wire can show (checks empty here).',
    spec: file.header.spec ?? 'SEP-2848',
    extension: file.header.extension ?? 'io.modelcontextprotocol/tool-approval',
    statements,
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** The seed's Reference Implementation bullets ("covering these MCP-observable statements: - … - …"), whitespace collapsed. */
export function referenceBullets(seed: string): string[] {
  const start = seed.indexOf('covering these MCP-observable statements:');
  const end = seed.indexOf('\nSecurity Implications', start);
  if (start < 0 || end < 0) return [];
  return seed
    .slice(start, end)
    .replace(/\s+/g, ' ')
    .split(/ - /)
    .slice(1)
    .map((b) => b.trim());
}

/** Problems of the kit's two traceability files against the trace file and the seed. */
function kitProblems(file: TraceFile, seed: string): string[] {
  const problems: string[] = [];
  const rel = (p: string) => p.slice(ROOT.length + 1);
  if (!existsSync(KIT_STATEMENTS_FILE) || readFileSync(KIT_STATEMENTS_FILE, 'utf8') !== kitStatementsJson(file))
    problems.push(`${rel(KIT_STATEMENTS_FILE)} is not what ${rel(TRACE_FILE)} says: run npm run conformance:trace -- --write-kit`);
  const ri = (JSON.parse(readFileSync(KIT_REFERENCE_FILE, 'utf8')) as { statements: ReferenceStatement[] }).statements;
  const bullets = referenceBullets(seed);
  const squash = (t: string) => t.replace(/\s+/g, '');
  if (bullets.length !== 7) problems.push(`the seed's Reference Implementation section lists ${bullets.length} statements, expected 7`);
  if (ri.length !== bullets.length)
    problems.push(`${rel(KIT_REFERENCE_FILE)} has ${ri.length} statements, the seed's Reference Implementation section ${bullets.length}`);
  ri.forEach((r, i) => {
    if (r.id !== `RI${i + 1}`) problems.push(`${rel(KIT_REFERENCE_FILE)}: ${r.id} should be RI${i + 1} (seed order)`);
    if (bullets[i] !== undefined && squash(r.text) !== squash(bullets[i]))
      problems.push(`${r.id}: "${r.text}" is not the seed's statement ${i + 1} ("${bullets[i]}")`);
    if (r.checks.length === 0) problems.push(`${r.id}: no scenario (check) in the kit`);
    for (const c of r.checks) if (!CHECK_IDS.includes(c)) problems.push(`${r.id}: no black-box check ${c} in the kit`);
  });
  return problems;
}

const invokedDirectly = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  if (process.argv.includes('--write-kit'))
    writeFileSync(KIT_STATEMENTS_FILE, kitStatementsJson(parseTraceFile(readFileSync(TRACE_FILE, 'utf8'))));
  const r = checkTraceability();
  const kw = Object.entries(r.counts.byKeyword)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  process.stdout.write(`seed ${r.seedPath}: ${r.counts.statements} normative statements (${kw})\n`);
  process.stdout.write(
    `traced to tests: ${r.counts.traced}; not applicable: ${r.counts.notApplicable} (MUST/MUST NOT: ${r.counts.mustTraced} traced, ${r.counts.mustNotApplicable} not applicable)\n`,
  );
  for (const p of r.problems) process.stdout.write(`PROBLEM ${p}\n`);
  process.stdout.write(r.problems.length ? `${r.problems.length} problems\n` : 'traceability OK\n');
  process.exitCode = r.problems.length ? 1 : 0;
}
