/**
 * A real PostgreSQL for tests: `initdb` and `pg_ctl` from PATH (run as `nobody` when root, since
 * both refuse root), a fresh data folder under `dir`, trust authentication for user `postgres` on
 * 127.0.0.1 only. Used by the cluster tests (under the Temporal server, postgres-temporal.ts) and
 * by the store tests that run the PostgreSQL implementations.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../src/temporal/dev-server.js';

/** A running (or SIGKILLed) PostgreSQL. */
export interface Postgres {
  /** Its TCP port on 127.0.0.1. */
  port: number;
  /** Its data folder. */
  dataDir: string;
  /** `postgresql://postgres@127.0.0.1:<port>/<database>` (default database `postgres`). */
  url(database?: string): string;
  /** Create database `name` (through `psql`); throws psql's error, e.g. when it exists. */
  createDatabase(name: string): void;
  /** The postmaster's pid, or null while it is down or its pid file is not readable yet. */
  postmaster(): number | null;
  /**
   * SIGKILL the postmaster and every backend at once (stopped first, so it forks no new one
   * meanwhile), as when its machine or container dies; resolves once they are all gone. Throws
   * when it is not running.
   */
  kill(): Promise<void>;
  /** Start it again on the same data folder and port (it runs crash recovery). Throws when it is running. */
  start(): void;
  /** Stop it (`pg_ctl stop -m fast`); nothing when it is down. */
  stop(): void;
}

/** Run `cmd` as the unprivileged `nobody` when root (initdb and postgres refuse root). */
function asPostgresUser(cmd: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'nobody', '--', cmd, ...args] : args, { stdio: 'pipe' });
}

/** Gone, or a zombie nobody reaped yet (its shared memory and ports are released). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * `initdb` a new cluster in `<dir>/pgdata` and start it on a free port; its log is
 * `<dir>/postgres.log`, its socket in `dir`. `maxConnections` defaults to 200. Throws the tool's
 * error (with its output) when initdb or pg_ctl fails, e.g. when they are not on PATH.
 */
export async function startPostgres(dir: string, opts: { maxConnections?: number } = {}): Promise<Postgres> {
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'pgdata');
  mkdirSync(dataDir);
  if (process.getuid?.() === 0) execFileSync('chown', ['nobody', dataDir, dir]);
  const port = await freePort();
  asPostgresUser('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=${opts.maxConnections ?? 200}`;
  const launch = () => asPostgresUser('pg_ctl', ['-D', dataDir, '-l', join(dir, 'postgres.log'), '-w', '-o', options, 'start']);
  launch();
  let down = false;
  const pidFile = () => Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
  return {
    port,
    dataDir,
    url: (database = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    createDatabase(name) {
      execFileSync(
        'psql',
        ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-v', 'ON_ERROR_STOP=1', '-c', `CREATE DATABASE "${name}"`],
        {
          stdio: 'pipe',
        },
      );
    },
    postmaster() {
      if (down) return null;
      try {
        return pidFile();
      } catch {
        return null; // not readable (yet)
      }
    },
    async kill() {
      if (down) throw new Error('PostgreSQL is not running');
      const postmaster = pidFile();
      if (postmaster === null) throw new Error('PostgreSQL has no postmaster pid');
      process.kill(postmaster, 'SIGSTOP');
      const backends = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
      const all = [postmaster, ...backends];
      for (const pid of all) process.kill(pid, 'SIGKILL');
      down = true;
      while (all.some(alive)) await new Promise((r) => setTimeout(r, 100));
      // A zombie nobody reaped yet still passes postgres' "is the lock file's postmaster alive"
      // check (data folder and socket) and would refuse the restart; on a machine that died there
      // is no such process.
      rmSync(join(dataDir, 'postmaster.pid'), { force: true });
      rmSync(join(dir, `.s.PGSQL.${port}.lock`), { force: true });
    },
    start() {
      if (!down) throw new Error('PostgreSQL is already running');
      launch();
      down = false;
    },
    stop() {
      if (down) return;
      asPostgresUser('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      down = true;
    },
  };
}
