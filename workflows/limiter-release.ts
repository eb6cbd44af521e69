/**
 * The approval workflow's side of the submission limiter: give back the pending slot its task
 * holds (`workflows/submission-limiter.ts`). Workflow code only (it sends a signal to an external
 * workflow); not a workflow itself.
 */
import { CancellationScope, getExternalWorkflowHandle, workflowInfo } from '@temporalio/workflow';
import { claimSignal, releaseSignal, type LimiterReservation } from './limiter-messages.js';

/**
 * A function that releases `reservation` once and resolves when the limiter has the signal in its
 * history (so a later `reserve` there already sees the slot free). Repeated calls return the same
 * promise; never rejects (a limiter that is gone holds nothing to release); non-cancellable.
 * Without a reservation (limits off) it does nothing.
 */
export function reservationReleaser(reservation: LimiterReservation | undefined, approvalWorkflowId: string): () => Promise<void> {
  let released: Promise<void> | undefined;
  return () =>
    (released ??= reservation
      ? CancellationScope.nonCancellable(() =>
          getExternalWorkflowHandle(reservation.limiterWorkflowId).signal(releaseSignal, {
            approvalWorkflowId,
            reservationId: reservation.reservationId,
            runId: workflowInfo().runId,
          }),
        ).catch(() => undefined)
      : Promise.resolve());
}

/**
 * Tell the limiter this run holds `reservation` (see `claimSignal`), unless `reserve` created it for
 * this run (`joined: false`). Call once at the start of the approval run; never rejects.
 */
export async function claimReservation(reservation: LimiterReservation | undefined, approvalWorkflowId: string): Promise<void> {
  if (!reservation) return;
  // A reservation this task's own `reserve` created is held by no other run: nothing to claim from
  // (the claim orders a newer run's slot against an older run's late release; see `claimSignal`).
  if (reservation.joined === false) return;
  await CancellationScope.nonCancellable(() =>
    getExternalWorkflowHandle(reservation.limiterWorkflowId).signal(claimSignal, {
      approvalWorkflowId,
      reservationId: reservation.reservationId,
      runId: workflowInfo().runId,
    }),
  ).catch(() => undefined);
}
