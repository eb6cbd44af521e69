/**
 * Break-glass in the approver inbox (docs/APPROVERS.md §Break-glass): the banner on the page of a
 * request approved under the role (who, why, when, and its review: due, overdue or done), the form
 * that lets a person in the role approve their own request with a reason, and the "Needs review"
 * page (`GET /approver/reviews`) listing break-glass approvals not yet reviewed — overdue ones marked
 * — each with a comment box to mark it reviewed (never by the one who broke glass). Every value is
 * escaped. Deliberately does not: decide or review (the forms post to the inbox routes).
 */
import { formatTime, visible } from './format.js';
import type { BreakGlassUse } from '../store/break-glass-store.js';
import type { AccessRequestRecord } from '../store/store.js';

/** Name of the inbox form field that carries a break-glass reason. */
export const BREAK_GLASS_REASON_FIELD = 'break_glass_reason';

/** Where a use's review stands at `nowMs`, in words. */
function reviewState(use: BreakGlassUse, nowMs: number): { text: string; overdue: boolean } {
  if (use.reviewedAtMs !== null)
    return { text: `Reviewed by ${use.reviewedBy ?? ''} at ${formatTime(use.reviewedAtMs)}: ${use.reviewComment ?? ''}`, overdue: false };
  if (nowMs >= use.reviewDueMs) return { text: `Review overdue since ${formatTime(use.reviewDueMs)}.`, overdue: true };
  return { text: `Needs review by someone else by ${formatTime(use.reviewDueMs)}.`, overdue: false };
}

/** The banner of a request approved under the break-glass role. */
export function BreakGlassBanner(props: { use: BreakGlassUse; nowMs: number }) {
  const u = props.use;
  const state = reviewState(u, props.nowMs);
  return (
    <section class="flash warn break-glass" data-testid="break-glass-banner" role="status">
      <strong>Break-glass:</strong> {visible(u.approver)} approved their own request at {formatTime(u.atMs)}, skipping{' '}
      {u.skipped.length === 0 ? 'no other approver' : visible(u.skipped.join(', '))}.
      <div>
        Reason: <q data-testid="break-glass-reason">{visible(u.reason)}</q>
      </div>
      <div class={state.overdue ? 'overdue' : 'muted'} data-testid="break-glass-review">
        {visible(state.text)} <a href="/approver/reviews">Needs review</a>
      </div>
    </section>
  );
}

/** The break-glass form on the page of one's own pending request, for a person in the role. */
export function BreakGlassForm(props: { action: string; csrf: string; stepUp: boolean }) {
  return (
    <section class="card decide break-glass" data-testid="break-glass-form">
      <h2>Break glass</h2>
      <p class="muted">
        This is your own request. You hold the break-glass role: you may approve it yourself in an emergency. Your reason is recorded, the
        approvers you skip are told at once, and someone else must review it afterwards. It opens a time-boxed session, and you may open
        only a few a day.
      </p>
      {props.stepUp ? (
        <p class="flash warn">This request also needs a passkey: break-glass never skips it, so ask another approver.</p>
      ) : (
        <form method="post" action={props.action}>
          <input type="hidden" name="csrf" value={props.csrf} />
          <label for="break-glass-reason" class="muted">
            Why can this not wait for another approver? (required)
          </label>
          <textarea id="break-glass-reason" name={BREAK_GLASS_REASON_FIELD} maxlength={500} required></textarea>
          <div class="actions">
            <button class="btn deny" type="submit" name="decision" value="approve">
              Break glass and approve
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

/** One row of the review page: the use and its request (undefined when the request is gone). */
export interface ReviewRow {
  use: BreakGlassUse;
  record: AccessRequestRecord | undefined;
  /** Whether the signed-in approver may review it (not the one who broke glass, a reviewer by the rules). */
  mayReview: boolean;
}

/** The "Needs review" page. */
export function ReviewsView(props: { rows: ReviewRow[]; csrf: string; nowMs: number }) {
  return (
    <>
      <h1>Needs review</h1>
      <p class="muted">
        Break-glass approvals: a requester approved their own request in an emergency. Each needs a review by someone else — check the
        reason and what ran, then say what you checked.
      </p>
      {props.rows.length === 0 ? (
        <p class="empty" data-testid="no-reviews">
          No break-glass approval needs review.
        </p>
      ) : (
        props.rows.map(({ use, record, mayReview }) => {
          const state = reviewState(use, props.nowMs);
          return (
            <section class={state.overdue ? 'card review overdue' : 'card review'} data-review-id={use.requestId}>
              <h2>
                <a href={`/approver/requests/${encodeURIComponent(use.requestId)}`} class="mono">
                  {visible(record?.body.resource.id ?? use.requestId)}
                </a>{' '}
                requested by {visible(record?.body.subject.sub ?? '')}{' '}
                {state.overdue ? <span class="pill overdue">overdue</span> : <span class="pill">needs review</span>}
              </h2>
              <p>
                <strong>{visible(use.approver)}</strong> broke glass at {formatTime(use.atMs)}: <q>{visible(use.reason)}</q>
              </p>
              <p class="muted">
                Skipped: {use.skipped.length === 0 ? 'nobody' : visible(use.skipped.join(', '))} · {visible(state.text)}
              </p>
              {mayReview ? (
                <form method="post" action={`/approver/reviews/${encodeURIComponent(use.requestId)}`}>
                  <input type="hidden" name="csrf" value={props.csrf} />
                  <label class="muted" for={`review-${use.requestId}`}>
                    What did you check? (required)
                  </label>
                  <textarea id={`review-${use.requestId}`} name="comment" maxlength={500} required></textarea>
                  <div class="actions">
                    <button class="btn approve" type="submit">
                      Mark reviewed
                    </button>
                  </div>
                </form>
              ) : (
                <p class="muted">You broke glass on this one: someone else reviews it.</p>
              )}
            </section>
          );
        })
      )}
    </>
  );
}
