/**
 * ApprovalBackend adapter for an AuthZEN ARAP-shaped Access Request Service over HTTP (WG Draft 1
 * names; SEP-2848 §Example binding: AuthZEN ARAP). Speaks the wire served by
 * `packages/approvals/src/` and maps camelCase port types ⇄ snake_case wire.
 *
 * Error mapping (every failure is a `BackendError`): 409 → `conflict`; 400/422 → `invalid`;
 * 401/403 → `unauthorized`; 404 → `not-found` (all non-retryable); 5xx, any other status,
 * network error, timeout, or a response that fails validation (including JSON outside
 * `packages/http/src/json-limits.ts`, e.g. a repeated `status` member) → `unavailable` (retryable).
 * Messages carry the HTTP method, status and the problem+json `title`/`detail`; never request
 * bodies, arguments or the bearer token.
 * Deliberately does not: retry (the workflow's activity retry policy does), verify callbacks
 * (`arap-callbacks.ts` does, with `verifyCallback`), or cache status.
 */
import type { z } from 'zod';
import {
  ProblemSchema,
  StatusBodySchema,
  TaskHandleSchema,
  redactArguments,
  type AccessRequestBodyInput,
  type WireToolProperties,
} from '@countersign/arap';
import { jcsSha256 } from '@countersign/receipts';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { BackendError, type ApprovalBackend, type BackendHandle, type BackendStatus, type SubmissionBody } from './approval-backend.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';

/** Options of {@link createArapHttpBackend}. */
export interface ArapHttpBackendOptions {
  /** Absolute base URL of the Access Request Service; requests go to `<baseUrl>/access/v1/requests`. */
  baseUrl: string;
  /** Bearer secret presented as `Authorization: Bearer <clientToken>`. */
  clientToken: string;
  /** HTTP client; default global `fetch`. */
  fetch?: typeof fetch;
  /** Per-request timeout in ms; default 10000. A timeout is `unavailable` (retryable). */
  timeoutMs?: number;
}

type Verb = 'submit' | 'status' | 'cancel';

function clip(s: string, max = 300): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function issues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length === 0 ? '(body)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}

async function problemText(res: Response): Promise<string> {
  try {
    const parsed = ProblemSchema.safeParse(JSON.parse(await res.text()));
    if (!parsed.success) return '';
    const parts = [parsed.data.title, parsed.data.detail].filter((p): p is string => typeof p === 'string' && p !== '');
    return parts.length === 0 ? '' : `: ${clip(parts.join(' — '))}`;
  } catch {
    return '';
  }
}

async function errorFor(verb: Verb, res: Response): Promise<BackendError> {
  const what = `ARAP ${verb} failed with HTTP ${res.status}${await problemText(res)}`;
  switch (res.status) {
    case 409:
      return new BackendError('conflict', what, false);
    case 400:
    case 422:
      return new BackendError('invalid', what, false);
    case 401:
    case 403:
      return new BackendError('unauthorized', what, false);
    case 404:
      return new BackendError('not-found', what, false);
    default:
      return new BackendError('unavailable', what, true);
  }
}

async function parseJson<T>(verb: Verb, res: Response, schema: z.ZodType<T>): Promise<T> {
  // within packages/http/src/json-limits.ts: a status answer repeating `status` would be read as its last member
  const json = parseJsonWithLimits((await readUtf8Body(res)) ?? ''); // not UTF-8: refused as not JSON
  if (!json.ok) {
    const why = json.reason === 'invalid-json' ? 'body is not JSON' : json.detail;
    throw new BackendError('unavailable', `malformed ARAP ${verb} response (HTTP ${res.status}): ${why}`, true);
  }
  const parsed = schema.safeParse(json.value);
  if (!parsed.success) {
    throw new BackendError('unavailable', `malformed ARAP ${verb} response (HTTP ${res.status}): ${issues(parsed.error)}`, true);
  }
  return parsed.data;
}

function absolute(verb: Verb, url: string, base: string): string {
  try {
    const u = new URL(url, base);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    return u.toString();
  } catch {
    throw new BackendError('unavailable', `malformed ARAP ${verb} response: unusable URL`, true);
  }
}

/**
 * The ARAP resource `properties` of a tool (snake_case): `title`, `upstream`, `upstream_tool`,
 * `annotations` with the MCP hint names (`readOnlyHint`, …) as the MCP specification spells them,
 * and `display`, the tool's display hints (`packages/arap/src/display.ts`).
 */
export function toWireToolProperties(info: ToolPresentation): WireToolProperties {
  return {
    ...(info.title !== undefined ? { title: info.title } : {}),
    ...(info.upstream !== undefined ? { upstream: info.upstream } : {}),
    ...(info.upstreamTool !== undefined ? { upstream_tool: info.upstreamTool } : {}),
    ...(info.hints !== undefined ? { annotations: { ...info.hints } } : {}),
    ...(info.display !== undefined ? { display: structuredClone(info.display) } : {}),
  };
}

/**
 * Map a port submission to the ARAP access-request wire body (`toolInfo` → `resource.properties`,
 * `client` → `context.client`, `narrowable` → `context.narrowable`, `taskRef` → `task_ref`).
 * The arguments at `toolInfo.sensitive` leave masked: `sha256:<hex>` of their JCS form in
 * `context.arguments`, named in `context.redacted` (`packages/arap/src/redaction.ts`); the raw
 * values stay in the workflow, which executes with them. Throws `Error` past 64 top-level
 * sensitive arguments (nothing is sent).
 */
