/**
 * The MCP server's HTTP surface (hono): the Streamable HTTP endpoint `/mcp` behind bearer-token
 * verification, OAuth Protected Resource Metadata (RFC 9728), and the receiver for the approval
 * backend's signed callbacks.
 *
 * - `/mcp`: a missing or invalid token is 401 with `WWW-Authenticate: Bearer resource_metadata=…`
 *   (MCP authorization); a valid one becomes the principal handed to the SDK handler.
 * - `POST /callbacks/arap/:workflowId/:generation`: HMAC over timestamp and body verified
 *   (401 problem+json when bad or stale), then delivered as the workflow's `backendCallback`
 *   update, whose validator refuses a replay of an accepted delivery and a callback for no current
 *   generation (409, nothing recorded); an accepted one makes the workflow fetch authoritative
 *   status before acting (SEP-2848 §Security, callback authenticity). Closed or unknown
 *   workflows are answered 202; no worker within 5 s → 500 so the backend retries later.
 * Deliberately does not log tokens, bodies or arguments.
 */
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { extractBearer } from '../auth/bearer.js';
import type { TokenVerifier } from '../auth/verify-token.js';
import { problem } from '../approvals/problem.js';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, verifyCallback } from '../approvals/callback-signature.js';
import { backendCallbackUpdate } from '../../workflows/messages.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import type { McpServerFactory } from '@modelcontextprotocol/server';

/** Options of the MCP HTTP app. */
export interface McpHttpOptions {
  factory: McpServerFactory;
  verifier: TokenVerifier;
  /** This resource's identifier, e.g. `http://127.0.0.1:8787/mcp` (the token audience). */
  resourceUrl: string;
  /** Authorization servers advertised in the protected-resource metadata. */
  authorizationServers: string[];
  temporal: Client;
  callbackSecret: string;
  logger: Logger;
}

/** An approval workflow id as a callback URL may name it (`approvalWorkflowId`). */
const APPROVAL_WORKFLOW_ID = new RegExp(`^${APPROVAL_WORKFLOW_ID_PREFIX}[0-9a-f]{32}$`);

const CallbackBody = z.object({ request_id: z.string().min(1).max(200), status: z.string().max(40), generation: z.number().int().positive().optional() });

