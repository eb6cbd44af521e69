// Scope: the gateway in the separate roles of `countersign serve` (started in-process through
// `startRole` on fixed free ports): the mcp role lists and gates upstream tools with its own
// connections, the worker role executes an approved upstream call with its own, and stopping the
// roles stops every upstream process they started.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireClient } from '@countersign/client';
import { loadOrCreateDevIssuer } from '../../src/auth/dev-issuer.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '@countersign/http/log';
import { loadOrCreateSecrets } from '../../src/secrets.js';
import { roleUrls } from '../../src/compose.js';
import { startRole, type RunningRole } from '../../src/stack-roles.js';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { isPortFree } from '../../src/temporal/dev-server.js';
import { basic, waitForTerminal, type WireTask } from '../support/stack-harness.js';
import { writeGatewayConfig } from './gateway-support.js';

const logger = createLogger({ level: process.env.LOG_LEVEL ?? 'warn' });
const driftDir = mkdtempSync(join(tmpdir(), 'countersign-roles-drift-'));
const roles: RunningRole[] = [];
let config: Config;

async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const p = 20_000 + Math.floor(Math.random() * 30_000);
    if (!ports.includes(p) && (await isPortFree(p))) ports.push(p);
  }
  return ports;
}

const pids = () =>
  existsSync(join(driftDir, 'pids.log')) ? readFileSync(join(driftDir, 'pids.log'), 'utf8').trim().split('\n').map(Number) : [];
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  const [mcp, approvals, issuer, temporal] = await freePorts(4);
  const configFile = writeGatewayConfig([
    {
      name: 'drift',
      transport: 'stdio',
      command: process.execPath,
      args: ['--conditions=countersign-source', '--import', 'tsx', join(PROJECT_ROOT, 'test/gateway/fixtures/drift-server.ts')],
      cwd: PROJECT_ROOT,
      env: { DRIFT_STATE_DIR: { fromEnv: 'COUNTERSIGN_TEST_ROLES_DRIFT_DIR' } },
    },
  ]);
  process.env.COUNTERSIGN_TEST_ROLES_DRIFT_DIR = driftDir;
  const policyDir = mkdtempSync(join(tmpdir(), 'countersign-roles-policies-'));
  writeFileSync(
    join(policyDir, 'drift.cedar'),
    `@id("drift-permit") permit (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"drift");
@id("drift-approval") @requestable("true") @approver_group("treasury") @request_ttl("P1D") @reason("Drift operations need approval.")
forbid (principal, action == Countersign::Action::"tools/call", resource in Countersign::Upstream::"drift")
when { context.arguments has label && context.arguments.label like "gated-*" }
unless { context has approval && context.approval.state == "approved" };`,
  );
  config = loadConfig(
    {},
    {
      COUNTERSIGN_DATA_DIR: mkdtempSync(join(tmpdir(), 'countersign-roles-')),
      COUNTERSIGN_POLICY_DIR: policyDir,
      COUNTERSIGN_CONFIG: configFile,
      COUNTERSIGN_PORT: mcp!,
      COUNTERSIGN_APPROVALS_PORT: approvals!,
      COUNTERSIGN_ISSUER_PORT: issuer!,
      TEMPORAL_PORT: temporal!,
      COUNTERSIGN_STATUS_POLL_INITIAL_MS: 1000,
      COUNTERSIGN_STATUS_POLL_MAX_MS: 2000,
      COUNTERSIGN_POLL_INTERVAL_MS: 200,
    },
  );
  for (const role of ['temporal', 'issuer', 'approvals', 'mcp', 'worker'] as const) roles.push(await startRole(role, config, { logger }));
});
afterAll(async () => {
  for (const r of roles.reverse()) if (!stopped.has(r)) await r.stop().catch(() => undefined);
});
const stopped = new Set<RunningRole>();

async function client(): Promise<WireClient> {
  const urls = roleUrls(config);
  const issuer = await loadOrCreateDevIssuer({
    keyFile: join(config.COUNTERSIGN_DATA_DIR, 'dev-issuer-key.json'),
    issuer: urls.issuerUrl,
    audience: urls.resourceUrl,
  });
  const token = await issuer.mintToken({ sub: 'alice' });
  return new WireClient({ url: urls.resourceUrl, token, capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
}

describe('gateway in separate roles', () => {
  it('the mcp role runs an allowed upstream call inline and the worker role runs an approved one, each through its own upstream process', async () => {
    const alice = await client();
    const inline = await alice.request<{ content: Array<{ text: string }> }>('tools/call', {
      name: 'drift__op',
      arguments: { label: 'inline-1' },
    });
    expect(inline.content[0]?.text).toBe('recorded inline-1');
    // the mcp role and the worker role each started their own upstream process
    expect(new Set(pids().filter(alive)).size).toBeGreaterThanOrEqual(2);

    const label = `gated-${randomUUID().slice(0, 8)}`;
    const created = await alice.request<WireTask>('tools/call', { name: 'drift__op', arguments: { label } });
    expect(created.resultType).toBe('task');
    const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
    const bob = secrets.approvers.find((a) => a.id === 'bob')!;
    const urls = roleUrls(config);
    const pending = (await (
      await fetch(`${urls.approvalsUrl}/access/v1/approvals/pending?limit=200`, { headers: { authorization: basic(bob.id, bob.secret) } })
    ).json()) as {
      items: Array<{ id: string; arguments: Record<string, unknown> }>;
    };
    const req = pending.items.find((r) => r.arguments.label === label)!;
    const res = await fetch(`${urls.approvalsUrl}/access/v1/requests/${req.id}/decision`, {
      method: 'POST',
      headers: { authorization: basic(bob.id, bob.secret), 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    expect(res.status).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(
      readFileSync(join(driftDir, 'calls.log'), 'utf8')
        .split('\n')
        .filter((l) => l === label),
    ).toHaveLength(1);
  });

  it('stopping the mcp and worker roles stops every upstream process they started', async () => {
    const running = pids().filter(alive);
    expect(running.length).toBeGreaterThan(0);
    for (const r of roles.filter((x) => x.role === 'mcp' || x.role === 'worker')) {
      await r.stop();
      stopped.add(r);
    }
    for (const pid of running) while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
    expect(pids().filter(alive)).toEqual([]);
  });
});
