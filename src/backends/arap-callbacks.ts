/**
 * The receiver of the ARAP backend's signed status-change callbacks, served by the MCP front's HTTP
 * app (`src/mcp/http.ts` mounts it) and delivered to the approval workflow.
 *
 * `POST /callbacks/arap/:workflowId/:generation`: bodies above 16 KiB are 413; the HMAC over
 * timestamp, request target (this path) and body is verified with `verifyCallback`
 * (`callback-signature.ts`; 401 problem+json when missing, malformed, of another scheme version,
 * wrong — including a delivery signed for another workflow's or generation's URL — or stale); a malformed workflow id, generation (anything but
 * canonical decimal, {@link parseCallbackGeneration}) or body (including JSON outside
 * `packages/http/src/json-limits.ts`) is 400: the route matched, so it is a malformed request to a known
 * endpoint rather than an unknown one, and only a caller holding the secret gets this far. Other methods and paths fall to the mounting
 * app's 404 problem+json.
 * A verified callback is delivered as the workflow's `backendCallback` update, whose validator
 * refuses a replay of an accepted delivery and a callback for no current generation (409, nothing
 * recorded) and answers a callback that overtook its own submission's result (the backend decided
 * before the workflow recorded the handle) with 503 + `Retry-After: 1`, so the backend retries the
 * same delivery, which then lands; an accepted one makes the workflow fetch authoritative status before acting
 * (SEP-2848 §Security, callback authenticity). Closed or unknown workflows are answered 202; no
 * worker within 5 s, or an update failure that is not one of the workflow's refusals (Temporal's
 * own, e.g. an update no worker processed) → 500 so the backend retries later.
 *
 * With a tracer, each verified callback is a SERVER span `POST /callbacks/arap` whose parent is the
 * backend's `traceparent` header (if any) and which carries a **span link** to the trace that
 * started the task (the workflow start's trace header, read from the run's first history event):
 * a decision taken days later is its own trace, linked to the agent's `tools/call`, instead of one
 * span held open for the whole wait (docs/OPERATIONS.md §Traces).
 *
 * Deliberately does not: act on the callback's `status` (it is only a hint), track replays itself
 * (the workflow's update validator does), or log bodies or signatures.
 */
import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, defaultTextMapGetter, trace, type Link, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultPayloadConverter } from '@temporalio/common';
import { WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Logger } from 'pino';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { problem } from '@countersign/http/problem';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, CallbackBodySchema, verifyCallback } from '@countersign/arap';
import { backendCallbackUpdate } from '../../workflows/messages.js';
import { REFUSAL, refusalOf, refusalWhy } from '../../workflows/refusals.js';

/** Options of {@link createArapCallbackReceiver}. */
export interface ArapCallbackReceiverOptions {
  /** A Temporal client (with the payload codec installed) to deliver the `backendCallback` update. */
  temporal: Client;
  /** HMAC key shared with the backend (`secrets.json` `callbackSecret`). */
  callbackSecret: string;
  logger: Logger;
  /** OpenTelemetry tracer (`src/ops/tracing.ts`); unset: no spans. */
  tracer?: Tracer;
}

/** Header of Temporal's OpenTelemetry interceptors holding the W3C carrier (`@temporalio/interceptors-opentelemetry`). */
const TEMPORAL_TRACE_HEADER = '_tracer-data';
const w3c = new W3CTraceContextPropagator();

/** An approval workflow id as a callback URL may name it (`approvalWorkflowId`). */
const APPROVAL_WORKFLOW_ID = new RegExp(`^${APPROVAL_WORKFLOW_ID_PREFIX}[0-9a-f]{32}$`);

/**
 * The generation named by a callback URL's last segment, accepted only in canonical decimal: digits
 * without a leading zero, sign, exponent, fraction, whitespace or percent-encoding, at least 1 and
 * at most `Number.MAX_SAFE_INTEGER` (so `1e0`, ` 1`, `0x1`, `01`, `+1`, `1.0`, `%31` and `0` are
 * not generations). The backend echoes the URL the workflow gave it, which spells the generation
 * with `String(n)`, so any other spelling is not one of ours. Returns null when not canonical.
 */
