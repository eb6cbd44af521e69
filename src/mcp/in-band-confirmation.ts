/**
 * In-band confirmation: a requestable denial the *requester* lifts (`@approval_mode("in-band")`,
 * `src/policy/cedar-annotations.ts`; docs/CHANGE-GATE.md §In-band confirmation).
 *
 * The first call answers `input_required` (MRTR, SEP-2322) with one form elicitation under
 * `confirmation` (`decision`: approve / reject, optional `reason`) and a sealed `requestState`
 * (the same codec and rounds as the pre-task justification, `submission-input.ts`: bound to the
 * method, the principal and the call binding digest). The re-sent call with `approve` proceeds;
 * `reject`, a declined or a cancelled form ends the call with an `isError` result saying the tool
 * did not run; accepted content that does not match the form (an unknown field, a decision other
 * than approve / reject, a reason over 500 characters) is -32602 with the failing paths, as for
 * tool arguments. This module holds the form, the reading of the answer and those results.
 *
 * Deliberately does not: ask anyone but the caller, open a backend request, or lift an
 * out-of-band denial (the PDP only answers in band when every determining forbid is in band).
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { META } from '../../workflows/types.js';
import type { InBandConfirmation } from '../../workflows/types.js';
import { refusedInput } from '../../workflows/justification.js';
import { isRecord } from './narrow.js';

/** The `inputRequests` / `inputResponses` key of the confirmation form. */
export const CONFIRMATION_INPUT_KEY = 'confirmation';

/** The confirmation form (also validates the answer); the SDK turns it into the `requestedSchema`. */
export const ConfirmationSchema = z.object({
  decision: z.enum(['approve', 'reject']).describe('approve runs the call now; reject ends it without running.'),
  reason: z.string().max(500).optional().describe('Optional reason, kept with the decision (at most 500 characters).'),
});

/** The answer's validator: the form, strict (a field the form did not ask for is refused). */
const ConfirmationAnswerSchema = ConfirmationSchema.strict();

/**
 * What the caller answered: approve (with an optional reason), reject, a refused form, accepted
 * content that does not match the form (`invalid`, with paths under `confirmation` and messages),
 * or no answer yet.
 */
export type ConfirmationAnswer =
  | { kind: 'approve'; reason?: string }
  | { kind: 'reject'; reason?: string }
  | { kind: 'refused'; action: 'decline' | 'cancel' }
  | { kind: 'invalid'; issues: Array<{ path: string; message: string }> }
  | { kind: 'none' };

/**
 * Read the answer under {@link CONFIRMATION_INPUT_KEY}: no answer (or one that is not an
 * elicitation result) is `none` (asked again); an `accept` whose content fails the strict form is
 * `invalid`.
 */
export function readConfirmation(inputResponses: Record<string, unknown> | undefined): ConfirmationAnswer {
  const responses = inputResponses ?? {};
  const refused = refusedInput(responses, CONFIRMATION_INPUT_KEY);
  if (refused) return { kind: 'refused', action: refused };
  const r = responses[CONFIRMATION_INPUT_KEY];
  if (!isRecord(r) || r.action !== 'accept') return { kind: 'none' };
  const parsed = ConfirmationAnswerSchema.safeParse(r.content);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: [CONFIRMATION_INPUT_KEY, ...i.path].join('.'), message: i.message }));
    return { kind: 'invalid', issues };
  }
  return { kind: parsed.data.decision, ...(parsed.data.reason ? { reason: parsed.data.reason } : {}) };
}

/** The message of the form: the sanitized policy reason, then what each choice does. */
export function confirmationMessage(reason: string): string {
  return `${reason} Approve to run this call now, or reject to end it. The call has not run.`;
}

/**
 * The durable record of an approval (`approve` answer) for the task's input and the logs:
 * `confirmedAt` ISO 8601, the policy id that asked, and the caller's optional reason.
 */
export function confirmationRecord(policyId: string, reason: string | undefined, now: Date = new Date()): InBandConfirmation {
  return { mode: 'in-band', confirmedBy: 'requester', confirmedAt: now.toISOString(), policyId, ...(reason ? { reason } : {}) };
}

/**
 * The answer to a rejected, declined or cancelled confirmation: an `isError` result saying the
 * tool did not run, with the SEP-2643 envelope at `remediation: "unavailable"` — nothing is
 * pending; making the call again asks again.
 */
export function confirmationRejectedResult(reason: string, how: 'reject' | 'decline' | 'cancel'): CallToolResult {
  const what =
    how === 'reject'
      ? 'You rejected the confirmation'
      : how === 'decline'
        ? 'The confirmation was declined'
        : 'The confirmation was cancelled';
  return {
    content: [
      {
        type: 'text',
        text: `Not executed: ${reason} ${what}, so the tool did not run. Nothing is pending; making the call again asks again.`,
      },
    ],
    isError: true,
    _meta: { [META.authorization]: { reason: 'insufficient_authorization', remediation: 'unavailable' } },
  };
}
