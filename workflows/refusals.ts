/**
 * Why the approval workflow refuses an update, as the `type` of the `ApplicationFailure` its
 * synchronous validators throw. A refused update is not recorded in history and changes nothing;
 * the caller tells refusals apart by `type`, never by message text (`src/mcp/task-service.ts`,
 * `src/mcp/http.ts`). Workflow code: constants and one builder, nothing from `src/`.
 *
 * Deliberately does not cover activity failures (`FAILURE` in `types.ts`) or failures of a handler
 * that was accepted.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { JUSTIFICATION_LENGTH } from './wire.js';

/** `ApplicationFailure.type` of each update refusal. */
export const REFUSAL = {
  /** `backendCallback`: a delivery with an already accepted `callbackId` (SEP-2848 §Security, callback authenticity). */
  replayedCallback: 'ReplayedCallback',
  /** `backendCallback`: for a consumed, superseded or unknown generation, or a terminal task (SEP-2848 §Completion, request). */
  staleCallback: 'StaleCallback',
  /**
   * `backendCallback`: for the current generation while its submission is still in flight (the
   * backend answered, the workflow has not recorded the handle yet). Not final: the same delivery
   * is accepted once the handle is recorded, so the receiver asks the backend to retry.
   */
  earlyCallback: 'EarlyCallback',
  /** `provideInput`: the task is not `input_required`. */
  noInputRequested: 'NoInputRequested',
  /** `provideInput`: the outstanding key is neither declined, cancelled, nor an accepted justification of the allowed length. */
  invalidInput: 'InvalidInput',
  /** `provideInput`: an answer names a key that is not outstanding (answered before, or never asked). */
  unknownInputKey: 'UnknownInputKey',
} as const;

/** One of {@link REFUSAL}'s values. */
export type Refusal = (typeof REFUSAL)[keyof typeof REFUSAL];

/**
 * The fixed sentence of each refusal. The `tasks/update` refusals are what the front answers
 * -32602 with ("Invalid params: <sentence>"); none carries caller or backend text.
 */
export const REFUSAL_TEXT: Readonly<Record<Refusal, string>> = {
  [REFUSAL.replayedCallback]: 'replayed callback',
  [REFUSAL.staleCallback]: 'callback for no current generation',
  [REFUSAL.earlyCallback]: 'callback for a submission not recorded yet',
  [REFUSAL.noInputRequested]: 'the task has no outstanding input request',
  [REFUSAL.invalidInput]: `inputResponses must answer the outstanding key: accept with a justification of ${JUSTIFICATION_LENGTH.min} to ${JUSTIFICATION_LENGTH.max} characters, or decline or cancel`,
  [REFUSAL.unknownInputKey]: 'inputResponses names a key that is not outstanding; read inputRequests from tasks/get',
};

/**
 * The failure an update validator throws to refuse: non-retryable, typed, with the fixed sentence.
 * `why`: an optional fixed word for logs (e.g. which check a stale callback failed), carried as
 * the failure's one detail; never caller or backend text.
 */
export function refusal(type: Refusal, why?: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message: REFUSAL_TEXT[type], nonRetryable: true, ...(why ? { details: [why] } : {}) });
}

/** The `why` word of a refusal (see {@link refusal}), or undefined. */
export function refusalWhy(cause: unknown): string | undefined {
  const d = cause instanceof ApplicationFailure ? cause.details?.[0] : undefined;
  return typeof d === 'string' ? d : undefined;
}

/** The refusal `type` of an update failure's cause (`WorkflowUpdateFailedError.cause`), or undefined if it is not one. */
export function refusalOf(cause: unknown): Refusal | undefined {
  const type = cause instanceof ApplicationFailure ? cause.type : undefined;
  return (Object.values(REFUSAL) as Array<string | null | undefined>).includes(type) ? (type as Refusal) : undefined;
}