export function parseCallbackGeneration(segment: string): number | null {
  if (!/^[1-9][0-9]{0,15}$/.test(segment)) return null;
  const n = Number(segment);
  return Number.isSafeInteger(n) ? n : null;
}

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
      const tracer = opts.tracer;
      if (!tracer) return deliver(c);
      const parent = w3c.extract(
        ROOT_CONTEXT,
        { traceparent: c.req.header('traceparent') ?? '', tracestate: c.req.header('tracestate') ?? '' },
        defaultTextMapGetter,
      );
      const workflowId = c.req.param('workflowId') ?? '';
      const span = tracer.startSpan(
        'POST /callbacks/arap',
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': 'POST',
            'http.route': '/callbacks/arap/:workflowId/:generation',
            temporalWorkflowId: workflowId,
          },
        },
        parent,
      );
      try {
        // the link is looked up only for a verified callback: a forged one cannot make us read history
        const res = await context.with(trace.setSpan(parent, span), () =>
          deliver(c, async (id) => void span.addLinks(await taskStartLinks(opts.temporal, id))),
        );
        span.setAttribute('http.response.status_code', res.status);
        if (res.status >= 400) {
          span.setAttribute('error.type', String(res.status));
          if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }
        return res;
      } finally {
        span.end();
      }
    },
  );

  /** The route's work; `onVerified` runs once the signature and the ids check out, before delivery. */
  async function deliver(c: Context, onVerified?: (workflowId: string) => Promise<void>): Promise<Response> {
    const raw = await readUtf8Body(c.req.raw);
    if (raw === null) return problem('invalid-request', 'malformed callback: the body is not valid UTF-8');
    // The request target as received (path and query, as `new URL` serializes it, like the signer):
    // a delivery signed for another workflow's or generation's callback URL does not verify here.
    const url = new URL(c.req.url);
    const verdict = verifyCallback(
      opts.callbackSecret,
      `${url.pathname}${url.search}`,
      raw,
      { timestamp: c.req.header(CALLBACK_TIMESTAMP_HEADER), signature: c.req.header(CALLBACK_SIGNATURE_HEADER) },
      Math.floor(Date.now() / 1000),
    );
    if (!verdict.ok) {
      opts.logger.warn({ reason: verdict.reason }, 'backend callback rejected');
      return problem('unauthorized', `callback rejected: ${verdict.reason}`);
    }
    // The segments as sent, not as the router decoded them: `%31` is not a spelling of generation 1.
    const [workflowId = '', generationSegment = ''] = url.pathname.split('/').slice(-2);
    const generation = parseCallbackGeneration(generationSegment);
    const json = parseJsonWithLimits(raw);
    const body = CallbackBodySchema.safeParse(json.ok ? json.value : undefined);
    if (!APPROVAL_WORKFLOW_ID.test(workflowId) || generation === null || !body.success) {
      return problem('invalid-request', 'malformed callback');
    }
    await onVerified?.(workflowId);
    // The delivery's identity is what the signature covers (timestamp and body; the target is this
    // workflow's own URL, so it adds nothing within one workflow), not the header's spelling: a
    // re-cased or re-encoded signature of the same delivery is the same delivery.
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
      if (err instanceof WorkflowUpdateFailedError && refusalOf(err.cause) === REFUSAL.earlyCallback) {
        // decided before the workflow recorded its submission: the same delivery lands once it has
        opts.logger.info('backend callback early: submission not recorded yet; asked to retry');
        return problem('not-recorded-yet', 'callback arrived before the submission was recorded; retry later', { 'Retry-After': '1' });
      }
      if (err instanceof WorkflowUpdateFailedError) {
        const refused = refusalOf(err.cause);
        if (refused === REFUSAL.replayedCallback || refused === REFUSAL.staleCallback) {
          opts.logger.warn(
            { refusal: refused, why: refusalWhy(err.cause), workflowId },
            'backend callback refused: replayed, stale or for no current generation',
          );
          return problem('not-pending', 'callback refused: replayed, stale, or for no current request');
        }
        // Not the workflow's answer but Temporal's: e.g. the server rejects an update that the worker
        // did not process in its workflow task (a run evicted from a full workflow cache). Nothing was
        // recorded, so the same delivery may land later: retryable, never a final 409.
        const cause = err.cause as { name?: unknown; type?: unknown; message?: unknown } | undefined;
        opts.logger.warn(
          { workflowId, cause: cause?.name, causeType: cause?.type, causeMessage: String(cause?.message ?? '').slice(0, 200) },
          'backend callback not delivered: update failed outside the workflow; retry later',
        );
        return problem('internal', 'callback not delivered; retry later');
      }
      if (isWorkflowNotFound(err)) {
        return c.body(null, 202); // closed or unknown task: nothing to do
      }
      opts.logger.warn({ err: (err as Error).name }, 'backend callback not delivered');
      return problem('internal', 'callback not delivered; retry later');
    }
    return c.body(null, 202);
  }
  return app;
}

/**
 * A link to the trace that started approval workflow `workflowId`: the W3C context Temporal's
 * client interceptor put in the start's header (first history event). Empty when the run was
 * started without tracing, the header is not plain JSON, or the read fails within 2 s — a missing
 * link never fails a callback.
 */
async function taskStartLinks(temporal: Client, workflowId: string): Promise<Link[]> {
  try {
    const history = await temporal.withDeadline(Date.now() + 2_000, () =>
      temporal.workflowService.getWorkflowExecutionHistory({
        namespace: temporal.options.namespace,
        execution: { workflowId },
        maximumPageSize: 1,
      }),
    );
    const payload = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.header?.fields?.[TEMPORAL_TRACE_HEADER];
    if (!payload) return [];
    const carrier = defaultPayloadConverter.fromPayload<Record<string, string>>(payload);
    const spanContext = trace.getSpanContext(w3c.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter));
    return spanContext ? [{ context: spanContext, attributes: { 'countersign.link': 'task-start' } }] : [];
  } catch {
    return [];
  }
}
