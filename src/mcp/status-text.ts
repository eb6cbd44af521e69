/**
 * Model-facing text: `statusMessage` and `model-immediate-response` (SEP-2848 §Model-facing text
 * is untrusted). Composed only from fixed templates here plus operator-authored policy reasons,
 * passed through `sanitizeReason`. Nothing from the backend, the approver or the client is ever
 * interpolated. A working task is never described as done.
 */
import type { TaskSnapshot } from '../../workflows/types.js';
import { isExecutionLostFencedResult } from '../../workflows/execution-resolution.js';
import { executionErrorKind } from '../../workflows/results.js';

const MAX_REASON = 160;

/**
 * Reduce an operator-authored reason to plain, single-line text: letters, digits, spaces and
 * `.,:$%()'/+-` only (no `;`, `&` or `#`, so no HTML entities), whitespace collapsed, at most
 * 160 characters, ending in a period.
 * Anything else (markup, quotes, brackets, control and format characters, other scripts'
 * look-alikes) is dropped. Returns a fixed fallback when nothing is left.
 */
export function sanitizeReason(text: string): string {
  const cleaned = text
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9 .,:$%()'/+-]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, MAX_REASON)
    .trim();
  if (cleaned.length < 3) return 'This call requires approval.';
  return /[.]$/.test(cleaned) ? cleaned : `${cleaned}.`;
}

/** `statusMessage` for a snapshot; fixed per phase and status. */
export function statusMessage(s: TaskSnapshot): string {
  const reason = sanitizeReason(s.policyReason);
  switch (s.status) {
    case 'completed':
      switch (s.disposition) {
        case 'approved-executed':
          return 'Completed: approved and executed once.';
        case 'execution-error':
          // a lost execution fenced before the tool took effect (`Tool.resolveExecution`) did not run
          if (isExecutionLostFencedResult(s.result))
            return 'Completed: approved, but the execution was lost before the tool took effect; the tool did not run.';
          switch (executionErrorKind(s.result)) {
            case 'not-run':
              return 'Completed: approved, but the call never reached the tool; the tool did not run.';
            case 'answer-discarded':
              return 'Completed: approved, the tool ran once; its answer was too large and was discarded.';
            case 'ran':
              break;
          }
          return 'Completed: approved, the tool ran and reported an error.';
        case 'outcome-unknown':
          return 'Completed: approved, but whether the tool ran is unknown.';
        case 'denied-not-executed':
          return 'Completed: not executed; the tool did not run.';
        default:
          // No recognized disposition: never claim it did not run (SEP-2848 §Execution disposition).
          return 'Completed: whether the tool ran is unknown; treat it as possibly run.';
      }
    case 'cancelled':
      return 'Cancelled; the tool did not run.';
    case 'failed':
      return 'Failed before execution; the tool did not run.';
    default:
      break;
  }
  if (s.status === 'input_required') {
    return `${reason} Input is needed before the approval request can be submitted; the tool has not run.`;
  }
  switch (s.phase) {
    case 'submitting':
      return `${reason} Submitting the approval request; the tool has not run.`;
    case 'resubmitting':
      return `${reason} A further approval was requested; the tool has not run.`;
    case 're-evaluating':
      return 'An approval decision arrived; policy is being re-checked. The tool has not run yet.';
    case 'retry-wait':
      return 'Approved, waiting for access to become effective before re-checking. The tool has not run yet.';
    case 'executing':
      if (s.progress) return `Approved; the tool is running, ${progressText(s.progress)}. It has not finished.`;
      return 'Approved; the tool is running now and has not finished.';
    default:
      return `${reason} Awaiting approval; the tool has not run.`;
  }
}

/**
 * A long-running tool's progress as plain text: "step 3 of 5: applying the migration". The label
 * is tool text, so it is reduced like a reason (letters, digits, spaces and `,:()'/+-` only, at
 * most 60 characters, no period) and left out when nothing is left; the wording never says done.
 */
export function progressText(p: { step: number; of: number; label: string }): string {
  const label = p.label
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9 ,:()'/+-]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 60)
    .trim();
  return `step ${p.step} of ${p.of}${label.length >= 3 ? `: ${label}` : ''}`;
}

/**
 * `io.modelcontextprotocol/model-immediate-response` for a new (or joined) approval task; for one
 * already executing (a task started from the requester's in-band confirmation, docs/CHANGE-GATE.md)
 * it says the tool is running, never that it finished.
 */
export function modelImmediateResponse(s: TaskSnapshot): string {
  if (s.phase === 'executing')
    return 'The call is running now and has not finished. You can continue other work and check the task later for its result.';
  return `${sanitizeReason(s.policyReason)} The call is pending approval and has not run. You can continue other work and check the task later.`;
}
