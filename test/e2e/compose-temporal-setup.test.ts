// Scope: deploy/temporal-setup.sh, the namespace step of docker-compose.yml, run for real with the
// Temporal CLI against a Temporal dev server (in compose it runs in the temporalio/admin-tools
// image): it creates the namespace with the retention the worker checks, registers the approval
// workflow's search attributes, and can run again on every `docker compose up`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { temporalCliPath } from '../../src/temporal/binaries.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { checkNamespaceRetention } from '../../src/temporal/namespace-retention.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../workflows/search-attributes.js';

const NAMESPACE = 'countersign-compose';
let dir: string;
let dev: DevServer;
let connection: Connection;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-compose-setup-'));
  dev = await startDevServer({ dbFile: join(dir, 'temporal.db') });
  connection = await Connection.connect({ address: dev.address });
});
afterAll(async () => {
  await connection?.close();
  await dev?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Run the compose step's script as the admin-tools container would: the CLI on PATH, its settings in the environment. */
function runSetup(retention: string) {
  return spawnSync('sh', [join(PROJECT_ROOT, 'deploy/temporal-setup.sh')], {
    env: {
      PATH: `${dirname(temporalCliPath())}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: dir,
      TEMPORAL_ADDRESS: dev.address,
      NAMESPACE,
      RETENTION: retention,
    },
    encoding: 'utf8',
  });
}

async function keywordAttributes(): Promise<string[]> {
  const res = await connection.operatorService.listSearchAttributes({ namespace: NAMESPACE });
  // IndexedValueType 2 = KEYWORD (temporal.api.enums.v1)
  return Object.entries(res.customAttributes ?? {})
    .filter(([, type]) => type === 2)
    .map(([name]) => name)
    .sort();
}

describe('deploy/temporal-setup.sh', () => {
  it('creates the namespace with the given retention, which satisfies the worker retention check, and registers every search attribute as Keyword', async () => {
    await expect(connection.workflowService.describeNamespace({ namespace: NAMESPACE })).rejects.toThrow();
    const run = runSetup('48h');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const report = await checkNamespaceRetention(connection, NAMESPACE, 86_400_000);
    expect(report.retentionMs).toBe(48 * 3_600_000);
    expect(report.sufficient).toBe(true);
    expect(await keywordAttributes()).toEqual(expect.arrayContaining(SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => d.name)));
  });

  it('runs again on an existing namespace without error, and updates its retention', async () => {
    const run = runSetup('72h');
    expect(run.status).toBe(0);
    const report = await checkNamespaceRetention(connection, NAMESPACE, 86_400_000);
    expect(report.retentionMs).toBe(72 * 3_600_000);
    expect(await keywordAttributes()).toEqual(expect.arrayContaining(SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => d.name)));
  });
});
