// Scope: the startup error of a policy folder that does not load (openToolParts, what the worker,
// the MCP front and `countersign dev` open first) names which folder and which setting: the shadow
// policy folder (COUNTERSIGN_SHADOW_POLICY_DIR) or the live one (COUNTERSIGN_POLICY_DIR), so an
// operator trying a candidate in shadow mode is not sent to fix the live policies.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openToolParts } from '../../src/compose.js';
import { defaultConfig } from '../../src/config.js';
import { PolicyLoadError } from '../../src/policy/cedar-pdp.js';

const scratch = mkdtempSync(join(tmpdir(), 'countersign-policy-folders-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const logger = pino({ level: 'silent' });
const config = (over: Parameters<typeof defaultConfig>[0]) =>
  defaultConfig({ COUNTERSIGN_DATA_DIR: mkdtempSync(join(scratch, 'data-')), ...over });

/** The error openToolParts throws for `over` (it must throw). */
async function startupError(over: Parameters<typeof defaultConfig>[0]): Promise<Error> {
  const err = await openToolParts(config(over), logger).then(
    async (parts) => {
      await parts.close();
      throw new Error('openToolParts did not throw');
    },
    (e: unknown) => e as Error,
  );
  return err;
}

describe('a policy folder that does not load at startup', () => {
  it('a shadow policy folder that does not exist, or does not parse, is named as the shadow policy folder and its setting', async () => {
    const missing = join(scratch, 'no-such-shadow');
    const gone = await startupError({ COUNTERSIGN_SHADOW_POLICY_DIR: missing });
    expect(gone).toBeInstanceOf(PolicyLoadError);
    expect(gone.message).toMatch(/^the shadow policy folder \(COUNTERSIGN_SHADOW_POLICY_DIR\b.*\): cannot read policy folder /);
    expect(gone.message).toContain(missing);

    const broken = mkdtempSync(join(scratch, 'shadow-'));
    writeFileSync(join(broken, 'candidate.cedar'), 'forbid (principal, action, resource) when { ;');
    const parse = await startupError({ COUNTERSIGN_SHADOW_POLICY_DIR: broken });
    expect(parse.message).toMatch(
      /^the shadow policy folder \(COUNTERSIGN_SHADOW_POLICY_DIR\b.*\): Cedar parse error in candidate\.cedar: /,
    );
    expect((parse as PolicyLoadError).file).toBe('candidate.cedar');
  });

  it('a live policy folder that does not exist is named as the policy folder and COUNTERSIGN_POLICY_DIR, not as the shadow one', async () => {
    const missing = join(scratch, 'no-such-live');
    const err = await startupError({ COUNTERSIGN_POLICY_DIR: missing, COUNTERSIGN_SHADOW_POLICY_DIR: join(scratch, 'no-such-shadow') });
    expect(err.message).toMatch(/^the policy folder \(COUNTERSIGN_POLICY_DIR\): cannot read policy folder /);
  });
});
