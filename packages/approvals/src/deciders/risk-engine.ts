/**
 * The risk engine: the operator's declarative rules (`risk` in the rules file, see
 * `approval-rules.ts`) decide pending requests with no human. A request is evaluated when it
 * arrives and again on every scheduled pass (`riskIntervalMs`, when the service's caller runs
 * `sweep`), so a rule on `pendingMs` or an edited rules file reaches requests already waiting.
 * The first matching rule (file order) decides as `risk-engine` (channel `risk-engine`) with
 * the rule id in the audit trail; its approval is final (it does not wait for a quorum).
 * Deliberately does not: call external scoring services, or decide a request that no rule matches.
 */
import type { Logger } from 'pino';
import { firstMatchingRiskRule, type ApprovalRules } from './approval-rules.js';
import { RISK_ENGINE_DECIDER } from './decider.js';
import type { RequestLifecycle } from '../request-lifecycle.js';
import type { AccessRequestRecord, ApprovalStore, PendingKey } from '../store/store.js';

/** The engine. */
export interface RiskEngine {
  /** Evaluate one pending request; resolves to the deciding rule's id, or null when none matched. */
  evaluate(record: AccessRequestRecord): Promise<string | null>;
  /** Evaluate every pending request; resolves to how many were decided. */
  evaluatePending(): Promise<number>;
}

/** Create the engine over the lifecycle; `rules` is read on every evaluation. */
export function createRiskEngine(deps: {
  lifecycle: RequestLifecycle;
  store: ApprovalStore;
  rules: () => ApprovalRules;
  now: () => number;
  logger: Logger;
}): RiskEngine {
  async function evaluate(record: AccessRequestRecord): Promise<string | null> {
    if (record.status !== 'pending') return null;
    const b = record.body;
    const rule = firstMatchingRiskRule(deps.rules(), {
      tool: b.resource.id,
      requester: b.subject.sub,
      group: b.approver_group,
      generation: b.generation,
      pendingMs: deps.now() - record.createdAtMs,
      arguments: b.context.arguments,
    });
    if (rule === null) return null;
    // the decision is a compare-and-set in the store: a request decided meanwhile is `not-pending`
    const outcome = await deps.lifecycle.decide(record.id, RISK_ENGINE_DECIDER, rule.decision, {
      comment: rule.comment ?? `risk rule ${rule.id}`,
      rule: rule.id,
    });
    if (outcome.kind !== 'decided') {
      deps.logger.warn({ requestId: record.id, rule: rule.id, outcome: outcome.kind }, 'risk rule matched but did not decide');
      return null;
    }
    deps.logger.info({ requestId: record.id, rule: rule.id, decision: rule.decision }, 'risk engine decided');
    return rule.id;
  }

  return {
    evaluate,
    async evaluatePending() {
      if (deps.rules().risk.length === 0) return 0;
      let count = 0;
      // Every pending request, a keyset page at a time (not only the oldest 1,000).
      let after: PendingKey | undefined;
      for (;;) {
        const page = await deps.store.pagePending({}, { limit: 500, ...(after !== undefined ? { after } : {}) });
        for (const r of page.records) if ((await evaluate(r)) !== null) count += 1;
        const last = page.records[page.records.length - 1];
        if (!page.hasAfter || last === undefined) return count;
        after = { createdAtMs: last.createdAtMs, id: last.id };
      }
    },
  };
}
