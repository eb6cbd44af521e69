// Whether a command-line tool is installed and answers: the probe scripts/install-temporal-server.mjs
// uses for Go and PostgreSQL before it builds or installs anything (test/unit/tool-answers.test.ts).
import { execFileSync } from 'node:child_process';

/**
 * Whether `cmd` runs and exits 0 with `args`: each tool's own version command (`go version`; Go has
 * no `--version` flag, so `go --version` exits 2 although Go is installed). Never throws.
 * @param {string} cmd
 * @param {string[]} args
 * @returns {boolean}
 */
export function answers(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The probe of the Go toolchain the installer runs: `go version`. */
export const GO_PROBE = /** @type {const} */ (['go', ['version']]);

/** Where Go's official archive installs it, for a shell whose PATH lacks it (a login profile adds it). */
export const GO_DEFAULT_PATH = '/usr/local/go/bin/go';

/**
 * The Go command the installer builds with: `go` on PATH when it answers {@link GO_PROBE}, else
 * {@link GO_DEFAULT_PATH} when that answers, else undefined.
 * @returns {string | undefined}
 */
export function goCommand() {
  const [cmd, args] = GO_PROBE;
  return [cmd, GO_DEFAULT_PATH].find((c) => answers(c, [...args]));
}
