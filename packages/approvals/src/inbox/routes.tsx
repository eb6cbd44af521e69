/**
 * The approver inbox at `/approver` (server-rendered hono/jsx, no build step):
 *
 * - `GET /login`, `POST /login` (id + password → session cookie, see `session.ts`), `POST /logout`;
 *   with OIDC configured (`oidc-sessions.ts`) instead `GET /login` starts the IdP flow and
 *   `GET /callback` finishes it, and `POST /login` is gone
 * - `GET /` the queue (`?tool=&requester=` filters; {@link INBOX_PAGE_SIZE} rows a page, `?after=` /
 *   `?before=` keyset cursors of `../api/page-cursor.ts` for the next and previous page), `GET /history`, `GET /requests/:id`
 * - `POST /requests/:id/decision` (`decision=approve|deny`, `comment`, `csrf`) → 303 back to the
 *   request page with `?flash=<kind>`
 * - `GET /batch?ids=…` the preflight of a batch decision, `POST /batch` (`ids`, `decision`, `comment`,
 *   `csrf`) decides each request on its own and shows a per-request result
 * - `GET /delegations`, `POST /delegations` (`to`, `until` ISO 8601), `POST /delegations/:id/revoke`;
 *   a request that only a delegation lets this approver decide is decided for the delegator
 *   (`on_behalf_of` in the decision form, see `../delegation.ts`)
 * - `GET /passkeys`, `GET /passkeys/registration-options`, `POST /passkeys` (JSON `{csrf, response}`),
 *   `GET /requests/:id/step-up-options`: passkey registration and the step-up assertion a step-up
 *   rule requires to approve (the decision form then carries `webauthn`, see `passkeys.ts`)
 * - `GET /analytics?days=N` approval analytics for the leads the rules file names (`../analytics.ts`,
 *   `./analytics-view.tsx`; 403 for anyone else, 400 for `days` outside 1–365)
 * - `GET /live` → `{mark}`, the store's change mark (the page script polls it)
 * - `GET /assets/inbox.css|inbox.js`
 *
 * Every POST passes hono's `csrf()` origin / `Sec-Fetch-Site` check (403 otherwise), and every
 * POST but the sign-in also needs the session's CSRF token (403 without it). Pages without a
 * session redirect (303) to the sign-in page. A strict CSP allows only this origin's script and
 * stylesheet.
 *
 * Hostile input: every body is bounded before it is read ({@link INBOX_LOGIN_BODY_BYTES} for the
 * sign-in form, {@link INBOX_FORM_BODY_BYTES} elsewhere; 413); a form that cannot be parsed (a
 * `multipart/form-data` type over a body that is not, a truncated body) is 400, and so is a form
 * that sends a single-valued field more than once (only the batch's `ids` may repeat), before
 * anything changes (`./form-fields.ts`). The inbox's own
 * refusals are HTML pages (`ErrorPage`, never plain text) since a browser shows them; `GET /live`,
 * read by script, answers 401 problem+json; unknown paths and hono middleware refusals (`csrf()`)
 * reach the service's problem+json handlers (`packages/http/src/error-handlers.ts`).
 *
 * Deliberately does not: accept HTTP Basic (scripts use `/access/v1`), or paginate the history (its newest 100 rows).
 */
import type { Child } from 'hono/jsx';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { csrf } from 'hono/csrf';
import { problem } from '@countersign/http/problem';
import type { Decider } from '../deciders/decider.js';
import { personDecider } from '../deciders/decider.js';
import { INBOX_CSS, INBOX_JS } from './assets.js';
import { readFormFields, repeatedFieldMessage, type FormValue } from './form-fields.js';
import { visible } from './format.js';
import { ErrorPage, Flash, Frame, LoginPage } from './layout.js';
import { HistoryView, QueueView, type ListFilters, type QueuePaging } from './lists.js';
import { decodePageCursor, encodePageCursor } from '../api/page-cursor.js';
import { RequestView, REFUSAL_TEXT } from './request-page.js';
import { proposalFromForm } from './narrow-form.js';
import { CONFIRM_UNFOLLOWED_FIELD } from './followers-view.js';
import { BREAK_GLASS_REASON_FIELD, ReviewsView, type ReviewRow } from './break-glass-view.js';
import { holdsBreakGlassRole } from '../break-glass.js';
import { GrantCreateBodySchema } from '@countersign/arap';
import { createGrant, grantsVisibleTo, holdsGrantRight } from '../grants.js';
import { mayRevokeGrant, revokeGrantOutcome } from '../api/grant-routes.js';
import { constraintsFromForm, GrantsView, type GrantRow } from './grants-view.js';
import { analyticsGroupsOf, analyticsReport, analyticsRuleOf, mayViewAnalytics } from '../analytics.js';
import { AnalyticsView } from './analytics-view.js';
import { reviewableBy } from '../api/break-glass-routes.js';
import { DEFAULT_APPROVAL_RULES, type ApprovalRules } from '../deciders/approval-rules.js';
import {
  BatchPreflightView,
  BatchResultView,
  DelegationsView,
  PasskeysView,
  type BatchResult,
  type BatchRow,
} from './batch-and-delegation-pages.js';
import { DelegationBodySchema } from '@countersign/arap';
import type { Approver } from '../api/http-auth.js';
import { createDelegation, delegatedDecider } from '../delegation.js';
import { webauthnBrowserScript, type Passkeys } from './passkeys.js';
import type { StepUpProof } from '../store/store.js';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import type { DecideRefusal } from '../request-lifecycle.js';
import type { RequestLifecycle } from '../request-lifecycle.js';
import { randomId } from '../request-lifecycle.js';
import type { OidcSessionManager } from './oidc-sessions.js';
import type { InboxSession, SessionManager } from './session.js';
import type { SignInThrottle } from './sign-in-throttle.js';
import { clientAddress } from '@countersign/http/client-address';
import type { AccessRequestRecord, ApprovalStore, PendingKey, RequestFilter } from '../store/store.js';

