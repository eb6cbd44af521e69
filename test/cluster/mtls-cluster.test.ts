// Scope: the whole stack against a real Temporal server that requires mutual TLS (the Go server
// binary, SQLite in memory, frontend TLS with client certificates required, a throwaway CA), the
// TLS options coming from TEMPORAL_TLS_* through src/config.ts: an approval runs end to end, and a
// client without a certificate is refused. The dev server cannot serve TLS, so this needs the server
// built from the Go module proxy into .tools/temporal-server/ (docs/OPERATIONS.md §Connecting);
// without that binary this file is skipped.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { msToTs } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import type { Stack } from '../../src/stack.js';
import { connectClient } from '../../src/temporal/connect.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { makeTestPki, type TestPki } from '../support/grpc-recorder.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const SERVER = join(PROJECT_ROOT, '.tools/temporal-server/v1.32.2/server');
const NAMESPACE = 'countersign';

/** The development-sqlite configuration of the Temporal repository, with frontend mTLS and free ports. */
function serverConfig(pki: TestPki, ports: number[]): string {
  const [frontend, history, matching, fm, hm, mm] = ports;
  const sqlite = (name: string) => `
    ${name}:
      sql:
        pluginName: "sqlite"
        databaseName: "${name}"
        connectAddr: "localhost"
        connectProtocol: "tcp"
        connectAttributes: { mode: "memory", cache: "private" }
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: "1h"`;
  return `log:
  stdout: true
  level: error
persistence:
  defaultStore: sqlite-default
  visibilityStore: sqlite-visibility
  numHistoryShards: 1
  datastores:${sqlite('sqlite-default')}${sqlite('sqlite-visibility')}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
  tls:
    frontend:
      server:
        certFile: "${pki.serverCert}"
        keyFile: "${pki.serverKey}"
        requireClientAuth: true
        clientCaFiles: ["${pki.caCert}"]
      client:
        serverName: "localhost"
        rootCaFiles: ["${pki.caCert}"]
services:
  frontend: { rpc: { grpcPort: ${frontend}, membershipPort: ${fm}, bindOnLocalHost: true } }
  history: { rpc: { grpcPort: ${history}, membershipPort: ${hm}, bindOnLocalHost: true } }
  matching: { rpc: { grpcPort: ${matching}, membershipPort: ${mm}, bindOnLocalHost: true } }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "localhost:${frontend}"
dcRedirectionPolicy:
  policy: "noop"
`;
}

describe('a Temporal server that requires mutual TLS', () => {
  let server: ChildProcess;
  let stack: Stack;
  let pki: TestPki;
  let address: string;
  let output = '';
  const tlsEnv = () => ({
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: NAMESPACE,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
    TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  });

  beforeAll(async () => {
    if (!existsSync(SERVER))
      throw new Error(`${SERVER} is missing: run npm run test:cluster, which builds it (scripts/install-temporal-server.mjs)`);
    pki = makeTestPki();
    const ports: number[] = [];
    for (let i = 0; i < 6; i++) ports.push(await freePort());
    address = `127.0.0.1:${ports[0]}`;
    const configFile = join(mkdtempSync(join(tmpdir(), 'countersign-mtls-')), 'mtls.yaml');
    writeFileSync(configFile, serverConfig(pki, ports));
    server = spawn(
      SERVER,
      ['--config-file', configFile, '--allow-no-auth', 'start', '--service', 'frontend', '--service', 'history', '--service', 'matching'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    server.stdout?.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));
    server.stderr?.on('data', (b: Buffer) => (output = (output + b.toString()).slice(-4000)));

    // up, then the namespace (the plain server has none), then wait until the frontend knows it
    const env = tlsEnv();
    const config = loadConfig(env);
    let registered = false;
    for (let i = 0; i < 240; i++) {
      try {
        const conn = await connectClient(address, config.TEMPORAL_CONNECTION, { connectTimeout: 1000 });
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
          await conn.workflowService.listWorkflowExecutions({ namespace: NAMESPACE, pageSize: 1 });
          break;
        } finally {
          await conn.close();
        }
      } catch (err) {
        if (server.exitCode !== null || i === 239)
          throw new Error(`mTLS Temporal server not ready: ${(err as Error).message}\n${output}`, { cause: err });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    stack = await startTestStack(
      testConfig({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: NAMESPACE, TEMPORAL_CONNECTION: config.TEMPORAL_CONNECTION }),
    );
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it('with TEMPORAL_TLS_* (CA, client certificate and key, server name) the MCP front and the worker run an approval end to end', async () => {
    const alice = await clientFor(stack, 'alice');
    const memo = `mtls ${randomUUID().slice(0, 12)}`;
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: 'acct-991', amount: 50_000, memo },
    });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, memo, 'approve')).toBe(200);
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition']).toBe('approved-executed');
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);
  });

  it('a client with the CA but without a client certificate is refused by the server', async () => {
    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _c, TEMPORAL_TLS_CLIENT_KEY_PATH: _k, ...withoutCert } = tlsEnv();
    const config = loadConfig(withoutCert);
    await expect(connectClient(address, config.TEMPORAL_CONNECTION, { connectTimeout: 3000 })).rejects.toThrow();
  });
});
