/**
 * The receiver of the ARAP backend's signed status-change callbacks, served by the MCP front's HTTP
 * app (`src/mcp/http.ts` mounts it) and delivered to the approval workflow.
 *
 * `POST /callbacks/arap/:workflowId/:generation`: bodies above 16 KiB are 413; the HMAC over
 * timestamp and body is verified with `verifyCallback` (`callback-signature.ts`; 401 problem+json
 * when missing, malformed, wrong or stale); a malformed workflow id, generation or body is 400.
 * A verified callback is delivered as the workflow's `backendCallback` update, whose validator
 * refuses a replay of an accepted delivery and a callback for no current generation (409, nothing
 * recorded); an accepted one makes the workflow fetch authoritative status before acting
 * (SEP-2848 §Security, callback authenticity). Closed or unknown workflows are answered 202; no
 * worker within 5 s → 500 so the backend retries later.
 *
 * Deliberately does not: act on the callback's `status` (it is only a hint), track replays itself
 * (the workflow's update validator does), or log bodies or signatures.
 */
import { createHash } from 'node:crypto';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from 'pino';
import { z } from 'zod';
import { problem } from '../http/problem.js';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, verifyCallback } from './callback-signature.js';
import { backendCallbackUpdate } from '../../workflows/messages.js';

/** Options of {@link createArapCallbackReceiver}. */
export interface ArapCallbackReceiverOptions {
  /** A Temporal client (with the payload codec installed) to deliver the `backendCallback` update. */
  temporal: Client;
  /** HMAC key shared with the backend (`secrets.json` `callbackSecret`). */
  callbackSecret: string;
  logger: Logger;
}

/** An approval workflow id as a callback URL may name it (`approvalWorkflowId`). */
const APPROVAL_WORKFLOW_ID = new RegExp(`^${APPROVAL_WORKFLOW_ID_PREFIX}[0-9a-f]{32}$`);

const CallbackBody = z.object({
  request_id: z.string().min(1).max(200),
  status: z.string().max(40),
  generation: z.number().int().positive().optional(),
});

/**
 * A hono app with the one route `POST /callbacks/arap/:workflowId/:generation` (see the module
 * header for its answers). Mount it at the root of the MCP front's app (`app.route('/', …)`); the
 * backend is told `<mcp origin>/callbacks/arap` as its callback base URL.
 */
export function createArapCallbackReceiver(opts: ArapCallbackReceiverOptions): Hono {
  const app = new Hono();
  app.post(
    '/callbacks/arap/:workflowId/:generation',
    bodyLimit({ maxSize: 16 * 1024, onError: () => problem('payload-too-large', 'callback bodies are limited to 16 KiB') }),
    async (c) => {
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
      const callbackId = createHash('sha256')
        .update(`${c.req.header(CALLBACK_TIMESTAMP_HEADER) ?? ''}.${raw}`)
        .digest('hex');
      try {
        // Bounded wait: with no worker running the update cannot be validated; the backend retries
        // and the workflow's status poll covers a callback that never lands.
        await opts.temporal.withDeadline(Date.now() + 5_000, () =>
          opts.temporal.workflow
            .getHandle(workflowId)
            .executeUpdate(backendCallbackUpdate, { args: [{ generation, requestId: body.data.request_id, callbackId }] }),
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
    },
  );
  return app;
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