/** Build the app. `close()` tears down the SDK handler. */
export function createMcpHttpApp(opts: McpHttpOptions): { app: Hono; close: () => Promise<void> } {
  const handler = createMcpHandler(opts.factory, { legacy: 'reject', responseMode: 'json', onerror: (e) => opts.logger.debug({ err: e.message }, 'mcp handler reported') });
  const resourcePath = new URL(opts.resourceUrl).pathname;
  const origin = new URL(opts.resourceUrl).origin;
  const prmUrl = `${origin}/.well-known/oauth-protected-resource${resourcePath}`;
  const app = new Hono();

  const prm = (c: { json: (v: unknown) => Response }) =>
    c.json({ resource: opts.resourceUrl, authorization_servers: opts.authorizationServers, bearer_methods_supported: ['header'] });
  app.get(`/.well-known/oauth-protected-resource${resourcePath}`, prm);
  app.get('/.well-known/oauth-protected-resource', prm);
  app.get('/healthz', (c) => c.json({ ok: true }));

  app.all('/mcp', async (c) => {
    // Streamable HTTP: a browser Origin other than this server's own is refused (DNS rebinding).
    const originHeader = c.req.header('origin');
    if (originHeader !== undefined && originHeader !== origin) {
      return problem('forbidden', 'Origin not allowed');
    }
    const challenge = (error?: string) =>
      new Response(JSON.stringify({ error: error ?? 'unauthorized', error_description: 'A valid bearer token for this resource is required.' }), {
        status: 401,
        headers: {
          'content-type': 'application/json',
          'www-authenticate': `Bearer resource_metadata="${prmUrl}"${error ? `, error="${error}"` : ''}`,
        },
      });
    const token = extractBearer(c.req.header('authorization'));
    if (!token) return challenge();
    let principal;
    try {
      principal = await opts.verifier.verify(token);
    } catch (err) {
      opts.logger.info({ reason: (err as { code?: string }).code ?? 'invalid' }, 'bearer token rejected');
      return challenge('invalid_token');
    }
    const res = await handler.fetch(c.req.raw, { authInfo: { token, clientId: principal.sub, scopes: [], extra: { principal } } });
    return stripEmptyTaskContent(res);
  });

  app.post('/callbacks/arap/:workflowId/:generation', bodyLimit({ maxSize: 16 * 1024, onError: () => problem('payload-too-large', 'callback bodies are limited to 16 KiB') }), async (c) => {
    const raw = await c.req.text();
    const verdict = verifyCallback(
      opts.callbackSecret,
      raw,
      { timestamp: c.req.header(CALLBACK_TIMESTAMP_HEADER), signature: c.req.header(CALLBACK_SIGNATURE_HEADER) },
      Math.floor(Date.now() / 1000),
    );
    if (!verdict.ok) {
      opts.logger.warn({ reason: verdict.reason }, 'backend callback rejected');
      return problem('unauthorized', `callback rejected: ${verdict.reason}`);
    }
    const workflowId = c.req.param('workflowId');
    const generation = Number(c.req.param('generation'));
    const body = CallbackBody.safeParse(safeJson(raw));
    if (!APPROVAL_WORKFLOW_ID.test(workflowId) || !Number.isInteger(generation) || generation < 1 || !body.success) {
      return problem('invalid-request', 'malformed callback');
    }
    // The delivery's identity is what the signature covers (timestamp and body), not the header's
    // spelling: a re-cased or re-encoded signature of the same delivery is the same delivery.
    const callbackId = createHash('sha256').update(`${c.req.header(CALLBACK_TIMESTAMP_HEADER) ?? ''}.${raw}`).digest('hex');
    try {
      // Bounded wait: with no worker running the update cannot be validated; the backend retries
      // and the workflow's status poll covers a callback that never lands.
      await opts.temporal.withDeadline(Date.now() + 5_000, () =>
        opts.temporal.workflow.getHandle(workflowId).executeUpdate(backendCallbackUpdate, { args: [{ generation, requestId: body.data.request_id, callbackId }] }),
      );
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) {
        opts.logger.warn('backend callback refused: replayed, stale or for no current generation');
        return problem('not-pending', 'callback refused: replayed, stale, or for no current request');
      }
      if (isWorkflowNotFound(err)) {
        return c.body(null, 202); // closed or unknown task: nothing to do
      }
      opts.logger.warn({ err: (err as Error).name }, 'backend callback not delivered');
      return problem('internal', 'callback not delivered; retry later');
    }
    return c.body(null, 202);
  });

  return { app, close: () => handler.close() };
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/**
 * The SDK appends `content: []` to a task-shaped `tools/call` result; `CreateTaskResult` has no
 * `content` (SEP-2663), so drop it. Only a body that can be such a result is parsed and
 * re-serialized; every other response (allowed calls, `tasks/get`, errors) passes through as is.
 */
async function stripEmptyTaskContent(res: Response): Promise<Response> {
  if (!(res.headers.get('content-type') ?? '').includes('application/json')) return res;
  const text = await res.text();
  // cheap pre-check: the SDK writes compact JSON, so a task result holds both of these verbatim
  if (!text.includes('"resultType":"task"') || !text.includes('"content":[]')) return new Response(text, res);
  let body: { result?: { resultType?: string; content?: unknown[] } } | undefined;
  try {
    body = JSON.parse(text);
  } catch {
    return new Response(text, res);
  }
  if (body?.result?.resultType === 'task' && Array.isArray(body.result.content) && body.result.content.length === 0) {
    delete body.result.content;
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    return new Response(JSON.stringify(body), { status: res.status, headers });
  }
  return new Response(text, res);
}
