// Scope: the worker's check of an external cluster's namespace retention (src/temporal/namespace-retention.ts)
// against a real Temporal dev server reached through TEMPORAL_ADDRESS, whose retention the test sets
// through the operator API (UpdateNamespace) the way an operator's `temporal operator namespace update` does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { openDataDir } from '../../src/secrets.js';
import { roleUrls } from '../../src/compose.js';
import { quietTemporalRuntime, startWorkerRole, type RoleContext } from '../../src/stack-roles.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { checkNamespaceRetention, NamespaceRetentionError } from '../../src/temporal/namespace-retention.js';
import { testConfig } from '../support/stack-harness.js';

const DAY = 86_400_000;
let dir: string;
let dev: DevServer;
let connection: Connection;

beforeAll(async () => {
  quietTemporalRuntime();
  dir = mkdtempSync(join(tmpdir(), 'countersign-retention-'));
  dev = await startDevServer({ dbFile: join(dir, 'temporal.db') });
  connection = await Connection.connect({ address: dev.address });
});
afterAll(async () => {
  await connection?.close();
  await dev?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function setRetention(ms: number): Promise<void> {
  await connection.workflowService.updateNamespace({ namespace: 'default', config: { workflowExecutionRetentionTtl: msToTs(ms) } });
}

/** A worker role context against the dev server as an external cluster, its warnings collected in `warnings`. */
function workerContext(overrides: Partial<Config>): { ctx: RoleContext; warnings: string[] } {
  const config = testConfig({
    TEMPORAL_ADDRESS: dev.address,
    COUNTERSIGN_PORT: 1,
    COUNTERSIGN_APPROVALS_PORT: 2,
    COUNTERSIGN_ISSUER_PORT: 3,
    COUNTERSIGN_TASK_QUEUE: `retention-${Math.random().toString(36).slice(2)}`,
    ...overrides,
  });
  const warnings: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      const line = JSON.parse(chunk.toString()) as { level: number; msg: string };
      if (line.level === 40) warnings.push(line.msg);
      done();
    },
  });
  const ctx: RoleContext = {
    config,
    secrets: openDataDir(config.COUNTERSIGN_DATA_DIR),
    urls: roleUrls(config),
    logger: pino({ level: 'warn' }, sink),
  };
  return { ctx, warnings };
}

describe('namespace retention of an external cluster', () => {
  it('reports a namespace whose retention is shorter than result retention plus a day as insufficient, with the retention the server holds', async () => {
    await setRetention(DAY);
    const short = await checkNamespaceRetention(connection, 'default', DAY);
    expect(short.sufficient).toBe(false);
    expect(short.retentionMs).toBe(DAY);
    expect(short.requiredMs).toBeGreaterThan(DAY);

    await setRetention(3 * DAY);
    const long = await checkNamespaceRetention(connection, 'default', DAY);
    expect(long.retentionMs).toBe(3 * DAY);
    expect(long.sufficient).toBe(true);
  });

  it('a worker with the check set to fail refuses to start on a short retention, naming the namespace and the fix', async () => {
    await setRetention(DAY);
    const { ctx } = workerContext({ COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'fail', COUNTERSIGN_RESULT_RETENTION_MS: DAY });
    const started = startWorkerRole(ctx);
    await expect(started).rejects.toBeInstanceOf(NamespaceRetentionError);
    await expect(started).rejects.toThrow(/namespace default .*temporal operator namespace update --namespace default --retention/);
  });

  it('a worker with the check set to fail refuses to start when the namespace cannot be described', async () => {
    const { ctx } = workerContext({ COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'fail', TEMPORAL_NAMESPACE: 'no-such-namespace' });
    await expect(startWorkerRole(ctx)).rejects.toThrow(/no-such-namespace/);
  });

  it('a worker with the check set to warn starts on a short retention and logs one warning, and none once the retention suffices', async () => {
    await setRetention(DAY);
    const warned = workerContext({ COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'warn', COUNTERSIGN_RESULT_RETENTION_MS: DAY });
    const worker = await startWorkerRole(warned.ctx);
    await worker.stop();
    expect(warned.warnings.filter((m) => m.includes('namespace default has retention 1 days'))).toHaveLength(1);

    await setRetention(2 * DAY);
    const quiet = workerContext({ COUNTERSIGN_NAMESPACE_RETENTION_CHECK: 'warn', COUNTERSIGN_RESULT_RETENTION_MS: DAY });
    const again = await startWorkerRole(quiet.ctx);
    await again.stop();
    expect(quiet.warnings.filter((m) => m.includes('retention'))).toEqual([]);
  });
});