export function toWireSubmission(body: SubmissionBody): Record<string, unknown> {
  const subject: AccessRequestBodyInput['subject'] = { iss: body.requester.iss, sub: body.requester.sub };
  if (body.requester.act !== undefined) subject.act = body.requester.act;
  const shown = redactArguments(body.arguments, body.toolInfo?.sensitive ?? [], jcsSha256);
  // typed by the schema the approval service validates it with (`@countersign/arap`)
  const wire: AccessRequestBodyInput = {
    subject,
    action: { name: 'tools/call' },
    resource: { type: 'tool', id: body.tool, ...(body.toolInfo !== undefined ? { properties: toWireToolProperties(body.toolInfo) } : {}) },
    context: {
      arguments: shown.arguments,
      ...(body.justification !== undefined ? { justification: body.justification } : {}),
      ...(shown.redacted.length > 0 ? { redacted: shown.redacted } : {}),
      ...(body.client !== undefined ? { client: { ...body.client } } : {}),
      ...(body.narrowable !== undefined ? { narrowable: { ...body.narrowable } } : {}),
    },
    approver_group: body.approverGroup,
    reason: body.reason,
    expires_at: body.expiresAt,
    binding_digest: body.bindingDigest,
    generation: body.generation,
    ...(body.callbackUrl !== undefined ? { callback_url: body.callbackUrl } : {}),
    ...(body.taskRef !== undefined ? { task_ref: body.taskRef } : {}),
  };
  return wire;
}

/**
 * Create the ARAP HTTP adapter.
 * - `submit` → `POST <baseUrl>/access/v1/requests` with `Idempotency-Key`; 200/201 → handle
 *   (`statusUrl` = `status_endpoint`, `cancelUrl` = `links.cancel`, both resolved to absolute).
 * - `status` → `GET handle.statusUrl` → `BackendStatus` (approval material and a denial's `counter_proposal` in camelCase); a
 *   body whose `id` differs from `handle.requestId` is `unavailable`.
 * - `cancel` → `POST handle.cancelUrl`; true on 200, false on 409 or without `cancelUrl`.
 */
export function createArapHttpBackend(opts: ArapHttpBackendOptions): ApprovalBackend {
  const doFetch = opts.fetch ?? globalThis.fetch;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const base = opts.baseUrl.replace(/\/+$/, '');
  const submitUrl = `${base}/access/v1/requests`;

  async function call(
    verb: Verb,
    url: string,
    init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  ): Promise<Response> {
    try {
      return await doFetch(url, {
        method: init.method,
        headers: { Accept: 'application/json, application/problem+json', Authorization: `Bearer ${opts.clientToken}`, ...init.headers },
        ...(init.body === undefined ? {} : { body: init.body }),
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      const name = err instanceof Error ? err.name : 'Error';
      const reason = name === 'TimeoutError' || name === 'AbortError' ? `timed out after ${timeoutMs} ms` : `network error (${name})`;
      throw new BackendError('unavailable', `ARAP ${verb} ${reason}`, true);
    }
  }

  return {
    async submit(body, idempotencyKey) {
      const res = await call('submit', submitUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey },
        body: JSON.stringify(toWireSubmission(body)),
      });
      if (res.status !== 200 && res.status !== 201) throw await errorFor('submit', res);
      const task = await parseJson('submit', res, TaskHandleSchema);
      const handle: BackendHandle = {
        requestId: task.id,
        statusUrl: absolute('submit', task.status_endpoint, submitUrl),
        expiresAt: task.expires_at,
      };
      if (task.links?.cancel !== undefined) handle.cancelUrl = absolute('submit', task.links.cancel, submitUrl);
      return handle;
    },

    async status(handle): Promise<BackendStatus> {
      const res = await call('status', handle.statusUrl, { method: 'GET' });
      if (res.status !== 200) throw await errorFor('status', res);
      const body = await parseJson('status', res, StatusBodySchema);
      if (body.id !== handle.requestId) {
        throw new BackendError('unavailable', 'malformed ARAP status response: id does not match the handle', true);
      }
      switch (body.status) {
        case 'pending':
          return { state: 'pending', expiresAt: body.expires_at ?? handle.expiresAt };
        case 'approved': {
          const a = body.result?.approval;
          if (a === undefined) {
            throw new BackendError('unavailable', 'malformed ARAP status response: approved without result.approval', true);
          }
          return {
            state: 'approved',
            approval: {
              id: a.id,
              approvedAt: a.approved_at,
              approvedUntil: a.approved_until,
              state: 'approved',
              approvers: a.approvers,
              ...(a.break_glass !== undefined ? { breakGlass: a.break_glass } : {}),
            },
          };
        }
        case 'failed': {
          const e = body.error;
          const message = typeof e === 'string' ? e : (e?.message ?? e?.detail ?? 'the approval backend reported failure');
          return { state: 'failed', message: clip(message) };
        }
        case 'expired':
          return body.status_reason === 'unfollowed' ? { state: 'expired', reason: 'unfollowed' } : { state: 'expired' };
        case 'denied': {
          const cp = body.counter_proposal;
          return cp === undefined
            ? { state: 'denied' }
            : { state: 'denied', counterProposal: { tool: cp.tool, arguments: cp.arguments, expiresAt: cp.expires_at } };
        }
        default:
          return { state: body.status };
      }
    },

    async cancel(handle) {
      if (handle.cancelUrl === undefined) return false;
      const res = await call('cancel', handle.cancelUrl, { method: 'POST' });
      if (res.status === 200) {
        await res.body?.cancel().catch(() => undefined);
        return true;
      }
      if (res.status === 409) {
        await res.body?.cancel().catch(() => undefined);
        return false;
      }
      throw await errorFor('cancel', res);
    },
  };
}
