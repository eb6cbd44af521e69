// Scope: `loadOrCreateSecrets` (src/secrets.ts) when the `serve --role` roles start together on an
// empty data folder: processes racing to create secrets.json must all end up with the same secrets
// (the file is published with an exclusive link, the losers read the winner's), and an older file
// is upgraded once, keeping its values.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { loadOrCreateSecrets } from '../../src/secrets.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Run `n` processes that each load the secrets module, wait for `go`, then call loadOrCreateSecrets
 * on the same `rounds` empty folders in the same order (many races, so the window is hit); per
 * process, the secrets each round returned.
 */
async function race(parent: string, n: number, rounds: number): Promise<Array<Array<Record<string, unknown>>>> {
  const go = join(parent, 'go');
  const script = `const { loadOrCreateSecrets } = await import(${JSON.stringify(join(PROJECT_ROOT, 'src/secrets.ts'))});
const { existsSync } = await import('node:fs');
process.stdout.write('ready\\n');
while (!existsSync(${JSON.stringify(go)})) {}
const out = [];
for (let i = 0; i < ${rounds}; i++) out.push(loadOrCreateSecrets(${JSON.stringify(parent)} + '/data-' + i));
process.stdout.write('RESULT' + JSON.stringify(out) + '\\n');`;
  const children = Array.from({ length: n }, () =>
    spawn(process.execPath, ['--conditions=countersign-source', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const outs = children.map((c) => {
    let out = '';
    const ready = new Promise<void>((resolve) =>
      c.stdout!.on('data', (b: Buffer) => ((out += b.toString()), out.includes('ready') && resolve())),
    );
    const done = new Promise<string>((resolve) => c.once('exit', () => resolve(out)));
    return { ready, done };
  });
  await Promise.all(outs.map((o) => o.ready));
  writeFileSync(go, '');
  const texts = await Promise.all(outs.map((o) => o.done));
  return texts.map((t) => JSON.parse(t.split('RESULT')[1] ?? '[]') as Array<Record<string, unknown>>);
}

describe('loadOrCreateSecrets under a start-up race', () => {
  it('several processes creating secrets.json at the same instant on an empty folder all end up with identical secrets, equal to the file', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'countersign-secrets-'));
    dirs.push(parent);
    const rounds = 200;
    const results = await race(parent, 4, rounds);
    for (let i = 0; i < rounds; i++) {
      const dataDir = join(parent, `data-${i}`);
      const file = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8')) as Record<string, unknown>;
      for (const r of results) expect(r[i], `folder ${i}`).toEqual(file);
      expect(statSync(join(dataDir, 'secrets.json')).mode & 0o777).toBe(0o600);
      expect(readdirSync(dataDir).filter((f) => f.endsWith('.tmp') || f.endsWith('.lock'))).toEqual([]);
    }
  }, 120_000);

  it('an older secrets.json is upgraded once, keeping every existing value', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'countersign-secrets-'));
    dirs.push(dataDir);
    const fresh = loadOrCreateSecrets(dataDir);
    const { payloadKeys: _p, agents: _a, ...old } = fresh;
    writeFileSync(join(dataDir, 'secrets.json'), JSON.stringify(old));
    const upgraded = loadOrCreateSecrets(dataDir);
    expect(upgraded).toMatchObject(old);
    expect(upgraded.payloadKeys.length).toBe(1);
    expect(loadOrCreateSecrets(dataDir)).toEqual(upgraded);
    expect(existsSync(join(dataDir, 'secrets.json.lock'))).toBe(false);
  });
});

describe('secrets.json upgrade', () => {
  it('an older secrets.json without inboxSessionKey is upgraded with a fresh random one, keeping every other value', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-secrets-'));
    try {
      const first = loadOrCreateSecrets(dir);
      const { inboxSessionKey: _dropped, ...old } = first;
      writeFileSync(join(dir, 'secrets.json'), JSON.stringify(old));
      const upgraded = loadOrCreateSecrets(dir);
      expect(upgraded.inboxSessionKey).toMatch(/^[\w-]{43}$/);
      expect(upgraded.inboxSessionKey).not.toBe(upgraded.callbackSecret);
      expect({ ...upgraded, inboxSessionKey: undefined }).toEqual({ ...old, inboxSessionKey: undefined });
      expect(JSON.parse(readFileSync(join(dir, 'secrets.json'), 'utf8'))).toMatchObject({ inboxSessionKey: upgraded.inboxSessionKey });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
