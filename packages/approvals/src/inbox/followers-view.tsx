/**
 * "Who is waiting" on the request page (hono/jsx): the calling MCP client (`context.client`) and
 * whether any client still follows the request's task (`../followers.ts`), as one short card; an
 * unfollowed request is marked as a warning. Every value is escaped (hono/jsx) and made visible
 * (`visible`). Deliberately does not: decide or hold the confirmation (the decision form does).
 */
import { followerSentence, isUnfollowed, type FollowerSummary } from '../followers.js';
import type { AccessRequestRecord } from '../store/store.js';
import { visible } from './format.js';

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
