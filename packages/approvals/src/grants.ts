/**
 * Grants (docs/APPROVERS.md §Grants, docs/DESIGN.md §10): an approver with the right creates a
 * narrowly scoped, bounded permit — one principal, one tool, one approver group, argument
 * constraints (`@countersign/arap` `grants.ts`), at most `maxUses` uses and/or until a time — and
 * each later call the gate finds requestable is approved at submission by it while it holds.
 *
 * A grant is policy, not a reused approval (SEP-2848: "an approval is an input to a
 * new decision, not a standing grant"): every call is still evaluated fresh by the gate's Cedar
 * policy (a forbidden call never reaches the service; the grant cannot widen what policy allows),
 * the grant decides only among requestable calls, is bounded in count and time, revocable at once,
 * and every request it approves records which use of which grant it was (audit `grant-used`,
 * approval material and receipt `grant`). It is the counter-proposal permit's mechanism
 * (`narrowing-permits.ts`) in general form: the same approval at submission, inside the insert's
 * transaction (`store/store.ts` `insertWithPermit`), where a permit is exactly one call once.
 *
 * The rules file's `grants` option says who holds the right (`approvers` by id, `groups` by
 * approver group), the longest lifetime (`maxDurationMs`) and the most uses (`maxUses`). A creator
 * must also be one who could approve such a request (a member of the grant's approver group) and
 * never the grant's principal. A grant never applies where a quorum or step-up rule does.
 * Deliberately does not: let a delegate or a supervising agent create grants, or extend one.
 */
import {
  describeConstraints,
  GrantConstraintsSchema,
  unmetConstraint,
  type GrantConstraints,
  type GrantCreateBody,
  type WireGrantUse,
} from '@countersign/arap';
import { z } from 'zod';
import type { Approver } from './api/http-auth.js';
import { holdsRole, saysSomething } from './break-glass.js';
import { principalNames } from './principal-names.js';
import type { AccessRequestRecord, ApprovalStore } from './store/store.js';
import { grantState, type Grant, type GrantChannel, type GrantUse } from './store/grants-store.js';

/** Rule id the audit trail records on an approval a grant made. */
export const GRANT_RULE = 'grant';

/** The rules file's `grants` option (times ms). */
export const GrantRuleSchema = z
  .object({
    /** Approver ids who may create grants. */
    approvers: z.array(z.string().min(1)).optional(),
    /** Approver groups whose members may create grants. */
    groups: z.array(z.string().min(1)).optional(),
    /** The longest a grant may hold, ms; default 24 h, 1 min to 30 days. A grant with a count only holds this long. */
    maxDurationMs: z
      .int()
      .min(60_000)
      .max(30 * 86_400_000)
      .default(86_400_000),
    /** The most uses a grant may allow; default 100, 1 to 10,000. */
    maxUses: z.int().min(1).max(10_000).default(100),
  })
  .strict()
  .refine((r) => (r.approvers?.length ?? 0) + (r.groups?.length ?? 0) > 0, {
    message: 'grants needs at least one entry in approvers or groups (who may create them)',
  });
/** The validated option. */
export type GrantRule = z.infer<typeof GrantRuleSchema>;

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** Whether approver `id` with groups `groups` may create grants under `rule` (nobody without a rule). */
export function holdsGrantRight(rule: GrantRule | undefined, id: string, groups: readonly string[]): boolean {
  return holdsRole(rule, id, groups);
}

/** Why a grant is refused. */
export type GrantRefusal =
  /** The creator does not hold the right under the rules' `grants` option. */
  | 'no-grant-right'
  /** The creator is not a member of the grant's approver group. */
  | 'not-in-group'
  /** The creator is the grant's principal. */
  | 'own-grant'
  /** The approver group is not given and the creator has more than one. */
  | 'group-required'
  /** `from_request` names no request the creator may see. */
  | 'request-not-found'
  /** `max_uses` or `duration_ms` above the rules' maximum. */
  | 'too-broad'
  /** No limit on the arguments without `any_arguments: true`, or limits with it, or a request whose arguments cannot all be limited. */
  | 'unlimited'
  /** The reason shows nothing a reader can see (only spaces, zero-width or other invisible characters: `saysSomething`). */
  | 'reason-required';

/** Outcome of {@link createGrant}: the grant (and, when made from a pending request it met, that request approved by it). */
export type CreateGrantOutcome =
  { kind: 'created'; grant: Grant; approved: AccessRequestRecord | null } | { kind: 'refused'; reason: GrantRefusal; detail: string };

