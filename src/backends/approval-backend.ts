/**
 * The approval-backend port: SEP-2848's abstract backend contract.
 *
 * Idempotent submit under a caller-supplied key → durable handle; out-of-band resolution into
 * approved | denied | expired | cancelled | failed; on approval, approval material used as an
 * input to re-evaluation; an expiry; optional cancel. Adapters: `arap-http-backend.ts` (AuthZEN
 * ARAP over HTTP). This module holds types only; it does not retry (the workflow's activity
 * retry policy does).
 */
import type { NarrowingSpec } from '@countersign/arap';
import type { Principal } from '../auth/principal.js';
import type { ApprovalMaterial } from '../policy/pdp.js';
import type { ToolPresentation } from '../tools/tool-presentation.js';

/**
 * The MCP client behind a call, as it names itself in `clientInfo` (self-reported: shown to
 * approvers, never decided on). Bounded and with control characters escaped by
 * `src/mcp/client-identity.ts`.
 */
export interface ClientIdentity {
  /** `clientInfo.name`, at most 100 characters. */
  name: string;
  /** `clientInfo.version`, at most 40 characters; absent when the client sent none. */
  version?: string;
}

/** Body of one approval-request submission: exactly what the backend needs, nothing more. */
export interface SubmissionBody {
  /** Tool being requested, e.g. `wire_transfer`. */
  tool: string;
  /** Complete tool arguments (the approver must see what they approve). */
  arguments: Record<string, unknown>;
  /** The requester (originating principal). */
  requester: Principal;
  /** Approver group from the policy's access-request hint. */
  approverGroup: string;
  /** Operator-authored reason from the policy. */
  reason: string;
  /** Requested decision deadline, ISO 8601. */
  expiresAt: string;
  /** SHA-256 (hex) of the JCS call binding, shown to approvers so they can compare. */
  bindingDigest: string;
  /** Submission generation within the task (1 for the first request). */
  generation: number;
  /** Where the backend should POST signed status-change callbacks; optional. */
  callbackUrl?: string;
  /** The caller's justification, when the policy asked for one (at most 1000 characters). */
  justification?: string;
  /** Title, upstream and annotation hints of the tool, for the approver; optional (`src/tools/tool-presentation.ts`). */
  toolInfo?: ToolPresentation;
  /** The MCP client that made the call, when it named itself; optional. */
  client?: ClientIdentity;
  /** The MCP task id this request belongs to (added by the submitting activity): what follower reports name. */
  taskRef?: string;
  /** The fields an approver may narrow and how (`AccessRequestHint.narrowable`); absent: not narrowable. */
  narrowable?: NarrowingSpec;
}

/** The backend's durable, resumable handle for one submission (ARAP task handle). */
export interface BackendHandle {
  /** Backend request id. */
  requestId: string;
  /** Authoritative status endpoint (absolute URL). Never shown to MCP clients. */
  statusUrl: string;
  /** Cancellation endpoint, when the backend supports cancel. */
  cancelUrl?: string;
  /** Decision deadline the backend set, ISO 8601. */
  expiresAt: string;
}

/** Authoritative status of one submission. */
export type BackendStatus =
  | { state: 'pending'; expiresAt: string }
  | { state: 'approved'; approval: ApprovalMaterial }
  /** `counterProposal`: the approver denied this call and would accept a narrower one (docs/APPROVERS.md §Narrowing a request). */
  | { state: 'denied'; counterProposal?: CounterProposal }
  /** `reason: 'unfollowed'`: closed by the backend because no client followed the task (docs/APPROVERS.md §Who is waiting). */
  | { state: 'expired'; reason?: 'unfollowed' }
  | { state: 'cancelled' }
  | { state: 'failed'; message: string };

/**
 * A narrower call an approver would accept instead of the denied one: `tool`, its complete
 * `arguments` as the backend holds them (a field hidden from approvers as its `sha256:` digest), and
 * `expiresAt` (ISO 8601), until when the same principal's new call with exactly these arguments is
 * approved by the proposal (SEP-2848 §The task handle is not authority: a new call, evaluated fresh).
 */
export interface CounterProposal {
  tool: string;
  arguments: Record<string, unknown>;
  expiresAt: string;
}

/** Errors the port raises. `retryable: false` means re-sending the same call cannot succeed. */
export class BackendError extends Error {
  constructor(
    readonly code: 'conflict' | 'invalid' | 'unavailable' | 'not-found' | 'unauthorized',
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'BackendError';
  }
}

/** The approval-backend port (SEP-2848 §Relationship to existing specifications). */
export interface ApprovalBackend {
  /**
   * Submit under `idempotencyKey`. Same key + equivalent body → the same handle; same key +
   * different body → `BackendError('conflict')`. Throws `BackendError('unavailable', retryable)`
   * on transport failure or 5xx.
   */
  submit(body: SubmissionBody, idempotencyKey: string): Promise<BackendHandle>;
  /** Fetch authoritative status. Throws `BackendError('not-found')` for an unknown handle. */
  status(handle: BackendHandle): Promise<BackendStatus>;
  /**
   * Cancel the request. Returns false when the backend has no cancel endpoint or the request is
   * already resolved; never throws for those cases.
   */
  cancel(handle: BackendHandle): Promise<boolean>;
}
