// Scope: the bound on shadow evaluations waiting at once (src/policy/shadow.ts): a candidate PDP
// slower than the traffic must not grow the front's memory without bound.
import { describe, expect, it } from 'vitest';
import { createLogger } from '@countersign/http/log';
import { createAppMetrics } from '../../src/ops/metrics.js';
import { createShadowPolicy } from '../../src/policy/shadow.js';
import type { AccessEvaluationRequest, Decision, PolicyDecisionPoint } from '../../src/policy/pdp.js';

const request = (id: string): AccessEvaluationRequest =>
  ({
    subject: { iss: 'https://issuer.example', sub: 'alice' },
    action: { name: 'tools/call' },
    resource: { type: 'tool', id },
    context: { arguments: {} },
  }) as AccessEvaluationRequest;
const allow: Decision = { decision: 'allow', policyIds: ['p'] };

/** A candidate PDP whose evaluations wait until `release()`; `started` counts the evaluations begun. */
function stalledPdp() {
  const waiting: Array<() => void> = [];
  let started = 0;
  const pdp: PolicyDecisionPoint = {
    evaluate: () =>
      new Promise<Decision>((resolve) => {
        started++;
        waiting.push(() => resolve({ decision: 'deny', nextAction: 'none', reasons: [], policyIds: ['q'] }));
      }),
  };
  return { pdp, started: () => started, release: () => waiting.splice(0).forEach((r) => r()) };
}

async function sample(metrics: ReturnType<typeof createAppMetrics>, name: string): Promise<number> {
  const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return m?.values.reduce((a, v) => a + Number(v.value), 0) ?? 0;
}

describe('shadow policy', () => {
  it('when the candidate is slower than the traffic, calls beyond the bound of evaluations in flight are not shadowed and are counted as skipped; those in flight still finish and count', async () => {
    const stalled = stalledPdp();
    const metrics = createAppMetrics();
    const shadow = createShadowPolicy({ pdp: stalled.pdp, logger: createLogger({ level: 'silent' }), metrics, maxInFlight: 3 });
    for (let i = 0; i < 5; i++) shadow.observe(request(`tool-${i}`), allow, () => `call-${i}`);
    await new Promise((r) => setImmediate(r));
    expect(stalled.started()).toBe(3);
    expect(await sample(metrics, 'countersign_policy_shadow_skipped_total')).toBe(2);
    stalled.release();
    await shadow.idle();
    expect(await sample(metrics, 'countersign_policy_shadow_evaluations_total')).toBe(3);
    expect(await sample(metrics, 'countersign_policy_shadow_disagreements_total')).toBe(3);
    // with room again, the next call is shadowed
    shadow.observe(request('tool-5'), allow, () => 'call-5');
    await new Promise((r) => setImmediate(r));
    expect(stalled.started()).toBe(4);
    stalled.release();
    await shadow.idle();
    expect(await sample(metrics, 'countersign_policy_shadow_skipped_total')).toBe(2);
  });
});
