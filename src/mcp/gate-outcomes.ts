/**
 * The gate's outcome handlers (`gate.ts` step 5; docs/DESIGN.md §3 steps 5–6): one function per
 * outcome of the policy decision, each answering the `tools/call` or throwing its JSON-RPC error.
 *
 * - {@link allowInline}: allowed → the tool runs inline; its result (an `isError` one when it throws);
 * - {@link denyNotRequestable}: denied for good → an `isError` result saying the tool did not run,
 *   with the SEP-2643 envelope at `remediation: "unavailable"`;
 * - {@link confirmInBand}: an in-band denial (`@approval_mode("in-band")`, docs/CHANGE-GATE.md) →
 *   the requester's MRTR confirmation, then the call runs (inline, or as a task for a long-running
 *   tool and a client that follows tasks);
 * - {@link requestableWithoutTasks}: a requestable denial for a client without tasks when no
 *   companion tools are served → the degraded `isError` result, or -32021;
 * - {@link withSubmissionInput}: a requestable denial whose backend needs a justification → the
 *   MRTR form first (SEP-2848 §Collecting submission input), then the task;
 * - {@link openTask}: a requestable denial → start or join the approval workflow:
 *   `CreateTaskResult` (SEP-2663), or for a client without tasks the plain tier's result naming the
 *   approval (`approval-tools.ts`); past a submission limit a non-requestable denial.
 *
 * Every input round is bound to the call: the sealed `requestState` carries the binding digest and
 * the round (`submission-input.ts`), at most {@link MAX_INPUT_ROUNDS} rounds (-32602 after).
 *
 * A requestable or in-band call that ends here without a task (confirmed in band and run inline,
 * confirmation or justification refused, no tasks, a submission limit) is handed to the call
 * records when they are on ({@link recordNoTask}); allowed and plainly denied calls are recorded
 * at the decision (`gate.ts`), calls with a task by their workflow.
 */
import { randomUUID } from 'node:crypto';
import { acceptedContent, inputRequired, type CallToolResult, type InputRequiredResult } from '@modelcontextprotocol/server';
import type { AccessRequestHint, Decision } from '../policy/pdp.js';
import { ToolAnswerDiscardedError, ToolNotExecutedError, ToolOutcomeUnknownError, type Tool } from '../tools/tool.js';
import { toolPresentation, withSensitive } from '../tools/tool-presentation.js';
import { META } from '../../workflows/types.js';
import { JUSTIFICATION_INPUT_KEY } from '../../workflows/wire.js';
import { refusedInput } from '../../workflows/justification.js';
import { approvalOpenedResult } from './approval-tools.js';
import { inputRoundsExhausted, invalidInputResponse, missingTasksCapability, taskCreationPending } from './errors.js';
import type { GateDeps, GatedCall, GateResult } from './gate.js';
import {
  CONFIRMATION_INPUT_KEY,
  ConfirmationSchema,
  confirmationMessage,
  confirmationRecord,
  confirmationRejectedResult,
  readConfirmation,
} from './in-band-confirmation.js';
import { toolCallResult } from './sdk-gaps.js';
import { sanitizeReason } from './status-text.js';
import { JustificationSchema, MAX_INPUT_ROUNDS } from './submission-input.js';
import { SubmissionLimitedError, submissionLimitedResult } from './submission-limiter.js';
import { createTaskResult } from './task-projection.js';
import { TaskCreationPendingError, type CreateOptions } from './task-service.js';
import type { CreateTaskResult } from './wire-results.js';

/** The SEP-2643 envelope of a denial that nothing can lift (nothing is pending). */
const UNAVAILABLE = { reason: 'insufficient_authorization', remediation: 'unavailable' } as const;

/**
 * A requestable (`outcome` `requestable`) or in-band call ends here without a task: keep its call
 * record (`src/policy/call-records.ts`, for policy replay), when call records are on. Returns at
 * once; the record is written after the answer.
 */
function recordNoTask(deps: GateDeps, g: GatedCall, outcome: 'in-band' | 'requestable'): void {
  deps.callRecords?.record(
    {
      subject: g.call.principal,
      action: { name: 'tools/call' },
      resource: { type: 'tool', id: g.tool.name },
      context: { arguments: g.args },
    },
    outcome,
    () => deps.tasks.referenceOf(g.binding()),
  );
}

