/**
 * The grants routes of the approvals API (`../grants.ts`, docs/APPROVERS.md §Grants), mounted
 * under `/access/v1` by `arap-routes.ts`, for people only (HTTP Basic):
 * - `POST /grants` (`GrantCreateBodySchema`) → 201 the grant, with `approved_request` (the id of
 *   the pending request it was made from when the grant approved it, else null) | 400 invalid body
 *   (a reason of only invisible characters included), `group-required` or `grant-too-broad` (beyond the rules' bounds) | 403 `no-grant-right`,
 *   not in the group, or one's own grant | 404 `from_request` unknown
 * - `GET /grants?state=active|all` (default `active`) → `{items}`: grants of the caller's approver
 *   groups and those they created, newest first, each with its state, uses and the requests it approved
 * - `GET /grants/:id` → the grant | 404
 * - `POST /grants/:id/revoke` → 200 the revoked grant | 403 (neither its creator nor one with the
 *   right in its group) | 404 | 409 `already-revoked`
 * Every answer is problem+json on error; no argument value is echoed in a detail.
 */
import type { Context, Hono } from 'hono';
import { GrantCreateBodySchema } from '@countersign/arap';
import { problem } from '@countersign/http/problem';
import { createGrant, grantItem, grantVisibleTo, grantsVisibleTo, holdsGrantRight, type GrantRefusal } from '../grants.js';
import { randomId } from '../request-lifecycle.js';
import type { Grant, GrantChannel } from '../store/grants-store.js';
import type { ApprovalRules } from '../deciders/approval-rules.js';
import type { Approver } from './http-auth.js';
import type { BreakGlassRoutesDeps } from './break-glass-routes.js';

/** What {@link addGrantRoutes} needs of the approvals API: what the break-glass routes need (people only, HTTP Basic). */
export type GrantRoutesDeps = BreakGlassRoutesDeps;

/** The problem kind of each refusal of `createGrant`. */
const REFUSAL_KIND: Record<GrantRefusal, 'no-grant-right' | 'forbidden' | 'invalid-request' | 'not-found' | 'grant-too-broad'> = {
  'no-grant-right': 'no-grant-right',
  'not-in-group': 'forbidden',
  'own-grant': 'forbidden',
  'group-required': 'invalid-request',
  'request-not-found': 'not-found',
  'too-broad': 'grant-too-broad',
  'reason-required': 'invalid-request',
  unlimited: 'invalid-request',
};

/**
 * Whether `who` may revoke `g`: its creator, or one holding the grant right who is a member of its
 * approver group.
 */
export function mayRevokeGrant(who: Approver, g: Grant, rules: ApprovalRules): boolean {
  if (who.id.toLowerCase() === g.createdBy.toLowerCase()) return true;
  return who.groups.includes(g.approverGroup) && holdsGrantRight(rules.grants, who.id, who.groups);
}

/**
 * Create a grant as `who` through `via` from an unparsed body: the response of `POST /grants`
 * (shared by the API and the inbox's JSON form post).
 */
export async function createGrantResponse(
  deps: GrantRoutesDeps,
  c: Context,
  who: Approver,
  via: GrantChannel,
  value: unknown,
): Promise<Response> {
  const parsed = GrantCreateBodySchema.safeParse(value);
  if (!parsed.success) return problem('invalid-request', deps.describeIssues(parsed.error));
  const at = deps.now();
  const outcome = await createGrant(
    {
      store: deps.store,
      rule: deps.rules().grants,
      now: at,
      newId: () => randomId('grt_'),
      applyTo: (id, grant) => deps.lifecycle.applyGrant(id, grant),
    },
    who,
    via,
    parsed.data,
  );
  if (outcome.kind === 'refused') return problem(REFUSAL_KIND[outcome.reason], outcome.detail);
  return c.json(
    {
      ...(await grantItem((await deps.store.grants.get(outcome.grant.id)) ?? outcome.grant, deps.store, at)),
      approved_request: outcome.approved?.id ?? null,
    },
    201,
  );
}

/**
 * Revoke grant `id` as `who`: the revoked grant, or the problem response (404, 403, 409). Shared
 * by the API and the inbox.
 */
export async function revokeGrantOutcome(
  deps: Pick<GrantRoutesDeps, 'store' | 'rules' | 'now'>,
  who: Approver,
  id: string,
): Promise<{ ok: true; grant: Grant } | { ok: false; response: Response }> {
  const g = await deps.store.grants.get(id);
  if (g === undefined || !grantVisibleTo(who, g))
    return { ok: false, response: problem('not-found', 'No such grant in your approver groups.') };
  if (!mayRevokeGrant(who, g, deps.rules()))
    return {
      ok: false,
      response: problem('forbidden', 'Only its creator, or one with the grant right in its approver group, revokes a grant.'),
    };
  // revoke is a compare-and-set on "not yet revoked": of two revocations at once, one succeeds
  if (!(await deps.store.grants.revoke(id, who.id, deps.now())))
    return { ok: false, response: problem('already-revoked', `This grant was already revoked by ${g.revokedBy ?? 'someone'}.`) };
  return { ok: true, grant: (await deps.store.grants.get(id)) ?? g };
}

/** Add the grants routes to `app` (mounted at `/access/v1`). */
export function addGrantRoutes(app: Hono, deps: GrantRoutesDeps): void {
  const { store, now } = deps;

  app.post('/grants', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const json = await deps.readJson(c);
    if (!json.ok) return json.response;
    return createGrantResponse(deps, c, who, 'api', json.value);
  });

  app.get('/grants', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const state = c.req.query('state') ?? 'active';
    if (state !== 'active' && state !== 'all') return problem('invalid-request', 'state must be active or all.');
    const at = now();
    const items: Record<string, unknown>[] = [];
    for (const g of await grantsVisibleTo(who, store, state === 'active' ? at : undefined)) items.push(await grantItem(g, store, at));
    return c.json({ items }, 200);
  });

  app.get('/grants/:id', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const found = await store.grants.get(c.req.param('id'));
    const g = found !== undefined && grantVisibleTo(who, found) ? found : undefined;
    return g === undefined ? problem('not-found', 'No such grant in your approver groups.') : c.json(await grantItem(g, store, now()), 200);
  });

  app.post('/grants/:id/revoke', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const out = await revokeGrantOutcome(deps, who, c.req.param('id'));
    return out.ok ? c.json(await grantItem(out.grant, store, now()), 200) : out.response;
  });
}
