/**
 * The per-principal submission limiter's messages and data (SEP-2848 §Security Implications,
 * "Approval-request amplification"), defined once and imported by the
 * limiter workflow, the approval workflow (which releases its reservation), the MCP front and the
 * tests. Deterministic-safe: types, constants and message definitions only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Why a new approval task was refused: too many opened in the window, or too many still pending. */
export type LimitReason = 'rate-limited' | 'too-many-pending';

/** The limits the front enforces; sent with every `reserve`, so a config change applies at once. */
export interface SubmissionLimits {
  /** New approval tasks a principal may open per sliding window (≥ 1). */
  maxSubmissionsPerWindow: number;
  /** Length of the sliding window, ms (≥ 1). */
  submissionWindowMs: number;
  /** Approval tasks a principal may have pending (open) at once (≥ 1). */
  maxPendingPerPrincipal: number;
}

/** Input of `reserve`: the approval workflow id (HMAC of the binding) the caller is about to start or join. */
export interface ReserveRequest {
  approvalWorkflowId: string;
  limits: SubmissionLimits;
}

/**
 * Answer of `reserve`. `joined`: that approval workflow already holds a reservation (a dedup join
 * or a retry of a call whose start was never confirmed), which is returned and nothing is counted.
 */
export type ReserveResult = { admitted: true; reservationId: string; joined: boolean } | { admitted: false; reason: LimitReason };

/** Input of `release`: only the reservation it names is freed (a stale release is a no-op). */
export interface ReleaseRequest {
  approvalWorkflowId: string;
  reservationId: string;
  /** The releasing approval run; a release from a run other than the slot's holder frees nothing. */
  runId?: string;
}

/**
 * `claim`: the approval run that starts with a reservation names itself its holder. A claim for a
 * reservation that an earlier run of the same workflow id already released re-counts it, so a
 * repeat that joined a closing task cannot open an uncounted one.
 */
export interface ClaimRequest {
  approvalWorkflowId: string;
  reservationId: string;
  runId: string;
}

/** What an approval workflow carries to release its slot when it terminalizes. */
export interface LimiterReservation {
  limiterWorkflowId: string;
  reservationId: string;
  /**
   * What `reserve` answered: `false` when this call created the reservation, so no earlier run of
   * the same approval workflow id can hold it and the run need not `claim` it; `true`, or absent
   * (fronts before this field), when it may be held by an earlier run closing meanwhile, so the run
   * claims it (`limiter-release.ts`).
   */
  joined?: boolean;
}

/** One open reservation: the approval task it stands for is pending (or about to start). */
export interface PendingReservation {
  reservationId: string;
  /** Workflow time of the admission, epoch ms. */
  reservedAtMs: number;
  /** The approval run holding the slot, once it claimed it. */
  runId?: string;
}

/** The limiter's whole state; carried across continue-as-new. */
export interface LimiterState {
  /** Workflow times (epoch ms) of new-task admissions, oldest first; pruned to the window on use. */
  admissionsMs: number[];
  /** Open reservations by approval workflow id. */
  pending: Record<string, PendingReservation>;
  /** The window of the latest `reserve`, ms (0 before the first). */
  windowMs: number;
  /** Workflow time of the latest audit of `pending`, epoch ms (0: never). */
  lastAuditAtMs: number;
}

/** Internal tunables of the limiter (tests shrink them); defaults in the workflow. */
export interface LimiterTuning {
  /** A reservation younger than this is never audited away (its start may still be in flight), ms. Default 300000. */
  auditGraceMs: number;
  /** At most one audit per this interval, ms. Default 60000. */
  auditMinIntervalMs: number;
  /** Continue-as-new once history reaches this many events (or the server suggests it). Default 2000. */
  maxHistoryEvents: number;
}

/** Input of the limiter workflow. */
export interface LimiterInput {
  /** SHA-256 hex of the principal key (`ownerKeyOf`), never the principal itself. */
  ownerKey: string;
  /** Set by continue-as-new only. */
  state?: LimiterState;
  tuning?: Partial<LimiterTuning>;
}

/** Counts as the limiter sees them now (operators and tests). */
export interface LimiterCounts {
  pending: number;
  admissionsInWindow: number;
}

/** The limiter's workflow id for a principal: one limiter per principal, shared by every front instance. */
export function limiterWorkflowIdOf(ownerKey: string): string {
  return `limiter-${ownerKey}`;
}

/**
 * Admit a new approval task for this principal, or refuse it with a reason. Atomic: the check and
 * the recording happen in one step of workflow code. Used with Update-with-Start (`USE_EXISTING`).
 */
export const reserveUpdate = defineUpdate<ReserveResult, [ReserveRequest]>('reserve');

/** From the approval workflow when it terminalizes (or ends abnormally): frees its pending slot. */
export const releaseSignal = defineSignal<[ReleaseRequest]>('release');

/** Signal from an approval run at its start: it holds the reservation it was started with. */
export const claimSignal = defineSignal<[ClaimRequest]>('claim');

/** Current counts; read-only. */
export const limiterCountsQuery = defineQuery<LimiterCounts>('limiterCounts');
