/**
 * The decision page behind an emailed link, mounted at `/approver/email` (inside the inbox's
 * cookie path, so the inbox session applies):
 *
 * - `GET /approver/email/:token` never decides (mail scanners and link previews fetch links). It
 *   checks the link (signature, expiry, not yet used) and shows the request: to anyone holding the
 *   link, its tool, requester, reason, status and deadline; to the addressed approver signed in to
 *   the inbox, also the arguments and a form (comment, Approve / Deny) that POSTs back here.
 * - `POST /approver/email/:token` decides: it needs hono's `csrf()` origin check, the inbox session
 *   of the approver the link was sent to, and that session's CSRF token. The decision goes through
 *   the same lifecycle call as the inbox (four-eyes, group, one vote per person, quorum) with
 *   `via = 'email'`; when it decides (or records a partial approval) the link's `jti` is consumed,
 *   and the browser is sent (303) to the request's inbox page with the outcome.
 *
 * Refusals are HTML pages: a link that is malformed or signed with another key → 400; expired or
 * already used → 410; no session → 401; signed in as someone else, or a missing CSRF token → 403.
 * Deliberately does not: sign anyone in (the inbox's sign-in does), or show the arguments to a
 * browser without the addressee's session.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { csrf } from 'hono/csrf';
import type { Logger } from 'pino';
import { personDecider } from '../deciders/decider.js';
import { readFormFields, repeatedFieldMessage } from '../inbox/form-fields.js';
import { formatTime, reasonShown, visible } from '../inbox/format.js';
import { plainRequestOf, requestedBy, requestHeadline } from '../inbox/plain-language.js';
import { shownArguments } from '../inbox/redacted.js';
import { Head, StatusPill } from '../inbox/layout.js';
import { REFUSAL_TEXT } from '../inbox/request-page.js';
import type { InboxSession, SessionManager } from '../inbox/session.js';
import type { DecideOutcome, RequestLifecycle } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore } from '../store/store.js';
import type { EmailLinkClaims, EmailLinkSigner } from './email-links.js';

/** Dependencies of {@link createEmailLinkRoutes}. */
export interface EmailLinkRoutesDeps {
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  /** The inbox's session manager (the same cookie and CSRF tokens as `/approver`). */
  sessions: SessionManager;
  /** With OIDC sign-in: the session manager's `setup` middleware, run first as on the inbox. */
  oidcSetup?: MiddlewareHandler;
  signer: EmailLinkSigner;
  now: () => number;
  logger: Logger;
}

/** Largest accepted body of the decision form, bytes (a comment is at most 1,000 characters). */
export const EMAIL_FORM_BODY_BYTES = 16 * 1024;

const CSP =
  "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type RefusalStatus = 400 | 401 | 403 | 404 | 410 | 413;

