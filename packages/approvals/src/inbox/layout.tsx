/**
 * The approver inbox's page frame (hono/jsx, server-rendered): top bar with navigation, the
 * pending count, the signed-in approver and a sign-out form; `<main id="live">` holds the part
 * the inbox script refreshes. Also the sign-in page and shared bits (status pill, flash).
 * Deliberately does not: fetch data (routes pass view models in).
 */
import type { Child } from 'hono/jsx';

/** What the frame shows about the signed-in approver. */
export interface FrameProps {
  title: string;
  active: 'queue' | 'history' | 'request' | 'reviews' | 'analytics' | 'grants';
  approverId: string;
  groups: readonly string[];
  /** Pending requests awaiting this approver's decision. */
  pendingCount: number;
  /** Break-glass approvals this approver may review and nobody has yet (the "Needs review" badge); default 0. */
  reviewCount?: number;
  /** Whether the approver may see the analytics page (a lead, `../analytics.ts`): shows its link; default false. */
  analytics?: boolean;
  csrf: string;
  /** Store change mark for live refresh. */
  mark: number;
  children?: Child;
}

/** The `<head>` of every inbox page: title, the inbox stylesheet and script (same origin, allowed by the CSP). */
export function Head(props: { title: string }) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{props.title} · Countersign approvals</title>
      <link rel="stylesheet" href="/approver/assets/inbox.css" />
      <script src="/approver/assets/webauthn.js" defer></script>
      <script src="/approver/assets/inbox.js" defer></script>
    </head>
  );
}

/** A signed-in page. */
export function Frame(props: FrameProps) {
  return (
    <html lang="en">
      <Head title={props.title} />
      <body data-mark={String(props.mark)}>
        <header class="top">
          <span class="brand">Countersign · Approvals</span>
          <nav>
            <a href="/approver" class={props.active === 'queue' ? 'on' : ''}>
              Queue{' '}
              <span class={props.pendingCount === 0 ? 'badge zero' : 'badge'} id="pending-count">
                {props.pendingCount}
              </span>
            </a>
            <a href="/approver/history" class={props.active === 'history' ? 'on' : ''}>
              History
            </a>
            <a href="/approver/reviews" class={props.active === 'reviews' ? 'on' : ''}>
              Needs review{' '}
              <span class={(props.reviewCount ?? 0) === 0 ? 'badge zero' : 'badge'} id="review-count">
                {props.reviewCount ?? 0}
              </span>
            </a>
            <a href="/approver/delegations">Delegations</a>
            <a href="/approver/grants" class={props.active === 'grants' ? 'on' : ''}>
              Grants
            </a>
            {props.analytics === true ? (
              <a href="/approver/analytics" class={props.active === 'analytics' ? 'on' : ''}>
                Analytics
              </a>
            ) : (
              ''
            )}
          </nav>
          <div class="who">
            <span>
              Signed in as <strong data-testid="approver">{props.approverId}</strong> · {props.groups.join(', ')}
            </span>
            <form method="post" action="/approver/logout">
              <input type="hidden" name="csrf" value={props.csrf} />
              <button type="submit">Sign out</button>
            </form>
          </div>
        </header>
        <main id="live">{props.children}</main>
        <div class="notice" id="notice" role="status">
          New activity — <a href="">reload</a>
        </div>
      </body>
    </html>
  );
}

/** The sign-in page (`GET /approver/login`); `error` is shown above the form. */
export function LoginPage(props: { error?: string; id?: string }) {
  return (
    <html lang="en">
      <Head title="Sign in" />
      <body>
        <header class="top">
          <span class="brand">Countersign · Approvals</span>
        </header>
        <main>
          <form class="card login" method="post" action="/approver/login">
            <h1>Approver sign-in</h1>
            {props.error === undefined ? (
              ''
            ) : (
              <p class="flash warn" role="alert">
                {props.error}
              </p>
            )}
            <label for="id">Approver id</label>
            <input type="text" id="id" name="id" autocomplete="username" required value={props.id ?? ''} />
            <label for="password">Password</label>
            <input type="password" id="password" name="password" autocomplete="current-password" required />
            <p>
              <button class="btn primary" type="submit">
                Sign in
              </button>
            </p>
            <p class="muted">
              Development identities and passwords are printed by <code>npm start</code>.
            </p>
          </form>
        </main>
      </body>
    </html>
  );
}

/** A page for a refused request to the inbox (bad form, too large, not signed in): a title, one server-authored sentence, a way back. */
export function ErrorPage(props: { title: string; message: string }) {
  return (
    <html lang="en">
      <Head title={props.title} />
      <body>
        <header class="top">
          <span class="brand">Countersign · Approvals</span>
        </header>
        <main>
          <div class="card">
            <h1>{props.title}</h1>
            <p>{props.message}</p>
            <p>
              <a href="/approver">Back to the inbox</a>
            </p>
          </div>
        </main>
      </body>
    </html>
  );
}

/** A status pill: pending / approved / denied / expired / cancelled. */
export function StatusPill(props: { status: string }) {
  return <span class={`pill ${props.status}`}>{props.status}</span>;
}

/** A one-line notice after a form post. */
export function Flash(props: { text: string; ok: boolean }) {
  return (
    <p class={props.ok ? 'flash' : 'flash warn'} role="status" data-testid="flash">
      {props.text}
    </p>
  );
}

/** A live countdown to `expiresAtMs` (text rendered server-side, ticked by the script). */
export function Countdown(props: { expiresAtMs: number; text: string }) {
  return (
    <span class="countdown" data-expires-at={String(props.expiresAtMs)}>
      {props.text}
    </span>
  );
}

/** Approval progress: `●○ 1 of 2`. */
export function Progress(props: { have: number; need: number }) {
  const dots = Array.from({ length: props.need }, (_, i) => <i class={i < props.have ? 'on' : ''}></i>);
  return (
    <span class="progress" title={`${props.have} of ${props.need} approvals`}>
      {dots}
      <span class="muted">
        {props.have} of {props.need}
      </span>
    </span>
  );
}
