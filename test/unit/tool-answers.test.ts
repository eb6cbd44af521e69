// Scope: the tool probe of scripts/install-temporal-server.mjs (scripts/tool-answers.mjs) against the
// real Go toolchain of this machine: the cold path of `npm run test:cluster` once stopped with "Go is
// needed to build the Temporal server" although Go was installed, because it probed `go --version`.
import { describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs script without declarations
import { GO_PROBE, answers, goCommand } from '../../scripts/tool-answers.mjs';

const probe = answers as (cmd: string, args: string[]) => boolean;
const findGo = goCommand as () => string | undefined;

describe('the installer tool probe', () => {
  it("accepts the Go installed here with the installer's own probe (go version)", () => {
    const [cmd, args] = GO_PROBE as readonly [string, string[]];
    expect(probe(cmd, [...args])).toBe(true);
  });

  it('finds a Go command that answers the probe, the one the installer builds the server with', () => {
    const go = findGo();
    expect(go).toBeDefined();
    expect(probe(go!, ['version'])).toBe(true);
  });

  it('says no for a flag the tool refuses and for a tool that is not installed, without throwing', () => {
    expect(probe('go', ['--version'])).toBe(false);
    expect(probe('countersign-no-such-tool', ['version'])).toBe(false);
  });
});
