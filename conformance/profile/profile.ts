/**
 * The conformance profile of Countersign: an MCP endpoint exposing the fixture tools the official
 * MCP conformance runner expects (`fixture-tools.ts`), served by Countersign's own HTTP layer
 * (`src/mcp/http.ts`: Streamable HTTP on the SDK's per-request handler, Origin check, bearer
 * verification, RFC 9728 metadata), its MRTR `requestState` codec and its JSON-RPC errors, with
 * every fixture task a Temporal workflow (Update-with-Start create, query, updates), payloads
 * sealed with the same AES-256-GCM codec.
 *
 * For testing only. The official runner sends no credentials, so a request without an
 * `Authorization` header is given the profile's own bearer token and acts as the single fixed
 * principal `urn:countersign:conformance` / `conformance-runner`; a request carrying any other
 * token is 401. It binds to 127.0.0.1 by default and keeps no state on disk (the embedded Temporal
 * dev server is in memory unless `temporalAddress` is given).
 *
 * Composed by the same root as the product (`src/compose.ts`), with the parts replaced: the fixture
 * workflow and activities for the worker, the fixture server factory for the gate, the profile's
 * token for the verifier.
 *
 * Deliberately does not start the approval stack: no policy, approval service or ledger.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { DefaultLogger, Runtime, bundleWorkflowCode } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Principal } from '../../src/auth/principal.js';
import { AuthError, type TokenVerifier } from '../../src/auth/verify-token.js';
import { createLogger } from '@countersign/http/log';
import { compose } from '../../src/compose.js';
import { defaultConfig } from '../../src/config.js';
import { createSubmissionStateCodec } from '../../src/mcp/submission-input.js';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server.js';
import { generatePayloadKey, payloadCodecFromKeyList } from '../../src/temporal/payload-codec.js';
import { createFixtureActivities } from './fixture-activities.js';
import { createFixtureTaskService } from './fixture-task-service.js';
import { createProfileServerFactory } from './profile-server.js';

/** The one principal every request of the profile acts as. */
export const PROFILE_PRINCIPAL: Principal = { iss: 'urn:countersign:conformance', sub: 'conformance-runner' };

/** Path of the fixture workflow module the profile's worker bundles. */
export const FIXTURE_WORKFLOW_PATH = fileURLToPath(new URL('./fixture-workflow.ts', import.meta.url));

/** Options. Ports of 0 pick free ones. Durations in milliseconds. */
export interface ConformanceProfileOptions {
  /** Address to bind and name in URLs; default `127.0.0.1`. */
  host?: string;
  /** MCP endpoint port; default 0. */
  port?: number;
  /** Use this Temporal frontend (host:port) instead of starting an in-memory dev server. */
  temporalAddress?: string;
  namespace?: string;
  /** Task queue of the fixture worker; default `countersign-conformance`. */
  taskQueue?: string;
  /** `pollIntervalMs` suggested to clients; default 200. */
  pollIntervalMs?: number;
  /** Minimum task lifetime from `createdAt`; default 3600000 (1 h). */
  ttlMs?: number;
  /** How long a terminal task stays retrievable; default 3600000 (1 h). */
  retentionMs?: number;
  logger?: Logger;
  /** Level of the default logger (when `logger` is not given): a pino level, default `warn`. */
  logLevel?: string;
}

/** A running profile. `stop()` stops everything it started, in reverse order. */
export interface ConformanceProfile {
  /** The MCP endpoint, e.g. `http://127.0.0.1:41234/mcp`. */
  url: string;
  /** The bearer token the profile injects; a client may also send it explicitly. */
  token: string;
  stop(): Promise<void>;
}

/** Start the profile: Temporal (embedded unless given), the fixture worker, the MCP endpoint. */
export async function startConformanceProfile(opts: ConformanceProfileOptions = {}): Promise<ConformanceProfile> {
  const logger = opts.logger ?? createLogger({ name: 'countersign-conformance', level: opts.logLevel ?? 'warn' });
  const host = opts.host ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const taskQueue = opts.taskQueue ?? 'countersign-conformance';
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') }); // the core runtime logs every worker state change at INFO
  } catch {
    // already installed (the embedded stack in the same process)
  }
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const c of cleanups.reverse()) await c().catch((e) => logger.warn({ err: (e as Error).message }, 'shutdown step failed'));
    cleanups.length = 0;
  };
  try {
    let address = opts.temporalAddress;
    if (!address) {
      const dev: DevServer = await startDevServer({ namespace });
      cleanups.push(() => dev.stop());
      address = dev.address;
    }
    const dataConverter = { payloadCodecs: [payloadCodecFromKeyList([generatePayloadKey()])] };
    const workflowBundle = await bundleWorkflowCode({
      workflowsPath: FIXTURE_WORKFLOW_PATH,
      logger: { log() {}, info() {}, warn() {}, error() {}, debug() {}, trace() {} } as never,
    });
    const serverKey = randomBytes(32).toString('base64url');
    const token = randomBytes(24).toString('base64url');
    const verifier: TokenVerifier = {
      async verify(presented) {
        const a = Buffer.from(presented);
        const b = Buffer.from(token);
        if (a.length !== b.length || !timingSafeEqual(a, b)) throw new AuthError('invalid', 'not the conformance profile token');
        return PROFILE_PRINCIPAL;
      },
    };
    const fetchRef: { current: (req: Request) => Response | Promise<Response> } = {
      current: () => new Response('starting', { status: 503 }),
    };
    const srv = await new Promise<{ server: ServerType; port: number }>((resolve, reject) => {
      const server = serve({ fetch: (req: Request) => fetchRef.current(req), port: opts.port ?? 0, hostname: host }, (info: AddressInfo) =>
        resolve({ server, port: info.port }),
      );
      server.once('error', reject);
    });
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          (srv.server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
          srv.server.close(() => resolve());
        }),
    );
    const resourceUrl = `http://${host}:${srv.port}/mcp`;
    const composed = await compose(defaultConfig({ TEMPORAL_NAMESPACE: namespace, COUNTERSIGN_TASK_QUEUE: taskQueue }), {
      logger,
      secrets: { dedupKey: serverKey, callbackSecret: randomBytes(32).toString('base64url') },
      dataConverter,
      temporal: { address },
      worker: { workflowBundle, activities: createFixtureActivities(), interceptors: {}, sinks: {}, watchdog: false },
      front: {
        server: (temporal) =>
          createProfileServerFactory({
            tasks: createFixtureTaskService({
              client: temporal,
              taskQueue,
              ttlMs: opts.ttlMs ?? 3_600_000,
              retentionMs: opts.retentionMs ?? 3_600_000,
              pollIntervalMs: opts.pollIntervalMs ?? 200,
            }),
            requestStateCodec: createSubmissionStateCodec(serverKey),
          }),
        resourceUrl,
        auth: { verifier, authorizationServers: [] },
      },
    });
    cleanups.push(() => composed.close());
    const mcp = composed.front;
    fetchRef.current = (req) => {
      if (req.headers.has('authorization')) return mcp.app.fetch(req);
      const headers = new Headers(req.headers);
      headers.set('authorization', `Bearer ${token}`);
      return mcp.app.fetch(new Request(req, { headers }));
    };
    return { url: resourceUrl, token, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
