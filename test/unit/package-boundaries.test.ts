// Scope: the workspace's package boundaries, enforced rather than agreed (docs/DESIGN.md §2): every import
// of every package (packages/*: src, test, bin) and of the gate (the root package: src, workflows,
// activities, bin, test, scripts, bench, conformance) is read with TypeScript's own pre-processor
// (static, type-only and dynamic imports, re-exports, `import.meta.resolve`) and must
//  - stay inside its package when relative (no `../../src/…` out of a package, no `packages/…` from the gate);
//  - name a package the importer declares: `dependencies` or `peerDependencies` for what ships
//    (src, bin), and also `devDependencies` (the package's or the workspace root's) for tests and tooling;
//  - reach a workspace package only through its `exports` (no deep import past them).
// And the one composition root (`src/compose.ts`): the calls that build a worker or an MCP
// front are counted where they are made in everything outside the tests, parsed with TypeScript
// (comments and strings do not count).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/project-root.js';

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  exports?: Record<string, unknown>;
}

const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Manifest;
const root = read(join(PROJECT_ROOT, 'package.json'));
const packages = readdirSync(join(PROJECT_ROOT, 'packages')).map((dir) => ({
  dir: join('packages', dir),
  manifest: read(join(PROJECT_ROOT, 'packages', dir, 'package.json')),
}));
const byName = new Map<string, Manifest>([[root.name, root], ...packages.map((p) => [p.manifest.name, p.manifest] as const)]);
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

/** Source files under `dir` (relative to the repository), skipping build output and fixtures' node_modules. */
function sources(dir: string): string[] {
  const abs = join(PROJECT_ROOT, dir);
  try {
    statSync(abs);
  } catch {
    return [];
  }
  return readdirSync(abs, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mts|mjs|js)$/.test(e.name))
    .map((e) => relative(PROJECT_ROOT, join(e.parentPath, e.name)))
    .filter((f) => !/(^|\/)(node_modules|dist)\//.test(f));
}

