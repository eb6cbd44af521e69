/**
 * The approval service's notification port: where a request's life is announced to approvers
 * (Slack, email, …). Implementations must not throw for delivery failures: they log and return;
 * a notification is a view over the one durable request in the store, never its authority.
 */
import type { AccessRequestRecord } from '../store/store.js';

/**
 * Why a notification is sent. `reminded`/`escalated` come from the reminder timers; `decided` after a
 * terminal status; `break-glass` after a break-glass approval, to the approvers it skipped.
 */
export type NotificationKind = 'opened' | 'reminded' | 'escalated' | 'decided' | 'break-glass';

/** One notification: the request as stored, and for `reminded`/`escalated` the group notified. */
export interface ApprovalNotification {
  kind: NotificationKind;
  request: AccessRequestRecord;
  /** Approver group addressed (the request's own group, or the escalation group). */
  group: string;
  /** With `break-glass`: who broke glass, their reason, when (ms since epoch), and the approver ids skipped. */
  breakGlass?: { by: string; reason: string; atMs: number; skipped: readonly string[] };
}

/** A channel that announces requests. `notify` resolves when the channel accepted (or gave up on) the message. */
export interface ApprovalNotifier {
  readonly channel: string;
  notify(notification: ApprovalNotification): Promise<void>;
}

/** Fans one notification out to every configured notifier; a failing notifier does not stop the others. */
export async function notifyAll(notifiers: readonly ApprovalNotifier[], notification: ApprovalNotification): Promise<void> {
  await Promise.allSettled(notifiers.map((n) => n.notify(notification)));
}
