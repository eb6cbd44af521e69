/**
 * Counter-proposals that narrow, the approval service's half (docs/APPROVERS.md §Narrowing a
 * request, docs/DESIGN.md §9): what an approver's proposal is checked against, the digest a permit
 * is keyed by, and how a permit reads on the wire and in the trail.
 *
 * A proposal never changes the request it answers (SEP-2848 §The task handle is not authority):
 * that request ends denied, and the proposal is recorded as a single-use, short-lived permit for
 * exactly the narrower call by the same principal. When the client makes that call, the gate
 * submits a new request, and the service approves it at submission by consuming the permit
 * (`request-lifecycle.ts`), unless a quorum or step-up rule applies to it.
 *
 * Deliberately does not: evaluate policy (the narrower call is evaluated fresh by the gate), or
 * narrow a field hidden from approvers (the service holds only its digest).
 */
import { checkNarrowing, pointerTokens, type AccessRequestBody, type WireCounterProposal } from '@countersign/arap';
import { canonicalHash } from './request-lifecycle.js';
import type { NarrowingPermit } from './store/store.js';

/** Default lifetime of a permit, ms (15 minutes): how long the client has to make the narrower call. */
export const DEFAULT_PERMIT_TTL_MS = 15 * 60_000;

/** Rule id the audit trail records on a narrowing and on the approval a permit makes. */
export const COUNTER_PROPOSAL_RULE = 'counter-proposal';

/**
 * The digest a permit is keyed by: SHA-256 of the JCS of `{tool, arguments, principal, resource}`
 * — the gate's call-binding formula (`src/binding/call-binding.ts`) over the arguments as the
 * service holds them (`context.arguments`, a hidden field as its `sha256:` digest) and the request's
 * `subject` as principal. Equal to the gate's binding digest when no argument is hidden; in every
 * case equal for two requests exactly when their tool, arguments and principal are.
 */
export function permitDigest(tool: string, args: Record<string, unknown>, subject: AccessRequestBody['subject']): string {
  return canonicalHash({ tool, arguments: args, principal: subject, resource: { type: 'tool', id: tool } });
}

/** The digest of a stored request's own call ({@link permitDigest} of its tool, arguments and subject). */
export function requestPermitDigest(body: AccessRequestBody): string {
  return permitDigest(body.resource.id, body.context.arguments, body.subject);
}

/** Why a proposal is refused, naming the field at fault (null: the proposal as a whole). */
export interface ProposalRefusal {
  field: string | null;
  message: string;
}

/**
 * Check `proposed` (the complete arguments of the narrower call) against the request: its
 * `context.narrowable` spec (`checkNarrowing`), and no changed field may hold a hidden value (a
 * `context.redacted` pointer at or below it). Returns the changed fields, or the refusal (never
 * quoting a value).
 */
export function checkProposal(
  body: AccessRequestBody,
  proposed: Record<string, unknown>,
): { ok: true; changed: string[] } | ({ ok: false } & ProposalRefusal) {
  const spec = body.context.narrowable ?? {};
  const check = checkNarrowing(body.context.arguments, proposed, spec);
  if (!check.ok) return { ok: false, field: check.field, message: check.message };
  const hidden = new Set((body.context.redacted ?? []).map((p) => pointerTokens(p)[0]));
  const masked = check.changed.find((f) => hidden.has(f));
  if (masked !== undefined) {
    return { ok: false, field: masked, message: `"${masked}" is hidden from approvers, so it cannot be narrowed` };
  }
  return check;
}

/** A permit as the status body's `counter_proposal` (`CounterProposalSchema`). */
export function counterProposalOf(permit: NarrowingPermit): WireCounterProposal {
  return { tool: permit.tool, arguments: permit.arguments, expires_at: new Date(permit.expiresAtMs).toISOString() };
}

/** The `narrowed` audit comment: which fields changed and until when the permit holds (no value quoted). */
export function narrowedComment(changed: readonly string[], expiresAtMs: number, note?: string): string {
  const head = `counter-proposal narrowing ${changed.join(', ')}; permit until ${new Date(expiresAtMs).toISOString()}`;
  return note === undefined ? head : `${head} — ${note}`;
}
