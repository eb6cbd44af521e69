// Scope: the stack against a production-shaped Temporal cluster: the Go server (frontend, history,
// matching and worker services) on PostgreSQL, schema set up by Temporal's SQL tool, the namespace
// and the approval workflow's search attributes registered as an operator would. An approval runs
// end to end, the workflow is found by its search attributes through SQL visibility, and /readyz
// answers ready. Needs the server and SQL tool built into .tools/temporal-server/ and PostgreSQL's
// initdb / pg_ctl on PATH (docs/OPERATIONS.md §Connecting); skipped without them.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/project-root.js';
import type { Stack } from '../../src/stack.js';
import { freePort, restartablePort } from '../../src/temporal/dev-server.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../workflows/search-attributes.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const BIN = join(PROJECT_ROOT, '.tools/temporal-server/v1.32.2');
const SERVER = join(BIN, 'server');
const SQL_TOOL = join(BIN, 'sql');
const NAMESPACE = 'countersign';

/** Run `cmd` as the unprivileged `nobody` when root (initdb and postgres refuse root). */
function asPostgresUser(cmd: string, args: string[]): void {
  const asRoot = process.getuid?.() === 0;
  execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'nobody', '--', cmd, ...args] : args, { stdio: 'pipe' });
}

function serverConfig(pgPort: number, p: number[]): string {
  const store = (db: string) => `
      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "127.0.0.1:${pgPort}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: "1h"`;
  const svc = (name: string, grpc: number, membership: number) =>
    `  ${name}: { rpc: { grpcPort: ${grpc}, membershipPort: ${membership}, bindOnLocalHost: true } }\n`;
  return `log:
  stdout: true
  level: error
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store('temporal')}
    visibility:${store('temporal_visibility')}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
${svc('frontend', p[0]!, p[1]!)}${svc('history', p[2]!, p[3]!)}${svc('matching', p[4]!, p[5]!)}${svc('worker', p[6]!, p[7]!)}clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p[0]}"
dcRedirectionPolicy:
  policy: "noop"
`;
}

describe('a Temporal cluster on PostgreSQL', () => {
  let server: ChildProcess | undefined;
  let stack: Stack;
  let pgData: string;
  let address: string;
  let output = '';

  beforeAll(async () => {
    for (const need of [SERVER, SQL_TOOL]) {
      if (!existsSync(need))
        throw new Error(`${need} is missing: run npm run test:cluster, which builds it (scripts/install-temporal-server.mjs)`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'countersign-pg-'));
    chmodSync(dir, 0o755);
    pgData = join(dir, 'pgdata');
    mkdirSync(pgData);
    if (process.getuid?.() === 0) execFileSync('chown', ['nobody', pgData, dir]);
    const pgPort = await freePort();
    asPostgresUser('initdb', ['-D', pgData, '-U', 'postgres', '--auth=trust']);
    asPostgresUser('pg_ctl', [
      '-D',
      pgData,
      '-l',
      join(dir, 'postgres.log'),
      '-w',
      '-o',
      `-p ${pgPort} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`,
      'start',
    ]);

    const sql = (db: string, ...args: string[]) =>
      execFileSync(SQL_TOOL, ['--plugin', 'postgres12', '--ep', '127.0.0.1', '-p', String(pgPort), '-u', 'postgres', '--db', db, ...args], {
        stdio: 'pipe',
      });
    for (const [db, schema] of [
      ['temporal', 'postgresql/v12/temporal'],
      ['temporal_visibility', 'postgresql/v12/visibility'],
    ] as const) {
      sql(db, 'create-database');
      sql(db, 'setup-schema', '-v', '0.0');
      sql(db, 'update-schema', '--schema-name', schema);
    }

    const ports: number[] = [];
    // below 32768: the cluster-membership table stores the gRPC port as a SMALLINT
    for (let i = 0; i < 8; i++) ports.push(await restartablePort());
    address = `127.0.0.1:${ports[0]}`;
    const configFile = join(dir, 'temporal.yaml');
    writeFileSync(configFile, serverConfig(pgPort, ports));
    server = spawn(SERVER, ['--config-file', configFile, '--allow-no-auth', 'start'], { stdio: ['ignore', 'pipe', 'pipe'] });
    // the first lines say why a server did not come up
    server.stdout?.on('data', (b: Buffer) => (output = (output + b.toString()).slice(0, 4000)));
    server.stderr?.on('data', (b: Buffer) => (output = (output + b.toString()).slice(0, 4000)));

    // as an operator: the namespace, then the search attributes, then wait until the frontend serves both
    for (let i = 0, registered = false; ; i++) {
      try {
        const conn = await Connection.connect({ address, connectTimeout: 1000 });
        try {
          if (!registered) {
            await conn.workflowService
              .registerNamespace({ namespace: NAMESPACE, workflowExecutionRetentionPeriod: msToTs(2 * 86_400_000) })
              .catch((err: Error) => {
                if (!/already exists/i.test(err.message)) throw err;
              });
            registered = true;
          }
          await conn.workflowService.describeNamespace({ namespace: NAMESPACE });
          await conn.operatorService
            .addSearchAttributes({
              namespace: NAMESPACE,
              searchAttributes: Object.fromEntries(
                SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => [d.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
              ),
            })
            .catch((err: Error) => {
              if (!/already exists/i.test(err.message)) throw err;
            });
          await conn.workflowService.listWorkflowExecutions({ namespace: NAMESPACE, pageSize: 1, query: "CountersignStatus = 'working'" });
          break;
        } finally {
          await conn.close();
        }
      } catch (err) {
        if (server.exitCode !== null || i >= 240)
          throw new Error(`Temporal on PostgreSQL not ready: ${(err as Error).message}\n${output}`, { cause: err });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    stack = await startTestStack(testConfig({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: NAMESPACE }));
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    if (pgData) asPostgresUser('pg_ctl', ['-D', pgData, '-m', 'fast', '-w', 'stop']);
  });

  it('an approval runs end to end, is found by its search attributes through SQL visibility, and every role is ready', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `pg ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    const { workflowId } = parseTaskId(created.taskId)!;
    let found = false;
    for (let i = 0; i < 150 && !found; i++) {
      for await (const wf of stack.temporal.workflow.list({
        query: "CountersignDisposition = 'approved-executed' AND CountersignTool = 'wire_transfer'",
      }))
        if (wf.workflowId === workflowId) found = true;
      if (!found) await new Promise((r) => setTimeout(r, 200));
    }
    expect(found).toBe(true);

    const ready = await fetch(`${new URL(stack.urls.mcp).origin}/readyz`);
    expect(ready.status).toBe(200);
  });
});
