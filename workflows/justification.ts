/**
 * The in-task justification form (SEP-2848 §Collecting submission input, in-task) and the reading
 * of its answer, for the approval workflow. Pure functions: workflow code.
 */
import {
  JUSTIFICATION_INPUT_KEY,
  JUSTIFICATION_LENGTH,
  justificationRequestedSchema,
  type ElicitationAction,
  type JustificationInputRequest,
} from './wire.js';

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

/**
 * The accepted justification under `key` in `inputResponses` (the form's property is always
 * `justification`), or undefined when absent, declined, cancelled or invalid.
 */
export function readJustification(responses: Record<string, unknown>, key: string = JUSTIFICATION_INPUT_KEY): string | undefined {
  const r = responses[key] as { action?: unknown; content?: { justification?: unknown } } | undefined;
  const text = r?.action === 'accept' ? r.content?.justification : undefined;
  return typeof text === 'string' && text.length >= JUSTIFICATION_LENGTH.min && text.length <= JUSTIFICATION_LENGTH.max ? text : undefined;
}

/**
 * `decline` or `cancel` when the answer under `key` refuses the form (MCP elicitation: the user
 * declined, or dismissed it); undefined for an accept or anything else.
 */
export function refusedInput(responses: Record<string, unknown>, key: string): Exclude<ElicitationAction, 'accept'> | undefined {
  const action = (responses[key] as { action?: unknown } | undefined)?.action;
  return action === 'decline' || action === 'cancel' ? action : undefined;
}
