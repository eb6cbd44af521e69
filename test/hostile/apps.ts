// Scope: the in-process apps of every role for the hostile-input tests, each with the probes that show a side effect: the MCP HTTP app (the front as the composition root builds it, `src/compose.ts`, with its parts replaced: wire_transfer on an in-memory ledger, an allow-all policy, a task service and Temporal client that record any use, optionally the task subscriptions), the reference approval service, and the development token issuer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { Hono } from 'hono';
import { pino, type Logger } from 'pino';
import { createApprovalService, type ApprovalService } from '@countersign/approvals';
import { loadOrCreateDevIssuer, type DevIssuer } from '../../src/auth/dev-issuer.js';
import type { Principal } from '../../src/auth/principal.js';
import { AuthError, type TokenVerifier } from '../../src/auth/verify-token.js';
import { compose } from '../../src/compose.js';
import { defaultConfig } from '../../src/config.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import type { TaskSubscriptions } from '../../src/mcp/task-subscriptions.js';
import type { PolicyDecisionPoint } from '../../src/policy/pdp.js';
import { openLedger, type Ledger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool } from '../../src/tools/wire-transfer.js';
import { PROTOCOL_VERSION } from '@countersign/client';

export const MCP_ORIGIN = 'http://127.0.0.1:8787';
export const GOOD_TOKEN = 'good-token';
const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice' };
const silent = pino({ level: 'silent' });

/** The MCP HTTP app and its side-effect probes: ledger rows, task-service calls, Temporal client uses. */
export interface McpUnderTest {
  app: Hono;
  ledger: Ledger;
  /** Names of task-service methods called other than the pure `referenceOf` (a workflow would have been started or touched). */
  taskCalls: string[];
  /** Properties of the Temporal client read (the callback receiver would have delivered an update). */
  temporalUses: string[];
  close(): Promise<void>;
}

/**
 * Build the MCP HTTP app (both protocol faces) over an allow-all policy: any `tools/call` that reaches
 * the tool writes a ledger row. `subscriptions`: the `subscriptions/listen` streams of task ids
 * (`src/mcp/task-subscriptions.ts`) the front routes to; unset: the SDK answers every listen.
 */
export async function mcpUnderTest(opts: { subscriptions?: TaskSubscriptions } = {}): Promise<McpUnderTest> {
  const ledger = openLedger(':memory:');
  const taskCalls: string[] = [];
  const temporalUses: string[] = [];
  // `referenceOf` is pure (the keyed reference the gate logs); every other method touches a workflow.
  const tasks = new Proxy({} as TaskService, {
    get: (_t, name) =>
      name === 'referenceOf'
        ? () => 'wf-reference'
        : () => {
            taskCalls.push(String(name));
            throw new Error('task service must not be used');
          },
  });
  const temporal = new Proxy({} as Client, {
    get: (_t, name) => {
      temporalUses.push(String(name));
      throw new Error('temporal must not be used');
    },
  });
  const pdp: PolicyDecisionPoint = { evaluate: async () => ({ decision: 'allow', policyIds: ['allow-all'] }) };
  const verifier: TokenVerifier = {
    async verify(token) {
      if (token === GOOD_TOKEN) return ALICE;
      throw new AuthError('invalid', 'token could not be verified');
    },
  };
  const composed = await compose(defaultConfig({ COUNTERSIGN_NO_TASKS_RESPONSE: 'degraded-result', COUNTERSIGN_POLL_RATE_LIMIT: 'off' }), {
    logger: silent,
    secrets: { dedupKey: 'hostile-test-key', callbackSecret: 'callback-secret' },
    temporal: { client: temporal },
    tools: { tools: createToolRegistry([createWireTransferTool(ledger)]), pdp },
    worker: false,
    front: {
      tasks,
      subscriptions: opts.subscriptions ?? false,
      resourceUrl: `${MCP_ORIGIN}/mcp`,
      auth: { verifier, authorizationServers: ['https://issuer.test'] },
    },
  });
  return {
    app: composed.front.app,
    ledger,
    taskCalls,
    temporalUses,
    close: async () => {
      await composed.close();
      ledger.close();
    },
  };
}