/** What {@link createGrant} needs. */
export interface CreateGrantDeps {
  store: ApprovalStore;
  rule: GrantRule | undefined;
  now: number;
  newId: () => string;
  /** Approve pending request `id` by grant `grant` if it meets it (the lifecycle's `applyGrant`); returns the approved record or null. */
  applyTo: (id: string, grant: Grant) => Promise<AccessRequestRecord | null>;
}

/**
 * Create a grant by `creator` through `via` from `body` (`GrantCreateBodySchema`): checks that the
 * reason says something a reader can see (the schema only trims white space, so a reason of
 * zero-width characters passes it), the right, the group, four-eyes and the rules' bounds, records
 * it, and — when made from a pending request that meets it — approves that request by it (its
 * first use). Shared by the API and the inbox.
 */
export async function createGrant(
  deps: CreateGrantDeps,
  creator: Approver,
  via: GrantChannel,
  body: GrantCreateBody,
): Promise<CreateGrantOutcome> {
  const refuse = (reason: GrantRefusal, detail: string): CreateGrantOutcome => ({ kind: 'refused', reason, detail });
  if (!saysSomething(body.reason))
    return refuse(
      'reason-required',
      'A grant needs a reason a reader can see: letters or digits, not only spaces or invisible characters.',
    );
  const rule = deps.rule;
  if (rule === undefined || !holdsGrantRight(rule, creator.id, creator.groups))
    return refuse(
      'no-grant-right',
      'You may not create grants: the rules file does not give you that right (grants.approvers or grants.groups).',
    );
  const from = body.from_request === undefined ? undefined : await deps.store.get(body.from_request);
  if (body.from_request !== undefined && (from === undefined || !creator.groups.includes(from.body.approver_group)))
    return refuse('request-not-found', 'No such access request in your approver groups.');
  if (from !== undefined && principalNames(from.body.subject).has(creator.id.toLowerCase()))
    return refuse('own-grant', 'A grant is for someone else: this request was made by you or through you (its act chain names you).');
  const group = body.approver_group ?? from?.body.approver_group ?? (creator.groups.length === 1 ? creator.groups[0] : undefined);
  if (group === undefined)
    return refuse('group-required', 'Say which approver group the grant is for (approver_group): you are in several.');
  if (!creator.groups.includes(group)) return refuse('not-in-group', `You are not a member of approver group ${group}.`);
  const principal = body.principal ?? from?.body.subject.sub ?? '';
  const tool = body.tool ?? from?.body.resource.id ?? '';
  if (same(principal, creator.id)) return refuse('own-grant', 'A grant is for someone else: you cannot grant yourself.');
  if (body.max_uses !== undefined && body.max_uses > rule.maxUses)
    return refuse('too-broad', `max_uses is at most ${rule.maxUses} under the rules.`);
  const constraints = argumentLimits(body, from);
  if (typeof constraints === 'string') return refuse('unlimited', constraints);
  if (body.duration_ms !== undefined && body.duration_ms > rule.maxDurationMs)
    return refuse('too-broad', `duration_ms is at most ${rule.maxDurationMs} (ms) under the rules.`);
  // bound to the requester's issuer: as given, else the request's when the grant is for its requester
  const principalIssuer =
    body.principal_issuer ?? (from !== undefined && from.body.subject.sub === principal ? from.body.subject.iss : null);
  const grant = await deps.store.grants.create({
    id: deps.newId(),
    principal,
    principalIssuer,
    tool,
    approverGroup: group,
    constraints,
    maxUses: body.max_uses ?? null,
    createdBy: creator.id,
    via,
    reason: body.reason,
    fromRequest: from?.id ?? null,
    createdAtMs: deps.now,
    expiresAtMs: deps.now + (body.duration_ms ?? rule.maxDurationMs),
  });
  if (from !== undefined) {
    await deps.store.appendAudit(from.id, 'granted', creator.id, deps.now, {
      comment: `grant ${grant.id}: ${grantSummary(grant)}`,
      via,
      rule: GRANT_RULE,
    });
  }
  const approved = from !== undefined && from.status === 'pending' ? await deps.applyTo(from.id, grant) : null;
  return { kind: 'created', grant: (await deps.store.grants.get(grant.id)) ?? grant, approved };
}

/**
 * The argument limits of a new grant: `body.constraints`; absent with a request, `eq` on each of its
 * arguments (that call exactly); none only with `any_arguments: true`. Returns the refusal's message
 * for a grant without limits that does not say `any_arguments`, limits together with
 * `any_arguments`, or a request whose arguments cannot all be limited (`GrantConstraintsSchema`).
 */