/**
 * Allowed: write the audit line, own the tool's key, run inline. The line is the one the call's
 * child logger would write (its bindings first), without building a child for one line, and without
 * the binding and its keyed reference when info lines are not written.
 */
export async function allowInline(deps: GateDeps, g: GatedCall, policyIds: string[]): Promise<CallToolResult> {
  if (deps.logger.isLevelEnabled('info'))
    deps.logger.info(
      { tool: g.tool.name, callRef: deps.tasks.referenceOf(g.binding()), decision: 'allow', policyIds },
      'tools/call allowed; running inline',
    );
  await g.ownership.own();
  return runInline(g);
}

/**
 * Run the tool inline (an allowed or in-band-confirmed call): its result, or an `isError` result
 * when it throws, saying what happened: the tool's own text for `ToolNotExecutedError` (it did
 * not run) and `ToolAnswerDiscardedError` (it ran; its answer was discarded); that it may have run
 * for `ToolOutcomeUnknownError`; that it ran and failed for anything else.
 */
async function runInline(g: GatedCall): Promise<CallToolResult> {
  try {
    const out = await g.tool.execute(g.args, { executionId: `inline/${randomUUID()}` });
    return toolCallResult({
      content: out.content,
      ...(out.structuredContent ? { structuredContent: out.structuredContent } : {}),
      isError: out.isError === true,
    });
  } catch (err) {
    g.log().warn({ err: err instanceof Error ? err.name : undefined }, 'inline tool execution threw');
    return { content: [{ type: 'text', text: inlineFailureText(err) }], isError: true };
  }
}

function inlineFailureText(err: unknown): string {
  if (err instanceof ToolNotExecutedError || err instanceof ToolAnswerDiscardedError) return err.message;
  if (err instanceof ToolOutcomeUnknownError)
    return 'The tool may or may not have run: no answer came, so whether it took effect is unknown and a side effect may have occurred.';
  return 'The tool ran and failed; a side effect may have occurred.';
}

/** Denied, not requestable: the policy's reasons (sanitized), and that the tool did not run. */
export function denyNotRequestable(g: GatedCall, decision: Extract<Decision, { decision: 'deny' }>): CallToolResult {
  g.log().info({ decision: 'deny', requestable: false, policyIds: decision.policyIds }, 'tools/call denied');
  const reason = decision.reasons.length ? decision.reasons.map(sanitizeReason).join(' ') : 'Policy does not allow this call.';
  return {
    content: [{ type: 'text', text: `Not executed: ${reason} This denial cannot be approved; the tool did not run.` }],
    isError: true,
    _meta: { [META.authorization]: { ...UNAVAILABLE } },
  };
}

/**
 * An in-band denial: the requester's own confirmation lifts it (`in-band-confirmation.ts`; no
 * backend, any client). No answer yet → `input_required` with the form; `approve` → the call runs;
 * `reject`, or the form declined or cancelled → an `isError` result, nothing run. Throws -32602
 * for accepted content off the form and after the last round.
 */
export async function confirmInBand(deps: GateDeps, g: GatedCall, request: AccessRequestHint, reason: string): Promise<GateResult> {
  const answer = g.call.mrtr.state ? readConfirmation(g.call.mrtr.inputResponses) : ({ kind: 'none' } as const);
  switch (answer.kind) {
    case 'invalid':
      throw invalidInputResponse(answer.issues);
    case 'none':
      return askConfirmation(g, reason);
    case 'approve':
      return runConfirmed(deps, g, request, answer.reason);
    case 'reject':
      return confirmationRefused(deps, g, reason, 'reject');
    case 'refused':
      return confirmationRefused(deps, g, reason, answer.action);
  }
}

/** The confirmation form as the next MRTR round. */
async function askConfirmation(g: GatedCall, reason: string): Promise<InputRequiredResult> {
  const round = nextInputRound(g);
  g.log().info({ round, mode: 'in-band' }, "requestable denial needs the requester's confirmation; input_required");
  return inputRequired({
    inputRequests: {
      [CONFIRMATION_INPUT_KEY]: inputRequired.elicit({ message: confirmationMessage(reason), requestedSchema: ConfirmationSchema }),
    },
    requestState: await g.call.mrtr.mint({ v: 1, digest: g.binding().digest, round }),
  });
}

