/**
 * The approver inbox: a plain server-rendered HTML page at `/approver` (HTTP Basic approver
 * auth; a 401 carries `WWW-Authenticate: Basic realm="countersign approvals"` so browsers prompt).
 *
 * Lists the pending requests the signed-in approver may decide (their groups, never their own
 * requests) with tool, requester, a one-line argument summary, full arguments on demand, age and
 * deadline, plus approve / deny forms that POST to `/approver/requests/:id/{approve|deny}` and
 * redirect 303 back with a flash in the query string; and a short "recently decided" list.
 * All user data is escaped by hono/html. Forms carry a per-approver CSRF token (Basic credentials
 * are sent by browsers on cross-site posts too).
 * Deliberately does not: use JavaScript, cookies or sessions, or paginate.
 */
import { createHmac } from 'node:crypto';
import { Hono } from 'hono';
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { authenticateApprover, safeEqual, type Approver } from './http-auth.js';
import type { RequestLifecycle } from './request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore } from './store.js';

/** Dependencies of {@link createApproverPage}. */
export interface ApproverPageDeps {
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  approvers: readonly Approver[];
  /** Key for the per-approver CSRF form token (any high-entropy secret). */
  csrfKey: string;
  /** Clock, ms since epoch. */
  now: () => number;
}

/** Flash messages the page can show after a form post (`?flash=<kind>&request=<id>`). */
export const FLASH_MESSAGES = {
  approved: 'Approved',
  denied: 'Denied',
  'not-pending': 'Not decided: the request is no longer pending',
  forbidden: 'Not decided: you may not decide this request',
  'not-found': 'Not decided: no such request',
  invalid: 'Not decided: the form was invalid or expired; reload and try again',
} as const;
type FlashKind = keyof typeof FLASH_MESSAGES;

const REALM = 'Basic realm="countersign approvals"';
const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Per-approver CSRF token: base64url HMAC-SHA256(csrfKey, approver id). */
export function csrfTokenFor(csrfKey: string, approverId: string): string {
  return createHmac('sha256', csrfKey).update(`approver-form\u0000${approverId}`, 'utf8').digest('base64url');
}

function summarizeValue(v: unknown): string {
  if (typeof v === 'string') return /^[\w.@:/+-]{1,60}$/.test(v) ? v : JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const json = JSON.stringify(v) ?? String(v);
  return json.length > 40 ? `${json.slice(0, 37)}...` : json;
}

/**
 * One-line summary of tool arguments, e.g. `amount=50000 to=acct-991`, in key order as given,
 * truncated to `maxChars` (default 160) with `…`. Plain text: the caller escapes it.
 */
