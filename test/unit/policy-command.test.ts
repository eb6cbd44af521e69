// Scope: `countersign policy validate | replay` run in-process through commander (registerPolicyCommand,
// a stub configuration): bad option values exit 2 (usage) naming the option before Temporal is
// reached — an overflowing or future --since, and a folder or file that does not exist (--live or
// the setting it defaults to, --policies, --schema, --call-records) — and validation says which
// schema file it used. The replays themselves: test/e2e/policy-replay*.test.ts (a real Temporal).
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { POLICY_EXIT, registerPolicyCommand } from '../../src/cli/policy-command.js';
import { defaultConfig, type Config } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/project-root.js';

const scratch = mkdtempSync(join(tmpdir(), 'countersign-policy-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const LIVE = join(PROJECT_ROOT, 'policies');
// nothing listens on port 1: a command that got as far as Temporal would exit 1
const config = defaultConfig({ COUNTERSIGN_DATA_DIR: scratch, COUNTERSIGN_POLICY_DIR: LIVE, TEMPORAL_ADDRESS: '127.0.0.1:1' });

/** Run `countersign policy <args>` in this process: its exit code and what it wrote. */
async function policy(args: string[], cfg: Config = config): Promise<{ code: number; stdout: string; stderr: string }> {
  const program = new Command().exitOverride();
  registerPolicyCommand(program, () => Promise.resolve(cfg));
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => ((stdout += String(chunk)), true));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => ((stderr += String(chunk)), true));
  process.exitCode = undefined;
  try {
    await program.parseAsync(['policy', ...args], { from: 'user' });
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const code = Number(process.exitCode ?? 0);
  process.exitCode = undefined;
  return { code, stdout, stderr };
}

/** A copy of the live policy files in a new folder, with the schema file only when `withSchema`. */
function candidate(withSchema: boolean): string {
  const dir = mkdtempSync(join(scratch, 'candidate-'));
  for (const f of readdirSync(LIVE)) if (withSchema || f.endsWith('.cedar')) copyFileSync(join(LIVE, f), join(dir, f));
  return dir;
}

describe('policy replay: option errors exit 2 naming the option', () => {
  it('an overflowing --since (99999999d, 999999999d, P99999999D) exits 2 saying it reaches back before 1970, not 1', async () => {
    for (const since of ['99999999d', '999999999d', 'P99999999D']) {
      const r = await policy(['replay', '--policies', LIVE, '--since', since]);
      expect(r.code).toBe(POLICY_EXIT.usage);
      expect(r.stderr).toContain(`--since "${since}" reaches back before 1970-01-01T00:00:00Z`);
      expect(r.stdout).toBe('');
    }
  });

  it('a --since in the future is refused with exit 2 and a message, not replayed as 0 calls', async () => {
    const r = await policy(['replay', '--policies', LIVE, '--since', '2999-01-01T00:00:00Z']);
    expect(r.code).toBe(POLICY_EXIT.usage);
    expect(r.stderr).toMatch(/--since "2999-01-01T00:00:00Z" is in the future \(it is now \d{4}-.*\): nothing has been recorded after it/);
    expect(r.stdout).toBe('');
  });

  it('a --live folder that does not exist exits 2 naming --live; when --live is not given, a missing COUNTERSIGN_POLICY_DIR is named', async () => {
    const missing = join(scratch, 'no-such-live');
    const r = await policy(['replay', '--policies', LIVE, '--since', '1h', '--live', missing]);
    expect(r.code).toBe(POLICY_EXIT.usage);
    expect(r.stderr).toBe(`countersign policy: --live ${JSON.stringify(missing)}: no such folder\n`);
    const unset = await policy(['replay', '--policies', LIVE, '--since', '1h'], { ...config, COUNTERSIGN_POLICY_DIR: missing });
    expect(unset.code).toBe(POLICY_EXIT.usage);
    expect(unset.stderr).toContain(
      `COUNTERSIGN_POLICY_DIR (the live policy folder; --live compares with another) ${JSON.stringify(missing)}`,
    );
  });

  it('a --policies folder, --schema file or --call-records folder that does not exist exits 2 naming that option', async () => {
    const missing = join(scratch, 'no-such-thing');
    for (const [option, args] of [
      ['--policies', ['replay', '--policies', missing, '--since', '1h']],
      ['--schema', ['replay', '--policies', LIVE, '--since', '1h', '--schema', missing]],
      ['--call-records', ['replay', '--policies', LIVE, '--since', '1h', '--call-records', missing]],
      ['--policies', ['validate', '--policies', missing]],
      ['--schema', ['validate', '--policies', LIVE, '--schema', missing]],
    ] as const) {
      const r = await policy([...args]);
      expect(r.code, args.join(' ')).toBe(POLICY_EXIT.usage);
      expect(r.stderr, args.join(' ')).toContain(`${option} ${JSON.stringify(missing)}: no such `);
    }
  });

  it('the help of replay and validate lists the exit codes', () => {
    const program = new Command();
    registerPolicyCommand(program, () => Promise.resolve(config));
    const policyCommand = program.commands.find((c) => c.name() === 'policy')!;
    for (const name of ['replay', 'validate']) {
      let help = '';
      policyCommand.commands
        .find((c) => c.name() === name)!
        .configureOutput({ writeOut: (s) => (help += s) })
        .outputHelp();
      expect(help, name).toMatch(/Exit codes:[\s\S]*2 {2}usage: [\s\S]*--live[\s\S]*3 {2}a policy set does not validate/);
    }
  });
});

describe('policy validate: the schema it used', () => {
  it("says it validated with the candidate folder's own schema when the folder has one, else the live folder's", async () => {
    const own = candidate(true);
    const withOwn = await policy(['validate', '--policies', own]);
    expect(withOwn).toMatchObject({ code: POLICY_EXIT.ok, stderr: '' });
    expect(withOwn.stdout).toBe(`ok: ${own} validates against ${join(own, 'countersign.cedarschema')} (the folder's own schema)\n`);
    const bare = candidate(false);
    const withLive = await policy(['validate', '--policies', bare]);
    expect(withLive.stdout).toBe(`ok: ${bare} validates against ${join(LIVE, 'countersign.cedarschema')} (the live folder's schema)\n`);
    const explicit = await policy(['validate', '--policies', bare, '--schema', join(own, 'countersign.cedarschema')]);
    expect(explicit.stdout).toBe(`ok: ${bare} validates against ${join(own, 'countersign.cedarschema')} (--schema)\n`);
  });
});
