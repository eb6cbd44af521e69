/**
 * The ARAP-shaped HTTP API of the reference Access Request Service, mounted at `/access/v1`
 * (AuthZEN ARAP WG Draft 1 names; docs/DESIGN.md §2, `src/backends/approval-backend.ts`).
 *
 * - `POST /requests` (client bearer, `Idempotency-Key`) → 201 new task handle | 200 replay | 409
 * - `GET /requests/:id` (client bearer) → status body (expires on read; `status_reason: "unfollowed"`
 *   on a request the `unfollowed` rule closed)
 * - `GET /requests/:id/decisions` (client bearer) → the decision record: status, quorum, every
 *   counted decision (approver, decision, channel, time), for evidence receipts | 404
 * - `POST /requests/:id/cancel` (client bearer) → status body | 409
 * - `POST /tasks/:task_ref/followers` (client bearer; `FollowerReportBodySchema`) → 204 | 404 (no
 *   request names the task): the MCP server saw a client read or subscribe to the task (`../followers.ts`)
 * - `POST /requests/:id/decision` (approver Basic, or a supervising agent's Bearer secret) →
 *   status body (+ `approvals`, `required_approvals`; still `pending` after a partial approval)
 *   | 403 | 409 (`not-pending`; `unfollowed`: approving a request nobody follows needs
 *   `confirm_unfollowed: true`, `../followers.ts`). `decision: "narrow"` with `proposed_arguments`
 *   (a counter-proposal, `../narrowing-permits.ts`) → the denied request's status body with its
 *   `counter_proposal` | 400 `invalid-narrowing` (naming the field and why) | 409 `not-narrowable`
 *   or `not-pending` | 403
 * - `GET /approvals/pending?limit=&cursor=&tool=&group=` (approver Basic or agent Bearer) → one page
 *   `{items, total, next_cursor}` of the pending requests this decider may decide (their groups or
 *   tools, never their own, not already approved by them), oldest first; `total` counts every such
 *   request, `next_cursor` (null on the last page) continues after this page (`page-cursor.ts`)
 * - `GET /approvals/:id` (approver Basic or agent Bearer) → one request in their scope with its
 *   approvals so far and audit trail (the CLI's `show`)
 * - `POST /delegations` (approver Basic; `{to, until}`) → 201 the delegation | 400; `GET /delegations`
 *   → `{given, received}` (active ones); `POST /delegations/:id/revoke` → 200 | 404 (see
 *   `packages/approvals/src/delegation.ts`); a decision with `on_behalf_of` decides for a delegator (403 without
 *   an active delegation)
 * - `POST /grants`, `GET /grants`, `GET /grants/:id`, `POST /grants/:id/revoke` (approver Basic):
 *   bounded permits an approver with the right creates (`grant-routes.ts`, `../grants.ts`); a
 *   request a grant approved names it in its approval (`grant`), decision record and `GET /approvals/:id`
 * - `POST /itsm/decisions` (JWS signed with the ITSM secret, see `packages/approvals/src/deciders/itsm-webhook.ts`)
 * Every error is problem+json. Bodies are bounded before they are read: {@link MAX_BODY_BYTES} for a
 * new request, {@link MAX_SMALL_BODY_BYTES} for every other route (413); JSON bodies are parsed
 * within `packages/http/src/json-limits.ts` (nesting depth, no `__proto__` key: 400). Deliberately does not: accept decisions with the client token.
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { createMiddleware } from 'hono/factory';
import type { z } from 'zod';
import {
  AccessRequestBodySchema,
  DecisionBodySchema,
  DelegationBodySchema,
  FollowerReportBodySchema,
  TaskRefSchema,
  type WireDecisionRecord,
  type WireStatusBody,
} from '@countersign/arap';
import { counterProposalOf } from '../narrowing-permits.js';
import { followersItem } from '../followers.js';
import { toStatusBody, toTaskHandle } from './arap-wire.js';
import { createDelegation, delegatedDecider, DELEGATION_REFUSAL_DETAIL } from '../delegation.js';
import type { Delegation } from '../store/store.js';
import type { AgentCredential } from '../deciders/decider.js';
import { authenticateDecider, bearerMatches, parseBasic, type Approver } from './http-auth.js';
import type { Decider } from '../deciders/decider.js';
import type { SignInThrottle } from '../inbox/sign-in-throttle.js';
import { clientAddress } from '@countersign/http/client-address';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { problem } from '@countersign/http/problem';
import { faultPoint } from '@countersign/http/fault-point';
import type { DecideRefusal, RequestLifecycle } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore, RequestFilter } from '../store/store.js';
import { encodePageCursor, pageQueryShapeProblem, parsePageQuery } from './page-cursor.js';
import { reasonShown } from '../inbox/format.js';
import { DEFAULT_APPROVAL_RULES, type ApprovalRules } from '../deciders/approval-rules.js';
import { plainRequestOf, requestHeadline } from '../inbox/plain-language.js';
import { addBreakGlassRoutes } from './break-glass-routes.js';
import { addGrantRoutes } from './grant-routes.js';
import { grantUseWire } from '../grants.js';
import type { BreakGlassUse } from '../store/break-glass-store.js';

/** A break-glass mark as the wire carries it (`WireBreakGlassSchema` of `@countersign/arap`), or undefined. */
export function breakGlassWire(use: BreakGlassUse | undefined): { by: string; reason: string; at: string } | undefined {
  return use === undefined ? undefined : { by: use.approver, reason: use.reason, at: new Date(use.atMs).toISOString() };
}

