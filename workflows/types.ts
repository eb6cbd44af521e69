/**
 * Plain-data types shared by the approval workflow, its activities and the MCP front.
 * Deterministic-safe: types and constants only, no Node built-ins, no adapters.
 */
import type { CallBinding } from '../src/binding/call-binding.js';
import type { BackendHandle, BackendStatus, ClientIdentity, CounterProposal, SubmissionBody } from '../src/backends/approval-backend.js';
import type { AccessRequestHint, ApprovalMaterial } from '../src/policy/pdp.js';
import type { LongRunning, ToolProgress, ToolResult } from '../src/tools/tool.js';
import type { ToolPresentation } from '../src/tools/tool-presentation.js';
import type { LimiterReservation } from './limiter-messages.js';
import type { JustificationInputRequest, TaskStatus } from './wire.js';

export type {
  CallBinding,
  BackendHandle,
  BackendStatus,
  CounterProposal,
  SubmissionBody,
  AccessRequestHint,
  ApprovalMaterial,
  ToolResult,
  LongRunning,
  ToolProgress,
};

/** SEP-2848 §Execution disposition; set only on `completed` tasks. */
export type Disposition = 'approved-executed' | 'denied-not-executed' | 'execution-error' | 'outcome-unknown';

/** `_meta` keys this extension and its neighbours use. */
export const META = {
  disposition: 'io.modelcontextprotocol/tool-approval-disposition',
  authorization: 'io.modelcontextprotocol/authorization',
  modelImmediateResponse: 'io.modelcontextprotocol/model-immediate-response',
  /**
   * Countersign's own key on a working task while a long-running tool executes:
   * `{progress, total, message}`, the fields of MCP `notifications/progress` (neither SEP-2663 nor
   * SEP-2848 defines one; docs/CHANGE-GATE.md §Progress).
   */
  progress: 'dev.countersign/progress',
} as const;

/**
 * Where a non-terminal task is in its lifecycle. The MCP front turns it into a fixed-template
 * `statusMessage`; no backend or approver text is ever carried here.
 */
export type Phase = 'submitting' | 'awaiting-approval' | 're-evaluating' | 'retry-wait' | 'resubmitting' | 'executing' | 'terminal';

/** A `CallToolResult` as stored in the terminal task (content blocks of any type, see `ContentBlock`). */
export interface StoredCallToolResult {
  content: ToolResult['content'];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
  _meta: Record<string, unknown>;
}

/** Why a task ended as a terminal denial; picks the fixed sentence in the result body. */
export type DenialReason =
  | 'backend-denied'
  | 'request-expired'
  | 'approval-expired'
  | 'policy-denied'
  | 'request-chain-exhausted'
  | 'tool-changed'
  | 'binding-invalid'
  | 'input-declined'
  /** The approval service closed the request because no client followed the task (`status_reason: "unfollowed"`). */
  | 'request-unfollowed';

/**
 * The task as the workflow sees it: everything `tasks/get` needs, nothing the client must not see
 * except `ownerKey` (which the MCP front compares and strips). Times are ISO 8601; `ttlMs` is
 * measured from `createdAt` (SEP-2663): null until the first deadline is known; while the task is
 * working it only grows, covering the latest pending deadline plus `resultRetentionMs`; at
 * terminalization it is recomputed to terminalizedAt + `resultRetentionMs` (shorter than the
 * pending cover when the task ends early) and then never changes (SEP-2848 §Retention;
 * `ApprovalState` in `approval-state.ts`).
 */
export interface TaskSnapshot {
  status: TaskStatus;
  phase: Phase;
  /** SHA-256 hex of the originating principal key; the front checks the caller against it. */
  ownerKey: string;
  /** Operator-authored policy reason (from the policy file); sanitized again at the front. */
  policyReason: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number | null;
  pollIntervalMs: number;
  /** Current submission generation (1-based); 0 before the first submission is recorded. */
  generation: number;
  /** True once the execution claim was made (SEP-2848 §Completion). */
  claimed: boolean;
  /** Set on `completed`. */
  result?: StoredCallToolResult;
  /** Set on `completed`; mirrors `result._meta[disposition]`. */
  disposition?: Disposition;
  /** Set on `failed`: the SEP-2663 error object. */
  error?: { code: number; message: string };
  /** Set while `input_required`: the outstanding requests, keyed as `tasks/update` must answer them. */
  inputRequests?: Record<string, JustificationInputRequest>;
  /**
   * Progress of a long-running execution while `executing`, from the attempt's latest heartbeat.
   * Never set by the workflow: the MCP front adds it when it reads the task (`task-service.ts`).
   */
  progress?: ToolProgress;
}