export function summarizeArguments(args: Record<string, unknown>, maxChars = 160): string {
  const line = Object.entries(args)
    .map(([k, v]) => `${k}=${summarizeValue(v)}`)
    .join(' ');
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

/** Human age of a duration in ms: `45s`, `12m`, `3h 5m`, `2d 4h`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

const STYLE = `
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1a1a1a}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid #ddd;vertical-align:top}
th{font-weight:600;background:#f5f5f5}code{font-size:.9em}pre{white-space:pre-wrap;font-size:.85em;margin:.3rem 0}
.flash{padding:.6rem .8rem;border-radius:4px;background:#eef6ee;border:1px solid #9c9}
.flash.warn{background:#fbf1e6;border-color:#d9a066}
.muted{color:#666;font-size:.9em}form{display:inline-block;margin:.15rem .3rem .15rem 0}
input[type=text]{width:14rem}button{padding:.25rem .8rem}
`;

function pendingRow(r: AccessRequestRecord, now: number, csrf: string): HtmlEscapedString | Promise<HtmlEscapedString> {
  const args = r.body.context.arguments;
  const forms = (['approve', 'deny'] as const).map(
    (d) => html`<form method="post" action="/approver/requests/${encodeURIComponent(r.id)}/${d}">
        <input type="hidden" name="csrf" value="${csrf}">
        <input type="text" name="comment" maxlength="1000" placeholder="${d === 'approve' ? 'comment (optional)' : 'reason for denial (optional)'}">
        <button type="submit">${d === 'approve' ? 'Approve' : 'Deny'}</button>
      </form>`,
  );
  return html`<tr>
    <td><code>${r.body.resource.id}</code><div class="muted">${r.body.reason}</div>${r.body.context.justification ? html`<div>Justification: ${r.body.context.justification}</div>` : ''}</td>
    <td>${r.body.subject.sub}<div class="muted">${r.body.subject.iss}</div></td>
    <td><code>${summarizeArguments(args)}</code>
      <details><summary class="muted">all arguments, binding digest</summary>
        <pre>${JSON.stringify(args, null, 2)}</pre><div class="muted">binding <code>${r.body.binding_digest}</code> · group ${r.body.approver_group} · ${r.id}</div>
      </details></td>
    <td>${formatAge(now - r.createdAtMs)}</td>
    <td>${new Date(r.expiresAtMs).toISOString()}</td>
    <td>${forms}</td>
  </tr>`;
}

function resolvedRow(r: AccessRequestRecord): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<tr>
    <td><code>${r.body.resource.id}</code></td>
    <td>${r.body.subject.sub}</td>
    <td><code>${summarizeArguments(r.body.context.arguments, 80)}</code></td>
    <td>${r.status}</td>
    <td>${r.resolvedBy ?? ''}</td>
    <td>${r.resolvedAtMs === null ? '' : new Date(r.resolvedAtMs).toISOString()}</td>
  </tr>`;
}

/** Build the `/approver` sub-application (mount with `app.route('/approver', …)`). */
export function createApproverPage(deps: ApproverPageDeps): Hono<{ Variables: { approver: Approver } }> {
  const app = new Hono<{ Variables: { approver: Approver } }>();

  app.use('*', async (c, next) => {
    const approver = authenticateApprover(c.req.header('Authorization'), deps.approvers);
    if (approver === null) {
      return c.text('Approver credentials required.', 401, { 'WWW-Authenticate': REALM, 'Cache-Control': 'no-store' });
    }
    c.set('approver', approver);
    await next();
    c.header('Cache-Control', 'no-store');
    c.header('Content-Security-Policy', CSP);
    c.header('X-Frame-Options', 'DENY');
    c.header('Referrer-Policy', 'no-referrer');
  });

  app.get('/', (c) => {
    const approver = c.get('approver');
    deps.lifecycle.sweep();
    const now = deps.now();
    const pending = deps.store.listPendingForGroups(approver.groups).filter((r) => deps.lifecycle.refusalFor(approver, r) === null);
    const recent = deps.store.listRecentlyResolvedForGroups(approver.groups, 10);
    const flashKind = c.req.query('flash');
    const flashId = c.req.query('request') ?? '';
    const flash =
      flashKind !== undefined && flashKind in FLASH_MESSAGES
        ? html`<p class="flash${flashKind === 'approved' || flashKind === 'denied' ? '' : ' warn'}" role="status">${FLASH_MESSAGES[flashKind as FlashKind]}${flashId === '' ? '' : html` · <code>${flashId.slice(0, 64)}</code>`}</p>`
        : '';
    const csrf = csrfTokenFor(deps.csrfKey, approver.id);
    return c.html(html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Countersign approvals</title><style>${raw(STYLE)}</style></head>
<body>
<h1>Countersign approvals</h1>
<p class="muted">Signed in as <strong>${approver.id}</strong> · groups: ${approver.groups.join(', ')}</p>
${flash}
<h2>Waiting for your decision (${pending.length})</h2>
${
  pending.length === 0
    ? html`<p class="muted">Nothing is waiting for you.</p>`
    : html`<table><thead><tr><th>Tool</th><th>Requester</th><th>Arguments</th><th>Age</th><th>Expires at</th><th>Decision</th></tr></thead>
<tbody>${pending.map((r) => pendingRow(r, now, csrf))}</tbody></table>`
}
<h2>Recently decided</h2>
${
  recent.length === 0
    ? html`<p class="muted">No decisions yet.</p>`
    : html`<table><thead><tr><th>Tool</th><th>Requester</th><th>Arguments</th><th>Status</th><th>By</th><th>At</th></tr></thead>
<tbody>${recent.map(resolvedRow)}</tbody></table>`
}
</body></html>`);
  });

  app.post('/requests/:id/:decision{approve|deny}', async (c) => {
    const approver = c.get('approver');
    const id = c.req.param('id');
    const decision = c.req.param('decision') === 'approve' ? 'approve' : 'deny';
    const back = (kind: FlashKind): Response =>
      c.redirect(`/approver?flash=${kind}&request=${encodeURIComponent(id)}`, 303);
    let form: Record<string, unknown>;
    try {
      form = await c.req.parseBody();
    } catch {
      return back('invalid');
    }
    const csrf = typeof form['csrf'] === 'string' ? form['csrf'] : '';
    const comment = typeof form['comment'] === 'string' ? form['comment'].trim() : '';
    if (!safeEqual(csrf, csrfTokenFor(deps.csrfKey, approver.id)) || comment.length > 1000) return back('invalid');
    const outcome = deps.lifecycle.decide(id, approver, decision, comment === '' ? undefined : comment);
    switch (outcome.kind) {
      case 'decided':
        return back(outcome.record.status === 'approved' ? 'approved' : 'denied');
      case 'forbidden':
        return back('forbidden');
      case 'not-pending':
        return back('not-pending');
      case 'not-found':
        return back('not-found');
    }
  });

  return app;
}