/** Longest accepted `Idempotency-Key`, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;
/** Largest accepted body of `POST /requests`, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Longest accepted `tool=` / `group=` filter of the pending list, in characters. */
export const MAX_FILTER_LENGTH = 200;
/** Largest accepted body of every other route (decisions, cancels, ITSM decisions), in bytes (64 KiB). */
export const MAX_SMALL_BODY_BYTES = 64 * 1024;

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
  /** Supervising agents' credentials; default none. */
  agents?: readonly AgentCredential[];
  /** Back-off for failed approver and agent credentials; absent: none. */
  throttle?: SignInThrottle;
  /** Proxies whose `X-Forwarded-For` names the client (`COUNTERSIGN_TRUSTED_PROXIES`); default none. */
  trustedProxies?: readonly string[];
  /** Inbound ITSM decisions (`POST /itsm/decisions`); absent: the route answers 404. */
  itsmDecisions?: (c: Context) => Promise<Response>;
  /** Clock, ms since epoch (delegations); default `Date.now`. */
  now?: () => number;
  /** The operator's rules in force (break-glass reviewers); default the built-in ones. */
  rules?: () => ApprovalRules;
}

/** JSON view of a delegation (times ISO 8601). */
function delegationItem(d: Delegation): Record<string, unknown> {
  return {
    id: d.id,
    delegator: d.delegator,
    delegate: d.delegate,
    created_at: new Date(d.createdAtMs).toISOString(),
    until: new Date(d.untilMs).toISOString(),
  };
}

/** Problem detail for each refusal (server-authored, no input echoed). */
export const REFUSAL_DETAIL: Record<DecideRefusal, string> = {
  'own-request': 'A requester cannot decide their own access request.',
  'not-in-group': "The approver is not a member of this request's approver group.",
  'tool-out-of-scope': "This credential may not decide requests for this request's tool.",
  'decision-not-allowed': 'This credential may not make this decision.',
  'already-approved': 'This approver already approved the request; another approver must complete it.',
  'quorum-needs-members':
    'This request needs approvals from several members of its approver group, and this credential is not a member: it may deny, or approve only requests that one approval settles.',
  'unknown-person': "decided_by does not name a configured approver of this request's approver group.",
  'step-up-required': 'Approving this request needs a passkey confirmation: approve it in the inbox.',
  'no-delegation': 'on_behalf_of names no one who has delegated to this approver right now (delegations are direct, never chained).',
  unfollowed:
    'No client has followed this request\'s task for a while, so the tool may run with nobody to read its result. To approve anyway, send "confirm_unfollowed": true.',
  'break-glass-reason-required':
    'A break-glass approval needs a reason: say in break_glass.reason why this cannot wait for another approver.',
  'not-break-glass':
    "You do not hold the break-glass role for this request (only a person approving their own request in their own right, named in the rules file's breakGlass, may).",
  'break-glass-limit':
    'You have opened as many break-glass sessions as the rules allow in 24 hours; another approver must decide this request.',
  'break-glass-not-own': 'break_glass is only for approving your own request; decide this one without it.',
};

