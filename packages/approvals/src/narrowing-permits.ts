/**
 * Counter-proposals that narrow, the approval service's half (docs/APPROVERS.md §Narrowing a
 * request, docs/DESIGN.md §9): what an approver's proposal is checked against, the digest a permit
 * records, when a new request is exactly a permit's call (`permitMatches`), and how a permit reads
 * on the wire and in the trail.
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
import { checkNarrowing, pointerTokens, redactArguments, type AccessRequestBody, type WireCounterProposal } from '@countersign/arap';
import { canonicalHash } from './request-lifecycle.js';
import type { NarrowingPermit } from './store/store.js';

/** Default lifetime of a permit, ms (15 minutes): how long the client has to make the narrower call. */
export const DEFAULT_PERMIT_TTL_MS = 15 * 60_000;

/** Rule id the audit trail records on a narrowing and on the approval a permit makes. */
export const COUNTER_PROPOSAL_RULE = 'counter-proposal';

/**
 * The digest of a call as the service holds it: SHA-256 of the JCS of `{tool, arguments,
 * principal, resource}` — the gate's call-binding formula (`src/binding/call-binding.ts`) over
 * `args` (a hidden field as its `sha256:` digest) and the request's `subject` as principal — plus
 * `hidden`, the pointers of the fields held as digests (`context.redacted`), when there are any.
 * Equal to the gate's binding digest when no argument is hidden. Naming the hidden fields keeps a
 * hidden value apart from a shown literal string that happens to read `sha256:<its digest>`.
 */
export function permitDigest(
  tool: string,
  args: Record<string, unknown>,
  subject: AccessRequestBody['subject'],
  hidden: readonly string[] = [],
): string {
  const call = { tool, arguments: args, principal: subject, resource: { type: 'tool', id: tool } };
  return canonicalHash(hidden.length === 0 ? call : { ...call, hidden: [...new Set(hidden)].sort() });
}

/** `pointer` equals `other` or names a field inside it. */
const atOrBelow = (pointer: string, other: string): boolean => pointer === other || pointer.startsWith(`${other}/`);

/**
 * `args` (held with the fields at `own` as digests) with the fields at `more` also as digests, the
 * way the gate masks them (`redactArguments`, SHA-256 of the JCS form), so that two holdings of
 * one call with different hidden fields compare. A pointer at or inside a field already hidden is
 * covered by it; null when a field to hide holds a hidden field inside it (its real value, whose
 * digest it would take, is not held).
 */
function hideMore(args: Record<string, unknown>, own: readonly string[], more: readonly string[]): Record<string, unknown> | null {
  const extra = more.filter((p) => !own.some((o) => atOrBelow(p, o)));
  if (extra.some((p) => own.some((o) => atOrBelow(o, p)))) return null;
  return redactArguments(args, extra, canonicalHash).arguments;
}

/**
 * Whether `request` (a new request as submitted) is exactly the narrower call of a permit: its
 * `permitArguments` (as the service held them, hidden as on `proposedOn`, the request the permit
 * was proposed on) for the same tool and principal. The two may hide different fields — the
 * narrower call can fall under a rule that hides more, less or nothing: each side's shown value of
 * a field the other hides is replaced by its digest, and the calls match when the results are
 * equal, i.e. when the real values are (SHA-256). A shown string that reads like a digest is
 * digested like any value, so it never stands for a hidden one. Not comparable, so not a match: a
 * field hidden whole on one side and only in part on the other.
 */
export function permitMatches(
  permitArguments: Record<string, unknown>,
  proposedOn: AccessRequestBody,
  request: AccessRequestBody,
): boolean {
  const tool = proposedOn.resource.id;
  if (request.resource.id !== tool) return false;
  const held = proposedOn.context.redacted ?? [];
  const hidden = request.context.redacted ?? [];
  const offered = hideMore(permitArguments, held, hidden);
  const made = hideMore(request.context.arguments, hidden, held);
  if (offered === null || made === null) return false;
  const both = [...held, ...hidden];
  return permitDigest(tool, offered, proposedOn.subject, both) === permitDigest(tool, made, request.subject, both);
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