/** Headers of an authenticated 2026-07-28 JSON-RPC POST for `method` (and `name` for `tools/call`). */
export function mcpHeaders(method: string, name?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': name } : {}),
    authorization: `Bearer ${GOOD_TOKEN}`,
  };
}

/** A 2026-07-28 `tools/call` body for `wire_transfer` with `argumentsJson` spliced in verbatim. */
export function toolsCallText(argumentsJson: string, id = 1): string {
  const meta = JSON.stringify({
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'hostile-test', version: '0.0.0' },
  });
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"wire_transfer","arguments":${argumentsJson},"_meta":${meta}}}`;
}

export const APPROVALS_BASE = 'http://127.0.0.1:8788';
export const CLIENT_TOKEN = 'client-token';

/** The reference approval service on an in-memory store; `trustedProxies` as `COUNTERSIGN_TRUSTED_PROXIES`. */
export function approvalsUnderTest(opts: { trustedProxies?: string[]; logger?: Logger } = {}): ApprovalService {
  return createApprovalService({
    dbPath: ':memory:',
    clientToken: CLIENT_TOKEN,
    callbackSecret: 'callback-secret',
    approvers: [
      { id: 'bob', secret: 'bob-pw', groups: ['treasury'] },
      { id: 'carol', secret: 'carol-pw', groups: ['treasury'] },
    ],
    publicBaseUrl: APPROVALS_BASE,
    logger: opts.logger ?? silent,
    fetch: async () => new Response(null, { status: 202 }),
    ...(opts.trustedProxies !== undefined ? { trustedProxies: opts.trustedProxies } : {}),
  });
}

/** The number of access requests the service holds (pending or resolved). */
export async function storedRequests(svc: ApprovalService): Promise<number> {
  return (await svc.store.listPending({})).length + (await svc.store.listResolved({}, 1_000_000)).length;
}

/** The development issuer with a fresh key in a temporary folder; `cleanup()` removes it. */
export async function issuerUnderTest(): Promise<{ issuer: DevIssuer; cleanup(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-hostile-issuer-'));
  const issuer = await loadOrCreateDevIssuer({
    keyFile: join(dir, 'key.json'),
    issuer: 'http://127.0.0.1:8789',
    audience: `${MCP_ORIGIN}/mcp`,
  });
  return { issuer, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A valid ARAP `POST /access/v1/requests` body whose `context.arguments` is `args`. */
export function accessRequestBody(args: unknown): Record<string, unknown> {
  return {
    subject: { iss: 'https://issuer.test', sub: 'alice' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: 'wire_transfer' },
    context: { arguments: args },
    approver_group: 'treasury',
    reason: 'over the threshold',
    expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    binding_digest: 'a'.repeat(64),
    generation: 1,
  };
}

/** Headers of an authenticated ARAP submission with a fresh `Idempotency-Key`. */
export function submitHeaders(key: string): Record<string, string> {
  return { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_TOKEN}`, 'idempotency-key': key };
}

/** Protocol revision of the legacy (`initialize`-era) face of `/mcp` (src/mcp/legacy-server.ts). */
export const LEGACY_PROTOCOL_VERSION = '2025-11-25';

/** Headers of an authenticated 2025-11-25 JSON-RPC POST: served statelessly by the legacy face, no `initialize` needed. */
export function legacyMcpHeaders(): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': LEGACY_PROTOCOL_VERSION,
    authorization: `Bearer ${GOOD_TOKEN}`,
  };
}

/** The 2026-07-28 per-request envelope (`params._meta`) of a client that declares the tasks extension. */
export function modernEnvelope(): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    'io.modelcontextprotocol/clientInfo': { name: 'hostile-test', version: '0.0.0' },
  };
}

/** A JSON-RPC answer from `/mcp`: the HTTP status and the message, read from a JSON body or from the one SSE `data:` line of the legacy face. */
export async function rpcAnswer(
  res: Response,
): Promise<{ status: number; message: { error?: { code: number; message: string; data?: unknown }; result?: unknown } }> {
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').startsWith('text/event-stream')
    ? (text.split('\n').find((l) => l.startsWith('data: ')) ?? 'data: null').slice('data: '.length)
    : text;
  return { status: res.status, message: JSON.parse(json) as { error?: { code: number; message: string; data?: unknown } } };
}