/** The requester rejected the confirmation, or declined or cancelled its form: the call ends, recorded. */
function confirmationRefused(deps: GateDeps, g: GatedCall, reason: string, how: 'reject' | 'decline' | 'cancel'): CallToolResult {
  recordNoTask(deps, g, 'in-band');
  g.log().info(
    { decision: 'deny', requestable: true, mode: 'in-band', confirmation: how },
    'in-band confirmation refused; the tool did not run',
  );
  return confirmationRejectedResult(reason, how);
}

/**
 * Confirmed in band: a long-running tool runs as a task (carrying the confirmation, no backend
 * request) for a client that can follow one; otherwise the call runs inline.
 */
async function runConfirmed(
  deps: GateDeps,
  g: GatedCall,
  request: AccessRequestHint,
  answerReason: string | undefined,
): Promise<GateResult> {
  const confirmation = confirmationRecord(request.policyId, answerReason);
  g.log().info(
    { decision: 'allow', mode: 'in-band', confirmation: 'approve', policyId: confirmation.policyId, confirmedAt: confirmation.confirmedAt },
    'confirmed in band by the requester',
  );
  if (!g.tool.longRunning || !g.call.clientSupportsTasks) {
    await g.ownership.own();
    recordNoTask(deps, g, 'in-band');
    return runInline(g);
  }
  return openTask(deps, g, request, undefined, {
    execution: g.tool.longRunning,
    confirmation,
    toolInfo: toolPresentation(g.tool, g.binding().arguments),
  });
}

/**
 * A requestable denial for a client without the tasks extension, when the companion tools are not
 * served (`noTasksResponse`): -32021 (`error`), or an `isError` result (`degraded-result`). No
 * approval is opened, so nothing is left pending; the advice names who can request one.
 */
export function requestableWithoutTasks(deps: GateDeps, g: GatedCall, reason: string): CallToolResult {
  g.log().info({ decision: 'deny', requestable: true, tasks: false }, 'requestable denial for a client without tasks');
  recordNoTask(deps, g, 'requestable');
  if (deps.noTasksResponse === 'error') throw missingTasksCapability();
  return {
    content: [
      {
        type: 'text',
        text:
          `Not executed: ${reason} No approval request was opened, and repeating this call from this client will not open one. ` +
          'This call can be approved out of band only when made from a client that declares the io.modelcontextprotocol/tasks extension ' +
          'in its request capabilities and follows the returned task with tasks/get until it ends. The tool did not run.',
      },
    ],
    isError: true,
    _meta: {
      [META.authorization]: { reason: 'insufficient_authorization', remediation: 'available', remediationHints: [{ type: 'task' }] },
    },
  };
}

/**
 * A requestable denial whose backend needs a justification (`@submission_input`): no answer yet →
 * `input_required` with the form; declined or cancelled (MCP elicitation: an answer) → an
 * `isError` result, nothing submitted; given → the task, with the justification in its request.
 */
export async function withSubmissionInput(deps: GateDeps, g: GatedCall, request: AccessRequestHint, reason: string): Promise<GateResult> {
  const { state, inputResponses } = g.call.mrtr;
  const refused = state ? refusedInput(inputResponses ?? {}, JUSTIFICATION_INPUT_KEY) : undefined;
  if (refused) {
    recordNoTask(deps, g, 'requestable');
    g.log().info({ decision: 'deny', requestable: true, input: refused }, 'submission input declined; nothing submitted');
    return inputRefusedResult(reason, refused);
  }
  const given = state ? acceptedContent(inputResponses, JUSTIFICATION_INPUT_KEY, JustificationSchema) : undefined;
  if (!given) return askJustification(g, reason);
  return openTask(deps, g, request, { justification: given.justification }, outOfBandOptions(g.tool, g.binding().arguments));
}

/** The justification form as the next MRTR round. */
async function askJustification(g: GatedCall, reason: string): Promise<InputRequiredResult> {
  const round = nextInputRound(g);
  g.log().info({ round }, 'requestable denial needs a justification; input_required');
  return inputRequired({
    inputRequests: {
      [JUSTIFICATION_INPUT_KEY]: inputRequired.elicit({
        message: `${reason} Give a justification for the approver (10 to 1000 characters). The call has not run.`,
        requestedSchema: JustificationSchema,
      }),
    },
    requestState: await g.call.mrtr.mint({ v: 1, digest: g.binding().digest, round }),
  });
}

