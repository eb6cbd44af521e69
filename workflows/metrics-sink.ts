/**
 * The sink through which the approval workflow reports metrics to its worker
 * (`src/ops/metrics.ts`). Sinks leave no trace in history and are not called during replay, so
 * adding or changing a call needs no patch and a replayed run is not counted twice.
 *
 * Values are closed sets and workflow-time durations only: never an argument, a principal or a task id.
 */
import type { Sinks } from '@temporalio/workflow';
import type { Disposition } from './types.js';
import type { TaskStatus } from './wire.js';

/** The backend's final answer for a request, as the decision histogram labels it. */
export type DecisionOutcome = 'approved' | 'denied' | 'expired' | 'cancelled' | 'failed';

/** Why a window ended a task, for the expiry counter. */
export type ExpiryKind = 'request' | 'approval';

/** The `countersignMetrics` sink's functions; the worker registers them (`src/worker.ts`). */
export interface CountersignSinks extends Sinks {
  countersignMetrics: {
    /** A request was decided `seconds` (workflow time) after its submission. */
    decided(outcome: DecisionOutcome, seconds: number): void;
    /** The task reached `status` (with `disposition` when completed; `expiry` when a window ended it). */
    terminal(status: TaskStatus, disposition: Disposition | undefined, expiry: ExpiryKind | undefined): void;
  };
}
