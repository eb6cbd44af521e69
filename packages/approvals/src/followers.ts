/**
 * Who is waiting for a request (docs/APPROVERS.md §Who is waiting, docs/DESIGN.md §Who is waiting):
 * from the MCP server's follower reports (`store/followers-store.ts`), whether a client still
 * follows the request's task — read it recently (`tasks/get`) or holds a subscription
 * (`subscriptions/listen`) — and, by the rules file's `unfollowed` option, whether the request
 * counts as unfollowed: nobody was seen following it for `afterMs` since it was submitted or last
 * followed. What that means is the option's `action`: `confirm` (default) — approving it needs an
 * explicit confirmation, because a tool approved now would run with nobody to read its result;
 * `close` — once unfollowed for a further `graceMs` it expires with `status_reason: "unfollowed"`;
 * `off` — shown, never enforced.
 *
 * A request without a `task_ref` (a sender that does not report followers) is never unfollowed:
 * absence of reports means nothing there. Client names are self-reported `clientInfo`, for
 * display only. Deliberately does not: decide or expire anything itself (`request-lifecycle.ts`
 * does, with {@link unfollowedAt}).
 */
import { z } from 'zod';
import type { FollowerRecord } from './store/followers-store.js';

/** A subscription counts as held while its last report is at most this old, ms (2.5 × the MCP server's default report interval of 60 s). */
export const SUBSCRIPTION_FRESH_MS = 150_000;

/** The rules file's `unfollowed` option (all times ms). */
export const UnfollowedRuleSchema = z
  .object({
    /** Unfollowed after this long without a follower report (since submission or the last report); default 10 min, at least 1 s. */
    afterMs: z.int().min(1000).default(600_000),
    /** What being unfollowed does: `confirm` approvals, `close` the request after `graceMs`, or `off`. */
    action: z.enum(['confirm', 'close', 'off']).default('confirm'),
    /** `close` only: how long an unfollowed request stays open before it expires, ms; default 5 min. */
    graceMs: z.int().min(0).default(300_000),
  })
  .strict();
/** The validated option. */
export type UnfollowedRule = z.infer<typeof UnfollowedRuleSchema>;
/** The option when the rules file has none: confirm after 10 minutes. */
export const DEFAULT_UNFOLLOWED_RULE: UnfollowedRule = UnfollowedRuleSchema.parse({});

/** What an approver is told of a request's followers. Times ms since the epoch. */
export interface FollowerSummary {
  /** Whether the request names its task (`task_ref`): only then are followers reported. */
  reported: boolean;
  /** The latest follower report (read or subscription), or null: none yet. */
  lastSeenAtMs: number | null;
  /** Client of that report (`clientInfo.name`, possibly with its version), or null when it named none. */
  lastSeenBy: string | null;
  /** Clients holding a subscription now (reported within {@link SUBSCRIPTION_FRESH_MS}); `''` for a client that named none. */
  subscribedBy: string[];
  /** Since when nobody was seen following: the last report, else the submission. */
  quietSinceMs: number;
  /** When the request became (or becomes) unfollowed under the rule, or null: never (no `task_ref`, or `off`). */
  unfollowedAtMs: number | null;
}

/** A client's name as shown: `name version`, or null when it named none. */
function clientLabel(f: FollowerRecord): string | null {
  if (f.clientName === '') return null;
  return f.clientVersion === null ? f.clientName : `${f.clientName} ${f.clientVersion}`;
}

/**
 * The summary of a request (`createdAtMs`, whether it has a `task_ref`) from its task's followers
 * at `nowMs`, under `rule` (its `afterMs`; `off` still summarises, with `unfollowedAtMs` null).
 */
export function followerSummary(
  request: { createdAtMs: number; hasTaskRef: boolean },
  followers: readonly FollowerRecord[],
  nowMs: number,
  rule: UnfollowedRule,
): FollowerSummary {
  const latest = followers[0];
  const quietSinceMs = Math.max(request.createdAtMs, latest?.lastSeenAtMs ?? request.createdAtMs);
  const subscribedBy = followers
    .filter((f) => f.subscribedAtMs !== null && nowMs - f.subscribedAtMs <= SUBSCRIPTION_FRESH_MS)
    .map((f) => clientLabel(f) ?? '');
  return {
    reported: request.hasTaskRef,
    lastSeenAtMs: latest?.lastSeenAtMs ?? null,
    lastSeenBy: latest === undefined ? null : clientLabel(latest),
    subscribedBy,
    quietSinceMs,
    unfollowedAtMs: !request.hasTaskRef || rule.action === 'off' || subscribedBy.length > 0 ? null : quietSinceMs + rule.afterMs,
  };
}

/** Whether the summary says the request is unfollowed at `nowMs`. */
export function isUnfollowed(s: FollowerSummary, nowMs: number): boolean {
  return s.unfollowedAtMs !== null && nowMs >= s.unfollowedAtMs;
}

/**
 * The summary as the approval API shows it (`followers` of `GET /approvals/:id` and the pending
 * list): times ISO 8601, `last_read_by` / `subscribed_by` client names, `unfollowed` now, and the
 * sentence the inbox and the CLI show ({@link followerSentence}).
 */
export function followersItem(s: FollowerSummary, nowMs: number): Record<string, unknown> {
  return {
    reported: s.reported,
    last_read_at: s.lastSeenAtMs === null ? null : new Date(s.lastSeenAtMs).toISOString(),
    last_read_by: s.lastSeenBy,
    subscribed: s.subscribedBy.length > 0,
    subscribed_by: s.subscribedBy,
    quiet_since: new Date(s.quietSinceMs).toISOString(),
    unfollowed: isUnfollowed(s, nowMs),
    unfollowed_at: s.unfollowedAtMs === null ? null : new Date(s.unfollowedAtMs).toISOString(),
    text: followerSentence(s, nowMs),
  };
}

/** ISO 8601 to the second, `2026-12-02 19:04:05Z` (the inbox's `formatTime`). */
function when(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d{3}Z$/, 'Z');
}

/**
 * One plain sentence for approvers: "Subscribed: <client> holds a subscription…", "Last read by
 * <client> at <time>", or, once unfollowed or never read, "Nobody has read this task since <time>"
 * (the submission when never read); for a request whose sender reports no followers, that nothing
 * is known. Names are
 * self-reported and already escaped by the MCP server; the caller escapes for its medium.
 */
export function followerSentence(s: FollowerSummary, nowMs: number): string {
  if (!s.reported) return 'Not known whether a client follows this request (its sender reports no readers).';
  if (s.subscribedBy.length > 0) {
    const names = s.subscribedBy.map((n) => (n === '' ? 'an unnamed client' : n)).join(', ');
    return `Subscribed: ${names} holds a subscription to this task and will see the result.`;
  }
  const who = s.lastSeenBy ?? 'an unnamed client';
  if (s.lastSeenAtMs === null) return `Nobody has read this task since it was submitted at ${when(s.quietSinceMs)}.`;
  if (isUnfollowed(s, nowMs)) return `Nobody has read this task since ${when(s.lastSeenAtMs)} (last read by ${who}).`;
  return `Last read by ${who} at ${when(s.lastSeenAtMs)}.`;
}