function argumentLimits(body: GrantCreateBody, from: AccessRequestRecord | undefined): GrantConstraints | string {
  if (body.any_arguments === true)
    return body.constraints === undefined || Object.keys(body.constraints).length === 0
      ? {}
      : 'any_arguments and constraints exclude each other: give one.';
  let limits = body.constraints;
  if (limits === undefined && from !== undefined) {
    const exactly = GrantConstraintsSchema.safeParse(
      Object.fromEntries(Object.entries(from.body.context.arguments).map(([k, value]) => [k, { eq: value }])),
    );
    if (!exactly.success)
      return `The request's arguments cannot all be limited exactly (${exactly.error.issues.map((i) => i.message).join('; ')}): give constraints.`;
    limits = exactly.data;
  }
  if (limits === undefined || Object.keys(limits).length === 0)
    return 'A grant with no limit on the arguments approves any arguments: give constraints (from a request, leave them out to limit each argument to its value), or say any_arguments: true.';
  return limits;
}

/**
 * Whether `record`'s call meets `grant`: principal (and its issuer, when the grant names one), tool,
 * group and every argument constraint (not its count or time), and four-eyes: the grant's creator is none of the call's requesters (its
 * `subject.sub` or any actor of its `act` chain, case-insensitively), as a direct approval by the
 * creator would be refused `own-request`.
 */
export function grantCovers(grant: Grant, record: Pick<AccessRequestRecord, 'body'>): boolean {
  const b = record.body;
  return (
    b.subject.sub === grant.principal &&
    (grant.principalIssuer === null || b.subject.iss === grant.principalIssuer) &&
    !principalNames(b.subject).has(grant.createdBy.toLowerCase()) &&
    b.resource.id === grant.tool &&
    b.approver_group === grant.approverGroup &&
    unmetConstraint(grant.constraints, b.context.arguments) === null
  );
}

/** A grant in words: `alice · wire_transfer · amount at most 30000; to = "acct-991" · 3 uses · until …`. */
export function grantSummary(g: Grant): string {
  const count = g.maxUses === null ? 'no count limit' : `${g.maxUses} use${g.maxUses === 1 ? '' : 's'}`;
  return `${g.principal} · ${g.tool} · ${describeConstraints(g.constraints)} · ${count} · until ${new Date(g.expiresAtMs).toISOString()}`;
}

/** The grant use as approval material, status and receipts carry it (`WireGrantUseSchema`). */
export function grantUseWire(grant: Grant, use: GrantUse): WireGrantUse {
  return {
    id: grant.id,
    created_by: grant.createdBy,
    use: use.use,
    max_uses: grant.maxUses,
    expires_at: new Date(grant.expiresAtMs).toISOString(),
  };
}

/** JSON view of a grant for the API and CLI (times ISO 8601), with its state and uses at `nowMs`. */
export async function grantItem(g: Grant, store: ApprovalStore, nowMs: number): Promise<Record<string, unknown>> {
  const iso = (ms: number) => new Date(ms).toISOString();
  const uses = await store.grants.uses(g.id);
  return {
    id: g.id,
    state: grantState(g, nowMs),
    principal: g.principal,
    principal_issuer: g.principalIssuer,
    tool: g.tool,
    approver_group: g.approverGroup,
    constraints: g.constraints,
    constraints_text: describeConstraints(g.constraints),
    max_uses: g.maxUses,
    uses: g.uses,
    expires_at: iso(g.expiresAtMs),
    created_by: g.createdBy,
    created_at: iso(g.createdAtMs),
    via: g.via,
    reason: g.reason,
    from_request: g.fromRequest,
    revoked_at: g.revokedAtMs === null ? null : iso(g.revokedAtMs),
    revoked_by: g.revokedBy,
    used_by: uses.map((u) => ({ request_id: u.requestId, use: u.use, at: iso(u.atMs) })),
  };
}

/** Whether `who` may see grant `g`: one of their approver groups', or one they created. */
export function grantVisibleTo(who: Approver, g: Grant): boolean {
  return who.groups.includes(g.approverGroup) || same(g.createdBy, who.id);
}

/** Grants `who` may see ({@link grantVisibleTo}), newest first, the 200 newest (usable at `activeAt` when given). */
export function grantsVisibleTo(who: Approver, store: ApprovalStore, activeAt?: number): Promise<Grant[]> {
  return store.grants.list({ groups: who.groups, createdBy: who.id, ...(activeAt === undefined ? {} : { activeAt }) });
}
