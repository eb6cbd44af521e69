// Scope: shadow mode on the whole stack over real HTTP and a real Temporal dev server: a candidate
// policy folder (COUNTERSIGN_SHADOW_POLICY_DIR, real Cedar files) beside the live one, calls made
// by the official MCP SDK client (`@modelcontextprotocol/client`), the counters read from the
// front's Prometheus /metrics and the disagreements from its real log file.
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, type Logger } from '@countersign/http/log';
import type { Stack } from '../../src/stack.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { startTestStack, testConfig } from '../support/stack-harness.js';

let stack: Stack;
let logger: Logger;
const logFile = join(mkdtempSync(join(tmpdir(), 'shadow-log-')), 'stack.log');
const memos: string[] = [];
const closers: Array<() => Promise<void>> = [];

/** The shadow set: the limit raised from 25,000 to 45,000, and transfers over 50,000 refused outright. */
function shadowFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-shadow-'));
  const live = join(PROJECT_ROOT, 'policies');
  for (const f of readdirSync(live)) if (f.endsWith('.cedar')) copyFileSync(join(live, f), join(dir, f));
  const file = join(dir, 'wire_transfer.cedar');
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace('amount.greaterThan(decimal("25000.00"))', 'amount.greaterThan(decimal("45000.00"))'),
  );
  writeFileSync(
    join(dir, 'hard_cap.cedar'),
    `@id("wire-transfer-hard-cap")
forbid (principal, action == Countersign::Action::"tools/call", resource == Countersign::Tool::"wire_transfer")
when { context.arguments.amount.greaterThan(decimal("50000.00")) };
`,
  );
  return dir;
}

function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const metrics = async () => (await fetch(`${new URL(stack.urls.mcp).origin}/metrics`)).text();

async function transfer(amount: number) {
  const token = await stack.issuer.mintToken({ sub: 'alice' });
  const client = new Client({ name: 'policy-shadow-e2e', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
  );
  closers.push(() => client.close());
  const memo = `shadow ${randomUUID()}`;
  memos.push(memo);
  return client.callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount, memo } });
}

beforeAll(async () => {
  logger = createLogger({ level: 'info', destination: logFile });
  stack = await startTestStack(testConfig({ COUNTERSIGN_SHADOW_POLICY_DIR: shadowFolder() }), logger);
}, 120_000);
afterAll(async () => {
  for (const c of closers) await c();
  await stack?.stop();
});

describe('shadow policies on the real stack', () => {
  it('the disagreement counter moves by live and shadow outcome, every call is counted as evaluated, and the live decision is still the one enforced', async () => {
    const before = await metrics();
    expect(sample(before, 'countersign_policy_shadow_evaluations_total')).toBe(0);

    // live: 30,000 and 60,000 requestable (over 25,000), 10,000 allowed; shadow: allowed, denied, allowed
    const requestable = await transfer(30_000);
    const capped = await transfer(60_000);
    const allowed = await transfer(10_000);
    // never enforced: the live decisions answer (approvals opened for both, the small one ran)
    for (const r of [requestable, capped]) expect(JSON.stringify(r.content)).toContain('approval');
    expect(allowed.isError).toBeFalsy();

    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await metrics();
      if (sample(text, 'countersign_policy_shadow_evaluations_total') === 3) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(sample(text, 'countersign_policy_shadow_evaluations_total')).toBe(3);
    expect(sample(text, 'countersign_policy_shadow_disagreements_total', { live: 'requestable', shadow: 'allowed' })).toBe(1);
    expect(sample(text, 'countersign_policy_shadow_disagreements_total', { live: 'requestable', shadow: 'denied' })).toBe(1);
    // bounded labels: only live and shadow, each an outcome
    for (const line of text.split('\n').filter((l) => l.startsWith('countersign_policy_shadow_disagreements_total{')))
      expect(line).toMatch(
        /^countersign_policy_shadow_disagreements_total\{live="(allowed|in-band|requestable|denied)",shadow="(allowed|in-band|requestable|denied)"\} \d+$/,
      );
  });

  it('each disagreement is one log line with the tool, the keyed call reference and both outcomes, and no argument', async () => {
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    const lines = readFileSync(logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('shadow policy disagrees'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => [l.tool, (l.live as { outcome: string }).outcome, (l.shadow as { outcome: string }).outcome])).toEqual([
      ['wire_transfer', 'requestable', 'allowed'],
      ['wire_transfer', 'requestable', 'denied'],
    ]);
    expect(lines[1]).toMatchObject({
      live: { outcome: 'requestable', approverGroup: 'treasury', policyIds: ['wire-transfer-over-limit'] },
      shadow: { outcome: 'denied', policyIds: ['wire-transfer-hard-cap', 'wire-transfer-over-limit'] },
    });
    for (const l of lines) expect(l.callRef).toEqual(expect.any(String));
    const raw = JSON.stringify(lines);
    for (const secret of ['acct-991', '30000', '60000', ...memos]) expect(raw).not.toContain(secret);
  });
});
