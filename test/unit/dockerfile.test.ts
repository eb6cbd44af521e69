// Scope: the Dockerfile and .dockerignore read statically (scripts/dockerfile.ts): the properties of
// the production image that hold without building it. The build itself is replayed, and a role
// booted from its production-only tree, by `npm run image:check` (scripts/image-build-check.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { dockerignored, lastOf, parseDockerfile, parseDockerignore } from '../../scripts/dockerfile.js';

const stages = parseDockerfile(readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8'));
const final = stages.at(-1)!;
const ignore = parseDockerignore(readFileSync(join(PROJECT_ROOT, '.dockerignore'), 'utf8'));
const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The folders and files the final stage copies from the build context (not from another stage). */
const copiedFromContext = final.instructions.flatMap((i) => (i.op === 'COPY' && !i.from ? i.sources : []));

/** Every file under `dir` (relative to the repository), recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(PROJECT_ROOT.length + 1));
}

describe('Dockerfile', () => {
  it('builds in two stages: compile with npm ci (its prepare runs the build) and prune to production dependencies, then a slim Node 20 image pinned by tag', () => {
    expect(stages).toHaveLength(2);
    const deps = stages[0]!;
    expect(deps.from.name).toBe('deps');
    const runs = deps.instructions.filter((i) => i.op === 'RUN').map((i) => (i.op === 'RUN' ? i.command : ''));
    expect(runs).toEqual([expect.stringMatching(/^npm ci\b.* && npm prune --omit=dev\b/)]);
    expect(deps.instructions.find((i) => i.op === 'COPY')).toMatchObject({
      sources: expect.arrayContaining(['package.json', 'package-lock.json']),
    });
    expect(final.from.image).toBe('node');
    expect(final.from.tag).toMatch(/^20\.\d+\.\d+-\w+-slim$/);
    const fromDeps = final.instructions.flatMap((i) => (i.op === 'COPY' && i.from === 'deps' ? i.sources : []));
    expect(fromDeps).toEqual(['/app/node_modules', '/app/packages', '/app/dist']);
  });

  it('runs as a non-root user', () => {
    const user = lastOf(final, 'USER')?.user;
    expect(user).toBeDefined();
    expect(user!.split(':')[0]).not.toMatch(/^(root|0)$/);
    // and nothing after USER switches back
    const userLine = lastOf(final, 'USER')!.line;
    expect(final.instructions.filter((i) => i.line > userLine && i.op === 'RUN')).toEqual([]);
  });

  it('starts a role chosen by the command, with no install at start', () => {
    expect(lastOf(final, 'ENTRYPOINT')?.argv).toEqual(['node', 'bin/countersign.mjs']);
    expect(lastOf(final, 'CMD')?.argv.slice(0, 2)).toEqual(['serve', '--role']);
    const argv = [...lastOf(final, 'ENTRYPOINT')!.argv, ...lastOf(final, 'CMD')!.argv].join(' ');
    expect(argv).not.toMatch(/\b(npm|npx)\b/);
  });

  it('has a HEALTHCHECK probing /livez at the default port of every role in src/config.ts', () => {
    const check = lastOf(final, 'HEALTHCHECK');
    expect(check?.argv.slice(0, 2)).toEqual(['node', 'bin/healthcheck.mjs']);
    const d = ConfigSchema.parse({});
    const ports = [d.COUNTERSIGN_PORT, d.COUNTERSIGN_APPROVALS_PORT, d.COUNTERSIGN_ISSUER_PORT, d.COUNTERSIGN_WORKER_PORT];
    expect(check?.argv.slice(2)).toEqual(ports.map((p) => `http://127.0.0.1:${p}/livez`));
    expect(lastOf(final, 'EXPOSE')?.ports.sort()).toEqual([...ports].sort());
  });

  it('bakes no secret into the image: no secret-looking ENV, and the data folder is a volume', () => {
    const env = Object.assign({}, ...final.instructions.map((i) => (i.op === 'ENV' ? i.vars : {}))) as Record<string, string>;
    expect(Object.keys(env).filter((k) => /SECRET|PASSWORD|KEY|TOKEN/.test(k))).toEqual([]);
    expect(lastOf(final, 'VOLUME')?.paths).toEqual([env.COUNTERSIGN_DATA_DIR]);
  });

  it('runs compiled code: copies the build (dist, the packages) and the folders the runtime reads, and the runtime imports only production dependencies', () => {
    // bin/countersign.mjs runs dist/src/cli.js (compiled from src, workflows, activities); the default policy folder
    for (const dir of ['bin', 'policies']) expect(copiedFromContext).toContain(dir);
    for (const dir of ['src', 'workflows', 'activities']) expect(copiedFromContext).not.toContain(dir);
    const runtimeFiles = ['bin', 'src', 'workflows', 'activities'].flatMap(filesUnder).filter((f) => /\.(ts|mjs|js)$/.test(f));
    const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
    const imported = new Set<string>();
    for (const file of runtimeFiles) {
      for (const m of readFileSync(join(PROJECT_ROOT, file), 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^.'][^']*)'/g)) {
        const spec = m[1]!;
        if (builtins.has(spec) || builtins.has(spec.split('/')[0]!)) continue;
        imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    }
    expect(imported.size).toBeGreaterThan(10);
    // tsx only under the countersign-source condition (a checkout's npm run dev and tests): a development dependency
    expect([...imported].filter((p) => !(p in pkg.dependencies) && p !== 'tsx').sort()).toEqual([]);
    expect(pkg.dependencies).not.toHaveProperty('tsx');
    expect(pkg.devDependencies).toHaveProperty('tsx');
  });

  it("the reader follows Docker's own syntax (dockerfile-ast): the escape directive, a comment inside a continuation, quoted ENV values", () => {
    const [stage] = parseDockerfile('# escape=`\nFROM node:20 AS app\nENV A="b c" `\n    # inside the continuation\n    D=e\nUSER node\n');
    expect(stage!.from).toMatchObject({ image: 'node', tag: '20', name: 'app', line: 2 });
    expect(stage!.instructions).toEqual([
      { op: 'ENV', line: 3, vars: { A: 'b c', D: 'e' } },
      { op: 'USER', line: 6, user: 'node' },
    ]);
  });

  it('the reader refuses instruction forms it does not know, naming the line', () => {
    expect(() => parseDockerfile('FROM node:20\nADD https://example.com/x /x\n')).toThrow(
      /line 2: instruction ADD is not one this reader supports/,
    );
    expect(() => parseDockerfile('FROM node:20\nCMD node server.js\n')).toThrow(/line 2: CMD must be in exec form/);
    expect(() => parseDockerfile('FROM node:20\nCOPY --chown=node src ./src\n')).toThrow(/line 2: COPY flag not supported/);
  });
});

describe('.dockerignore', () => {
  it('keeps dependencies, local data, tools, secrets and git out of the build context', () => {
    for (const path of [
      'node_modules/zod/package.json',
      '.data/secrets.json',
      '.tools/py/bin/temporal',
      'secrets/countersign.env',
      '.git/HEAD',
      '.env',
      'dist/src/cli.js',
    ]) {
      expect(dockerignored(path, ignore), path).toBe(true);
    }
  });

  it('keeps everything the Dockerfile copies in the build context', () => {
    for (const source of [...copiedFromContext, ...stages[0]!.instructions.flatMap((i) => (i.op === 'COPY' ? i.sources : []))]) {
      expect(dockerignored(source, ignore), source).toBe(false);
    }
    // a local build (dist/) stays out: the image compiles its own
    expect(filesUnder('src').filter((f) => dockerignored(f, ignore))).toEqual([]);
  });

  it('matches patterns from the context root, as Docker does', () => {
    expect(dockerignored('src/vendor/node_modules/x.js', ['node_modules'])).toBe(false);
    expect(dockerignored('docker-compose.yml', ['docker-compose*.yml'])).toBe(true);
    expect(() => dockerignored('a', ['!keep'])).toThrow(/not supported/);
  });
});
