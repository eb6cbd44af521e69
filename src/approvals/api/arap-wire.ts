/**
 * Wire schemas of the reference Access Request Service: the AuthZEN ARAP-shaped HTTP API
 * (WG Draft 1 names, snake_case), as served under `/access/v1`.
 *
 * zod schemas are the source of each request type; response types are plain interfaces built by
 * the presenters below. Deliberately does not hold any business rule (expiry, four-eyes, state
 * transitions live in `request-lifecycle.ts`).
 */
import { z } from 'zod';

/** Statuses of an access request (ARAP task status; `partial` is bulk-only and not used). */
export const REQUEST_STATUSES = ['pending', 'approved', 'denied', 'expired', 'cancelled', 'failed'] as const;
/** One of {@link REQUEST_STATUSES}. */
export type RequestStatus = (typeof REQUEST_STATUSES)[number];

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
 * ARAP resource `properties` of a tool, for approvers (`src/tools/tool-presentation.ts`): its
 * title, the upstream MCP server it comes from and its name there, and the four MCP annotation
 * hints (hints from the tool's author, MCP defaults already applied by the sender).
 */
export const WireToolPropertiesSchema = z.object({
  title: z.string().min(1).max(256).optional(),
  upstream: z.string().min(1).max(64).optional(),
  upstream_tool: z.string().min(1).max(256).optional(),
  annotations: z
    .object({ readOnlyHint: z.boolean(), destructiveHint: z.boolean(), idempotentHint: z.boolean(), openWorldHint: z.boolean() })
    .optional(),
});
/** Validated tool properties. */
export type WireToolProperties = z.infer<typeof WireToolPropertiesSchema>;

/**
 * Body of `POST /access/v1/requests` (ARAP Access Request). `expires_at` is ISO 8601 with an
 * offset (`Z` or `±hh:mm`); `generation` ≥ 1; `callback_url` absolute http(s); `resource.properties`
 * optional ({@link WireToolPropertiesSchema}). Unknown keys are
 * stripped, so they neither matter for idempotency nor get stored.
 */
export const AccessRequestBodySchema = z.object({
  subject: WireSubjectSchema,
  action: z.object({ name: z.literal('tools/call') }),
  resource: z.object({ type: z.literal('tool'), id: z.string().min(1).max(256), properties: WireToolPropertiesSchema.optional() }),
  context: z.object({ arguments: z.record(z.string(), z.unknown()), justification: z.string().max(1000).optional() }),
  approver_group: z.string().min(1).max(256),
  reason: z.string().max(2000),
  expires_at: z.iso.datetime({ offset: true }),
  binding_digest: z.string().min(1).max(256),
  generation: z.int().min(1),
  callback_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional(),
});
/** A validated access request body. */
export type AccessRequestBody = z.infer<typeof AccessRequestBodySchema>;

/**
 * Body of `POST /access/v1/requests/:id/decision` (approver decision; comment ≤ 1000 chars;
 * `on_behalf_of`: the approver id of a delegator, to decide for them, see `src/approvals/delegation.ts`).
 */
export const DecisionBodySchema = z.object({
  decision: z.enum(['approve', 'deny']),
  comment: z.string().max(1000).optional(),
  on_behalf_of: z.string().min(1).max(200).optional(),
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

/** ARAP `result.approval`: times ISO 8601; `approvers` are approver ids (audit only). */
export interface WireApproval {
  id: string;
  approved_at: string;
  approved_until: string;
  state: 'approved';
  approvers: string[];
  /**
   * Passkey confirmations of the approvals, when a step-up rule required them
   * (`src/approvals/inbox/passkeys.ts`): approver, credential id, user verified, the binding digest
   * signed as the challenge, rule, when. An extension field; ARAP clients that do not know it ignore it.
   */
  step_up?: Array<{
    approver: string;
    method: 'webauthn';
    credential_id: string;
    user_verified: true;
    challenge: string;
    rule: string;
    verified_at: string;
  }>;
}

/** ARAP Task Handle returned by submit (201 new, 200 idempotent replay). URLs are absolute. */
export interface WireTaskHandle {
  id: string;
  status: RequestStatus;
  status_endpoint: string;
  expires_at: string;
  links: { self: string; cancel: string };
}

/** ARAP Task Status body (`GET /access/v1/requests/:id`); `result` only when `approved`. */
export interface WireStatusBody {
  id: string;
  status: RequestStatus;
  expires_at: string;
  result?: { approval: WireApproval };
}

/** Body of every status-change callback POST (signed, see `src/backends/callback-signature.ts`). */
export interface WireCallbackBody {
  request_id: string;
  status: RequestStatus;
  generation: number;
}

/** What the presenters need from a stored request. */
export interface PresentableRequest {
  id: string;
  status: RequestStatus;
  expiresAtMs: number;
  approval: WireApproval | null;
}

/** Absolute URL of a request's status endpoint, `<base>/access/v1/requests/<id>`. */
export function requestUrl(publicBaseUrl: string, id: string): string {
  return `${publicBaseUrl}/access/v1/requests/${encodeURIComponent(id)}`;
}

/** Present a stored request as an ARAP Task Handle. */
export function toTaskHandle(record: PresentableRequest, publicBaseUrl: string): WireTaskHandle {
  const self = requestUrl(publicBaseUrl, record.id);
  return {
    id: record.id,
    status: record.status,
    status_endpoint: self,
    expires_at: new Date(record.expiresAtMs).toISOString(),
    links: { self, cancel: `${self}/cancel` },
  };
}

/** Present a stored request as an ARAP Task Status body. */
export function toStatusBody(record: PresentableRequest): WireStatusBody {
  const body: WireStatusBody = {
    id: record.id,
    status: record.status,
    expires_at: new Date(record.expiresAtMs).toISOString(),
  };
  if (record.status === 'approved' && record.approval !== null) body.result = { approval: record.approval };
  return body;
}
