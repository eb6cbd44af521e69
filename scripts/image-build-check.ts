/**
 * `npm run image:check`: the Dockerfile's build replayed without Docker, then the image's roles
 * booted from the production-only tree it produced.
 *
 * 1. Parses `Dockerfile` and `.dockerignore` (scripts/dockerfile.ts, strict).
 * 2. Replays every stage into its own folder under a temp dir, absolute image paths mapped below it:
 *    `WORKDIR`, `ENV`, `COPY` from the build context (honouring .dockerignore; a source that is
 *    missing or wholly ignored fails, as `docker build` would) and from earlier stages, and `RUN`
 *    steps made of `npm ci …` and `npm prune …` (run for real, from the lockfile, preferring the local npm cache),
 *    `mkdir -p …` (mapped) and `chown …` (skipped: needs root; the non-root user is checked
 *    statically by test/unit/dockerfile.test.ts). Any other `RUN` fails the check.
 * 3. In the final stage's tree: no development tool (vitest, typescript, eslint, prettier) is installed.
 * 4. Boots `approvals` with the image's `ENTRYPOINT` (as `docker run <image> serve --role approvals`)
 *    and the image's `ENV`, with a clean environment and a temp data folder; runs the image's
 *    `HEALTHCHECK` command against it and reads `/readyz`. With the Temporal CLI installed
 *    (`npm run setup:temporal`), also starts a dev server and boots `worker` from the same tree
 *    (it loads the prebuilt workflow bundle of `npm run build`, dist/workflow-bundle.js),
 *    and waits for its `/readyz`.
 *
 * Usage: `npx tsx scripts/image-build-check.ts [--keep]` (`--keep`: leave the temp dir). Exit 0 when
 * every step passed, 1 otherwise (the failing step on stderr). Takes minutes: `npm ci` compiles
 * better-sqlite3 when its prebuilt binary cannot be downloaded (no internet here). Not part of
 * `npm test` for that reason; the static checks are (test/unit/dockerfile.test.ts).
 *
 * Deliberately does not: build an image, pull base images, or check what only Docker can (the base
 * image's contents, file ownership, the HEALTHCHECK schedule).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { PROJECT_ROOT } from '../src/project-root.js';
import { temporalCliPath } from '../src/temporal/binaries.js';
import { freePort, isPortFree, startDevServer, type DevServer } from '../src/temporal/dev-server.js';
import { dockerignored, lastOf, parseDockerfile, parseDockerignore, type Stage } from './dockerfile.js';

const log = (line: string) => process.stdout.write(`${line}\n`);

/** `env` without `NODE_OPTIONS`. */
function withoutNodeOptions(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _drop, ...rest } = env;
  return rest;
}

/** A replayed stage: where its image root is, its working folder and its `ENV`. */
interface Replayed {
  root: string;
  workdir: string;
  env: Record<string, string>;
}

/** `imagePath` (absolute in the image) under the stage's folder `root`. */
const mapped = (root: string, imagePath: string) => join(root, resolve('/', imagePath));

/** Copy the context path `src` (a file or folder) to `dest`, leaving out what .dockerignore excludes. Returns the number of files copied. */
function copyFromContext(src: string, dest: string, ignore: string[]): number {
  const rel = relative(PROJECT_ROOT, resolve(PROJECT_ROOT, src)).split('\\').join('/');
  if (rel.startsWith('..')) throw new Error(`COPY source ${src} is outside the build context`);
  if (!existsSync(join(PROJECT_ROOT, rel))) throw new Error(`COPY source ${src} does not exist in the build context`);
  if (dockerignored(rel, ignore)) throw new Error(`COPY source ${src} is excluded by .dockerignore`);
  let files = 0;
  const walk = (relPath: string, to: string) => {
    const abs = join(PROJECT_ROOT, relPath);
    if (statSync(abs).isDirectory()) {
      mkdirSync(to, { recursive: true });
      for (const entry of readdirSync(abs)) {
        const child = `${relPath}/${entry}`;
        if (!dockerignored(child, ignore)) walk(child, join(to, entry));
      }
    } else {
      mkdirSync(dirname(to), { recursive: true });
      cpSync(abs, to);
      files++;
    }
  };
  walk(rel, dest);
  return files;
}