/** The problem response of a refusal: its own kind for break-glass and unfollowed ones, else 403 `forbidden`. */
export function refusalProblem(reason: DecideRefusal, retryAtMs: number | undefined, nowMs: number): Response {
  switch (reason) {
    case 'unfollowed':
    case 'break-glass-reason-required':
    case 'not-break-glass':
      return problem(reason, REFUSAL_DETAIL[reason]);
    case 'break-glass-not-own':
      return problem('invalid-request', REFUSAL_DETAIL[reason]);
    case 'break-glass-limit': {
      const wait = Math.max(1, Math.ceil(((retryAtMs ?? nowMs) - nowMs) / 1000));
      return problem(reason, `${REFUSAL_DETAIL[reason]} The next may open in ${wait} s.`, { 'Retry-After': String(wait) });
    }
    default:
      return problem('forbidden', REFUSAL_DETAIL[reason]);
  }
}

/**
 * JSON view of a pending or decided request for deciders (arguments included: they are what is
 * decided; a sensitive one only as its `sha256:<hex>` digest, its JSON Pointer in `redacted`, present only then,
 * `packages/arap/src/redaction.ts`). `tool_info` is the resource's `properties` as submitted (title, `upstream`,
 * `upstream_tool`, `annotations` with the four MCP hints, `display` hints) or null; `summary` is the
 * headline every view shows (`inbox/plain-language.ts` `requestHeadline`: `Wire transfer ·
 * $50,000.00 USD to acct-991 · memo=…`), plain text with control and bidi characters made visible. `reason` is the reason shown to approvers (the quorum
 * rule's when one applies, `inbox/format.ts` `reasonShown`), `policy_reason` the policy's as submitted,
 * `quorum_rule` the id of the quorum rule that applies or null.
 * `narrowable` (present only then) names the fields a counter-proposal may narrow and how.
 * `client` is the calling MCP client's `clientInfo` or null; `followers` who follows its task
 * (`followersItem` of `../followers.ts`), when given.
 */
export function approvalItem(
  r: AccessRequestRecord,
  approvals: readonly string[],
  followers?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    id: r.id,
    status: r.status,
    tool: r.body.resource.id,
    tool_info: r.body.resource.properties ?? null,
    requester: r.body.subject.sub,
    arguments: r.body.context.arguments,
    ...(r.body.context.redacted !== undefined ? { redacted: r.body.context.redacted } : {}),
    ...(r.body.context.narrowable !== undefined ? { narrowable: r.body.context.narrowable } : {}),
    summary: requestHeadline(plainRequestOf(r.body)),
    reason: reasonShown(r),
    policy_reason: r.body.reason,
    quorum_rule: r.quorumRule,
    justification: r.body.context.justification ?? null,
    client: r.body.context.client ?? null,
    approver_group: r.body.approver_group,
    binding_digest: r.body.binding_digest,
    required_approvals: r.requiredApprovals,
    approvals,
    created_at: new Date(r.createdAtMs).toISOString(),
    expires_at: new Date(r.expiresAtMs).toISOString(),
    ...(followers !== undefined ? { followers } : {}),
  };
}

/** Format zod issues as `path: message; …` (messages never echo input values). */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 10)
    .map((i) => `${i.path.length === 0 ? '(body)' : i.path.join('.')}: ${i.message}`)
    .join('; ');
}

/**
 * The body as JSON within the limits of `packages/http/src/json-limits.ts`, or the refusal: 415 unless the
 * request says `Content-Type: application/json` (a browser cannot send that cross-site without a
 * CORS preflight this API never grants, so a forged form or `text/plain` post cannot decide
 * anything with an approver's cached Basic credentials), 400 for a body that is not usable JSON.
 */
