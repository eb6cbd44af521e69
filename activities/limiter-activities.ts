/**
 * The submission limiter's one activity: which of the approval workflows it holds a reservation
 * for are no longer running. It lets the limiter drop a slot whose approval workflow died without
 * releasing it (terminated by an operator, failed, or never started because the front crashed
 * between `reserve` and the start), so the pending count cannot leak.
 *
 * Read-only and safe to repeat. Uses the worker's own client (`Context.current().client`) unless a
 * client is injected. Deliberately does not read workflow state or payloads: status only.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { isWorkflowNotFound } from '../src/temporal/not-found.js';

/** The limiter's activity set, as the limiter workflow sees it (imported there as a type only). */
export interface LimiterActivities {
  /**
   * Of `workflowIds`, those with no running execution (closed, or never started), in input order.
   * Throws when Temporal cannot be asked; the limiter then keeps every slot.
   */
  closedWorkflowIds(workflowIds: string[]): Promise<string[]>;
}

/** Build the limiter activities; `client` defaults to the executing worker's client. */
export function createLimiterActivities(deps: { client?: Client } = {}): LimiterActivities {
  return {
    async closedWorkflowIds(workflowIds) {
      const client = deps.client ?? Context.current().client;
      const closed = new Set<string>();
      await Promise.all(
        workflowIds.map(async (id) => {
          try {
            const desc = await client.workflow.getHandle(id).describe();
            if (desc.status.name !== 'RUNNING') closed.add(id);
          } catch (err) {
            if (isWorkflowNotFound(err)) closed.add(id);
            else throw err;
          }
        }),
      );
      return workflowIds.filter((id) => closed.has(id));
    },
  };
}