/** Dependencies of {@link createInboxRoutes}. */
export interface InboxDeps {
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  sessions: SessionManager;
  /** Present when sign-in goes through an OIDC provider (then also `sessions`). */
  oidc?: OidcSessionManager;
  /** Clock, ms since epoch. */
  now: () => number;
  /** Back-off for failed password sign-ins. */
  throttle: SignInThrottle;
  /** Proxies whose `X-Forwarded-For` names the client (`COUNTERSIGN_TRUSTED_PROXIES`); default none. */
  trustedProxies?: readonly string[];
  /** Configured approvers (delegation targets and delegators); default none: delegation is off. */
  approvers?: readonly Approver[];
  /** Passkey registration and step-up (`passkeys.ts`); absent: step-up requests cannot be approved here. */
  passkeys?: Passkeys;
  /** The operator's rules in force (the break-glass role and reviewers); default the built-in ones. */
  rules?: () => ApprovalRules;
}

/** Most requests one batch decision takes. */
export const INBOX_BATCH_MAX = 50;

/** Flash messages after a decision (`?flash=<kind>`); `ok` selects the colour. */
export const INBOX_FLASH = {
  approved: { text: 'Approved. The requester’s tool call will now run.', ok: true },
  recorded: { text: 'Your approval is recorded. Another approver must approve before it takes effect.', ok: true },
  denied: { text: 'Denied.', ok: true },
  'break-glass-limit': {
    text: 'Not approved: you have opened as many break-glass sessions as the rules allow in 24 hours. Another approver must decide it.',
    ok: false,
  },
  'break-glass-reason': { text: 'Not approved: breaking glass needs a reason.', ok: false },
  reviewed: { text: 'Marked reviewed. Thank you.', ok: true },
  'review-comment': { text: 'Not reviewed: say what you checked.', ok: false },
  'already-reviewed': { text: 'Someone already reviewed this break-glass approval.', ok: false },
  'review-refused': { text: 'Not reviewed: you broke glass on it, or you are not one of its reviewers.', ok: false },
  'not-pending': { text: 'Not decided: the request is no longer pending.', ok: false },
  forbidden: { text: 'Not decided: you may not decide this request.', ok: false },
  invalid: { text: 'Not decided: the form was invalid; try again.', ok: false },
  delegated: { text: 'Delegated.', ok: true },
  revoked: { text: 'Delegation revoked.', ok: true },
  'step-up-failed': { text: 'Not approved: the passkey confirmation did not verify.', ok: false },
  unfollowed: {
    text: 'Not approved: nobody is following this request. Tick the confirmation below the comment to approve anyway.',
    ok: false,
  },
  narrowed: {
    text: 'Proposed. The request is denied, and the agent is told the narrower call you would accept; if it makes that call in time, it runs once.',
    ok: true,
  },
  'not-narrowable': { text: 'Not proposed: the policy marks no field of this request narrowable.', ok: false },
  'passkey-added': { text: 'Passkey registered.', ok: true },
  'passkey-refused': { text: 'The passkey was not registered: it did not verify (it must confirm it is you).', ok: false },
  granted: { text: 'Granted. Calls inside it are approved by it until it is used up, expires or is revoked.', ok: true },
  'granted-approved': { text: 'Granted, and the request you made it from is approved by it (its first use).', ok: true },
  'grant-revoked': { text: 'Grant revoked: the next call waits for an approver.', ok: true },
  'grant-not-revoked': { text: 'Not revoked: it was already revoked, or you may not revoke it.', ok: false },
  'delegation-refused': {
    text: 'Not delegated: choose a colleague and a time in the future, at most 90 days ahead (ISO 8601).',
    ok: false,
  },
} as const;
type FlashKind = keyof typeof INBOX_FLASH;

const CSP =
  "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Env = { Variables: { session: InboxSession; decider: Decider } };

/** Queue rows per page. */
export const INBOX_PAGE_SIZE = 50;

/** Largest accepted body of the sign-in form, bytes (id and password, URL-encoded). */
export const INBOX_LOGIN_BODY_BYTES = 4 * 1024;
/** Largest accepted body of every other inbox request, bytes (a decision's comment is at most 1,000 characters). */
export const INBOX_FORM_BODY_BYTES = 16 * 1024;

/** An HTML error page with `status`. */
function errorPage(c: Context, status: 400 | 401 | 403 | 404 | 413 | 429, title: string, message: string): Response | Promise<Response> {
  return c.html(<ErrorPage title={title} message={message} />, status);
}

/**
 * The single-valued form fields, or the 400 page to answer: the body cannot be parsed as the form
 * its content type names, or a field was sent more than once (`./form-fields.ts`).
 */
async function readForm(c: Context): Promise<Record<string, FormValue | undefined> | Response> {
  const read = await readFormFields(c);
  if (read.kind === 'unreadable') return unreadableForm(c);
  if (read.kind === 'repeated') return repeatedField(c, read.field);
  return read.fields;
}

