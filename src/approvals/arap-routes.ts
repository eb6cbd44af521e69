/**
 * The ARAP-shaped HTTP API of the reference Access Request Service, mounted at `/access/v1`
 * (AuthZEN ARAP WG Draft 1 names; DESIGN.md §5).
 *
 * - `POST /requests` (client bearer, `Idempotency-Key`) → 201 new task handle | 200 replay | 409
 * - `GET /requests/:id` (client bearer) → status body (expires on read)
 * - `POST /requests/:id/cancel` (client bearer) → status body | 409
 * - `POST /requests/:id/decision` (approver Basic) → status body | 403 | 409
 * - `GET /approvals/pending` (approver Basic) → the pending requests this approver may decide
 *   (their groups, not their own), for scripts and resolvers that are not people
 * Every error is problem+json. Deliberately does not: expose the audit trail over the API, or
 * accept decisions with the client token.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { createMiddleware } from 'hono/factory';
import type { z } from 'zod';
import { AccessRequestBodySchema, DecisionBodySchema, toStatusBody, toTaskHandle } from './arap-wire.js';
import { authenticateApprover, bearerMatches, type Approver } from './http-auth.js';
import { problem } from './problem.js';
import type { RequestLifecycle } from './request-lifecycle.js';
import type { ApprovalStore } from './store.js';

/** Longest accepted `Idempotency-Key`, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
/** Largest accepted JSON request body, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Dependencies of {@link createArapRoutes}. */
export interface ArapRoutesDeps {
  lifecycle: RequestLifecycle;
  /** Bearer secret of the MCP server (the only ARAP client). */
  clientToken: string;
  approvers: readonly Approver[];
  /** Absolute base URL of the service without a trailing slash. */
  publicBaseUrl: string;
  /** Store, for the approver's pending list. */
  store: ApprovalStore;
}

/** Format zod issues as `path: message; …` (messages never echo input values). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 10)
    .map((i) => `${i.path.length === 0 ? '(body)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}

async function readJson(c: Context): Promise<{ ok: true; value: unknown } | { ok: false }> {
  try {
    return { ok: true, value: JSON.parse(await c.req.text()) as unknown };
  } catch {
    return { ok: false };
  }
}

const unauthorizedClient = (): Response =>
  problem('unauthorized', 'A valid client bearer token is required.', { 'WWW-Authenticate': 'Bearer realm="countersign approvals"' });
const unauthorizedApprover = (): Response =>
  problem('unauthorized', 'Valid approver credentials are required.', { 'WWW-Authenticate': 'Basic realm="countersign approvals"' });
const notFound = (): Response => problem('not-found', 'No such access request.');

/** Build the `/access/v1` sub-application. */
export function createArapRoutes(deps: ArapRoutesDeps): Hono {
  const { lifecycle } = deps;
  const app = new Hono();

  app.use('*', bodyLimit({ maxSize: MAX_BODY_BYTES, onError: () => problem('payload-too-large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`) }));

  const requireClient = createMiddleware(async (c, next) => {
    if (!bearerMatches(c.req.header('Authorization'), deps.clientToken)) return unauthorizedClient();
    await next();
  });

  app.post('/requests', requireClient, async (c) => {
    const key = c.req.header('Idempotency-Key');
    if (key === undefined || key.trim() === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      return problem('idempotency-key-required', `An Idempotency-Key header of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters is required.`);
    }
    const json = await readJson(c);
    if (!json.ok) return problem('invalid-request', 'The body is not valid JSON.');
    const parsed = AccessRequestBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    const outcome = lifecycle.submit(key, parsed.data);
    switch (outcome.kind) {
      case 'created': {
        const handle = toTaskHandle(outcome.record, deps.publicBaseUrl);
        return c.json(handle, 201, { Location: handle.status_endpoint });
      }
      case 'replayed':
        return c.json(toTaskHandle(outcome.record, deps.publicBaseUrl), 200);
      case 'conflict':
        return problem('idempotency-conflict', 'This Idempotency-Key was already used with a different request body.');
      case 'deadline-passed':
        return problem('invalid-request', 'expires_at must be in the future.');
    }
  });

  app.get('/requests/:id', requireClient, (c) => {
    const record = lifecycle.read(c.req.param('id'));
    return record === undefined ? notFound() : c.json(toStatusBody(record), 200);
  });

  app.post('/requests/:id/cancel', requireClient, (c) => {
    const outcome = lifecycle.cancel(c.req.param('id'));
    switch (outcome.kind) {
      case 'cancelled':
        return c.json(toStatusBody(outcome.record), 200);
      case 'not-pending':
        return problem('not-pending', `The request is already ${outcome.record.status} and cannot be cancelled.`);
      case 'not-found':
        return notFound();
    }
  });

  app.get('/approvals/pending', (c) => {
    const approver = authenticateApprover(c.req.header('Authorization'), deps.approvers);
    if (approver === null) return unauthorizedApprover();
    lifecycle.sweep();
    const items = deps.store
      .listPendingForGroups(approver.groups)
      .filter((r) => lifecycle.refusalFor(approver, r) === null)
      .map((r) => ({
        id: r.id,
        tool: r.body.resource.id,
        requester: r.body.subject.sub,
        arguments: r.body.context.arguments,
        reason: r.body.reason,
        justification: r.body.context.justification ?? null,
        approver_group: r.body.approver_group,
        binding_digest: r.body.binding_digest,
        created_at: new Date(r.createdAtMs).toISOString(),
        expires_at: new Date(r.expiresAtMs).toISOString(),
      }));
    return c.json({ items }, 200);
  });

  app.post('/requests/:id/decision', async (c) => {
    const approver = authenticateApprover(c.req.header('Authorization'), deps.approvers);
    if (approver === null) return unauthorizedApprover();
    const json = await readJson(c);
    if (!json.ok) return problem('invalid-request', 'The body is not valid JSON.');
    const parsed = DecisionBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    const outcome = lifecycle.decide(c.req.param('id'), approver, parsed.data.decision, parsed.data.comment);
    switch (outcome.kind) {
      case 'decided':
        return c.json(toStatusBody(outcome.record), 200);
      case 'forbidden':
        return problem(
          'forbidden',
          outcome.reason === 'own-request'
            ? 'A requester cannot decide their own access request.'
            : "The approver is not a member of this request's approver group.",
        );
      case 'not-pending':
        return problem('not-pending', `The request is already ${outcome.record.status}.`);
      case 'not-found':
        return notFound();
    }
  });

  return app;
}