/** The round an `input_required` answer would be: one more than the echoed state's; -32602 past {@link MAX_INPUT_ROUNDS}. */
function nextInputRound(g: GatedCall): number {
  const round = (g.call.mrtr.state?.round ?? 0) + 1;
  if (round > MAX_INPUT_ROUNDS) throw inputRoundsExhausted();
  return round;
}

/**
 * The answer to an MRTR retry whose justification was declined or cancelled (SEP-2848 §Collecting
 * submission input; MCP elicitation: decline and cancel are answers): an `isError` result saying the
 * tool did not run and no approval request was submitted, with the SEP-2643 envelope at
 * `remediation: "unavailable"` — nothing is pending, and repeating the call starts over.
 */
export function inputRefusedResult(reason: string, action: 'decline' | 'cancel'): CallToolResult {
  const what =
    action === 'decline'
      ? 'The justification this approval needs was declined'
      : 'The request for the justification this approval needs was cancelled';
  return {
    content: [
      {
        type: 'text',
        text: `Not executed: ${reason} ${what}, so no approval request was submitted and the tool did not run. Nothing is pending; making the call again starts over.`,
      },
    ],
    isError: true,
    _meta: { [META.authorization]: { ...UNAVAILABLE } },
  };
}

/** What an out-of-band task for a call with `args` captures of the tool: its long-running declaration and what approvers are shown of it. */
export function outOfBandOptions(tool: Tool, args: Record<string, unknown>): CreateOptions {
  return { ...(tool.longRunning ? { execution: tool.longRunning } : {}), toolInfo: toolPresentation(tool, args) };
}

/**
 * A requestable denial: start or join the task (`TaskService.createOrJoin`, SEP-2848
 * §Crash-consistent creation) and answer `CreateTaskResult`, or without tasks the companion-tools
 * result. The tool's key is owned before the task is made (a refusal is -32602 and nothing is
 * created) and recorded with the task id after. Throws -32603 retryable when the task was not
 * confirmed in time (`taskCreationPending`; the retry joins, docs/DESIGN.md §3.1).
 */
export async function openTask(
  deps: GateDeps,
  g: GatedCall,
  request: AccessRequestHint,
  submissionInput: { justification: string } | undefined,
  options: CreateOptions,
): Promise<CreateTaskResult | CallToolResult> {
  const tookKey = await g.ownership.own();
  try {
    // the policy's @sensitive fields are masked with the tool's own (docs/APPROVERS.md §Hidden values)
    const toolInfo = withSensitive(options.toolInfo, request.sensitive);
    const { taskId, snapshot } = await deps.tasks.createOrJoin(g.binding(), request, submissionInput, {
      ...options,
      ...(toolInfo !== undefined ? { toolInfo } : {}),
      ...(g.call.client ? { client: g.call.client } : {}),
    });
    await g.ownership.own(taskId);
    g.log().info(
      { decision: 'deny', requestable: true, status: snapshot.status, tasks: g.call.clientSupportsTasks },
      'approval task created or joined',
    );
    return g.call.clientSupportsTasks ? createTaskResult(taskId, snapshot) : approvalOpenedResult(taskId, snapshot);
  } catch (err) {
    return taskNotOpened(deps, g, err, tookKey);
  }
}

/**
 * Why {@link openTask} has no task to answer with. A submission limit refused it (no task exists):
 * the tool's key is given back and the answer is a non-requestable denial, so the agent does not
 * retry-loop (SEP-2848 approval-request amplification). The creation wait ran out: -32603
 * retryable. Anything else is rethrown; the key then stays owned: the task may exist, and the same
 * call's retry joins it.
 */
async function taskNotOpened(deps: GateDeps, g: GatedCall, err: unknown, tookKey: boolean): Promise<CallToolResult> {
  if (err instanceof TaskCreationPendingError) {
    g.log().warn({ progress: err.progress }, 'approval task not confirmed in time; client should retry');
    throw taskCreationPending(err.progress);
  }
  if (!(err instanceof SubmissionLimitedError)) throw err;
  if (tookKey) await g.ownership.disown(); // no task was created: the call leaves no trace with the tool
  recordNoTask(deps, g, 'requestable');
  g.log().warn({ decision: 'deny', requestable: false, limit: err.reason }, 'approval submission refused by a per-principal limit');
  return submissionLimitedResult(err.reason);
}
