/**
 * The ARAP wire between Countersign's gate and an approval service (AuthZEN ARAP WG Draft 1 names,
 * snake_case; SEP-2848 §Example binding: AuthZEN ARAP), written once for both ends: the gate's
 * adapter (`src/backends/arap-http-backend.ts`) builds requests and parses answers with these
 * schemas, its callback receiver (`src/backends/arap-callbacks.ts`) parses callbacks with them,
 * and the reference approval service (`@countersign/approvals`) validates requests and types its
 * answers with them.
 *
 * Schemas of what a receiver parses are lenient where the receiving side has always been
 * (unknown keys are stripped; a task handle's `links` and a status's `expires_at` may be absent;
 * a callback's `status` is any short string, a hint); the types of what the reference service
 * sends say what it always includes (`WireTaskHandle`, `WireStatusBody`, `WireCallbackBody`).
 *
 * Deliberately does not: hold any business rule (expiry, four-eyes and state transitions are the
 * service's), or talk HTTP.
 */
import { z } from 'zod';
import { NARROWABLE_FIELD, NARROWING_DIRECTIONS } from './narrowing.js';
import { JsonPointerSchema, MAX_REDACTED, REDACTED_VALUE, valueAt } from './redaction.js';
import { DisplayHintsSchema } from './display.js';
import { GrantConstraintsSchema } from './grants.js';

/** Most fields a narrowing spec names on the wire. */
export const MAX_NARROWABLE = 64;

/**
 * A narrowing spec on the wire (`narrowing.ts` `NarrowingSpec`): top-level argument name →
 * direction, 1 to {@link MAX_NARROWABLE} entries, each name as `parseNarrowingSpec` accepts it.
 */
export const NarrowingSpecSchema = z
  .record(z.string().regex(NARROWABLE_FIELD), z.enum(NARROWING_DIRECTIONS))
  .refine((spec) => Object.keys(spec).length >= 1 && Object.keys(spec).length <= MAX_NARROWABLE, {
    message: `a narrowing spec names 1 to ${MAX_NARROWABLE} fields`,
  });

/** Statuses of an access request (ARAP task status; `partial` is bulk-only and not used). */
export const REQUEST_STATUSES = ['pending', 'approved', 'denied', 'expired', 'cancelled', 'failed'] as const;
/** One of {@link REQUEST_STATUSES}. */
export type RequestStatus = (typeof REQUEST_STATUSES)[number];
/** {@link REQUEST_STATUSES} as a schema. */
export const RequestStatusSchema = z.enum(REQUEST_STATUSES);

/** Requester principal on the wire: `{iss, sub, act?}` (RFC 8693 `act` chain, outermost first). */
export const WireSubjectSchema = z.object({
  iss: z.string().min(1).max(2048),
  sub: z.string().min(1).max(1024),
  act: z
    .array(z.object({ iss: z.string().max(2048).optional(), sub: z.string().min(1).max(1024) }))
    .max(16)
    .optional(),
});

/**
 * ARAP resource `properties` of a tool, for approvers: its title, the upstream MCP server it comes
 * from and its name there, and the four MCP annotation hints (hints from the tool's author, MCP
 * defaults already applied by the sender).
 */
export const WireToolPropertiesSchema = z.object({
  title: z.string().min(1).max(256).optional(),
  upstream: z.string().min(1).max(64).optional(),
  upstream_tool: z.string().min(1).max(256).optional(),
  annotations: z
    .object({ readOnlyHint: z.boolean(), destructiveHint: z.boolean(), idempotentHint: z.boolean(), openWorldHint: z.boolean() })
    .optional(),
  display: DisplayHintsSchema.optional(),
});
/** Validated tool properties. */
export type WireToolProperties = z.infer<typeof WireToolPropertiesSchema>;

