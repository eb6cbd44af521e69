/**
 * Reminder and escalation timers of the reference Access Request Service, per approver group from
 * the operator's rules file (`escalation`, see `deciders/approval-rules.ts` `EscalationRuleSchema`).
 *
 * Durable by construction: a timer is not held in memory but derived from what the store keeps —
 * the request's `created_at_ms` plus the group's period — and its firing is a compare-and-set mark
 * on the request row (`reminded_at_ms`, `escalated_at_ms`) written in the same transaction as its
 * audit row (`store.ts` `markReminded` / `markEscalated`). `fire()` runs from the service's
 * `sweep()` (every few seconds in the stack), so a due timer fires on the first pass after it is
 * due, also after a restart, and at most once; a request that left `pending` (decided, expired,
 * cancelled) never fires. Notifications go out after the mark is committed: a crash between the
 * two loses that notification (the audit row stays), it never sends it twice.
 * Deliberately does not: repeat reminders, or re-time open requests when the rules change (a
 * changed period applies to every still-unmarked pending request from the next pass).
 */
import type { Logger } from 'pino';
import type { ApprovalRules, EscalationRule } from './deciders/approval-rules.js';
import { notifyAll, type ApprovalNotification, type ApprovalNotifier } from './notify/notifier.js';
import type { ApprovalStore } from './store/store.js';

/** Dependencies of {@link createReminderTimers}. */
export interface ReminderTimersDeps {
  store: ApprovalStore;
  /** Current operator rules (read on every pass). */
  rules: () => ApprovalRules;
  /** Clock, ms since epoch. */
  now: () => number;
  logger: Logger;
  /** Where reminders and escalations are announced; may be empty (the audit trail still records them). */
  notifiers: readonly ApprovalNotifier[];
}

/** What one pass fired. */
export interface ReminderPass {
  reminded: number;
  escalated: number;
}

/** The timers. */
export interface ReminderTimers {
  /**
   * Fire every due reminder and escalation once: mark and audit each in the store (a
   * compare-and-set on "not yet marked", so two passes at once announce each once), then announce
   * them to every notifier; resolves when the notifiers have settled. Never throws for a
   * notifier's failure.
   */
  fire(): Promise<ReminderPass>;
}

/** Create the timers over a store. */
export function createReminderTimers(deps: ReminderTimersDeps): ReminderTimers {
  const { store, now, logger } = deps;
  return {
    async fire() {
      const at = now();
      const byGroup = new Map<string, EscalationRule>((deps.rules().escalation ?? []).map((r) => [r.group, r]));
      if (byGroup.size === 0) return { reminded: 0, escalated: 0 };
      const sent: ApprovalNotification[] = [];
      const due = (createdAtMs: number, expiresAtMs: number, afterMs: number | undefined) =>
        afterMs !== undefined && at >= createdAtMs + afterMs && at < expiresAtMs;
      for (const r of await store.listUnmarkedPending('reminded')) {
        const rule = byGroup.get(r.body.approver_group);
        if (rule === undefined || !due(r.createdAtMs, r.expiresAtMs, rule.remindAfterMs)) continue;
        const updated = await store.markReminded(r.id, rule.group, at);
        if (updated !== undefined) sent.push({ kind: 'reminded', request: updated, group: rule.group });
      }
      for (const r of await store.listUnmarkedPending('escalated')) {
        const rule = byGroup.get(r.body.approver_group);
        const to = rule?.escalateTo;
        if (rule === undefined || to === undefined || !due(r.createdAtMs, r.expiresAtMs, rule.escalateAfterMs)) continue;
        const updated = await store.markEscalated(r.id, { group: to.group ?? null, approver: to.approver ?? null }, at);
        if (updated !== undefined) sent.push({ kind: 'escalated', request: updated, group: to.group ?? rule.group });
      }
      for (const n of sent) {
        logger.info({ requestId: n.request.id, kind: n.kind, group: n.group }, `access request ${n.kind}`);
      }
      await Promise.all(sent.map((n) => notifyAll(deps.notifiers, n)));
      return {
        reminded: sent.filter((n) => n.kind === 'reminded').length,
        escalated: sent.filter((n) => n.kind === 'escalated').length,
      };
    },
  };
}
