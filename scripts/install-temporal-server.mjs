#!/usr/bin/env node
// Installs what `npm run test:cluster` needs and `npm test` does not: the Temporal server and its
// SQL schema tool in the git-ignored .tools/temporal-server/<version>/, and PostgreSQL's initdb /
// pg_ctl (Debian's `postgresql` package when missing; only linked onto PATH when installed). The two binaries come from, in order: that
// folder (nothing to do); the user's cache folder `$XDG_CACHE_HOME/countersign/temporal-server/<version>/`
// (default ~/.cache/...), which every checkout and clean clone on the machine shares, so CI's fresh
// clone copies them in a second; or a build from the Go module proxy (5-17 minutes on 2 cores, by load),
// which then fills that cache. Exits non-zero with the failing step named; nothing is skipped silently.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { answers, goCommand } from './tool-answers.mjs';

const VERSION = 'v1.32.2';
const GO_TOOLCHAIN = 'go1.26.10'; // the server's go.mod needs at least this one
const BINARIES = ['server', 'sql'];
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, '.tools', 'temporal-server', VERSION);
const CACHE = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'countersign', 'temporal-server', VERSION);

const complete = (dir) => BINARIES.every((b) => existsSync(join(dir, b)));

/** Run `cmd`; throws, naming it, when it does not exit 0 (the catch at the end exits 1). */
function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
}

/**
 * Make `to` a folder holding the binaries that `fill(staging)` writes into a sibling folder, which is
 * then renamed into place, so an interrupted copy or build never leaves a folder that looks
 * complete, and two installs running at once (several checkouts on one machine) both end with one.
 */
function placeFolder(to, fill) {
  mkdirSync(dirname(to), { recursive: true });
  const staging = mkdtempSync(`${to}.partial-`);
  try {
    fill(staging);
    if (!complete(staging)) throw new Error(`${staging} lacks ${BINARIES.join(' or ')}`);
    if (complete(to)) return; // another install finished first
    chmodSync(staging, 0o755);
    rmSync(to, { recursive: true, force: true });
    renameSync(staging, to);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

const copyFrom = (dir) => (staging) => {
  for (const b of BINARIES) copyFileSync(join(dir, b), join(staging, b));
};

try {
  installServer();
  installPostgres();
} catch (err) {
  console.error(`install-temporal-server: ${err.message}`);
  process.exit(1);
}

function installServer() {
  if (complete(BIN)) return;
  if (complete(CACHE)) {
    console.error(`install-temporal-server: the Temporal server ${VERSION} from the cache ${CACHE}`);
  } else {
    const go = goCommand();
    if (!go) throw new Error('Go is needed to build the Temporal server (any go >= 1.21 fetches its toolchain)');
    console.error(`install-temporal-server: building the Temporal server ${VERSION} into ${CACHE} (minutes on a cold cache)`);
    placeFolder(CACHE, (staging) =>
      run(go, ['install', `go.temporal.io/server/cmd/server@${VERSION}`, `go.temporal.io/server/cmd/tools/sql@${VERSION}`], {
        ...process.env,
        GOTOOLCHAIN: GO_TOOLCHAIN,
        GOFLAGS: '-buildvcs=false',
        GOBIN: staging,
      }),
    );
  }
  placeFolder(BIN, copyFrom(CACHE));
}

/** The newest Debian PostgreSQL binary folder (`/usr/lib/postgresql/<major>/bin`) that has initdb, if any. */
function debianPostgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  return readdirSync(root)
    .filter((major) => /^\d+$/.test(major) && existsSync(join(root, major, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(root, major, 'bin'))[0];
}

function installPostgres() {
  if (answers('initdb', ['--version']) && answers('pg_ctl', ['--version'])) return;
  // installed but off PATH (Debian keeps the binaries in a versioned folder): only the links are missing
  let bin = debianPostgresBin();
  if (!bin) {
    console.error('install-temporal-server: installing PostgreSQL (Debian package postgresql)');
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const install = ['install', '-y', '-q', '--no-upgrade', 'postgresql'];
    // a machine whose package lists were never fetched (or are stale) knows no such package: update once, then retry
    if (spawnSync('apt-get', install, { stdio: ['ignore', 'inherit', 'inherit'], env: aptEnv }).status !== 0) {
      run('apt-get', ['update', '-q'], aptEnv);
      run('apt-get', install, aptEnv);
    }
    bin = debianPostgresBin();
    if (!bin) throw new Error('the postgresql package installed no /usr/lib/postgresql/<major>/bin/initdb');
  }
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) run('ln', ['-sf', join(bin, tool), join('/usr/local/bin', tool)]);
}
