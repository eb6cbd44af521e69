#!/usr/bin/env node
// Installs what `npm run test:cluster` needs and `npm test` does not: the Temporal server and its
// SQL schema tool, built from the Go module proxy into the git-ignored .tools/temporal-server/<version>/
// (a cold build takes 5-13 minutes on 2 cores; later runs find the binaries and return at once), and
// PostgreSQL's initdb / pg_ctl (Debian's `postgresql` package, when missing). Exits non-zero with the
// failing step named; nothing is skipped silently.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GO_PROBE, answers } from './tool-answers.mjs';

const VERSION = 'v1.32.2';
const GO_TOOLCHAIN = 'go1.26.10'; // the server's go.mod needs at least this one
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = join(ROOT, '.tools', 'temporal-server', VERSION);

function run(cmd, args, env = process.env) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`install-temporal-server: ${cmd} ${args.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(1);
  }
}

if (!existsSync(join(BIN, 'server')) || !existsSync(join(BIN, 'sql'))) {
  if (!answers(...GO_PROBE)) {
    console.error('install-temporal-server: Go is needed to build the Temporal server (any go >= 1.21 fetches its toolchain)');
    process.exit(1);
  }
  mkdirSync(BIN, { recursive: true });
  console.error(`install-temporal-server: building the Temporal server ${VERSION} into ${BIN} (minutes on a cold cache)`);
  run('go', ['install', `go.temporal.io/server/cmd/server@${VERSION}`, `go.temporal.io/server/cmd/tools/sql@${VERSION}`], {
    ...process.env,
    GOTOOLCHAIN: GO_TOOLCHAIN,
    GOFLAGS: '-buildvcs=false',
    GOBIN: BIN,
  });
}

if (!answers('initdb', ['--version']) || !answers('pg_ctl', ['--version'])) {
  console.error('install-temporal-server: installing PostgreSQL (Debian package postgresql)');
  run('apt-get', ['install', '-y', '-q', 'postgresql']);
  // Debian keeps the binaries in a versioned folder off PATH
  const out = execFileSync('sh', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1'], { encoding: 'utf8' }).trim();
  for (const tool of ['initdb', 'pg_ctl', 'postgres']) run('ln', ['-sf', join(out, tool), join('/usr/local/bin', tool)]);
}
