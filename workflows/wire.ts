/**
 * Wire constants of the tasks extension and of this server, defined once for the workflows, the
 * MCP front (`src/mcp/`), the call binding (`src/binding/`) and the tests. Workflow code may
 * import it: constants and types only, no Node built-ins, nothing from `src/`.
 *
 * Deliberately does not hold the `_meta` keys (`META` in `types.ts`) or the message names
 * (`messages.ts`); and the black-box conformance suite (`scripts/conformance/wire.ts`) keeps its
 * own copies on purpose, since it imports nothing from Countersign.
 */

/** Extension identifier of MCP tasks (SEP-2663): declared by clients, advertised in `server/discover`. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** Extension identifier of tool-call approval (SEP-2848), advertised in `server/discover`. */
export const TOOL_APPROVAL_EXTENSION = 'io.modelcontextprotocol/tool-approval';
/**
 * The extension's earlier identifier, still emitted by some proxies in the capabilities a client
 * declares: accepted as {@link TOOL_APPROVAL_EXTENSION} wherever a client's declaration is read,
 * never emitted (docs/reference/01-identifier-and-capability.md).
 */
export const LEGACY_TOOL_APPROVAL_EXTENSION = 'net.openid.authzen/tool-approval';

/** SEP-2663 task status, as `tasks/get` reports it. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/**
 * Prefix of every approval workflow id: `approval-` + 32 lower-case hex chars
 * (`approvalWorkflowId` in `src/binding/call-binding.ts`). The task id drops it (`task-id.ts`).
 */
export const APPROVAL_WORKFLOW_ID_PREFIX = 'approval-';

/**
 * `inputRequests` key of the justification form, before the task (MRTR, `src/mcp/gate.ts`) and in it
 * (`tasks/update`); also the name of the form's one property (SEP-2848 §Collecting submission input).
 */
export const JUSTIFICATION_INPUT_KEY = 'justification';

/**
 * `inputResponses` key of the in-task justification request made before submitting `generation`
 * (≥ 2): `justification-<generation>`. Unique over the task's lifetime, so an answer to an earlier
 * round can never be replayed into a later one (SEP-2663: an input key is not reused once
 * answered). The pre-task MRTR request keeps {@link JUSTIFICATION_INPUT_KEY}.
 */
export function inTaskJustificationKey(generation: number): string {
  return `${JUSTIFICATION_INPUT_KEY}-${generation}`;
}

/** The answers an elicitation can carry (MCP elicitation: accept, decline, cancel). */
export type ElicitationAction = 'accept' | 'decline' | 'cancel';

/** Accepted justification length, in characters (inclusive bounds). */
export const JUSTIFICATION_LENGTH = { min: 10, max: 1000 } as const;

/** The description of the justification field the approver-facing form shows. */
export const JUSTIFICATION_DESCRIPTION = 'Why this call is needed; shown to the approver.';

/**
 * The justification form's `requestedSchema` (form elicitation), as the in-task request carries it.
 * The MRTR form (`src/mcp/submission-input.ts`) is the zod schema with the same key, bounds and
 * description.
 */
export interface JustificationRequestedSchema {
  type: 'object';
  properties: { justification: { type: 'string'; minLength: number; maxLength: number; description: string } };
  required: ['justification'];
}

/** The justification form's `requestedSchema`; a fresh object each call. */
export function justificationRequestedSchema(): JustificationRequestedSchema {
  return {
    type: 'object',
    properties: {
      [JUSTIFICATION_INPUT_KEY]: {
        type: 'string',
        minLength: JUSTIFICATION_LENGTH.min,
        maxLength: JUSTIFICATION_LENGTH.max,
        description: JUSTIFICATION_DESCRIPTION,
      },
    },
    required: [JUSTIFICATION_INPUT_KEY],
  };
}

/** The in-task form asking for a justification (SEP-2663 `inputRequests` entry, form elicitation). */
export interface JustificationInputRequest {
  method: 'elicitation/create';
  params: { mode: 'form'; message: string; requestedSchema: JustificationRequestedSchema };
}

/**
 * Memo key fixing at a run's start whether its workflow interceptors trace it
 * (`workflows/tracing-interceptors.ts`): `'on'` or `'off'`, from whether the starting process traces
 * (`OTEL_*`, `src/ops/tracing.ts`). A run without the key (started before it existed) is traced.
 */
export const RUN_TRACING_MEMO_KEY = 'tracing';

/** The {@link RUN_TRACING_MEMO_KEY} entry of a new run's memo. */
export function runTracingMemo(traced: boolean): Record<typeof RUN_TRACING_MEMO_KEY, 'on' | 'off'> {
  return { [RUN_TRACING_MEMO_KEY]: traced ? 'on' : 'off' };
}