function replayStage(stage: Stage, stages: Map<string, Replayed>, base: string, ignore: string[]): Replayed {
  const root = join(base, stage.from.name ?? `stage-${stages.size}`);
  mkdirSync(root, { recursive: true });
  const state: Replayed = { root, workdir: root, env: {} };
  for (const ins of stage.instructions) {
    switch (ins.op) {
      case 'WORKDIR':
        state.workdir = mapped(root, ins.path);
        mkdirSync(state.workdir, { recursive: true });
        break;
      case 'ENV':
        Object.assign(state.env, ins.vars);
        break;
      case 'COPY': {
        const folderDest = ins.dest.endsWith('/') || ins.sources.length > 1;
        for (const src of ins.sources) {
          const destBase = ins.dest.startsWith('/') ? mapped(root, ins.dest) : resolve(state.workdir, ins.dest);
          if (ins.from) {
            const from = stages.get(ins.from);
            if (!from) throw new Error(`line ${ins.line}: COPY --from=${ins.from}: no such earlier stage`);
            const source = mapped(from.root, src);
            if (!existsSync(source)) throw new Error(`line ${ins.line}: COPY --from=${ins.from} ${src}: not in that stage`);
            cpSync(source, destBase, { recursive: true, verbatimSymlinks: true });
            log(`  COPY --from=${ins.from} ${src} ${ins.dest}`);
          } else {
            const isDir = statSync(join(PROJECT_ROOT, src)).isDirectory();
            const to = isDir || !folderDest ? destBase : join(destBase, src.split('/').at(-1)!);
            const n = copyFromContext(src, to, ignore);
            log(`  COPY ${src} ${ins.dest} (${n} files)`);
          }
        }
        break;
      }
      case 'RUN':
        for (const step of ins.command.split('&&').map((s) => s.trim())) {
          if (/^npm (ci|prune)(\s|$)/.test(step)) {
            log(`  RUN ${step}  (in ${relative(base, state.workdir)})`);
            const started = Date.now();
            const r = spawnSync('sh', ['-c', step], {
              cwd: state.workdir,
              stdio: ['ignore', 'inherit', 'inherit'],
              // as `docker build` would: none of this process's NODE_OPTIONS (npm run sets the source condition)
              env: { ...withoutNodeOptions(process.env), ...state.env, npm_config_prefer_offline: 'true' },
            });
            if (r.status !== 0) throw new Error(`line ${ins.line}: ${step} exited ${r.status}`);
            log(`    done in ${Math.round((Date.now() - started) / 1000)} s`);
          } else if (/^mkdir -p (\/\S+\s*)+$/.test(step)) {
            for (const p of step.split(/\s+/).slice(2)) mkdirSync(mapped(root, p), { recursive: true });
            log(`  RUN ${step}  (mapped)`);
          } else if (/^chown \S+ (\/\S+\s*)+$/.test(step)) {
            log(`  RUN ${step}  (skipped: needs root; the USER is checked statically)`);
          } else throw new Error(`line ${ins.line}: RUN step not replayable here: ${step} (extend scripts/image-build-check.ts)`);
        }
        break;
      default:
        break; // USER, VOLUME, EXPOSE, HEALTHCHECK, CMD, ENTRYPOINT: metadata, read from the stage below
    }
  }
  if (stage.from.name) stages.set(stage.from.name, state);
  return state;
}