async function readJson(c: Context): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    return { ok: false, response: problem('unsupported-media-type', 'Send the body as application/json.') };
  }
  const text = await readUtf8Body(c.req.raw);
  if (text === null) return { ok: false, response: problem('invalid-request', 'The body is not valid UTF-8.') };
  const parsed = parseJsonWithLimits(text);
  if (parsed.ok) return parsed;
  return {
    ok: false,
    response: problem(
      'invalid-request',
      parsed.reason === 'invalid-json' ? 'The body is not valid JSON.' : `The body was refused: ${parsed.detail}.`,
    ),
  };
}

const bounded = (maxSize: number) =>
  bodyLimit({ maxSize, onError: () => problem('payload-too-large', `Request bodies here are limited to ${maxSize} bytes.`) });

const unauthorizedClient = (): Response =>
  problem('unauthorized', 'A valid client bearer token is required.', { 'WWW-Authenticate': 'Bearer realm="countersign approvals"' });
const unauthorizedApprover = (): Response =>
  problem('unauthorized', 'Valid approver credentials are required.', { 'WWW-Authenticate': 'Basic realm="countersign approvals"' });
const notFound = (): Response => problem('not-found', 'No such access request.');

/** Build the `/access/v1` sub-application. */
export function createArapRoutes(deps: ArapRoutesDeps): Hono {
  const { lifecycle } = deps;
  const now = deps.now ?? Date.now;
  const app = new Hono();

  // One limit per request, before anything reads the body: the larger for new requests only.
  const large = bounded(MAX_BODY_BYTES);
  const small = bounded(MAX_SMALL_BODY_BYTES);
  app.use('*', (c, next) => (c.req.method === 'POST' && c.req.path.endsWith('/requests') ? large : small)(c, next));

  const requireClient = createMiddleware(async (c, next) => {
    if (!bearerMatches(c.req.header('Authorization'), deps.clientToken)) return unauthorizedClient();
    await next();
  });

  /**
   * A request's status body: expired because nobody followed its task (the `unfollowed` rule's
   * `close`) with `status_reason: "unfollowed"`; denied by a counter-proposal with its
   * `counter_proposal` (`../narrowing-permits.ts`). The gate says either in the task's result.
   */
  const statusBodyOf = async (record: AccessRequestRecord): Promise<WireStatusBody> => {
    const closed = record.status === 'expired' && (await deps.store.followers.closedUnfollowed(record.id));
    const permit = record.status === 'denied' ? await deps.store.permitProposedOn(record.id) : undefined;
    return {
      ...toStatusBody(record),
      ...(closed ? { status_reason: 'unfollowed' } : {}),
      ...(permit !== undefined ? { counter_proposal: counterProposalOf(permit) } : {}),
    };
  };

  /** The grant use that approved request `id`, as the wire carries it, or undefined. */
  const grantUseOf = async (id: string) => {
    const use = await deps.store.grants.useBy(id);
    const grant = use === undefined ? undefined : await deps.store.grants.get(use.grantId);
    return use === undefined || grant === undefined ? undefined : grantUseWire(grant, use);
  };

  app.post('/requests', requireClient, async (c) => {
    const key = c.req.header('Idempotency-Key');
    if (key === undefined || key.trim() === '' || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      return problem('idempotency-key-required', `An Idempotency-Key header of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters is required.`);
    }
    const json = await readJson(c);
    if (!json.ok) return json.response;
    const parsed = AccessRequestBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    const outcome = await lifecycle.submit(key, parsed.data);
    switch (outcome.kind) {
      case 'created': {
        faultPoint('approvals.submit.after-store'); // committed, not yet answered (fault harness only)
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

  app.get('/requests/:id', requireClient, async (c) => {
    const record = await lifecycle.read(c.req.param('id'));
    if (record === undefined) return notFound();
    return c.json(await statusBodyOf(record), 200);
  });

  // The request's decision record, for evidence receipts (`countersign receipts export`): quorum
  // and every counted decision in audit order, as `DecisionRecordBodySchema` of `@countersign/arap`
  // says. A read: it neither expires the request nor records anything.
  app.get('/requests/:id/decisions', requireClient, async (c) => {
    const record = await deps.store.get(c.req.param('id'));
    if (record === undefined) return notFound();
    const body: WireDecisionRecord = {
      id: record.id,
      status: record.status,
      quorum: { required: record.requiredApprovals, rule: record.quorumRule },
      decisions: (await deps.store.auditTrail(record.id))
        .filter((e) => e.event === 'endorsed' || e.event === 'approved' || e.event === 'denied')
        .map((e) => ({
          approver: e.actor,
          decision: e.event === 'denied' ? 'deny' : 'approve',
          channel: e.via,
          at: new Date(e.atMs).toISOString(),
        })),
    };
    const glass = breakGlassWire(await deps.store.breakGlass.use(record.id));
    if (glass !== undefined) body.break_glass = glass;
    const grant = await grantUseOf(record.id);
    if (grant !== undefined) body.grant = grant;
    return c.json(body, 200);
  });

  // A follower report of the MCP server (`src/mcp/follower-reports.ts`): a client read the task or
  // holds a subscription to it just now. 204 recorded; 404 when no request names the task (the
  // server then stops reporting it); the time is this service's own.
  app.post('/tasks/:task_ref/followers', requireClient, async (c) => {
    const taskRef = TaskRefSchema.safeParse(c.req.param('task_ref'));
    if (!taskRef.success) return problem('invalid-request', 'task_ref must be 1 to 256 characters of A-Z a-z 0-9 . _ : -');
    const json = await readJson(c);
    if (!json.ok) return json.response;
    const parsed = FollowerReportBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    const { subscribed, client } = parsed.data;
    const known = await deps.store.followers.report(
      taskRef.data,
      {
        subscribed,
        ...(client !== undefined
          ? { clientName: client.name, ...(client.version !== undefined ? { clientVersion: client.version } : {}) }
          : {}),
      },
      now(),
    );
    return known ? c.body(null, 204) : problem('not-found', 'No access request names this task.');
  });

  app.post('/requests/:id/cancel', requireClient, async (c) => {
    const outcome = await lifecycle.cancel(c.req.param('id'));
    switch (outcome.kind) {
      case 'cancelled':
        return c.json(toStatusBody(outcome.record), 200);
      case 'not-pending':
        return problem('not-pending', `The request is already ${outcome.record.status} and cannot be cancelled.`);
      case 'not-found':
        return notFound();
    }
  });

  const agents = deps.agents ?? [];
  /** The authenticated decider, or the 401/429 answer (failures are logged and throttled). */
  const decider = (c: Context): Decider | Response => {
    const authorization = c.req.header('Authorization');
    const id = /^Bearer /i.test(authorization ?? '') ? '(agent bearer)' : (parseBasic(authorization)?.id ?? '');
    const address = clientAddress(c, deps.trustedProxies);
    const wait = authorization === undefined ? 0 : (deps.throttle?.retryAfterSeconds(id, address) ?? 0);
    if (wait > 0) return problem('too-many-attempts', `Too many failed sign-ins. Try again in ${wait} s.`, { 'Retry-After': String(wait) });
    const who = authenticateDecider(authorization, deps.approvers, agents);
    if (who === null) {
      if (authorization !== undefined) deps.throttle?.failed(id, address, 'api');
      return unauthorizedApprover();
    }
    deps.throttle?.succeeded(id);
    return who;
  };

  app.get('/approvals/pending', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const shape = pageQueryShapeProblem(new URL(c.req.url).searchParams);
    if (shape !== null) return problem('invalid-request', shape);
    const page = parsePageQuery(c.req.query('limit'), c.req.query('cursor'));
    if (!page.ok) return problem('invalid-request', page.detail);
    const tool = c.req.query('tool');
    const group = c.req.query('group');
    for (const [name, value] of [
      ['tool', tool],
      ['group', group],
    ] as const) {
      if (value !== undefined && (value === '' || value.length > MAX_FILTER_LENGTH)) {
        return problem('invalid-request', `${name} must be 1 to ${MAX_FILTER_LENGTH} characters.`);
      }
    }
    await lifecycle.sweep();
    const filter: RequestFilter = {
      ...lifecycle.decidableFilter(who),
      ...(tool !== undefined ? { tool } : {}),
      ...(group !== undefined ? { group } : {}),
    };
    const result = await deps.store.pagePending(filter, { limit: page.limit, ...(page.after !== undefined ? { after: page.after } : {}) });
    const last = result.records[result.records.length - 1];
    const items: ReturnType<typeof approvalItem>[] = [];
    for (const r of result.records)
      items.push(
        approvalItem(
          r,
          (await lifecycle.votes(r.id)).map((v) => v.approver),
        ),
      );
    return c.json(
      {
        items,
        total: result.total,
        next_cursor: result.hasAfter && last !== undefined ? encodePageCursor({ createdAtMs: last.createdAtMs, id: last.id }) : null,
      },
      200,
    );
  });

  app.get('/approvals/:id', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const record = await lifecycle.read(c.req.param('id'));
    if (record === undefined) return notFound();
    const refusal = await lifecycle.refusalFor(who, record);
    if (refusal === 'not-in-group' || refusal === 'tool-out-of-scope') return notFound();
    const votes = await lifecycle.votes(record.id);
    const followers = await lifecycle.followers(record);
    const trail = await narrowingTrail(record);
    const glass = await deps.store.breakGlass.use(record.id);
    const grant = await grantUseOf(record.id);
    const audit = await deps.store.auditTrail(record.id);
    return c.json(
      {
        ...approvalItem(
          record,
          votes.map((v) => v.approver),
          followersItem(followers, now()),
        ),
        resolved_by: record.resolvedBy,
        resolved_at: record.resolvedAtMs === null ? null : new Date(record.resolvedAtMs).toISOString(),
        you_may_decide: refusal === null && record.status === 'pending',
        ...trail,
        refusal,
        break_glass: breakGlassWire(glass) ?? null,
        grant: grant ?? null,
        audit: audit.map((e) => ({
          event: e.event,
          actor: e.actor,
          on_behalf_of: e.onBehalfOf,
          via: e.via,
          rule: e.rule,
          comment: e.comment,
          at: new Date(e.atMs).toISOString(),
        })),
      },
      200,
    );
  });

  app.post('/requests/:id/decision', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const json = await readJson(c);
    if (!json.ok) return json.response;
    const parsed = DecisionBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    let acting: Decider = who;
    if (parsed.data.on_behalf_of !== undefined) {
      const self = personOf(who);
      const forDelegator =
        self === undefined ? null : await delegatedDecider(deps.store, deps.approvers, self, parsed.data.on_behalf_of, 'api', now());
      if (forDelegator === null) return problem('forbidden', REFUSAL_DETAIL['no-delegation']);
      acting = forDelegator;
    }
    if (parsed.data.decision === 'narrow')
      return narrowed(c.req.param('id'), acting, parsed.data.proposed_arguments ?? {}, parsed.data.comment);
    const outcome = await lifecycle.decide(c.req.param('id'), acting, parsed.data.decision, {
      comment: parsed.data.comment,
      confirmUnfollowed: parsed.data.confirm_unfollowed,
      breakGlass: parsed.data.break_glass,
    });
    switch (outcome.kind) {
      case 'decided':
      case 'recorded':
        return c.json(
          {
            ...toStatusBody(outcome.record),
            required_approvals: outcome.record.requiredApprovals,
            approvals: (await lifecycle.votes(outcome.record.id)).map((v) => v.approver),
          },
          200,
        );
      case 'forbidden':
        // unfollowed is not a matter of who decides: 409, and the same decision with the confirmation goes through
        return refusalProblem(outcome.reason, outcome.retryAtMs, now());
      case 'not-pending':
        return problem('not-pending', `The request is already ${outcome.record.status}.`);
      case 'not-found':
        return notFound();
    }
  });

  /**
   * The counter-proposal trail of a request, for `GET /approvals/:id`: `counter_proposal` (the
   * narrower call proposed on it: tool, arguments, expires_at, proposed_by, used_by_request) and
   * `permitted_by` (the proposal that approved it: request_id, approver), each only when present.
   */
  const narrowingTrail = async (record: AccessRequestRecord): Promise<Record<string, unknown>> => {
    const proposed = await deps.store.permitProposedOn(record.id);
    const used = await deps.store.permitUsedBy(record.id);
    return {
      ...(proposed !== undefined
        ? {
            counter_proposal: { ...counterProposalOf(proposed), proposed_by: proposed.proposedBy, used_by_request: proposed.usedByRequest },
          }
        : {}),
      ...(used !== undefined ? { permitted_by: { request_id: used.requestId, approver: used.proposedBy } } : {}),
    };
  };

  /** A counter-proposal's answer: the denied request's status (with its `counter_proposal`), or the refusal. */
  const narrowed = async (
    id: string,
    acting: Decider,
    proposed: Record<string, unknown>,
    comment: string | undefined,
  ): Promise<Response> => {
    const outcome = await lifecycle.narrow(id, acting, proposed, comment);
    switch (outcome.kind) {
      case 'narrowed':
        return Response.json(await statusBodyOf(outcome.record), { status: 200 });
      case 'invalid':
        return problem('invalid-narrowing', `${outcome.message}.`);
      case 'not-narrowable':
        return problem('not-narrowable', 'The policy that applies to this request marks no field narrowable: approve or deny it.');
      case 'forbidden':
        return problem('forbidden', REFUSAL_DETAIL[outcome.reason]);
      case 'not-pending':
        return problem('not-pending', `The request is already ${outcome.record.status}.`);
      case 'not-found':
        return notFound();
    }
  };

  /** The configured approver behind a person's credential (never an agent's). */
  const personOf = (who: Decider) => (who.via === 'api' ? deps.approvers.find((a) => a.id === who.id) : undefined);
  const onlyPeople = () => problem('forbidden', 'Only an approver (HTTP Basic) has delegations.');

  app.post('/delegations', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const self = personOf(who);
    if (self === undefined) return onlyPeople();
    const json = await readJson(c);
    if (!json.ok) return json.response;
    const parsed = DelegationBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', describeIssues(parsed.error));
    const outcome = await createDelegation(deps.store, deps.approvers, self, parsed.data.to, Date.parse(parsed.data.until), now());
    if (outcome.kind === 'refused') return problem('invalid-request', DELEGATION_REFUSAL_DETAIL[outcome.reason]);
    return c.json(delegationItem(outcome.delegation), 201);
  });

  app.get('/delegations', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const self = personOf(who);
    if (self === undefined) return onlyPeople();
    const at = now();
    return c.json(
      {
        given: (await deps.store.delegations.activeFrom(self.id, at)).map(delegationItem),
        received: (await deps.store.delegations.activeTo(self.id, at)).map(delegationItem),
      },
      200,
    );
  });

  app.post('/delegations/:id/revoke', async (c) => {
    const who = decider(c);
    if (who instanceof Response) return who;
    const self = personOf(who);
    if (self === undefined) return onlyPeople();
    return (await deps.store.delegations.revoke(c.req.param('id'), self.id, now()))
      ? c.json({ id: c.req.param('id'), revoked: true }, 200)
      : problem('not-found', 'No such active delegation of yours.');
  });

  /** The dependencies of the people-only route groups (break-glass, grants); `only` says whom they are for. */
  const personRoutes = (only: string) => ({
    lifecycle,
    store: deps.store,
    rules: deps.rules ?? (() => DEFAULT_APPROVAL_RULES),
    now,
    person: (c: Context) => {
      const who = decider(c);
      if (who instanceof Response) return who;
      return personOf(who) ?? problem('forbidden', only);
    },
    readJson,
    describeIssues,
  });
  addBreakGlassRoutes(app, personRoutes('Only an approver (HTTP Basic) breaks glass or reviews it.'));
  addGrantRoutes(app, personRoutes('Only an approver (HTTP Basic) creates, lists or revokes grants.'));

  app.post('/itsm/decisions', (c) => (deps.itsmDecisions === undefined ? notFound() : deps.itsmDecisions(c)));

  return app;
}
