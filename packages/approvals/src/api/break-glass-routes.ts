/**
 * The break-glass routes of the approvals API (`../break-glass.ts`, docs/APPROVERS.md
 * §Break-glass), mounted under `/access/v1` by `arap-routes.ts`, for people only (HTTP Basic):
 * - `GET /break-glass/session` → the caller's active session `{id, reason, opened_at, until}` | 404
 * - `DELETE /break-glass/session` → end it early: 200 the ended session | 404 none active
 * - `GET /break-glass/reviews?state=unreviewed|all` (default `unreviewed`) → `{items, unreviewed,
 *   overdue}`: the break-glass approvals the caller may review or made, oldest first
 * - `POST /break-glass/reviews/:id` `{comment}` → 200 the reviewed item | 400 no comment | 403 the
 *   one who broke glass or not a reviewer | 404 no break-glass approval | 409 already reviewed
 * Break-glass approving itself is `POST /requests/:id/decision` with `break_glass: {reason}`.
 */
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { problem } from '@countersign/http/problem';
import { mayReviewBreakGlass, MAX_BREAK_GLASS_TEXT } from '../break-glass.js';
import type { RequestLifecycle } from '../request-lifecycle.js';
import type { BreakGlassSession, BreakGlassUse } from '../store/break-glass-store.js';
import type { ApprovalStore } from '../store/store.js';
import type { ApprovalRules } from '../deciders/approval-rules.js';
import type { Approver } from './http-auth.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** JSON view of a session (times ISO 8601). */
export function breakGlassSessionItem(s: BreakGlassSession): Record<string, unknown> {
  return { id: s.id, approver: s.approver, reason: s.reason, opened_at: iso(s.openedAtMs), until: iso(s.endedAtMs ?? s.untilMs) };
}

/**
 * JSON view of a break-glass approval for reviewers: the request (id, tool, requester, group), who
 * broke glass and why, when, the approvers skipped, the review due time and whether it is overdue
 * at `nowMs`, and the review (null until reviewed).
 */
export async function breakGlassItem(use: BreakGlassUse, store: ApprovalStore, nowMs: number): Promise<Record<string, unknown>> {
  const r = await store.get(use.requestId);
  return {
    request_id: use.requestId,
    tool: r?.body.resource.id ?? null,
    requester: r?.body.subject.sub ?? null,
    approver_group: r?.body.approver_group ?? null,
    by: use.approver,
    reason: use.reason,
    at: iso(use.atMs),
    skipped: use.skipped,
    review_due_at: iso(use.reviewDueMs),
    overdue: use.reviewedAtMs === null && nowMs >= use.reviewDueMs,
    review: use.reviewedAtMs === null ? null : { by: use.reviewedBy, at: iso(use.reviewedAtMs), comment: use.reviewComment },
  };
}

/**
 * The break-glass approvals `who` may see on the review list: those they may review (by the rules'
 * `reviewers`, `reviewerGroups`, else the request's group) and those they made; oldest first.
 */
export async function reviewableBy(
  who: Approver,
  store: ApprovalStore,
  rules: ApprovalRules,
  unreviewed: boolean,
): Promise<BreakGlassUse[]> {
  const visible: BreakGlassUse[] = [];
  for (const u of await store.breakGlass.list({ unreviewed })) {
    const group = (await store.get(u.requestId))?.body.approver_group ?? '';
    if (u.approver.toLowerCase() === who.id.toLowerCase() || mayReviewBreakGlass(rules.breakGlass, who.id, who.groups, u.approver, group))
      visible.push(u);
  }
  return visible;
}

const ReviewBodySchema = z.object({ comment: z.string().max(MAX_BREAK_GLASS_TEXT) }).strict();

/** What {@link addBreakGlassRoutes} needs of the approvals API. */
export interface BreakGlassRoutesDeps {
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  rules: () => ApprovalRules;
  now: () => number;
  /** The configured person behind the request's HTTP Basic credentials, or the problem response (401, or 403 for an agent). */
  person: (c: Context) => Approver | Response;
  /** The JSON body or the problem response (`arap-routes.ts` `readJson`). */
  readJson: (c: Context) => Promise<{ ok: true; value: unknown } | { ok: false; response: Response }>;
  /** zod issues as a problem detail. */
  describeIssues: (error: z.ZodError) => string;
}

/** Add the break-glass routes to `app` (mounted at `/access/v1`). */
export function addBreakGlassRoutes(app: Hono, deps: BreakGlassRoutesDeps): void {
  const { store, now } = deps;

  app.get('/break-glass/session', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const s = await store.breakGlass.active(who.id, now());
    return s === undefined ? problem('not-found', 'You have no active break-glass session.') : c.json(breakGlassSessionItem(s), 200);
  });

  app.delete('/break-glass/session', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const s = await store.breakGlass.end(who.id, now());
    return s === undefined ? problem('not-found', 'You have no active break-glass session.') : c.json(breakGlassSessionItem(s), 200);
  });

  app.get('/break-glass/reviews', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const state = c.req.query('state') ?? 'unreviewed';
    if (state !== 'unreviewed' && state !== 'all') return problem('invalid-request', 'state must be unreviewed or all.');
    const at = now();
    const items: Record<string, unknown>[] = [];
    for (const u of await reviewableBy(who, store, deps.rules(), state === 'unreviewed')) items.push(await breakGlassItem(u, store, at));
    return c.json(
      { items, unreviewed: items.filter((i) => i['review'] === null).length, overdue: items.filter((i) => i['overdue']).length },
      200,
    );
  });

  app.post('/break-glass/reviews/:id', async (c) => {
    const who = deps.person(c);
    if (who instanceof Response) return who;
    const json = await deps.readJson(c);
    if (!json.ok) return json.response;
    const parsed = ReviewBodySchema.safeParse(json.value);
    if (!parsed.success) return problem('invalid-request', deps.describeIssues(parsed.error));
    const outcome = await deps.lifecycle.reviewBreakGlass(c.req.param('id'), who, parsed.data.comment, 'api');
    switch (outcome.kind) {
      case 'reviewed':
        return c.json(await breakGlassItem(outcome.use, store, now()), 200);
      case 'not-found':
        return problem('not-found', 'No break-glass approval of this request.');
      case 'comment-required':
        return problem('invalid-request', 'A review needs a comment: say what you checked.');
      case 'already-reviewed':
        return problem('not-pending', `This break-glass approval was already reviewed by ${outcome.use.reviewedBy ?? 'someone'}.`);
      case 'forbidden':
        return problem(
          'forbidden',
          outcome.reason === 'own-break-glass'
            ? 'You broke glass on this request (or requested it): someone else must review it.'
            : 'You are not a reviewer of this break-glass approval.',
        );
    }
  });
}
