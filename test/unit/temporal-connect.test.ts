// Scope: how every role connects to Temporal (src/temporal/connect.ts through src/config.ts): the
// SDK's environment configuration (TEMPORAL_* variables, Temporal CLI profiles) reaches a real
// HTTP/2 gRPC listener from both the client (MCP front) and the native worker connection: the API
// key as a bearer header, profile metadata, and mutual TLS with a throwaway CA.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { temporalConnectionOf } from '../../src/compose.js';
import { connectClient, connectWorker } from '../../src/temporal/connect.js';
import { makeTestPki, startGrpcRecorder, type GrpcRecorder } from '../support/grpc-recorder.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of open.splice(0).reverse()) await c.close();
});

async function recorder(...args: Parameters<typeof startGrpcRecorder>): Promise<GrpcRecorder> {
  const r = await startGrpcRecorder(...args);
  open.push(r);
  return r;
}

/** Connect a client and a worker as the mcp and worker roles do; both send GetSystemInfo. */
async function connectBoth(env: Record<string, string>) {
  const config = loadConfig(env);
  if (!config.TEMPORAL_ADDRESS) throw new Error('no address resolved');
  const client = await connectClient(config.TEMPORAL_ADDRESS, temporalConnectionOf(config));
  open.push({ close: () => client.close() });
  const worker = await connectWorker(config.TEMPORAL_ADDRESS, temporalConnectionOf(config));
  open.push({ close: () => worker.close() });
  return config;
}

describe('connecting to Temporal the way every Temporal tool does', () => {
  it('TEMPORAL_API_KEY reaches the server as `authorization: Bearer <key>` from both the client and the worker', async () => {
    const server = await recorder();
    await connectBoth({ TEMPORAL_ADDRESS: server.address, TEMPORAL_API_KEY: 'key-123', TEMPORAL_TLS: 'false' });
    const auth = server.calls.filter((c) => c.path.endsWith('/GetSystemInfo')).map((c) => c.headers.authorization);
    expect(auth.length).toBeGreaterThanOrEqual(2);
    expect(new Set(auth)).toEqual(new Set(['Bearer key-123']));
  });

  it('a profile of the Temporal CLI config file is honoured: address, namespace, API key and gRPC metadata; TEMPORAL_* variables override it', async () => {
    const server = await recorder();
    const file = join(mkdtempSync(join(tmpdir(), 'countersign-profile-')), 'temporal.toml');
    writeFileSync(
      file,
      `[profile.default]\naddress = "127.0.0.1:1"\n\n[profile.ops]\naddress = "${server.address}"\nnamespace = "countersign-prod"\napi_key = "profile-key"\n\n[profile.ops.tls]\ndisabled = true\n\n[profile.ops.grpc_meta]\nx-team = "payments"\n`,
    );
    const config = await connectBoth({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'ops' });
    expect(config.TEMPORAL_ADDRESS).toBe(server.address);
    expect(config.TEMPORAL_NAMESPACE).toBe('countersign-prod');
    const calls = server.calls.filter((c) => c.path.endsWith('/GetSystemInfo'));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const c of calls) {
      expect(c.headers.authorization).toBe('Bearer profile-key');
      expect(c.headers['x-team']).toBe('payments');
    }
    expect(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'ops', TEMPORAL_NAMESPACE: 'override' }).TEMPORAL_NAMESPACE).toBe(
      'override',
    );
  });

  it('a named profile that is not in the file stops start-up with a configuration error naming TEMPORAL_PROFILE', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'countersign-profile-')), 'temporal.toml');
    writeFileSync(file, '[profile.default]\naddress = "127.0.0.1:7233"\n');
    let err: unknown;
    try {
      loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'missing' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([expect.stringMatching(/^TEMPORAL_PROFILE: .*missing/)]);
  });

  it('TEMPORAL_TLS_* build mutual TLS: client and worker verify the server against the given CA and present the client certificate', async () => {
    const pki = makeTestPki();
    const server = await recorder(pki);
    const config = await connectBoth({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.caCert,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    const tls = config.TEMPORAL_CONNECTION.tls;
    expect(tls).toMatchObject({ serverNameOverride: 'localhost' });
    expect(Buffer.from((tls as { serverRootCACertificate: Uint8Array }).serverRootCACertificate)).toEqual(readFileSync(pki.caCert));
    const calls = server.calls.filter((c) => c.path.endsWith('/GetSystemInfo'));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(new Set(calls.map((c) => c.clientCertCn))).toEqual(new Set(['countersign-worker']));
  });

  it('a client without the CA does not connect to the TLS server (the server is verified, not trusted blindly)', async () => {
    const pki = makeTestPki();
    const server = await recorder(pki);
    const config = loadConfig({
      TEMPORAL_ADDRESS: server.address,
      TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });
    await expect(connectClient(server.address, temporalConnectionOf(config), { connectTimeout: 2000 })).rejects.toThrow();
    expect(server.calls).toEqual([]);
  });

  it('without an address the embedded dev server is used and no credentials are applied to it', () => {
    const config = loadConfig({ TEMPORAL_API_KEY: 'key-123' });
    expect(config.TEMPORAL_ADDRESS).toBeUndefined();
    expect(config.TEMPORAL_NAMESPACE).toBe('default');
    expect(temporalConnectionOf(config)).toEqual({});
  });
});
