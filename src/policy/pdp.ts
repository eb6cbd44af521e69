/**
 * The policy decision point (PDP) port, in AuthZEN Authorization API 1.0 shape.
 *
 * The MCP front asks it once per `tools/call`; the workflow asks it again (through the
 * `evaluatePolicy` activity) after an approval, with the approval as input (SEP-2848
 * §Completion). Adapters: `cedar-pdp.ts` (embedded Cedar). This module holds types only.
 */
import type { NarrowingSpec } from '@countersign/arap';
import type { Principal } from '../auth/principal.js';

/** AuthZEN access evaluation request for one `tools/call`. */
export interface AccessEvaluationRequest {
  /** The caller. AuthZEN `subject` `{type: "principal", id: "<iss>|<sub>"}` is derived from it. */
  subject: Principal;
  /** Always `tools/call` for this product. */
  action: { name: 'tools/call' };
  /** The tool acted on: `{type: "tool", id: <tool name>}`. */
  resource: { type: 'tool'; id: string };
  /**
   * Context: `arguments` are the complete tool arguments; `approval` is present only on a
   * re-evaluation after the backend granted an approval (ARAP `context.approval`).
   */
  context: { arguments: Record<string, unknown>; approval?: ApprovalMaterial };
}

/** Approval material returned by the backend on a grant (ARAP `result.approval`). */
export interface ApprovalMaterial {
  id: string;
  /** ISO 8601. */
  approvedAt: string;
  /** ISO 8601: the approval's validity ends here (SEP-2848 "approval validity"). */
  approvedUntil: string;
  state: 'approved';
  /** Identities of the approvers, for audit; never shown to the MCP client. */
  approvers: string[];
  /**
   * Present when the requester approved their own request under the break-glass role
   * (docs/APPROVERS.md §Break-glass): approver id, their reason, when (ISO 8601). Only new status
   * reads carry it (histories recorded before it replay unchanged); Cedar never sees it.
   */
  breakGlass?: { by: string; reason: string; at: string };
}

/**
 * Hints a requestable denial carries (ARAP `context.access_request`). Only the server sees them;
 * none of them crosses the MCP wire (SEP-2848 §Denied-but-requestable).
 */
export interface AccessRequestHint {
  /** Who should decide, e.g. `treasury`. */
  approverGroup: string;
  /** How long the request stays open for a decision, in ms (e.g. 7 days = 604800000). */
  requestTtlMs: number;
  /** Fixed, human-readable reason from the policy file (operator-authored, not user input). */
  reason: string;
  /** Id of the policy that made the denial requestable, for audit. */
  policyId: string;
  /**
   * The backend needs a justification from the caller before it accepts the request: collected
   * before submission over MRTR (`input_required` + sealed `requestState`, SEP-2848 §Collecting
   * submission input). From the policy's `@submission_input("justification")`.
   */
  requiresJustification?: boolean;
  /**
   * `in-band`: the requester's own confirmation lifts this denial (MRTR `input_required` with an
   * approve / reject form; docs/CHANGE-GATE.md §In-band confirmation), no backend is involved.
   * Set only when every determining forbid is `@approval_mode("in-band")`. Absent: out of band.
   */
  approvalMode?: 'in-band';
  /**
   * JSON Pointers of arguments masked for display in the request (docs/APPROVERS.md §Hidden
   * values), from the `@sensitive` of the determining forbids, sorted. Absent: none.
   */
  sensitive?: string[];
  /**
   * The fields an approver may narrow in a counter-proposal, and how (`@narrowable` of the forbid
   * that picks the approver group, `packages/arap/src/narrowing.ts`). Absent: the request cannot be narrowed.
   */
  narrowable?: NarrowingSpec;
}

/**
 * A PDP decision.
 * - `allow`: run the tool.
 * - `deny` with `accessRequest`: a requestable denial (SEP-2848); on re-evaluation after an
 *   approval it maps to `next_action: request` (this approval does not suffice).
 * - `deny` without `accessRequest`: not requestable; `nextAction` says what a re-evaluation
 *   should do (`none` = terminal, `retry` = wait `retryAfterMs` and ask again).
 * `reasons` are operator-authored policy reasons (never user text); `policyIds` are for audit.
 * An evaluation error is a `deny` with `nextAction: 'none'` and reason `policy evaluation error`.
 */
export type Decision =
  | { decision: 'allow'; policyIds: string[] }
  | {
      decision: 'deny';
      accessRequest?: AccessRequestHint;
      nextAction: 'request' | 'retry' | 'none';
      retryAfterMs?: number;
      reasons: string[];
      policyIds: string[];
    };

/** The PDP port. Implementations never throw for a policy outcome; they throw only on misuse. */
export interface PolicyDecisionPoint {
  evaluate(request: AccessEvaluationRequest): Promise<Decision>;
}
