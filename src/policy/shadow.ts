/**
 * Shadow mode: a candidate policy set (`COUNTERSIGN_SHADOW_POLICY_DIR`) evaluated beside the live
 * one on every `tools/call` the gate decides, never enforced (docs/PRODUCTION.md §Shadow policies).
 *
 * The gate hands each live decision to {@link ShadowPolicy.observe} and answers at once: the
 * candidate is evaluated on a later turn of the event loop (`setImmediate`), in this process (Cedar
 * is embedded), so shadowing adds no Temporal action and no wait to the call; its cost is the
 * candidate's evaluation, measured in docs/PERFORMANCE-ACTIONS.md §Shadow policies. Each call
 * counts `countersign_policy_shadow_evaluations_total`; a disagreement (another {@link Outcome},
 * or another approver group) counts `countersign_policy_shadow_disagreements_total{live, shadow}`
 * (labels: the four outcomes) and writes one `info` line with the tool, the keyed call reference,
 * both outcomes and both policy id lists — never the arguments, the principal or the binding digest.
 *
 * At most `maxInFlight` evaluations (default {@link SHADOW_MAX_IN_FLIGHT}) wait at once: when the
 * candidate is slower than the traffic (a PDP that awaits entity data, a stalled one), a call beyond
 * that is not shadowed and counts `countersign_policy_shadow_skipped_total` instead, so shadowing
 * never grows the front's memory without bound.
 *
 * Deliberately does not: change, delay or fail the live decision (an error of the shadow set is
 * its own `denied`, counted like any other; an exception is logged and dropped), or re-evaluate
 * after an approval (the worker's re-evaluation uses the live set only).
 */
import type { Logger } from 'pino';
import type { AppMetrics } from '../ops/metrics.js';
import type { AccessEvaluationRequest, Decision, PolicyDecisionPoint } from './pdp.js';
import { outcomeOf } from './replay.js';

/** What the gate calls on every decision. */
export interface ShadowPolicy {
  /**
   * Evaluate `request` under the shadow set later and compare with the live `decision`; returns at
   * once, never throws. `callRef` names the call in the log (the gate's keyed reference), read only
   * on a disagreement.
   */
  observe(request: AccessEvaluationRequest, decision: Decision, callRef: () => string): void;
  /** Resolves when every evaluation observed so far has finished (tests, shutdown). */
  idle(): Promise<void>;
}

/** Shadow evaluations that may wait at once by default; a call beyond them is skipped and counted. */
export const SHADOW_MAX_IN_FLIGHT = 1_000;

/**
 * A shadow over `pdp` (the candidate set), counting into `metrics` and logging disagreements to
 * `logger`; `maxInFlight` (default {@link SHADOW_MAX_IN_FLIGHT}, ≥ 1) bounds the evaluations waiting at once.
 */
export function createShadowPolicy(deps: {
  pdp: PolicyDecisionPoint;
  logger: Logger;
  metrics?: AppMetrics;
  maxInFlight?: number;
}): ShadowPolicy {
  const maxInFlight = Math.max(1, deps.maxInFlight ?? SHADOW_MAX_IN_FLIGHT);
  const pending = new Set<Promise<void>>();
  const compare = async (request: AccessEvaluationRequest, decision: Decision, callRef: () => string): Promise<void> => {
    const live = outcomeOf(decision);
    const shadow = outcomeOf(await deps.pdp.evaluate(request));
    deps.metrics?.shadowEvaluations.inc();
    if (live.outcome === shadow.outcome && live.approverGroup === shadow.approverGroup) return;
    deps.metrics?.shadowDisagreements.inc({ live: live.outcome, shadow: shadow.outcome });
    deps.logger.info({ tool: request.resource.id, callRef: callRef(), live, shadow }, 'shadow policy disagrees with the live decision');
  };
  return {
    observe(request, decision, callRef) {
      if (pending.size >= maxInFlight) {
        deps.metrics?.shadowSkipped.inc();
        return;
      }
      const done: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
        .then(() => compare(request, decision, callRef))
        .catch((err: unknown) =>
          deps.logger.warn({ tool: request.resource.id, err: (err as Error).name }, 'shadow policy evaluation failed'),
        )
        .finally(() => pending.delete(done));
      pending.add(done);
    },
    async idle() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