/** Longest MCP client name (`clientInfo.name`) on the wire, in characters. */
export const MAX_CLIENT_NAME_LENGTH = 100;
/** Longest MCP client version (`clientInfo.version`) on the wire, in characters. */
export const MAX_CLIENT_VERSION_LENGTH = 40;

/**
 * The MCP client that made the call, from its `clientInfo` (the 2026-07-28 request envelope's
 * `io.modelcontextprotocol/clientInfo`, or the 2025-11-25 `initialize`): self-reported by the
 * client, so for display only, never for a decision. The sender bounds it and escapes control
 * characters (`src/mcp/client-identity.ts`).
 */
export const WireClientSchema = z.object({
  name: z.string().min(1).max(MAX_CLIENT_NAME_LENGTH),
  version: z.string().min(1).max(MAX_CLIENT_VERSION_LENGTH).optional(),
});
/** A validated client identity. */
export type WireClient = z.infer<typeof WireClientSchema>;

/** A task reference: the gate's keyed id of the approval task a request belongs to (its workflow id), 1–256 characters of `[A-Za-z0-9._:-]`. */
export const TaskRefSchema = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z0-9._:-]+$/);

/**
 * Body of `POST /access/v1/tasks/:task_ref/followers`: the gate saw a client read the task
 * (`tasks/get`, `subscribed: false`) or hold a subscription to it (`subscriptions/listen`,
 * `subscribed: true`) just now; `client` is the reading client's `clientInfo` when it sent one.
 * The service stamps its own time. An extension of ARAP (docs/DESIGN.md §Who is waiting).
 */
export const FollowerReportBodySchema = z
  .object({
    subscribed: z.boolean(),
    client: WireClientSchema.optional(),
  })
  .strict();
/** A validated follower report. */
export type FollowerReportBody = z.infer<typeof FollowerReportBodySchema>;

/**
 * Body of `POST /access/v1/requests` (ARAP Access Request). `expires_at` is ISO 8601 with an
 * offset (`Z` or `±hh:mm`); `generation` ≥ 1; `callback_url` absolute http(s); `resource.properties`
 * optional ({@link WireToolPropertiesSchema}); `context.redacted` lists the masked arguments
 * (`redaction.ts`). Unknown keys are stripped, so they neither matter
 * for idempotency nor get stored.
 */
export const AccessRequestBodySchema = z.object({
  subject: WireSubjectSchema,
  action: z.object({ name: z.literal('tools/call') }),
  resource: z.object({ type: z.literal('tool'), id: z.string().min(1).max(256), properties: WireToolPropertiesSchema.optional() }),
  context: z
    .object({
      arguments: z.record(z.string(), z.unknown()),
      justification: z.string().max(1000).optional(),
      /** Fields masked for display (`redaction.ts`): each names a `sha256:<hex>` string in `arguments`. */
      redacted: z.array(JsonPointerSchema).max(MAX_REDACTED).optional(),
      /** The calling MCP client ({@link WireClientSchema}); absent when it named none. */
      client: WireClientSchema.optional(),
      /**
       * The fields an approver may narrow in a counter-proposal and how ({@link NarrowingSpecSchema}),
       * from the `@narrowable` of the forbid that applies; absent: the request cannot be narrowed.
       */
      narrowable: NarrowingSpecSchema.optional(),
    })
    .refine(
      (c) =>
        (c.redacted ?? []).every((p) => JsonPointerSchema.safeParse(p).success && REDACTED_VALUE.test(String(valueAt(c.arguments, p)))),
      {
        message: 'every redacted pointer must name a sha256:<hex> value in arguments',
        path: ['redacted'],
      },
    ),
  approver_group: z.string().min(1).max(256),
  reason: z.string().max(2000),
  expires_at: z.iso.datetime({ offset: true }),
  binding_digest: z.string().min(1).max(256),
  generation: z.int().min(1),
  callback_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
  /** The approval task this request belongs to ({@link TaskRefSchema}): what follower reports name. */
  task_ref: TaskRefSchema.optional(),
});
/** A validated access request body. */
export type AccessRequestBody = z.infer<typeof AccessRequestBodySchema>;
/** An access request body as a sender builds it (before defaults). */
export type AccessRequestBodyInput = z.input<typeof AccessRequestBodySchema>;

