/**
 * "Who is waiting" on the request page (hono/jsx): the calling MCP client (`context.client`) and
 * whether any client still follows the request's task (`../followers.ts`), as one short card; an
 * unfollowed request is marked as a warning, and its decision form carries {@link UnfollowedConfirm}.
 * Every value is escaped (hono/jsx) and made visible (`visible`). Deliberately does not: decide.
 */
import { followerSentence, isUnfollowed, type FollowerSummary } from '../followers.js';
import type { AccessRequestRecord } from '../store/store.js';
import { visible } from './format.js';

/** Form field of the decision form that confirms approving a request nobody follows (`confirm_unfollowed=1`). */
export const CONFIRM_UNFOLLOWED_FIELD = 'confirm_unfollowed';

/**
 * The confirmation an approval of an unfollowed request needs, inside the decision form: a
 * checkbox saying what approving now means. Unticked, Approve is refused with a flash asking for it.
 */
export function UnfollowedConfirm() {
  return (
    <p class="flash warn" data-testid="confirm-unfollowed">
      <label>
        <input type="checkbox" name={CONFIRM_UNFOLLOWED_FIELD} value="1" /> Nobody is following this request. Approve anyway: the tool will
        run even though no one may read its result.
      </label>
    </p>
  );
}

/** Props of {@link WhoIsWaiting}. */
export interface WhoIsWaitingProps {
  record: AccessRequestRecord;
  followers: FollowerSummary;
  nowMs: number;
}

/** The calling client and its followers, for a pending or decided request. */
export function WhoIsWaiting(props: WhoIsWaitingProps) {
  const client = props.record.body.context.client;
  const unfollowed = props.record.status === 'pending' && isUnfollowed(props.followers, props.nowMs);
  return (
    <section class={unfollowed ? 'card flash warn' : 'card'} data-testid="who-is-waiting">
      <dl class="grid">
        <div>
          <dt>Calling client</dt>
          <dd data-testid="calling-client">
            {client !== undefined ? (
              <span>
                {visible(client.name)}
                {client.version !== undefined ? <span class="muted"> {visible(client.version)}</span> : ''}
              </span>
            ) : (
              <span class="muted">not named by the client</span>
            )}
          </dd>
        </div>
        <div>
          <dt>Who is waiting</dt>
          <dd data-testid="followers">{visible(followerSentence(props.followers, props.nowMs))}</dd>
        </div>
      </dl>
    </section>
  );
}