/** Tunables the workflow runs with; fixed at start so replays see the same values. */
export interface ApprovalWorkflowConfig {
  /** How long a terminal result stays retrievable, ms (SEP-2848 resultRetention). */
  resultRetentionMs: number;
  /** `pollIntervalMs` suggested to MCP clients. */
  clientPollIntervalMs: number;
  /** First backend status poll after a submission, ms; doubles up to `statusPollMaxMs`. */
  statusPollInitialMs: number;
  /** Cap of the status-poll backoff, ms (about an hour keeps history small for week-long waits). */
  statusPollMaxMs: number;
  /** Maximum number of submissions per task (1 = no chained requests). */
  maxGenerations: number;
  /** Backoff base and cap for a `retry` re-evaluation without a retry-after hint, ms. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** The tool's execution deadline after the claim, ms; past it with no result: outcome-unknown. */
  executionTimeoutMs: number;
  /** Upper bound on any request window the backend or policy asks for, ms. */
  maxRequestWindowMs: number;
  /**
   * Start-to-close timeout of each backend / policy activity attempt, ms; default 30000. A call
   * lost with its worker (crash) is retried only after it, so it is also the recovery delay.
   */
  backendCallTimeoutMs?: number;
  /** Base URL for backend callbacks; the workflow appends `/<workflowId>/<generation>`. */
  callbackBaseUrl?: string;
  /**
   * Upsert the typed search attributes of `search-attributes.ts` on every transition; set only when
   * they are registered on the namespace (an unregistered one fails the workflow task). Default off.
   */
  searchAttributes?: boolean;
}

/** Input of the approval workflow. */
export interface ApprovalWorkflowInput {
  binding: CallBinding;
  accessRequest: AccessRequestHint;
  /** SHA-256 hex of the principal key (see `TaskSnapshot.ownerKey`). */
  ownerKey: string;
  /** Submission input collected before the task existed (MRTR), sent with every generation. */
  submissionInput?: { justification?: string };
  config: ApprovalWorkflowConfig;
  /** The submission-limiter slot this task holds; released when it terminalizes (`limiter-release.ts`). */
  limiter?: LimiterReservation;
  /**
   * The tool's long-running declaration captured at start (`Tool.longRunning`): the one execution
   * attempt then gets `timeoutMs` and a heartbeat timeout of `heartbeatMs` instead of
   * `config.executionTimeoutMs`. Absent: the tool is not long-running.
   */
  execution?: LongRunning;
  /**
   * The requester's in-band confirmation, given before the task existed
   * (`@approval_mode("in-band")`, `src/mcp/in-band-confirmation.ts`): it stands in for the backend's
   * approval, so the run submits nothing and claims at once (valid for
   * `accessRequest.requestTtlMs` from the run's start). In history, it is the task's record of that decision.
   */
  confirmation?: InBandConfirmation;
  /**
   * What approvers are shown about the tool (title, upstream, annotation hints), set by the MCP
   * front at creation and copied into every submission body. Absent for a front that passed none (tests).
   */
  toolInfo?: ToolPresentation;
  /**
   * The MCP client that made the call (`clientInfo`), set by the front at creation and copied into
   * every submission body for approvers to see. Only the activity input carries it: no command
   * changes, so recorded runs replay without a patch. Absent when the client named none.
   */
  client?: ClientIdentity;
}

/** An in-band confirmation by the requester (docs/CHANGE-GATE.md §In-band confirmation). */
export interface InBandConfirmation {
  mode: 'in-band';
  confirmedBy: 'requester';
  /** ISO 8601, when the gate received the approving answer. */
  confirmedAt: string;
  /** The policy that asked for the confirmation. */
  policyId: string;
  /** The requester's optional reason (≤ 500 characters); never shown to approvers or the model. */
  reason?: string;
}

/**
 * What a re-evaluation after approval resolved to (SEP-2848 §Completion). `policyIds`: the
 * determining policies, for the evidence receipt only (absent for
 * denials decided before the PDP was asked: `tool-changed`, `binding-invalid`).
 */
export type ReEvaluation = (
  | { outcome: 'allow' }
  | { outcome: 'retry'; retryAfterMs?: number }
  | { outcome: 'request'; accessRequest: AccessRequestHint }
  | { outcome: 'deny'; reason: DenialReason }
) & { policyIds?: string[] };

/** Callback update payload: a hint only; the workflow fetches authoritative status. */
export interface BackendCallback {
  generation: number;
  requestId: string;
  /**
   * Identity of this delivery (SHA-256 hex of its signed timestamp and body): a replay of an
   * accepted callback carries the same id, however its signature header is spelled, and is
   * rejected by the update's validator.
   */
  callbackId: string;
}

/** What `tasks/cancel` achieved (SEP-2848 §Cancellation). */
export type CancelOutcome = 'cancelled' | 'already-claimed' | 'already-terminal';

/** Activity failure `type`s the workflow branches on. */
export const FAILURE = {
  backendConflict: 'BackendConflict',
  backendInvalid: 'BackendInvalid',
  backendUnauthorized: 'BackendUnauthorized',
  backendNotFound: 'BackendNotFound',
  toolExecutionError: 'ToolExecutionError',
  /** The tool provably did not run (`ToolNotExecutedError`, or the tool or its arguments are gone): execution-error saying so. */
  toolNotExecuted: 'ToolNotExecuted',
  /** The tool ran; its answer was too large and was discarded (`ToolAnswerDiscardedError`); details `[{sizeBytes, limitBytes}]`. */
  toolAnswerDiscarded: 'ToolAnswerDiscarded',
  /** The tool cannot tell whether its effect happened; handled like a lost attempt (outcome-unknown). */
  toolOutcomeUnknown: 'ToolOutcomeUnknown',
  executionAttemptRefused: 'ExecutionAttemptRefused',
  /** A fallback status poll found nothing new: retried by the poll's backoff (`fetchApprovalStatus` with `poll`). */
  approvalPending: 'ApprovalPending',
} as const;
