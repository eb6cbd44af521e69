// Scope: what the approval workflow publishes for operators, without Temporal: the search-attribute
// publisher (workflows/search-attributes.ts) fed by ApprovalState's transition hook, the expiry kind
// the metrics sink reports, and the registration command docs/OPERATIONS.md shows.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { registrationCommand } from '../../src/temporal/search-attributes.js';
import { ApprovalState, type SubmittedGeneration } from '../../workflows/approval-state.js';
import { SEARCH_ATTRIBUTE_DEFINITIONS, SearchAttributePublisher } from '../../workflows/search-attributes.js';
import type { AccessRequestHint } from '../../workflows/types.js';
import { DAY, workflowTestConfig } from '../support/workflow-env.js';

const hint: AccessRequestHint = {
  approverGroup: 'treasury',
  requestTtlMs: 7 * DAY,
  reason: 'Transfers over $25,000 require treasury approval.',
  policyId: 'p',
};

/** A state whose every transition publishes, recording each upsert as `{name: value}`. */
function published() {
  const clock = { ms: Date.parse('2026-06-02T10:00:00.000Z') };
  const binding = createCallBinding({
    tool: 'wire_transfer',
    arguments: { to: 'acct-991', amount: 50000 },
    principal: { iss: 'https://issuer.test', sub: 'alice' },
    toolDescriptorDigest: 'd1',
  });
  const state = new ApprovalState(
    { binding, ownerKey: 'a'.repeat(64), accessRequest: hint, config: workflowTestConfig() },
    'approval-x',
    () => clock.ms,
  );
  const upserts: Array<Record<string, unknown>> = [];
  const publisher = new SearchAttributePublisher((pairs: SearchAttributeUpdatePair[]) =>
    upserts.push(Object.fromEntries(pairs.map((p) => [p.key.name, p.value]))),
  );
  const publish = () =>
    publisher.publish({ tool: binding.tool, approverGroup: state.approverGroup(), ownerKey: 'a'.repeat(64), snapshot: state.snapshot });
  state.onTransition = publish;
  publish();
  return { state, upserts, clock };
}

function submitted(state: ApprovalState, h: AccessRequestHint = hint): SubmittedGeneration {
  const g = state.recordSubmission(h, `key-${state.snapshot.generation + 1}`);
  g.handle = { requestId: `req-${g.generation}`, statusUrl: 'http://backend/req', expiresAt: g.body.expiresAt };
  return g as SubmittedGeneration;
}

describe('search attributes published on transitions', () => {
  it('the first upsert carries tool, approver group, status and owner; a transition that changes none of them upserts nothing', () => {
    const { state, upserts } = published();
    expect(upserts).toEqual([
      {
        CountersignTool: 'wire_transfer',
        CountersignApproverGroup: 'treasury',
        CountersignStatus: 'working',
        CountersignOwner: 'a'.repeat(64),
      },
    ]);
    const g = submitted(state);
    state.awaitingDecision(g);
    state.setPhase('re-evaluating');
    expect(upserts).toHaveLength(1);
  });

  it('a chained request to another group, input_required and a completion each upsert only what changed, the disposition last', () => {
    const { state, upserts } = published();
    const g = submitted(state);
    state.consumeForNextRequest(g);
    submitted(state, { ...hint, approverGroup: 'risk' });
    state.openInputRequest({ ...hint, requiresJustification: true }, 'justification-3');
    state.deny('request-expired');
    expect(upserts.slice(1)).toEqual([
      { CountersignApproverGroup: 'risk' },
      { CountersignStatus: 'input_required' },
      { CountersignStatus: 'completed', CountersignDisposition: 'denied-not-executed' },
    ]);
    expect(state.expiryKind()).toBe('request');
  });

  it('no value holds an argument or the principal: only the five keywords, registered one CLI command each', () => {
    const { state, upserts } = published();
    state.cancel();
    expect(JSON.stringify(upserts)).not.toMatch(/acct-991|50000|alice/);
    expect(SEARCH_ATTRIBUTE_DEFINITIONS.map((d) => `${d.name}=${d.type}`)).toEqual([
      'CountersignTool=Keyword',
      'CountersignApproverGroup=Keyword',
      'CountersignStatus=Keyword',
      'CountersignDisposition=Keyword',
      'CountersignOwner=Keyword',
    ]);
    expect(registrationCommand('ns').split(' && ')).toHaveLength(5);
    expect(registrationCommand('ns').split(' && ')[0]).toBe(
      'temporal operator search-attribute create --namespace ns --name CountersignTool --type Keyword',
    );
    expect(state.expiryKind()).toBeUndefined();
  });
});
