/**
 * A scripted approver for tests of a gate (docs/TESTING-YOUR-GATE.md): an in-memory
 * implementation of the approval-backend port (`src/backends/approval-backend.ts`) that decides
 * every submitted request by the first rule that matches it — approve, deny, or never answer —
 * optionally only once a delay has passed on the workflow's clock (the time-skipping server's, so a
 * "approve after 3 days" rule costs no real time).
 *
 * Delivery: decisions are read by the approval workflow's status poll (there are no callbacks), so a
 * delayed decision is seen at the next poll after it is due. A request no rule matches is never
 * answered (it expires at its deadline): a missing rule shows up as an expiry, not as a silent
 * approval.
 *
 * Deliberately does not: check quorum rules, approver groups or four-eyes (the reference approval
 * service does; test those with it), or validate what it is sent.
 */
import { Context } from '@temporalio/activity';
import {
  BackendError,
  type ApprovalBackend,
  type BackendHandle,
  type BackendStatus,
  type SubmissionBody,
} from '../backends/approval-backend.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';

/** What a scripted approver can do with a request. `never`: leave it pending until it expires. */
export type ScriptedDecision = 'approve' | 'deny' | 'never';

/** One submitted request, as a rule and a test see it. */
export interface SubmittedRequest {
  /** The backend's request id (`req-1`, `req-2`, … in submission order). */
  id: string;
  /** Tool name as served, e.g. `wire_transfer` or `fs__write_file`. */
  tool: string;
  /** The complete arguments of the call. */
  arguments: Record<string, unknown>;
  /** The requester's `sub`. */
  requester: string;
  /** Approver group from the policy's `@approver_group`. */
  approverGroup: string;
  /** The policy's `@reason`. */
  reason: string;
  /** Decision deadline the workflow asked for, ISO 8601. */
  expiresAt: string;
  /** 1 for the first request of a task; higher for a request chain (SEP-2848 request outcome). */
  generation: number;
  /** The caller's justification, when the policy asked for one. */
  justification?: string;
  /** SHA-256 (hex) of the call binding: equal for every request of one task. */
  bindingDigest: string;
  /** Title, upstream and annotation hints of the tool, as approvers are shown them. */
  toolInfo?: ToolPresentation;
  /** When it was submitted, ms since the epoch on the workflow's clock. */
  submittedAtMs: number;
  /** What the matching rule decided (`never` when no rule matched). */
  decision: ScriptedDecision;
  /** `pending` until the decision is due and has been read; `cancelled` when the task cancelled it. */
  state: 'pending' | 'approved' | 'denied' | 'cancelled';
}

/** One rule of a scripted approver. Rules are tried in order; the first whose `when` holds decides. */
export interface ApproverRule {
  /** Which requests the rule applies to; absent: every request. */
  when?: (request: SubmittedRequest) => boolean;
  /** The decision. */
  decide: ScriptedDecision;
  /** Decide only once this long has passed since submission, ms on the workflow's clock; default 0. */
  afterMs?: number;
  /** Approver ids recorded in the approval material (policies see them as `context.approval.approvers`); default `['scripted-approver']`. */
  approvers?: string[];
  /** How long an approval stays valid after it is given, ms (SEP-2848 approval validity); default one day. */
  validForMs?: number;
}

/** A scripted approver: the backend port plus what it was asked. */
export interface ScriptedApprover extends ApprovalBackend {
  /** Every request submitted so far, in order (one per idempotency key). */
  readonly requests: readonly SubmittedRequest[];
}

const DAY_MS = 86_400_000;

/** The workflow clock inside an activity (the time-skipping server's); wall clock elsewhere. */
function clockMs(): number {
  try {
    return Context.current().info.currentAttemptScheduledTimestampMs;
  } catch {
    return Date.now();
  }
}

/**
 * Build a scripted approver from `rules`, or from one decision for every request
 * (`scriptedApprover('approve')`). Requests submitted again under the same idempotency key get the
 * same handle (the port's idempotency contract).
 */
export function scriptedApprover(rules: readonly ApproverRule[] | ScriptedDecision): ScriptedApprover {
  const list: readonly ApproverRule[] = typeof rules === 'string' ? [{ decide: rules }] : rules;
  const byKey = new Map<string, { request: SubmittedRequest; rule: ApproverRule | undefined; handle: BackendHandle }>();
  const byId = new Map<string, { request: SubmittedRequest; rule: ApproverRule | undefined; handle: BackendHandle }>();
  const requests: SubmittedRequest[] = [];

  return {
    requests,

    async submit(body: SubmissionBody, idempotencyKey: string): Promise<BackendHandle> {
      const known = byKey.get(idempotencyKey);
      if (known) return known.handle;
      const id = `req-${requests.length + 1}`;
      const request: SubmittedRequest = {
        id,
        tool: body.tool,
        arguments: body.arguments,
        requester: body.requester.sub,
        approverGroup: body.approverGroup,
        reason: body.reason,
        expiresAt: body.expiresAt,
        generation: body.generation,
        bindingDigest: body.bindingDigest,
        ...(body.justification !== undefined ? { justification: body.justification } : {}),
        ...(body.toolInfo !== undefined ? { toolInfo: body.toolInfo } : {}),
        submittedAtMs: clockMs(),
        decision: 'never',
        state: 'pending',
      };
      const rule = list.find((r) => r.when === undefined || r.when(request));
      request.decision = rule?.decide ?? 'never';
      const handle: BackendHandle = {
        requestId: id,
        statusUrl: `scripted://requests/${id}`,
        cancelUrl: `scripted://requests/${id}/cancel`,
        expiresAt: body.expiresAt,
      };
      const entry = { request, rule, handle };
      byKey.set(idempotencyKey, entry);
      byId.set(id, entry);
      requests.push(request);
      return handle;
    },

    async status(handle: BackendHandle): Promise<BackendStatus> {
      const entry = byId.get(handle.requestId);
      if (!entry) throw new BackendError('not-found', `no scripted request ${handle.requestId}`, false);
      const { request, rule } = entry;
      const now = clockMs();
      if (request.state === 'cancelled') return { state: 'cancelled' };
      if (request.state === 'denied') return { state: 'denied' };
      const due = now >= request.submittedAtMs + (rule?.afterMs ?? 0);
      if (request.decision === 'deny' && due) {
        request.state = 'denied';
        return { state: 'denied' };
      }
      if (request.decision === 'approve' && due) {
        request.state = 'approved';
        const approvedAtMs = request.submittedAtMs + (rule?.afterMs ?? 0);
        return {
          state: 'approved',
          approval: {
            id: `approval-${request.id}`,
            approvedAt: new Date(approvedAtMs).toISOString(),
            approvedUntil: new Date(approvedAtMs + (rule?.validForMs ?? DAY_MS)).toISOString(),
            state: 'approved',
            approvers: rule?.approvers ?? ['scripted-approver'],
          },
        };
      }
      return { state: 'pending', expiresAt: request.expiresAt };
    },

    async cancel(handle: BackendHandle): Promise<boolean> {
      const entry = byId.get(handle.requestId);
      if (!entry || entry.request.state !== 'pending') return false;
      entry.request.state = 'cancelled';
      return true;
    },
  };
}