/** Start `argv` (first element `node` → this Node) in `cwd` with exactly `env`; resolves when stdout prints `countersign-ready`. */
function bootRole(argv: string[], cwd: string, env: Record<string, string>): Promise<ChildProcess> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd === 'node' ? process.execPath : cmd!, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  return new Promise((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error(`no countersign-ready within 90 s; stderr:\n${stderr}`)), 90_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('countersign-ready')) {
        clearTimeout(timer);
        resolveReady(child);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited ${code} before it was ready; stderr:\n${stderr}`));
    });
  });
}

async function stopRole(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

/** Run the image's HEALTHCHECK argv (ports rewritten by `ports`) in `cwd`; returns its exit status. */
function healthcheck(argv: string[], cwd: string, ports: Record<number, number>): number | null {
  const [cmd, ...args] = argv.map((a) => a.replace(/:(\d+)\//, (m, p: string) => (ports[Number(p)] ? `:${ports[Number(p)]}/` : m)));
  return spawnSync(cmd === 'node' ? process.execPath : cmd!, args, { cwd, stdio: 'inherit' }).status;
}

async function portOrFree(preferred: number): Promise<number> {
  return (await isPortFree(preferred)) ? preferred : freePort();
}

async function main(): Promise<void> {
  const keep = process.argv.includes('--keep');
  const started = Date.now();
  const stages = parseDockerfile(readFileSync(join(PROJECT_ROOT, 'Dockerfile'), 'utf8'));
  const ignore = parseDockerignore(readFileSync(join(PROJECT_ROOT, '.dockerignore'), 'utf8'));
  const base = mkdtempSync(join(tmpdir(), 'countersign-image-'));
  const running: ChildProcess[] = [];
  let dev: DevServer | undefined;
  try {
    const replayed = new Map<string, Replayed>();
    let final: Replayed | undefined;
    for (const stage of stages) {
      log(`FROM ${stage.from.image}:${stage.from.tag ?? 'latest'}${stage.from.name ? ` AS ${stage.from.name}` : ''}`);
      final = replayStage(stage, replayed, base, ignore);
    }
    const last = stages.at(-1)!;
    const image = final!;

    const devTools = ['vitest', 'typescript', 'eslint', 'prettier'].filter((p) => existsSync(join(image.workdir, 'node_modules', p)));
    if (devTools.length) throw new Error(`development tools in the production tree: ${devTools.join(', ')}`);
    log('production tree: no vitest, typescript, eslint or prettier');

    const entrypoint = lastOf(last, 'ENTRYPOINT')?.argv;
    const check = lastOf(last, 'HEALTHCHECK')?.argv;
    if (!entrypoint || !check) throw new Error('the final stage needs ENTRYPOINT and HEALTHCHECK');
    const dataDir = join(base, 'data');
    mkdirSync(dataDir);
    const approvalsPort = await portOrFree(8788);
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: base,
      ...image.env,
      COUNTERSIGN_HOST: '127.0.0.1',
      COUNTERSIGN_DATA_DIR: dataDir,
      COUNTERSIGN_APPROVALS_PORT: String(approvalsPort),
      LOG_LEVEL: 'warn',
    };
    const approvals = await bootRole([...entrypoint, 'serve', '--role', 'approvals'], image.workdir, env);
    running.push(approvals);
    log(`approvals booted from the production tree on port ${approvalsPort}`);
    if (healthcheck(check, image.workdir, { 8788: approvalsPort }) !== 0) throw new Error('the image HEALTHCHECK failed against approvals');
    const ready = await fetch(`http://127.0.0.1:${approvalsPort}/readyz`);
    if (ready.status !== 200) throw new Error(`approvals /readyz answered ${ready.status}`);
    log('HEALTHCHECK passed; /readyz 200');

    if (existsSync(temporalCliPath())) {
      dev = await startDevServer({ dbFile: join(base, 'temporal.db') });
      const workerPort = await portOrFree(8790);
      const worker = await bootRole([...entrypoint, 'serve', '--role', 'worker'], image.workdir, {
        ...env,
        TEMPORAL_ADDRESS: dev.address,
        COUNTERSIGN_WORKER_PORT: String(workerPort),
      });
      running.push(worker);
      const workerReady = await fetch(`http://127.0.0.1:${workerPort}/readyz`);
      if (workerReady.status !== 200) throw new Error(`worker /readyz answered ${workerReady.status}: ${await workerReady.text()}`);
      log(`worker booted from the production tree (workflows bundled), /readyz 200 on port ${workerPort}`);
    } else log(`worker boot skipped: no Temporal CLI at ${temporalCliPath()} (npm run setup:temporal)`);

    for (const child of running.splice(0).reverse()) {
      const code = await stopRole(child);
      if (code !== 0) throw new Error(`a role exited ${code} on SIGTERM (expected 0)`);
    }
    log(`image check passed in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    for (const child of running) await stopRole(child);
    await dev?.stop();
    if (keep) log(`kept ${base}`);
    else rmSync(base, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`image check failed: ${(err as Error).message}\n`);
  process.exit(1);
});