/**
 * Body of `POST /access/v1/requests/:id/decision` (approver decision; comment ≤ 1000 chars;
 * `on_behalf_of`: the approver id of a delegator, to decide for them; `confirm_unfollowed`: approve
 * a request nobody follows). `decision: "narrow"` is a counter-proposal: `proposed_arguments` (the
 * complete arguments of the narrower call, required with it and only with it) is checked against
 * the request's `context.narrowable` (`narrowing.ts` `checkNarrowing`); the request then ends
 * denied with a `counter_proposal` (docs/APPROVERS.md §Narrowing a request).
 */
export const DecisionBodySchema = z
  .object({
    decision: z.enum(['approve', 'deny', 'narrow']),
    comment: z.string().max(1000).optional(),
    on_behalf_of: z.string().min(1).max(200).optional(),
    /** Approve although nobody follows the request's task (the `unfollowed` rule, docs/APPROVERS.md §Who is waiting); without it such an approval is refused 409 `unfollowed`. */
    confirm_unfollowed: z.boolean().optional(),
    /**
     * Approve your own request under the break-glass role (docs/APPROVERS.md §Break-glass): `reason`
     * is mandatory (an empty one is refused 400); outside the role 403; past the daily limit 429.
     */
    break_glass: z
      .object({ reason: z.string().max(500) })
      .strict()
      .optional(),
    /** With `decision: "narrow"`: the complete arguments of the narrower call the approver would accept. */
    proposed_arguments: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((d) => (d.decision === 'narrow') === (d.proposed_arguments !== undefined), {
    message: 'proposed_arguments is required with decision "narrow" and only with it',
    path: ['proposed_arguments'],
  });
/** A validated decision body. */
export type DecisionBody = z.infer<typeof DecisionBodySchema>;

/** Body of `POST /access/v1/delegations`: delegate to approver `to` until `until` (ISO 8601 with offset). */
export const DelegationBodySchema = z
  .object({
    to: z.string().min(1).max(200),
    until: z.iso.datetime({ offset: true }),
  })
  .strict();

/**
 * A passkey confirmation of an approval, when a step-up rule required one: approver, credential
 * id, user verified, the binding digest signed as the challenge, rule, when. An extension field;
 * ARAP clients that do not know it ignore it.
 */
export const WireStepUpSchema = z.object({
  approver: z.string(),
  method: z.literal('webauthn'),
  credential_id: z.string(),
  user_verified: z.literal(true),
  challenge: z.string(),
  /** The approved request's binding digest and id, which the single-use challenge was issued for (absent in older proofs). */
  binding_digest: z.string().optional(),
  request_id: z.string().optional(),
  rule: z.string(),
  verified_at: z.string(),
});

/** A break-glass mark: approver id, their reason, when (ISO 8601). */
export const WireBreakGlassSchema = z.object({
  by: z.string(),
  reason: z.string(),
  at: z.iso.datetime({ offset: true }),
});

/**
 * The grant that approved a request (docs/APPROVERS.md §Grants): its id, who created it, which use
 * this was (1-based) of how many (`max_uses`, null: bounded by time only), and until when it holds
 * (ISO 8601). An extension field; ARAP clients that do not know it ignore it.
 */
export const WireGrantUseSchema = z.object({
  id: z.string().min(1),
  created_by: z.string(),
  use: z.number().int().positive(),
  max_uses: z.number().int().positive().nullable(),
  expires_at: z.iso.datetime({ offset: true }),
});
/** A validated grant use. */
export type WireGrantUse = z.infer<typeof WireGrantUseSchema>;

/**
 * Body of `POST /access/v1/grants` (approver Basic; docs/APPROVERS.md §Grants): a grant for
 * `principal` (the requester's `sub`) to call `tool` with arguments meeting `constraints`
 * (`grants.ts`), for requests of `approver_group`, at most `max_uses` times and/or for
 * `duration_ms` from now (at least one; both capped by the rules file's `grants` option), with a
 * `reason` (1-500 characters). `from_request`: the request it is made from — its principal, tool
 * and group are then the defaults, and a pending one that meets the grant is approved by it.
 */
export const GrantCreateBodySchema = z
  .object({
    from_request: z.string().min(1).max(200).optional(),
    principal: z.string().min(1).max(200).optional(),
    /**
     * The issuer (`iss`, an https URL) of the principal's token: the grant covers calls of
     * `principal` from that issuer only. Absent: the request's issuer with `from_request` (when the
     * grant is for its requester), else any issuer.
     */
    principal_issuer: z.url().max(2048).optional(),
    tool: z.string().min(1).max(256).optional(),
    approver_group: z.string().min(1).max(200).optional(),
    /**
     * Limits on the arguments. Absent with `from_request`: `eq` on every argument of that request
     * (the call exactly, as the inbox prefills it). A grant without limits approves any arguments,
     * so it also needs `any_arguments: true`.
     */
    constraints: GrantConstraintsSchema.optional(),
    /** Say so to make a grant with no limit on the arguments (refused otherwise). */
    any_arguments: z.boolean().optional(),
    max_uses: z.int().min(1).max(10_000).optional(),
    duration_ms: z.int().min(1000).optional(),
    reason: z.string().trim().min(1, 'a grant needs a reason').max(500),
  })
  .strict()
  .refine((b) => b.max_uses !== undefined || b.duration_ms !== undefined, {
    message: 'a grant needs max_uses or duration_ms (or both): it is bounded',
    path: ['max_uses'],
  })
  .refine((b) => b.from_request !== undefined || (b.principal !== undefined && b.tool !== undefined), {
    message: 'principal and tool are required unless from_request names the request they come from',
    path: ['principal'],
  });
/** A validated grant creation body. */
export type GrantCreateBody = z.infer<typeof GrantCreateBodySchema>;

/** ARAP `result.approval`: times ISO 8601; `approvers` are approver ids (audit only). */
export const WireApprovalSchema = z.object({
  id: z.string().min(1),
  approved_at: z.iso.datetime({ offset: true }),
  approved_until: z.iso.datetime({ offset: true }),
  state: z.literal('approved'),
  approvers: z.array(z.string()).default([]),
  step_up: z.array(WireStepUpSchema).optional(),
  /**
   * Present when the requester approved their own request under the break-glass role
   * (docs/APPROVERS.md §Break-glass): who (`by`, an approver id), why (`reason`, their words, ≤ 500
   * characters), when (ISO 8601). An extension field; ARAP clients that do not know it ignore it.
   */
  break_glass: WireBreakGlassSchema.optional(),
  /** Present when a grant approved the request at submission ({@link WireGrantUseSchema}). */
  grant: WireGrantUseSchema.optional(),
});
/** ARAP `result.approval`. */
export type WireApproval = z.infer<typeof WireApprovalSchema>;

/** ARAP Task Handle returned by submit (201 new, 200 idempotent replay). Unknown keys are ignored. */
export const TaskHandleSchema = z.object({
  id: z.string().min(1),
  status: RequestStatusSchema,
  status_endpoint: z.string().min(1),
  expires_at: z.iso.datetime({ offset: true }),
  links: z.object({ self: z.string().optional(), cancel: z.string().min(1).optional() }).optional(),
});
/** A task handle as the reference service sends it: URLs absolute, both links present. */
export type WireTaskHandle = z.infer<typeof TaskHandleSchema> & { links: { self: string; cancel: string } };

/**
 * A counter-proposal on a denied request's status: the narrower call the approver would accept
 * (`tool`, its complete `arguments` as the service holds them — a hidden field as its digest — and
 * until when, ISO 8601, a new call with exactly these arguments by the same principal is approved by
 * the proposal). An extension field (docs/DESIGN.md §9).
 */
export const CounterProposalSchema = z.object({
  tool: z.string().min(1).max(256),
  arguments: z.record(z.string(), z.unknown()),
  expires_at: z.iso.datetime({ offset: true }),
});
/** A validated counter-proposal. */
export type WireCounterProposal = z.infer<typeof CounterProposalSchema>;

/** ARAP Task Status body (`GET /access/v1/requests/:id`). `result` only when `approved`; `error` on `failed` may be a string or problem-like object. */
export const StatusBodySchema = z.object({
  id: z.string().min(1),
  status: RequestStatusSchema,
  expires_at: z.iso.datetime({ offset: true }).optional(),
  result: z.object({ approval: WireApprovalSchema }).optional(),
  error: z.union([z.string(), z.object({ message: z.string().optional(), detail: z.string().optional() })]).optional(),
  /** Why the request ended, when the status alone does not say: `unfollowed` (expired because nobody followed its task). An extension field. */
  status_reason: z.string().max(64).optional(),
  /** On a `denied` request the approver narrowed: the narrower call they would accept ({@link CounterProposalSchema}). */
  counter_proposal: CounterProposalSchema.optional(),
});
/** A status body as the reference service sends it (always with `expires_at`). */
export type WireStatusBody = z.infer<typeof StatusBodySchema> & { expires_at: string };

/** Body of every status-change callback POST (signed, see `callback-signature.ts`); the receiver treats `status` as a hint. */
export const CallbackBodySchema = z.object({
  request_id: z.string().min(1).max(200),
  status: z.string().max(40),
  generation: z.number().int().positive().optional(),
});
/** A callback body as the reference service sends it. */
export type WireCallbackBody = z.infer<typeof CallbackBodySchema> & { status: RequestStatus; generation: number };

/** One counted decision of a request, for evidence: approver id, decision, channel (`inbox`, `api`, `agent`, `risk-engine`, `itsm`, `slack`, `email`, `system`; null when not recorded), ISO 8601 time. */
export const WireDecisionSchema = z.object({
  approver: z.string(),
  decision: z.enum(['approve', 'deny']),
  channel: z.string().nullable(),
  at: z.iso.datetime({ offset: true }),
});

/**
 * Body of `GET /access/v1/requests/:id/decisions` (client bearer): the request's status now, its
 * quorum (`required` distinct approvals, the quorum rule id or null) and every counted decision in
 * order (endorsements and the final approval as `approve`, a denial as `deny`). What evidence
 * receipts record of who decided (`countersign receipts export`).
 */
export const DecisionRecordBodySchema = z.object({
  id: z.string().min(1),
  status: RequestStatusSchema,
  quorum: z.object({ required: z.number().int().min(0), rule: z.string().nullable() }),
  decisions: z.array(WireDecisionSchema),
  /** Present when the request was approved under the break-glass role (who, why, when): receipts record it. */
  break_glass: WireBreakGlassSchema.optional(),
  /** Present when a grant approved the request ({@link WireGrantUseSchema}): receipts name it. */
  grant: WireGrantUseSchema.optional(),
});
/** A request's decision record. */
export type WireDecisionRecord = z.infer<typeof DecisionRecordBodySchema>;

/** The part of an RFC 9457 problem+json body a client surfaces in its messages. */
export const ProblemSchema = z.object({ title: z.string().optional(), detail: z.string().optional() });

/** Absolute URL of a request's status endpoint, `<base>/access/v1/requests/<id>`. */
export function requestUrl(publicBaseUrl: string, id: string): string {
  return `${publicBaseUrl}/access/v1/requests/${encodeURIComponent(id)}`;
}
