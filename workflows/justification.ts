/**
 * The in-task justification form (SEP-2848 §Collecting submission input, in-task) and the reading
 * of its answer, for the approval workflow. Pure functions: workflow code.
 */
import { JUSTIFICATION_INPUT_KEY, JUSTIFICATION_LENGTH, justificationRequestedSchema, type JustificationInputRequest } from './wire.js';

/** The form an in-task justification request shows (fixed text; no backend or policy text). */
export function justificationRequest(): JustificationInputRequest {
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: 'A further approval is needed. Give a justification for the approver (10 to 1000 characters). The call has not run.',
      requestedSchema: justificationRequestedSchema(),
    },
  };
}

/** The accepted justification in `inputResponses`, or undefined when absent, declined or invalid. */
export function readJustification(responses: Record<string, unknown>): string | undefined {
  const r = responses[JUSTIFICATION_INPUT_KEY] as { action?: unknown; content?: { justification?: unknown } } | undefined;
  const text = r?.action === 'accept' ? r.content?.justification : undefined;
  return typeof text === 'string' && text.length >= JUSTIFICATION_LENGTH.min && text.length <= JUSTIFICATION_LENGTH.max ? text : undefined;
}
