/**
 * What a finished approval task means for the call it carried: whether the tool ran (SEP-2848
 * §Execution disposition, §Lifecycle and task status). Kept apart from `tasks-client.ts`, which
 * knows only the tasks extension, so any tasks client can use it on the task it got.
 *
 * - `completed` with disposition `approved-executed` → `executed`;
 * - `completed` with `denied-not-executed` → `not-executed`;
 * - `completed` with `execution-error` or `outcome-unknown` → `possibly-executed`;
 * - `completed` with no disposition, or one this module does not recognize → `possibly-executed`
 *   (a client that does not recognize a disposition treats the operation as possibly executed);
 * - `cancelled` and `failed` → `not-executed` (the tasks extension and SEP-2848 use them only when
 *   the tool did not run);
 * - anything else (not terminal) → `pending`.
 *
 * `mayCallAgain` is true only for `not-executed`: a possibly-executed call must not be retried
 * automatically (SEP-2848 §Execution disposition); a person or the caller's own logic decides after
 * checking the target system. Deliberately does not read the body text or any other `_meta`.
 */

/** `_meta` key of the disposition on a completed approval task's `CallToolResult`. */
export const DISPOSITION_META = 'io.modelcontextprotocol/tool-approval-disposition';

/** The dispositions SEP-2848 defines. */
export const KNOWN_DISPOSITIONS = ['approved-executed', 'denied-not-executed', 'execution-error', 'outcome-unknown'] as const;

/** Whether the tool ran. */
export type ExecutionOutcome = 'executed' | 'not-executed' | 'possibly-executed' | 'pending';

/** The part of a task (`tasks/get`) this reads. */
export interface FinishedTaskLike {
  status: string;
  result?: { _meta?: Record<string, unknown> } | undefined;
}

/** Classify a task; see the module header for the table. Never throws. */
export function executionOutcome(task: FinishedTaskLike): {
  outcome: ExecutionOutcome;
  disposition: string | undefined;
  mayCallAgain: boolean;
} {
  const raw = task.result?._meta?.[DISPOSITION_META];
  const disposition = typeof raw === 'string' ? raw : undefined;
  const outcome = classify(task.status, disposition);
  return { outcome, disposition, mayCallAgain: outcome === 'not-executed' };
}

function classify(status: string, disposition: string | undefined): ExecutionOutcome {
  if (status === 'cancelled' || status === 'failed') return 'not-executed';
  if (status !== 'completed') return 'pending';
  switch (disposition) {
    case 'approved-executed':
      return 'executed';
    case 'denied-not-executed':
      return 'not-executed';
    default:
      // execution-error, outcome-unknown, missing, or unrecognized
      return 'possibly-executed';
  }
}