/** Every module specifier of `file`: imports, re-exports, type imports, dynamic imports, `import.meta.resolve`. */
function specifiers(file: string): string[] {
  const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
  const found = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
  for (const m of text.matchAll(/import\.meta\.resolve\(\s*'([^']+)'\s*\)/g)) found.push(m[1]!);
  return found;
}

/** `@scope/name/sub` → [`@scope/name`, `./sub`]; `name/sub` → [`name`, `./sub`]. */
function split(spec: string): [string, string] {
  const parts = spec.split('/');
  const n = spec.startsWith('@') ? 2 : 1;
  const rest = parts.slice(n).join('/');
  return [parts.slice(0, n).join('/'), rest === '' ? '.' : `./${rest}`];
}

/** Whether `subpath` is one of `exports`' keys (a `*` pattern matches any one remainder). */
function exported(manifest: Manifest, subpath: string): boolean {
  return Object.keys(manifest.exports ?? {}).some((key) => {
    const star = key.indexOf('*');
    return star < 0 ? key === subpath : subpath.startsWith(key.slice(0, star)) && subpath.endsWith(key.slice(star + 1));
  });
}

/**
 * The boundary problems of `file`, a file of the package at `pkgDir` ('' for the gate) with
 * manifest `own`; `tooling`: a test, script or benchmark (may also use development dependencies).
 */
function problemsOf(file: string, pkgDir: string, own: Manifest, tooling: boolean): string[] {
  const problems: string[] = [];
  const declared = new Set([
    ...Object.keys(own.dependencies ?? {}),
    ...Object.keys(own.peerDependencies ?? {}),
    ...(tooling ? [...Object.keys(own.devDependencies ?? {}), ...Object.keys(root.devDependencies ?? {})] : []),
  ]);
  for (const spec of specifiers(file)) {
    if (spec.startsWith('.')) {
      const target = relative(PROJECT_ROOT, resolve(PROJECT_ROOT, dirname(file), spec));
      const outside = pkgDir === '' ? target.startsWith('packages/') : !target.startsWith(`${pkgDir}/`);
      if (outside || target.startsWith('..')) problems.push(`${file}: relative import ${spec} leaves ${pkgDir || 'the gate'}`);
      continue;
    }
    if (builtins.has(spec) || builtins.has(spec.split('/')[0]!)) continue;
    const [name, subpath] = split(spec);
    const workspace = byName.get(name);
    // a bin's TypeScript loader, taken only under the countersign-source condition (a checkout, whose root declares it)
    const sourceLoader = name === 'tsx' && /(^|\/)bin\//.test(file) && 'tsx' in (root.devDependencies ?? {});
    if (name !== own.name && !declared.has(name) && !sourceLoader)
      problems.push(`${file}: imports ${name}, which ${own.name} does not declare`);
    if (workspace && !exported(workspace, subpath)) problems.push(`${file}: imports ${spec}, past the exports of ${name}`);
  }
  return problems;
}

describe('package boundaries', () => {
  it('the workspace holds the runtimes as packages, each with exports, types, engines and files', () => {
    expect(packages.map((p) => p.manifest.name).sort()).toEqual([
      '@countersign/approvals',
      '@countersign/arap',
      '@countersign/client',
      '@countersign/conformance',
      '@countersign/http',
      '@countersign/receipts',
    ]);
    for (const { manifest } of [...packages, { manifest: root }]) {
      const m = manifest as Manifest & { engines?: { node?: string }; files?: string[] };
      expect(m.engines?.node, m.name).toBe('>=20');
      expect(m.files, m.name).toContain('dist');
      for (const [key, target] of Object.entries(m.exports ?? {})) {
        if (key === './package.json') continue;
        expect(target, `${m.name} ${key}`).toMatchObject({ 'countersign-source': expect.any(String), default: expect.any(String) });
      }
    }
  });

  it('no package imports another package’s internals or anything it does not declare', () => {
    const problems = packages.flatMap(({ dir, manifest }) => [
      ...[...sources(join(dir, 'src')), ...sources(join(dir, 'bin'))].flatMap((f) => problemsOf(f, dir, manifest, false)),
      ...sources(join(dir, 'test')).flatMap((f) => problemsOf(f, dir, manifest, true)),
    ]);
    expect(problems).toEqual([]);
  });

  it('the gate reaches the packages only through their exports, and what ships imports only its dependencies', () => {
    const shipped = ['src', 'workflows', 'activities', 'bin'].flatMap(sources);
    const tooling = ['test', 'scripts', 'bench', 'conformance'].flatMap(sources);
    expect(shipped.length).toBeGreaterThan(100);
    const problems = [...shipped.flatMap((f) => problemsOf(f, '', root, false)), ...tooling.flatMap((f) => problemsOf(f, '', root, true))];
    expect(problems).toEqual([]);
  });

  it('the conformance kit needs nothing but Node: no dependencies, and what ships (src, bin, examples) imports only Node built-ins and its own files', () => {
    const kit = packages.find((p) => p.manifest.name === '@countersign/conformance')!;
    expect(kit.manifest.dependencies ?? {}).toEqual({});
    expect(kit.manifest.peerDependencies ?? {}).toEqual({});
    const shipped = ['src', 'bin', 'examples'].flatMap((d) => sources(join(kit.dir, d)));
    expect(shipped).toContain('packages/conformance/src/suite.ts');
    const foreign = shipped.flatMap((f) =>
      specifiers(f)
        .filter((spec) => !spec.startsWith('.') && !builtins.has(spec) && spec !== '@countersign/conformance/cli')
        // the bin's TypeScript loader, only under the countersign-source condition in a checkout
        .filter((spec) => !(spec === 'tsx/esm/api' && f.startsWith(`${kit.dir}/bin/`)))
        .map((spec) => `${f}: ${spec}`),
    );
    expect(foreign).toEqual([]);
  });

  it('the check sees a violation: a deep import, an undeclared package and an escaping relative path', () => {
    expect(exported(byName.get('@countersign/approvals')!, './src/service.js')).toBe(false);
    expect(exported(byName.get('@countersign/approvals')!, './cli')).toBe(true);
    expect(exported(byName.get('@countersign/http')!, './json-limits')).toBe(true);
    expect(split('@countersign/http/json-limits')).toEqual(['@countersign/http', './json-limits']);
    expect(relative(PROJECT_ROOT, resolve(PROJECT_ROOT, 'packages/approvals/src', '../../../src/config.js'))).toBe('src/config.js');
  });
});

/**
 * The files outside the tests: the gate's src, workflows, activities, bin, scripts, bench and
 * conformance, each package's src and bin — but not bench/repro/, standalone reproductions for
 * upstream reports that use no Countersign code and so start their own Temporal worker.
 */
const outsideTests = [
  ...['src', 'workflows', 'activities', 'bin', 'scripts', 'bench', 'conformance'],
  ...packages.flatMap(({ dir }) => [join(dir, 'src'), join(dir, 'bin')]),
]
  .flatMap(sources)
  .filter((f) => !f.startsWith('bench/repro/'));

/** The files outside the tests that call each of `callees` (`Worker.create`, `createMcpFront`), one entry per call. */
function callSites(callees: readonly string[]): Record<string, string[]> {
  const found: Record<string, string[]> = Object.fromEntries(callees.map((c) => [c, []]));
  for (const file of outsideTests) {
    const source = ts.createSourceFile(file, readFileSync(join(PROJECT_ROOT, file), 'utf8'), ts.ScriptTarget.Latest, false);
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) found[node.expression.getText(source).replace(/\s+/g, '')]?.push(file);
      node.forEachChild(visit);
    };
    visit(source);
  }
  return found;
}

describe('one composition root', () => {
  const sites = callSites(['Worker.create', 'startApprovalWorker', 'createMcpHttpApp', 'createMcpFront']);

  it('Worker.create appears once outside tests, in the worker starter, which only the composition root calls', () => {
    expect(sites['Worker.create']).toEqual(['src/worker.ts']);
    expect(sites['startApprovalWorker']).toEqual(['src/compose.ts']);
  });

  it("the front's construction appears once outside tests: one HTTP app, in the front, which only the composition root builds", () => {
    expect(sites['createMcpHttpApp']).toEqual(['src/mcp-front.ts']);
    expect(sites['createMcpFront']).toEqual(['src/compose.ts']);
  });

  it('the scan reads the callers it is about (a moved folder would otherwise pass it vacuously)', () => {
    for (const f of [
      'src/compose.ts',
      'src/worker.ts',
      'src/mcp-front.ts',
      'bench/roles/baseline-worker.ts',
      'conformance/profile/profile.ts',
    ])
      expect(outsideTests).toContain(f);
  });
});