function Page(props: { title: string; children: unknown }) {
  return (
    <html lang="en">
      <Head title={props.title} />
      <body>
        <header class="top">
          <span class="brand">Countersign · Approvals</span>
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}

function refusal(c: Context, status: RefusalStatus, title: string, message: string) {
  return c.html(
    <Page title={title}>
      <div class="card" data-testid="link-refusal">
        <h1>{title}</h1>
        <p>{message}</p>
        <p>
          <a href="/approver">Go to the inbox</a>
        </p>
      </div>
    </Page>,
    status,
  );
}

/** What a holder of the link may see without a session: no arguments. */
function Facts(props: { record: AccessRequestRecord }) {
  const r = props.record;
  return (
    <dl class="grid">
      <div>
        <dt>Tool</dt>
        <dd class="mono" data-testid="tool">
          {visible(r.body.resource.id)}
        </dd>
      </div>
      <div>
        <dt>Requested by</dt>
        <dd data-testid="requester">{visible(r.body.subject.sub)}</dd>
      </div>
      <div>
        <dt>Why approval is needed</dt>
        <dd data-testid="reason">{visible(reasonShown(r))}</dd>
      </div>
      <div>
        <dt>Status</dt>
        <dd data-testid="status">
          <StatusPill status={r.status} />
        </dd>
      </div>
      <div>
        <dt>Decide by</dt>
        <dd>{formatTime(r.expiresAtMs)}</dd>
      </div>
    </dl>
  );
}

/** Build the `/approver/email` sub-application (mount it before the inbox's `/approver`). */
export function createEmailLinkRoutes(deps: EmailLinkRoutesDeps): Hono {
  const { lifecycle, store, sessions, signer, now } = deps;
  const log = deps.logger.child({ channel: 'email' });
  const app = new Hono();
  app.use('*', async (c, next) => {
    await next();
    c.header('Cache-Control', 'no-store');
    c.header('Content-Security-Policy', CSP);
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
    c.header('X-Content-Type-Options', 'nosniff');
  });
  app.use('*', csrf());
  if (deps.oidcSetup !== undefined) app.use('*', deps.oidcSetup);
  app.use(
    '*',
    bodyLimit({
      maxSize: EMAIL_FORM_BODY_BYTES,
      onError: (c) => refusal(c, 413, 'Too large', 'The form was too large.'),
    }),
  );

  /** The refusal page of a link that has already decided. */
  const alreadyUsed = (c: Context) =>
    refusal(
      c,
      410,
      'Link already used',
      'This approval link has already been used to decide. Each link decides once; open the request from the inbox.',
    );

  /** The link's claims and its request, or the refusal page. */
  async function open(c: Context): Promise<{ claims: EmailLinkClaims; record: AccessRequestRecord } | Response> {
    const checked = await signer.verify(c.req.param('token') ?? '', now());
    if (checked === 'invalid')
      return refusal(c, 400, 'Not a valid link', 'This approval link is not valid. Open the request from the inbox instead.');
    if (checked === 'expired')
      return refusal(c, 410, 'Link expired', 'This approval link has expired. Open the request from the inbox instead.');
    if (await store.channels.emailLinkUsed(checked.jti)) return alreadyUsed(c);
    const record = await lifecycle.read(checked.requestId);
    if (record === undefined) return refusal(c, 404, 'No such request', 'The request this link points to does not exist.');
    return { claims: checked, record };
  }

  /** The addressee's session, or the refusal page (no session: 401; someone else: 403). */
  async function addressee(c: Context, claims: EmailLinkClaims): Promise<InboxSession | Response> {
    const session = await sessions.read(c);
    if (session === null) return refusal(c, 401, 'Sign in first', 'Sign in to the approver inbox, then open the link again.');
    if (session.approver.id !== claims.approver)
      return refusal(
        c,
        403,
        'Sent to another approver',
        `This link was sent to ${visible(claims.approver)}, and you are signed in as ${visible(session.approver.id)}. Nothing was decided.`,
      );
    return session;
  }

  app.get('/:token', async (c) => {
    const opened = await open(c);
    if (opened instanceof Response) return opened;
    const { claims, record } = opened;
    const session = await sessions.read(c);
    const self = c.req.path;
    if (session === null) {
      return c.html(
        <Page title="Approval request">
          <h1>Approval request</h1>
          <section class="card">
            <Facts record={record} />
            <p data-testid="sign-in-needed">
              Sign in to the approver inbox as <strong>{visible(claims.approver)}</strong> to see the arguments and decide.
            </p>
            <p>
              <a class="btn" href="/approver/login">
                Sign in
              </a>{' '}
              <a href={self} data-testid="continue">
                Signed in? Continue
              </a>
            </p>
          </section>
        </Page>,
      );
    }
    const wrong = await addressee(c, claims);
    if (wrong instanceof Response) return wrong;
    const refused = await lifecycle.refusalFor(personDecider(session.approver, 'email'), record);
    const pending = record.status === 'pending';
    // the decision page shows the arguments: the analytics' "read before deciding" mark (`../analytics.ts`)
    if (pending) await store.analytics.recordOpen(record.id, session.approver.id, now());
    const votes = await lifecycle.votes(record.id);
    return c.html(
      <Page title="Approval request">
        <h1 data-testid="headline-text">{requestHeadline(plainRequestOf(record.body))}</h1>
        <p data-testid="requested-by">{requestedBy(plainRequestOf(record.body))}</p>
        <section class="card">
          <Facts record={record} />
          <h2>Arguments</h2>
          <pre class="args" data-testid="arguments">
            {visible(JSON.stringify(shownArguments(record.body.context), null, 2), { keepNewlines: true })}
          </pre>
          {record.body.context.justification !== undefined ? (
            <p data-testid="justification">Justification: {visible(record.body.context.justification)}</p>
          ) : (
            ''
          )}
          <p class="muted" data-testid="approvals">
            {votes.length} of {record.requiredApprovals} approvals so far
          </p>
        </section>
        {pending && refused === null ? (
          <section class="card decide">
            <h2>Your decision</h2>
            <form method="post" action={self}>
              <input type="hidden" name="csrf" value={session.csrf} />
              <label for="comment" class="muted">
                Comment (recorded in the audit trail)
              </label>
              <textarea id="comment" name="comment" maxlength={1000}></textarea>
              <div class="actions">
                <button class="btn approve" type="submit" name="decision" value="approve">
                  Approve
                </button>
                <button class="btn deny" type="submit" name="decision" value="deny">
                  Deny
                </button>
              </div>
            </form>
          </section>
        ) : pending && refused !== null ? (
          <p class="flash warn" data-testid="refusal">
            {REFUSAL_TEXT[refused]}
          </p>
        ) : (
          <p class="flash" data-testid="decided">
            This request is already {record.status}.
          </p>
        )}
      </Page>,
    );
  });

  app.post('/:token', async (c) => {
    const opened = await open(c);
    if (opened instanceof Response) return opened;
    const { claims, record } = opened;
    const session = await addressee(c, claims);
    if (session instanceof Response) return session;
    const read = await readFormFields(c);
    if (read.kind === 'unreadable') return refusal(c, 400, 'Bad request', 'The form could not be read. Go back and try again.');
    if (read.kind === 'repeated') return refusal(c, 400, 'Bad request', repeatedFieldMessage(read.field));
    const form = read.fields;
    if (!sessions.csrfMatches(session, form['csrf']))
      return refusal(c, 403, 'Forbidden', 'Missing or invalid CSRF token: nothing was decided.');
    const decision = form['decision'];
    const comment = typeof form['comment'] === 'string' ? form['comment'].trim() : '';
    if ((decision !== 'approve' && decision !== 'deny') || comment.length > 1000)
      return refusal(c, 400, 'Bad request', 'Choose Approve or Deny (a comment is at most 1,000 characters).');
    // The link is claimed before it decides (of two uses at once, one decides; the other is refused
    // as used), and released when its decision did not happen, so that it may decide later.
    if (!(await store.channels.consumeEmailLink(claims.jti, record.id, session.approver.id, now()))) return alreadyUsed(c);
    let outcome: DecideOutcome | undefined;
    try {
      outcome = await lifecycle.decide(record.id, personDecider(session.approver, 'email'), decision, { comment });
    } finally {
      if (outcome?.kind !== 'decided' && outcome?.kind !== 'recorded') await store.channels.releaseEmailLink(claims.jti);
    }
    log.info({ requestId: record.id, approver: session.approver.id, decision, outcome: outcome.kind }, 'email link decision');
    const back = (flash: string) => c.redirect(`/approver/requests/${encodeURIComponent(record.id)}?flash=${flash}`, 303);
    switch (outcome.kind) {
      case 'decided':
      case 'recorded':
        return back(outcome.kind === 'recorded' ? 'recorded' : outcome.record.status === 'approved' ? 'approved' : 'denied');
      case 'forbidden':
        return back('forbidden');
      case 'not-pending':
        return back('not-pending');
      case 'not-found':
        return refusal(c, 404, 'No such request', 'The request this link points to does not exist.');
    }
  });

  return app;
}