const unreadableForm = (c: Context) => errorPage(c, 400, 'Bad request', 'The form could not be read. Go back and try again.');
const repeatedField = (c: Context, field: string) => errorPage(c, 400, 'Bad request', repeatedFieldMessage(field));

function flashOf(c: Context): Child | undefined {
  const kind = c.req.query('flash');
  if (kind === undefined || !(kind in INBOX_FLASH)) return undefined;
  const f = INBOX_FLASH[kind as FlashKind];
  return <Flash text={f.text} ok={f.ok} />;
}

function filtersOf(c: Context, facets: { tools: string[]; requesters: string[] }): ListFilters {
  const tool = c.req.query('tool');
  const requester = c.req.query('requester');
  return { tool: tool === '' ? undefined : tool, requester: requester === '' ? undefined : requester, ...facets };
}

/** Build the `/approver` sub-application (mount with `app.route('/approver', …)`). */
export function createInboxRoutes(deps: InboxDeps): Hono<Env> {
  const { lifecycle, store, sessions } = deps;
  const app = new Hono<Env>();

  app.use('*', async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
    c.header('Content-Security-Policy', CSP);
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Content-Type-Options', 'nosniff');
  });
  app.use('*', csrf());
  const loginLimit = bodyLimit({
    maxSize: INBOX_LOGIN_BODY_BYTES,
    onError: (c) => errorPage(c, 413, 'Too large', 'The form was too large.'),
  });
  const formLimit = bodyLimit({
    maxSize: INBOX_FORM_BODY_BYTES,
    onError: (c) => errorPage(c, 413, 'Too large', 'The form was too large.'),
  });
  app.use('*', (c, next) => (c.req.path === '/approver/login' ? loginLimit : formLimit)(c, next));

  app.get('/assets/inbox.css', (c) => c.body(INBOX_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8' }));
  app.get('/assets/inbox.js', (c) => c.body(INBOX_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));
  app.get('/assets/webauthn.js', (c) => c.body(webauthnBrowserScript(), 200, { 'Content-Type': 'text/javascript; charset=utf-8' }));

  const oidc = deps.oidc;
  if (oidc !== undefined) {
    app.use('*', oidc.setup);
    app.get('/callback', (c) => oidc.callback(c));
    app.get('/login', oidc.login, async (c) => {
      if ((await sessions.read(c)) !== null) return c.redirect('/approver', 303);
      return errorPage(c, 403, 'Not an approver', 'Signed in, but not as a configured approver. Ask an operator to add you.');
    });
  } else {
    app.get('/login', (c) => c.html(<LoginPage />));
  }
  app.post('/login', async (c) => {
    if (oidc !== undefined) return errorPage(c, 404, 'Not here', 'Sign in through your identity provider: GET /approver/login.');
    const form = await readForm(c);
    if (form instanceof Response) return form;
    const id = typeof form['id'] === 'string' ? form['id'].trim() : '';
    const password = typeof form['password'] === 'string' ? form['password'] : '';
    const address = clientAddress(c, deps.trustedProxies);
    const wait = deps.throttle.retryAfterSeconds(id, address);
    if (wait > 0) {
      c.header('Retry-After', String(wait));
      return errorPage(c, 429, 'Too many attempts', `Too many failed sign-ins. Try again in ${wait} s.`);
    }
    const session = id === '' ? null : await sessions.signIn(c, id, password);
    if (session === null) {
      deps.throttle.failed(id, address, 'inbox');
      return c.html(<LoginPage error="Unknown approver id or wrong password." id={id.slice(0, 100)} />, 401);
    }
    deps.throttle.succeeded(id);
    return c.redirect('/approver', 303);
  });

  app.get('/signed-out', (c) => c.text('Signed out.', 200));

  app.use('*', async (c, next) => {
    const session = await sessions.read(c);
    if (session === null) {
      if (c.req.method === 'GET' && c.req.path !== '/approver/live') return c.redirect('/approver/login', 303);
      if (c.req.path === '/approver/live') return problem('unauthorized', 'Sign in first.');
      return errorPage(c, 401, 'Sign in first', 'Your session has ended. Sign in again.');
    }
    c.set('session', session);
    c.set('decider', personDecider(session.approver, 'inbox'));
    await next();
  });

  const missingToken = (c: Context, what: string) => errorPage(c, 403, 'Forbidden', `Missing or invalid CSRF token${what}.`);
  /**
   * POSTs after sign-in: the form's single-valued fields, or the page to answer: 400 for an
   * unreadable form or a repeated field, 403 (`Missing or invalid CSRF token<what>.`) without the
   * session's CSRF token.
   */
  async function formWithToken(c: Context<Env>, what: string): Promise<Record<string, FormValue | undefined> | Response> {
    const form = await readForm(c);
    if (form instanceof Response) return form;
    return sessions.csrfMatches(c.get('session'), form['csrf']) ? form : missingToken(c, what);
  }

  app.post('/logout', async (c) => {
    const form = await formWithToken(c, '');
    if (form instanceof Response) return form;
    await sessions.signOut(c);
    return c.redirect(oidc === undefined ? '/approver/login' : '/approver/signed-out', 303);
  });

  const approvers = deps.approvers ?? [];
  /** Deciders this approver may act as: themselves, then for each active delegator (direct only). */
  const actingAs = async (c: Context<Env>): Promise<Decider[]> => {
    const me = c.get('session').approver;
    const others: Decider[] = [];
    for (const d of await store.delegations.activeTo(me.id, deps.now())) {
      const decider = await delegatedDecider(store, approvers, me, d.delegator, 'inbox', deps.now());
      if (decider !== null) others.push(decider);
    }
    return [c.get('decider'), ...others];
  };
  /** The decider among `deciders` that may decide `record` (own right first), or, when none may, the most telling refusal. */
  const bestOf = async (deciders: Decider[], record: AccessRequestRecord): Promise<{ decider: Decider; refusal: DecideRefusal | null }> => {
    const all: Array<{ decider: Decider; refusal: DecideRefusal | null }> = [];
    for (const decider of deciders) all.push({ decider, refusal: await lifecycle.refusalFor(decider, record) });
    // may decide; else the first in whose scope it is (its refusal explains why not); else not theirs
    return all.find((r) => r.refusal === null) ?? all.find((r) => r.refusal !== 'not-in-group') ?? all[0]!;
  };
  /** The decider that may decide `record` (own right first), or, when none may, the most telling refusal. */
  const bestDecider = async (c: Context<Env>, record: AccessRequestRecord) => bestOf(await actingAs(c), record);
  /** Pending-list filter: own and delegators' groups, plus requests escalated to this approver. */
  const pendingScope = async (c: Context<Env>) => ({
    groups: [...new Set((await actingAs(c)).flatMap((d) => d.groups ?? []))],
    escalatedTo: c.get('session').approver.id,
  });

  /**
   * How many pending requests (narrowed by `narrow`) this approver may decide now, in their own
   * right or for a delegator: one SQL count without delegations; with them, the union of what each
   * may decide, counted one keyset page at a time (never a capped list).
   */
  const decidableCount = async (c: Context<Env>, narrow: Pick<RequestFilter, 'tool' | 'requester'> = {}): Promise<number> => {
    const deciders = await actingAs(c);
    if (deciders.length === 1) return store.countPending({ ...lifecycle.decidableFilter(deciders[0]!), ...narrow });
    const scope = await pendingScope(c);
    let count = 0;
    let after: PendingKey | undefined;
    for (;;) {
      const page = await store.pagePending({ ...scope, ...narrow }, { limit: 200, ...(after !== undefined ? { after } : {}) });
      for (const r of page.records) if ((await bestOf(deciders, r)).refusal === null) count += 1;
      const last = page.records.at(-1);
      if (!page.hasAfter || last === undefined) return count;
      after = { createdAtMs: last.createdAtMs, id: last.id };
    }
  };

  /** Break-glass approvals not yet reviewed that the signed-in approver may review (`../break-glass.ts`). */
  const reviewRows = async (c: Context<Env>): Promise<ReviewRow[]> => {
    const me = c.get('session').approver;
    const rows: ReviewRow[] = [];
    for (const use of await reviewableBy(me, store, deps.rules?.() ?? DEFAULT_APPROVAL_RULES, true)) {
      rows.push({ use, record: await store.get(use.requestId), mayReview: use.approver.toLowerCase() !== me.id.toLowerCase() });
    }
    return rows;
  };

  /** Whether the signed-in approver is a lead who may see the analytics page (the rules file's `analytics`). */
  const isLead = (c: Context<Env>): boolean => {
    const me = c.get('session').approver;
    return mayViewAnalytics(deps.rules?.().analytics, me.id, me.groups);
  };

  const frame = async (
    c: Context<Env>,
    title: string,
    active: 'queue' | 'history' | 'request' | 'reviews' | 'analytics' | 'grants',
    body: Child,
  ) => {
    const s = c.get('session');
    const pendingCount = await decidableCount(c);
    const reviewCount = (await reviewRows(c)).filter((r) => r.mayReview).length;
    const mark = await store.changeMark();
    return c.html(
      <Frame
        title={title}
        active={active}
        approverId={s.approver.id}
        groups={s.approver.groups}
        pendingCount={pendingCount}
        reviewCount={reviewCount}
        analytics={isLead(c)}
        csrf={s.csrf}
        mark={mark}
      >
        {body}
      </Frame>,
    );
  };

  app.get('/live', async (c) => c.json({ mark: await store.changeMark() }));

  app.get('/', async (c) => {
    const after = c.req.query('after');
    const before = c.req.query('before');
    const afterKey = after === undefined || after === '' ? undefined : decodePageCursor(after);
    const beforeKey = before === undefined || before === '' ? undefined : decodePageCursor(before);
    if (afterKey === null || beforeKey === null) {
      return errorPage(c, 400, 'Bad request', 'That page link is not one this inbox made. Open the queue again.');
    }
    await lifecycle.sweep();
    const deciders = await actingAs(c);
    const scope = await pendingScope(c);
    const facets = await store.pendingFacets(scope);
    const filters = filtersOf(c, facets);
    const narrow = {
      ...(filters.tool ? { tool: filters.tool } : {}),
      ...(filters.requester ? { requester: filters.requester } : {}),
    };
    const page = await store.pagePending(
      { ...scope, ...narrow },
      { limit: INBOX_PAGE_SIZE, ...(beforeKey !== undefined ? { before: beforeKey } : afterKey !== undefined ? { after: afterKey } : {}) },
    );
    const items: Array<{ record: AccessRequestRecord; approvals: number; refusal: DecideRefusal | null }> = [];
    for (const record of page.records) {
      items.push({ record, approvals: (await lifecycle.votes(record.id)).length, refusal: (await bestOf(deciders, record)).refusal });
    }
    const link = (key: 'after' | 'before', r: AccessRequestRecord | undefined): string | undefined => {
      if (r === undefined) return undefined;
      const q = new URLSearchParams({ ...narrow, [key]: encodePageCursor({ createdAtMs: r.createdAtMs, id: r.id }) });
      return `/approver?${q.toString()}`;
    };
    const paging: QueuePaging = {
      total: page.total,
      waiting: await decidableCount(c, narrow),
      previous: page.hasBefore ? link('before', page.records[0]) : undefined,
      next: page.hasAfter ? link('after', page.records.at(-1)) : undefined,
    };
    return frame(c, 'Queue', 'queue', <QueueView items={items} nowMs={deps.now()} filters={filters} paging={paging} flash={flashOf(c)} />);
  });

  app.get('/history', async (c) => {
    await lifecycle.sweep();
    const s = c.get('session');
    const all = await store.listResolved({ groups: s.approver.groups }, 500);
    const facets = {
      tools: [...new Set(all.map((r) => r.body.resource.id))].sort(),
      requesters: [...new Set(all.map((r) => r.body.subject.sub))].sort(),
    };
    const filters = filtersOf(c, facets);
    const items = await store.listResolved(
      {
        groups: s.approver.groups,
        ...(filters.tool ? { tool: filters.tool } : {}),
        ...(filters.requester ? { requester: filters.requester } : {}),
      },
      100,
    );
    // loaded before rendering: the view reads each row's channel from this map
    const channels = new Map<string, string>();
    for (const r of items) channels.set(r.id, (await store.auditTrail(r.id)).at(-1)?.via ?? '');
    const via = (r: AccessRequestRecord) => channels.get(r.id) ?? '';
    return frame(c, 'History', 'history', <HistoryView items={items} filters={filters} via={via} />);
  });

  app.get('/requests/:id', async (c) => {
    const s = c.get('session');
    const record = await lifecycle.read(c.req.param('id'));
    const best = record === undefined ? undefined : await bestDecider(c, record);
    if (record === undefined || best === undefined || best.refusal === 'not-in-group') {
      return c.html(<p>No such request in your groups.</p>, 404);
    }
    // the "read before deciding" mark of the analytics (`../analytics.ts`): when this approver first opened it
    if (record.status === 'pending') await store.analytics.recordOpen(record.id, s.approver.id, deps.now());
    const votes = await lifecycle.votes(record.id);
    const audit = await store.auditTrail(record.id);
    const passkeys = await store.passkeys.forApprover(s.approver.id);
    const followers = await lifecycle.followers(record);
    const breakGlass = await store.breakGlass.use(record.id);
    const narrowing = { proposed: await store.permitProposedOn(record.id), usedBy: await store.permitUsedBy(record.id) };
    const view = (
      <RequestView
        record={record}
        votes={votes}
        audit={audit}
        refusal={best.refusal}
        onBehalfOf={best.decider.castBy !== undefined ? best.decider.person : undefined}
        passkeyCount={passkeys.length}
        csrf={s.csrf}
        nowMs={deps.now()}
        flash={flashOf(c)}
        followers={followers}
        breakGlass={breakGlass}
        mayBreakGlass={best.refusal === 'own-request' && holdsBreakGlassRole(deps.rules?.().breakGlass, s.approver.id, s.approver.groups)}
        narrowing={narrowing}
        mayGrant={
          holdsGrantRight(deps.rules?.().grants, s.approver.id, s.approver.groups) && s.approver.groups.includes(record.body.approver_group)
        }
      />
    );
    return frame(c, visible(record.body.resource.id), 'request', view);
  });

  /** Who decides with a request page's form: the signed-in approver, or for the delegator its `on_behalf_of` names (null: no such delegation). */
  const formDecider = async (c: Context<Env>, form: Record<string, FormValue | undefined>): Promise<Decider | null> => {
    const onBehalfOf = typeof form['on_behalf_of'] === 'string' && form['on_behalf_of'] !== '' ? form['on_behalf_of'] : undefined;
    return onBehalfOf === undefined
      ? c.get('decider')
      : delegatedDecider(store, approvers, c.get('session').approver, onBehalfOf, 'inbox', deps.now());
  };

  // A counter-proposal from the request page's "Propose a narrower call" form (`narrow-form.tsx`):
  // the request's arguments with the narrowable fields the approver set; a refusal names the field.
  app.post('/requests/:id/narrow', async (c) => {
    const id = c.req.param('id');
    const form = await formWithToken(c, ': nothing was proposed');
    if (form instanceof Response) return form;
    const back = (kind: FlashKind) => c.redirect(`/approver/requests/${encodeURIComponent(id)}?flash=${kind}`, 303);
    const comment = typeof form['comment'] === 'string' ? form['comment'].trim() : '';
    if (comment.length > 1000) return back('invalid');
    const decider = await formDecider(c, form);
    if (decider === null) return back('forbidden');
    const record = await lifecycle.read(id);
    if (record === undefined) return back('forbidden');
    const read = proposalFromForm(record.body, form);
    if ('refused' in read)
      return errorPage(
        c,
        400,
        'Not proposed',
        `"${read.refused}" needs a value of its kind: a plain number such as 20000, 20,000 or 20000.50 (no other separators, no hex or exponent), a path, or a JSON list. Nothing was decided.`,
      );
    const outcome = await lifecycle.narrow(id, decider, read.proposed, comment === '' ? undefined : comment);
    switch (outcome.kind) {
      case 'narrowed':
        return back('narrowed');
      case 'invalid':
        return errorPage(c, 400, 'Not proposed', `Not a narrower call this request allows: ${outcome.message}. Nothing was decided.`);
      case 'not-narrowable':
        return back('not-narrowable');
      case 'not-pending':
        return back('not-pending');
      case 'forbidden':
      case 'not-found':
        return back('forbidden');
    }
  });

  app.post('/requests/:id/decision', async (c) => {
    const id = c.req.param('id');
    const form = await formWithToken(c, ': nothing was decided');
    if (form instanceof Response) return form;
    const back = (kind: FlashKind) => c.redirect(`/approver/requests/${encodeURIComponent(id)}?flash=${kind}`, 303);
    const decision = form['decision'];
    const comment = typeof form['comment'] === 'string' ? form['comment'].trim() : '';
    if ((decision !== 'approve' && decision !== 'deny') || comment.length > 1000) return back('invalid');
    const onBehalfOf = typeof form['on_behalf_of'] === 'string' && form['on_behalf_of'] !== '' ? form['on_behalf_of'] : undefined;
    const decider = await formDecider(c, form);
    if (decider === null) return back('forbidden');
    let stepUp: StepUpProof | undefined;
    const assertion = form['webauthn'];
    if (decision === 'approve' && typeof assertion === 'string' && assertion !== '' && deps.passkeys !== undefined) {
      const record = await lifecycle.read(id);
      const parsed = parseJsonWithLimits(assertion);
      if (record !== undefined && parsed.ok) {
        const proof = await deps.passkeys.verifyStepUp(c.get('session').approver.id, record, parsed.value as AuthenticationResponseJSON);
        if (proof === null) return back('step-up-failed');
        stepUp = proof;
      }
    }
    const confirmed = form[CONFIRM_UNFOLLOWED_FIELD] === '1';
    const glassReason = form[BREAK_GLASS_REASON_FIELD];
    const breakGlass = typeof glassReason === 'string' && onBehalfOf === undefined ? { reason: glassReason.slice(0, 500) } : undefined;
    const outcome = await lifecycle.decide(id, decider, decision, { comment, stepUp, confirmUnfollowed: confirmed, breakGlass });
    switch (outcome.kind) {
      case 'decided':
        return back(outcome.record.status === 'approved' ? 'approved' : 'denied');
      case 'recorded':
        return back('recorded');
      case 'forbidden':
        return back(
          outcome.reason === 'unfollowed'
            ? 'unfollowed'
            : outcome.reason === 'break-glass-limit'
              ? 'break-glass-limit'
              : outcome.reason === 'break-glass-reason-required'
                ? 'break-glass-reason'
                : 'forbidden',
        );
      case 'not-pending':
        return back('not-pending');
      case 'not-found':
        return back('forbidden');
    }
  });

  app.get('/analytics', async (c) => {
    if (!isLead(c))
      return errorPage(
        c,
        403,
        'Not for you',
        'The analytics page is for the leads the approval rules file names (analytics.leads, leadGroups).',
      );
    const rule = analyticsRuleOf(deps.rules?.() ?? DEFAULT_APPROVAL_RULES);
    const asked = c.req.query('days');
    const days = asked === undefined || asked === '' ? rule.windowDays : Number(asked);
    if (!Number.isInteger(days) || days < 1 || days > 365)
      return errorPage(c, 400, 'Bad request', 'days must be a whole number of days from 1 to 365.');
    await lifecycle.sweep();
    const report = await analyticsReport(
      store.analytics,
      rule,
      days,
      deps.now(),
      analyticsGroupsOf(rule, c.get('session').approver.groups),
    );
    return frame(c, 'Analytics', 'analytics', <AnalyticsView report={report} />);
  });

  /** The Grants page's rows for the signed-in approver: grants of their groups and theirs, newest first. */
  const grantRows = async (c: Context<Env>): Promise<GrantRow[]> => {
    const me = c.get('session').approver;
    const rules = deps.rules?.() ?? DEFAULT_APPROVAL_RULES;
    const rows: GrantRow[] = [];
    for (const g of await grantsVisibleTo(me, store)) {
      rows.push({ grant: g, usedBy: (await store.grants.uses(g.id)).map((u) => u.requestId), mayRevoke: mayRevokeGrant(me, g, rules) });
    }
    return rows;
  };

  app.get('/grants', async (c) => {
    const me = c.get('session').approver;
    const fromId = c.req.query('from');
    const from = fromId === undefined ? undefined : await lifecycle.read(fromId);
    const visibleFrom = from !== undefined && me.groups.includes(from.body.approver_group) ? from : undefined;
    const rows = await grantRows(c);
    return frame(
      c,
      'Grants',
      'grants',
      <GrantsView
        rows={rows}
        csrf={c.get('session').csrf}
        nowMs={deps.now()}
        mayCreate={holdsGrantRight(deps.rules?.().grants, me.id, me.groups)}
        groups={me.groups}
        from={visibleFrom}
        flash={flashOf(c)}
      />,
    );
  });

  app.post('/grants', async (c) => {
    const form = await formWithToken(c, ': no grant was created');
    if (form instanceof Response) return form;
    const constraints = constraintsFromForm(form);
    if (typeof constraints === 'string') return errorPage(c, 400, 'Not granted', `Not granted: ${constraints}.`);
    const num = (name: string) => {
      const t = typeof form[name] === 'string' ? (form[name] as string).trim() : '';
      return t === '' ? undefined : Number(t);
    };
    const str = (name: string) => (typeof form[name] === 'string' && form[name] !== '' ? (form[name] as string) : undefined);
    const minutes = num('duration_minutes');
    const parsed = GrantCreateBodySchema.safeParse({
      ...(str('from_request') !== undefined ? { from_request: str('from_request') } : {}),
      ...(str('principal') !== undefined ? { principal: str('principal') } : {}),
      ...(str('tool') !== undefined ? { tool: str('tool') } : {}),
      ...(str('approver_group') !== undefined ? { approver_group: str('approver_group') } : {}),
      constraints,
      ...(num('max_uses') !== undefined ? { max_uses: num('max_uses') } : {}),
      ...(minutes !== undefined ? { duration_ms: minutes * 60_000 } : {}),
      reason: str('reason') ?? '',
    });
    if (!parsed.success) return errorPage(c, 400, 'Not granted', `Not granted: ${parsed.error.issues.map((i) => i.message).join('; ')}.`);
    const outcome = await createGrant(
      {
        store,
        rule: deps.rules?.().grants,
        now: deps.now(),
        newId: () => randomId('grt_'),
        applyTo: (id, grant) => lifecycle.applyGrant(id, grant),
      },
      c.get('session').approver,
      'inbox',
      parsed.data,
    );
    if (outcome.kind === 'refused')
      return errorPage(
        c,
        outcome.reason === 'request-not-found'
          ? 404
          : outcome.reason === 'no-grant-right' || outcome.reason === 'not-in-group' || outcome.reason === 'own-grant'
            ? 403
            : 400,
        'Not granted',
        outcome.detail,
      );
    return c.redirect(`/approver/grants?flash=${outcome.approved === null ? 'granted' : 'granted-approved'}`, 303);
  });

  app.post('/grants/:id/revoke', async (c) => {
    const form = await formWithToken(c, ': nothing was revoked');
    if (form instanceof Response) return form;
    const out = await revokeGrantOutcome(
      { store, rules: () => deps.rules?.() ?? DEFAULT_APPROVAL_RULES, now: deps.now },
      c.get('session').approver,
      c.req.param('id'),
    );
    return c.redirect(`/approver/grants?flash=${out.ok ? 'grant-revoked' : 'grant-not-revoked'}`, 303);
  });

  app.get('/reviews', async (c) => {
    const rows = await reviewRows(c);
    return frame(c, 'Needs review', 'reviews', <ReviewsView rows={rows} csrf={c.get('session').csrf} nowMs={deps.now()} />);
  });

  app.post('/reviews/:id', async (c) => {
    const form = await formWithToken(c, ': nothing was reviewed');
    if (form instanceof Response) return form;
    const back = (kind: FlashKind) => c.redirect(`/approver/requests/${encodeURIComponent(c.req.param('id'))}?flash=${kind}`, 303);
    const comment = typeof form['comment'] === 'string' ? form['comment'].slice(0, 500) : '';
    const outcome = await lifecycle.reviewBreakGlass(c.req.param('id'), c.get('session').approver, comment, 'inbox');
    switch (outcome.kind) {
      case 'reviewed':
        return back('reviewed');
      case 'comment-required':
        return back('review-comment');
      case 'already-reviewed':
        return back('already-reviewed');
      default:
        return back('review-refused');
    }
  });

  /** Selected ids from a query or form value (one or many), deduplicated, at most {@link INBOX_BATCH_MAX}. */
  const idsOf = (value: unknown): string[] | null => {
    const list = (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v): v is string => typeof v === 'string');
    const ids = [...new Set(list.map((v) => v.trim()).filter((v) => v !== ''))];
    return ids.length === 0 || ids.length > INBOX_BATCH_MAX ? null : ids;
  };
  const badBatch = (c: Context) =>
    errorPage(c, 400, 'Nothing selected', `Select between 1 and ${INBOX_BATCH_MAX} requests in the queue, then review them.`);

  app.get('/batch', async (c) => {
    const ids = idsOf(c.req.queries('ids'));
    if (ids === null) return badBatch(c);
    const rows: BatchRow[] = [];
    for (const id of ids) {
      const record = await lifecycle.read(id);
      if (record === undefined) continue;
      const best = await bestDecider(c, record);
      if (best.refusal === 'not-in-group') continue;
      const refusal =
        record.status !== 'pending'
          ? `already ${record.status}`
          : best.refusal !== null
            ? REFUSAL_TEXT[best.refusal]
            : record.stepUpRule !== null
              ? 'needs your passkey: decide it on its own page'
              : null;
      rows.push({ record, refusal, onBehalfOf: best.decider.castBy !== undefined ? best.decider.person : undefined });
    }
    return frame(c, 'Batch decision', 'queue', <BatchPreflightView rows={rows} csrf={c.get('session').csrf} />);
  });

  app.post('/batch', async (c) => {
    const read = await readFormFields(c, ['ids']);
    if (read.kind === 'unreadable') return unreadableForm(c);
    if (read.kind === 'repeated') return repeatedField(c, read.field);
    const form = read.fields;
    if (!sessions.csrfMatches(c.get('session'), form['csrf'])) return missingToken(c, ': nothing was decided');
    const ids = idsOf(read.multi.ids);
    if (ids === null) return badBatch(c);
    const decision = form['decision'];
    const comment = typeof form['comment'] === 'string' ? form['comment'].trim() : '';
    if ((decision !== 'approve' && decision !== 'deny') || comment.length > 1000) {
      return errorPage(c, 400, 'Invalid form', 'Choose approve or deny; a comment has at most 1,000 characters.');
    }
    // one after the other, in the order selected
    const results: BatchResult[] = [];
    for (const id of ids) results.push(await batchDecide(c, id, decision, comment));
    return frame(c, 'Batch decision', 'queue', <BatchResultView results={results} />);
  });

  /** Decide request `id` of a batch as the best decider of the signed-in approver: its result row. */
  const batchDecide = async (c: Context<Env>, id: string, decision: 'approve' | 'deny', comment: string): Promise<BatchResult> => {
    const record = await lifecycle.read(id);
    if (record === undefined) return { id, tool: null, outcome: 'not found', ok: false };
    const tool = record.body.resource.id;
    const best = await bestDecider(c, record);
    if (best.refusal === 'not-in-group') return { id, tool: null, outcome: 'not found', ok: false };
    const outcome = await lifecycle.decide(id, best.decider, decision, { comment });
    switch (outcome.kind) {
      case 'decided':
        return { id, tool, outcome: outcome.record.status, ok: true };
      case 'recorded':
        return { id, tool, outcome: 'approval recorded (needs another approver)', ok: true };
      case 'forbidden':
        return { id, tool, outcome: `not decided: ${REFUSAL_TEXT[outcome.reason]}`, ok: false };
      case 'not-pending':
        return { id, tool, outcome: `not decided: already ${outcome.record.status}`, ok: false };
      case 'not-found':
        return { id, tool: null, outcome: 'not found', ok: false };
    }
  };

  const passkeys = deps.passkeys;
  app.get('/passkeys', async (c) => {
    const count = (await store.passkeys.forApprover(c.get('session').approver.id)).length;
    return frame(c, 'Passkeys', 'queue', <PasskeysView count={count} csrf={c.get('session').csrf} flash={flashOf(c)} />);
  });
  app.get('/passkeys/registration-options', async (c) => {
    if (passkeys === undefined) return problem('not-found', 'Passkeys are not configured.');
    return c.json(await passkeys.registrationOptions(c.get('session').approver.id));
  });
  app.post('/passkeys', async (c) => {
    if (passkeys === undefined) return problem('not-found', 'Passkeys are not configured.');
    if ((c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase() !== 'application/json') {
      return problem('unsupported-media-type', 'Send the body as application/json.');
    }
    const parsed = parseJsonWithLimits((await readUtf8Body(c.req.raw)) ?? ''); // not UTF-8: refused as not JSON
    const body = parsed.ok ? (parsed.value as { csrf?: unknown; response?: unknown }) : null;
    if (body === null || typeof body !== 'object' || typeof body.response !== 'object' || body.response === null) {
      return problem('invalid-request', 'Send {"csrf", "response"} with the registration response.');
    }
    if (!sessions.csrfMatches(c.get('session'), body.csrf)) return problem('forbidden', 'Missing or invalid CSRF token.');
    const ok = await passkeys.register(c.get('session').approver.id, body.response as RegistrationResponseJSON);
    return ok ? c.json({ registered: true }, 201) : problem('invalid-request', 'The passkey did not verify.');
  });
  app.get('/requests/:id/step-up-options', async (c) => {
    const record = await lifecycle.read(c.req.param('id'));
    if (passkeys === undefined || record === undefined || record.stepUpRule === null)
      return problem('not-found', 'No step-up for this request.');
    if ((await bestDecider(c, record)).refusal === 'not-in-group') return problem('not-found', 'No step-up for this request.');
    return c.json(await passkeys.stepUpOptions(c.get('session').approver.id, record));
  });

  app.get('/delegations', async (c) => {
    const me = c.get('session').approver;
    const at = deps.now();
    const given = await store.delegations.activeFrom(me.id, at);
    const received = await store.delegations.activeTo(me.id, at);
    return frame(
      c,
      'Delegations',
      'queue',
      <DelegationsView
        given={given}
        received={received}
        colleagues={approvers.map((a) => a.id).filter((id) => id !== me.id)}
        csrf={c.get('session').csrf}
        flash={flashOf(c)}
      />,
    );
  });

  app.post('/delegations', async (c) => {
    const form = await formWithToken(c, ': nothing was delegated');
    if (form instanceof Response) return form;
    const back = (kind: FlashKind) => c.redirect(`/approver/delegations?flash=${kind}`, 303);
    const parsed = DelegationBodySchema.safeParse({
      to: form['to'],
      until: typeof form['until'] === 'string' ? form['until'].trim() : form['until'],
    });
    if (!parsed.success) return back('delegation-refused');
    const outcome = await createDelegation(
      store,
      approvers,
      c.get('session').approver,
      parsed.data.to,
      Date.parse(parsed.data.until),
      deps.now(),
    );
    return back(outcome.kind === 'created' ? 'delegated' : 'delegation-refused');
  });

  app.post('/delegations/:id/revoke', async (c) => {
    const form = await formWithToken(c, ': nothing was revoked');
    if (form instanceof Response) return form;
    await store.delegations.revoke(c.req.param('id'), c.get('session').approver.id, deps.now());
    return c.redirect('/approver/delegations?flash=revoked', 303);
  });

  return app;
}
