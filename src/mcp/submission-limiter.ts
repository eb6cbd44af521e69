/**
 * Per-principal submission limits at the MCP front (SEP-2848 §Security Implications,
 * "Approval-request amplification"; docs/DESIGN.md §4.2).
 *
 * Before a requestable denial opens an approval task, the caller's limiter workflow
 * (`limiter-<ownerKey>`, `workflows/submission-limiter.ts`) is asked to `reserve` a slot for the
 * approval workflow id, with Update-with-Start (`USE_EXISTING`): the count lives in Temporal, so
 * every instance of the front shares it. A call that joins its own pending task (same binding →
 * same approval workflow id) is admitted as a join and consumes nothing; a refused call whose
 * approval workflow is nevertheless running (started before the limits, or in a release race) is
 * still let through to join it. Anything else past a limit throws `SubmissionLimitedError`, which
 * the gate answers with `submissionLimitedResult`: a non-requestable denial with its own reason, so
 * the agent does not retry-loop.
 *
 * Deliberately does not: count in process memory, wait for a slot to free up, or fail open (a
 * limiter that cannot be reached is an error the caller may retry; no task is opened meanwhile).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../temporal/not-found.js';
import type { submissionLimiterWorkflow } from '../../workflows/submission-limiter.js';
import {
  limiterWorkflowIdOf,
  reserveUpdate,
  type LimiterReservation,
  type LimitReason,
  type ReserveResult,
  type SubmissionLimits,
} from '../../workflows/limiter-messages.js';
import { META } from '../../workflows/types.js';
import { runTracingMemo } from '../../workflows/wire.js';

export type { LimitReason, SubmissionLimits };

/** Thrown by `reserve` (and so by the task service's `createOrJoin`) past a limit. Never crosses the wire. */
export class SubmissionLimitedError extends Error {
  constructor(readonly reason: LimitReason) {
    super(`approval submission refused: ${reason}`);
    this.name = 'SubmissionLimitedError';
  }
}

/** The front's handle on the limiters. */
export interface SubmissionLimiter {
  /**
   * Reserve a pending slot of `ownerKey` for the approval workflow `approvalWorkflowId` (a join of
   * a reserved one returns its reservation, uncounted). Resolves with the reservation the approval
   * workflow must carry, or null when the call may only join an already running task. Throws
   * `SubmissionLimitedError` past a limit, or the Temporal error after 3 failed attempts.
   */
  reserve(ownerKey: string, approvalWorkflowId: string): Promise<LimiterReservation | null>;
}

/** Options: the Temporal client, the task queue the worker polls, and the limits. */
export interface SubmissionLimiterOptions {
  client: Client;
  taskQueue: string;
  limits: SubmissionLimits;
  /** Whether a limiter run this client starts is traced by its workflow interceptors (memo `tracing`); default false. */
  traceRuns?: boolean;
}

const ATTEMPTS = 3;

/** Build the limiter client. */
export function createSubmissionLimiter(opts: SubmissionLimiterOptions): SubmissionLimiter {
  const { client } = opts;

  const reserveOnce = (ownerKey: string, approvalWorkflowId: string): Promise<ReserveResult> => {
    const startWorkflowOperation = new WithStartWorkflowOperation<typeof submissionLimiterWorkflow>('submissionLimiterWorkflow', {
      workflowId: limiterWorkflowIdOf(ownerKey),
      taskQueue: opts.taskQueue,
      args: [{ ownerKey }],
      workflowIdConflictPolicy: 'USE_EXISTING',
      memo: runTracingMemo(opts.traceRuns ?? false),
    });
    return client.workflow.executeUpdateWithStart(reserveUpdate, {
      args: [{ approvalWorkflowId, limits: opts.limits }],
      startWorkflowOperation,
    });
  };

  const isRunning = async (workflowId: string): Promise<boolean> => {
    try {
      return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (err) {
      if (isWorkflowNotFound(err)) return false;
      throw err;
    }
  };

  return {
    async reserve(ownerKey, approvalWorkflowId) {
      let result: ReserveResult | undefined;
      for (let attempt = 1; !result; attempt++) {
        try {
          result = await reserveOnce(ownerKey, approvalWorkflowId);
        } catch (err) {
          // The limiter run may have closed (idle) or continued-as-new under the update: a retry
          // starts or reaches the current run. Reserve is idempotent per approval workflow id.
          if (attempt >= ATTEMPTS) throw err;
          await new Promise((r) => setTimeout(r, 50 * attempt));
        }
      }
      if (result.admitted)
        return { limiterWorkflowId: limiterWorkflowIdOf(ownerKey), reservationId: result.reservationId, joined: result.joined };
      if (await isRunning(approvalWorkflowId)) return null; // joining a running task never consumes budget
      throw new SubmissionLimitedError(result.reason);
    },
  };
}

const LIMIT_TEXT: Record<LimitReason, string> = {
  'rate-limited':
    'Not executed: too many approval requests were opened for this caller recently, so no approval request was made. ' +
    'This denial cannot be approved and the tool did not run. Do not retry this call until the rate-limit window has passed.',
  'too-many-pending':
    'Not executed: this caller has too many approval requests pending, so no new approval request was made. ' +
    'This denial cannot be approved and the tool did not run. Wait until pending requests are decided, or cancel some, before calling again.',
};

/**
 * The `CallToolResult` for a call refused by a submission limit: `isError`, a fixed sentence per
 * reason (no variable text), and the SEP-2643 envelope with `remediation: "unavailable"`, so the
 * denial is not requestable (SEP-2848: "returning a non-requestable denial on a limit so the agent
 * does not retry-loop").
 */
export function submissionLimitedResult(reason: LimitReason): CallToolResult {
  return {
    content: [{ type: 'text', text: LIMIT_TEXT[reason] }],
    isError: true,
    _meta: { [META.authorization]: { reason: 'insufficient_authorization', remediation: 'unavailable' } },
  };
}
