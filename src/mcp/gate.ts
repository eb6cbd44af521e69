/**
 * The approval gate for `tools/call` (SEP-2848 §Denied-but-requestable returns a task; docs/DESIGN.md §3).
 *
 * One call: validate arguments against the tool's schema → ask the tool's admission check
 * (`Tool.admit`: may refuse, or answer a repeat of an already claimed execution from the tool's
 * records, e.g. `submit_change`'s one execution per `change_id`) → check an MRTR retry against the
 * immutable call binding → ask the PDP → allow: run inline; deny, not requestable: an `isError`
 * result saying the tool did not run; deny, requestable: for a client that declared
 * `io.modelcontextprotocol/tasks` in this request, start or join the approval workflow and return
 * `CreateTaskResult`; otherwise, by
 * configuration, the same workflow followed through the companion tools (`approval-tools.ts`,
 * the default), the degraded `isError` result with next-step guidance, or -32021. A new task
 * past a per-principal submission limit is instead a non-requestable denial naming the limit
 * (`submission-limiter.ts`; SEP-2848 §Security Implications, approval-request amplification).
 *
 * A call that proceeds (runs inline, or has its task) is then recorded with the tool (`Tool.own`);
 * a denied, refused or input-asking call records nothing with it. The call binding, its keyed
 * reference (logged as `callRef`) and the caller key are computed only when the call needs them:
 * an allowed call of a tool without admission records needs the binding only for its audit line.
 *
 * Deliberately does not: execute on a requestable denial, log arguments, or echo any backend text.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { createCallBinding, type CallBinding } from '../binding/call-binding.js';
import type { AccessRequestHint, PolicyDecisionPoint } from '../policy/pdp.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { TaskView, Tool } from '../tools/tool.js';
import { toolPresentation } from '../tools/tool-presentation.js';
import { findIllFormedString } from '@countersign/http/json-limits';
import { META } from '../../workflows/types.js';
import { acceptedContent, inputRequired } from '@modelcontextprotocol/server';
import {
  illFormedArguments,
  inputRoundsExhausted,
  invalidArguments,
  invalidInputResponse,
  missingTasksCapability,
  requestStateMismatch,
  taskCreationPending,
  unknownTool,
} from './errors.js';
import { JustificationSchema, MAX_INPUT_ROUNDS, type SubmissionState } from './submission-input.js';
import { JUSTIFICATION_INPUT_KEY } from '../../workflows/wire.js';
import { refusedInput } from '../../workflows/justification.js';
import { sanitizeReason } from './status-text.js';
import { createTaskResult } from './task-projection.js';
import { approvalOpenedResult } from './approval-tools.js';
import { SubmissionLimitedError, submissionLimitedResult } from './submission-limiter.js';
import { TaskCreationPendingError, type CreateOptions, type TaskService } from './task-service.js';
import {
  CONFIRMATION_INPUT_KEY,
  ConfirmationSchema,
  confirmationMessage,
  confirmationRecord,
  confirmationRejectedResult,
  readConfirmation,
} from './in-band-confirmation.js';

/** Dependencies of the gate. */
export interface GateDeps {
  tools: ToolRegistry;
  pdp: PolicyDecisionPoint;
  tasks: TaskService;
  logger: Logger;
  /**
   * What a client without the tasks extension gets for a requestable denial: `approval-tools`, the
   * approval opened and followed with `approval_status` / `approval_cancel`; `degraded-result`, an
   * `isError` result and no approval; `error`, -32021.
   */
  noTasksResponse: 'approval-tools' | 'degraded-result' | 'error';
}

/** Inputs of one `tools/call`. */
export interface GateCall {
  principal: Principal;
  name: string;
  arguments: Record<string, unknown> | undefined;
  /** Whether this request's `_meta` client capabilities declare `io.modelcontextprotocol/tasks`. */
  clientSupportsTasks: boolean;
  /** MRTR round data of this request (see `submission-input.ts`). */
  mrtr: {
    /** The verified `requestState` payload, when the request echoed one. */
    state: SubmissionState | undefined;
    inputResponses: Record<string, unknown> | undefined;
    /** Seal a state for the next round (bound to this request's method and principal). */
    mint(state: SubmissionState): Promise<string>;
  };
}

/**
 * Handle one `tools/call`. Returns a `CallToolResult` or a `CreateTaskResult` (plain objects).
 * Throws `ProtocolError` -32602 (unknown tool, a string in the arguments that is not well-formed
 * Unicode, invalid arguments, a refusal of the tool's
 * admission check, an in-band confirmation answer off its form), -32021 (no tasks capability,
 * when configured), -32603 retryable (task not confirmed in time).
 */
export async function gateToolCall(deps: GateDeps, call: GateCall): Promise<Record<string, unknown>> {
  const tool = deps.tools.get(call.name);
  if (!tool) throw unknownTool();
  // Before the schema, which accepts any string: a lone surrogate would otherwise reach the PDP
  // (Cedar refuses it: a policy-evaluation denial) or the approval service as a replacement character.
  const illFormed = findIllFormedString(call.arguments ?? {}, '$.params.arguments');
  if (illFormed !== null) throw illFormedArguments(illFormed);
  const parsed = tool.inputSchema.safeParse(call.arguments ?? {});
  if (!parsed.success) {
    throw invalidArguments(
      tool.name,
      parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    );
  }
  const args = parsed.data as Record<string, unknown>;
  // Built on first use, not on every call (each costs microseconds of hashing or, for the child
  // logger, of redaction): an allowed call of a tool without admission records needs none of them
  // unless its audit line is written (bench/perf-notes.md, allowed-call overhead).
  let callerKeyMemo: string | undefined;
  const callerKey = (): string => (callerKeyMemo ??= taskOwnerKeyOf(call.principal));
  let bindingMemo: CallBinding | undefined;
  const binding = (): CallBinding =>
    (bindingMemo ??= createCallBinding({
      tool: tool.name,
      arguments: args,
      principal: call.principal,
      toolDescriptorDigest: deps.tools.descriptorDigest(tool.name),
    }));
  let logMemo: Logger | undefined;
  // Log the keyed task reference, never the unkeyed binding digest (low-entropy arguments can be recovered from it).
  const log = (): Logger => (logMemo ??= deps.logger.child({ tool: tool.name, callRef: deps.tasks.referenceOf(binding()) }));
  // The tool's own records, before policy (e.g. one caller and body per submit_change change_id): a
  // refusal is -32602; a repeat of an execution already claimed is answered from them, running nothing.
  const admission = tool.admit
    ? await tool.admit(parsed.data, { callerKey: callerKey(), taskOf: (taskId) => taskViewOf(deps, call, taskId) })
    : { ok: true as const };
  if (admission.ok === false) throw invalidArguments(tool.name, [{ path: admission.path, message: admission.message }]);
  if (admission.ok === 'answered') {
    deps.logger.info(
      { tool: tool.name, isError: admission.result.isError === true },
      "tools/call answered from the tool's records; nothing run",
    );
    return {
      content: admission.result.content,
      ...(admission.result.structuredContent ? { structuredContent: admission.result.structuredContent } : {}),
      isError: admission.result.isError === true,
      ...(admission.result._meta ? { _meta: admission.result._meta } : {}),
    };
  }
  // Only a call that proceeds (runs inline, or has its task) owns what `admit` checked (`Tool.own`).
  const ownership: Ownership = {
    async own(taskId?: string) {
      const owned = tool.own
        ? await tool.own(parsed.data, { callerKey: callerKey(), ...(taskId ? { taskId } : {}) })
        : { ok: true as const, created: false };
      if (!owned.ok) throw invalidArguments(tool.name, [{ path: owned.path, message: owned.message }]);
      return owned.created;
    },
    async disown() {
      if (tool.disown) await tool.disown(parsed.data, { callerKey: callerKey() });
    },
  };
  // An MRTR retry must be the same call: same tool, arguments and caller (the caller is bound by the codec).
  if (call.mrtr.state && call.mrtr.state.digest !== binding().digest) throw requestStateMismatch();
  const decision = await deps.pdp.evaluate({
    subject: call.principal,
    action: { name: 'tools/call' },
    // the binding's resource (`createCallBinding`), without hashing the binding for it
    resource: { type: 'tool', id: tool.name },
    context: { arguments: args },
  });

  if (decision.decision === 'allow') {
    // The same line the child logger writes (its bindings first), without building a child for
    // one line, and without the binding and its keyed reference when the line is not written.
    if (deps.logger.isLevelEnabled('info'))
      deps.logger.info(
        { tool: tool.name, callRef: deps.tasks.referenceOf(binding()), decision: 'allow', policyIds: decision.policyIds },
        'tools/call allowed; running inline',
      );
    await ownership.own();
    return runInline(tool, parsed.data, log);
  }

  if (!decision.accessRequest) {
    log().info({ decision: 'deny', requestable: false, policyIds: decision.policyIds }, 'tools/call denied');
    const reason = decision.reasons.length ? decision.reasons.map(sanitizeReason).join(' ') : 'Policy does not allow this call.';
    return {
      content: [{ type: 'text', text: `Not executed: ${reason} This denial cannot be approved; the tool did not run.` }],
      isError: true,
      _meta: { [META.authorization]: { reason: 'insufficient_authorization', remediation: 'unavailable' } },
    };
  }

  const reason = sanitizeReason(decision.accessRequest.reason);
  if (decision.accessRequest.approvalMode === 'in-band') {
    // The requester's own confirmation lifts this denial (in-band-confirmation.ts): no backend, any client.
    const answer = call.mrtr.state ? readConfirmation(call.mrtr.inputResponses) : ({ kind: 'none' } as const);
    if (answer.kind === 'invalid') throw invalidInputResponse(answer.issues);
    if (answer.kind === 'reject' || answer.kind === 'refused') {
      const how = answer.kind === 'reject' ? 'reject' : answer.action;
      log().info(
        { decision: 'deny', requestable: true, mode: 'in-band', confirmation: how },
        'in-band confirmation refused; the tool did not run',
      );
      return confirmationRejectedResult(reason, how);
    }
    if (answer.kind === 'none') {
      const round = (call.mrtr.state?.round ?? 0) + 1;
      if (round > MAX_INPUT_ROUNDS) throw inputRoundsExhausted();
      log().info({ round, mode: 'in-band' }, "requestable denial needs the requester's confirmation; input_required");
      return inputRequired({
        inputRequests: {
          [CONFIRMATION_INPUT_KEY]: inputRequired.elicit({ message: confirmationMessage(reason), requestedSchema: ConfirmationSchema }),
        },
        requestState: await call.mrtr.mint({ v: 1, digest: binding().digest, round }),
      }) as unknown as Record<string, unknown>;
    }
    const confirmation = confirmationRecord(decision.accessRequest.policyId, answer.reason);
    log().info(
      {
        decision: 'allow',
        mode: 'in-band',
        confirmation: 'approve',
        policyId: confirmation.policyId,
        confirmedAt: confirmation.confirmedAt,
      },
      'confirmed in band by the requester',
    );
    // A long-running tool runs as a task for a client that can follow one; otherwise inline.
    if (!tool.longRunning || !call.clientSupportsTasks) {
      await ownership.own();
      return runInline(tool, parsed.data, log);
    }
    return createOrJoinTask(deps, call, log(), binding(), decision.accessRequest, undefined, ownership, {
      execution: tool.longRunning,
      confirmation,
      toolInfo: toolPresentation(tool),
    });
  }
  if (!call.clientSupportsTasks && deps.noTasksResponse !== 'approval-tools') {
    log().info({ decision: 'deny', requestable: true, tasks: false }, 'requestable denial for a client without tasks');
    if (deps.noTasksResponse === 'error') throw missingTasksCapability();
    // No approval was opened, so nothing is left pending; the advice names who can request one.
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

  let submissionInput: { justification: string } | undefined;
  if (decision.accessRequest.requiresJustification) {
    // A decline or cancel is an answer (MCP elicitation): the call ends here, nothing submitted.
    const refused = call.mrtr.state ? refusedInput(call.mrtr.inputResponses ?? {}, JUSTIFICATION_INPUT_KEY) : undefined;
    if (refused) {
      log().info({ decision: 'deny', requestable: true, input: refused }, 'submission input declined; nothing submitted');
      return inputRefusedResult(reason, refused);
    }
    const given = call.mrtr.state ? acceptedContent(call.mrtr.inputResponses, JUSTIFICATION_INPUT_KEY, JustificationSchema) : undefined;
    if (!given) {
      const round = (call.mrtr.state?.round ?? 0) + 1;
      if (round > MAX_INPUT_ROUNDS) throw inputRoundsExhausted();
      log().info({ round }, 'requestable denial needs a justification; input_required');
      return inputRequired({
        inputRequests: {
          [JUSTIFICATION_INPUT_KEY]: inputRequired.elicit({
            message: `${reason} Give a justification for the approver (10 to 1000 characters). The call has not run.`,
            requestedSchema: JustificationSchema,
          }),
        },
        requestState: await call.mrtr.mint({ v: 1, digest: binding().digest, round }),
      }) as unknown as Record<string, unknown>;
    }
    submissionInput = { justification: given.justification };
  }

  return createOrJoinTask(deps, call, log(), binding(), decision.accessRequest, submissionInput, ownership, {
    ...(tool.longRunning ? { execution: tool.longRunning } : {}),
    toolInfo: toolPresentation(tool),
  });
}

/**
 * Run `tool` inline (an allowed or in-band-confirmed call): its result, or an `isError` result when
 * it throws. `log` gives the call's logger, built only for that warning.
 */
async function runInline(tool: Tool, args: Record<string, unknown>, log: () => Logger): Promise<Record<string, unknown>> {
  try {
    const out = await tool.execute(args, { executionId: `inline/${randomUUID()}` });
    return {
      content: out.content,
      ...(out.structuredContent ? { structuredContent: out.structuredContent } : {}),
      isError: out.isError === true,
    };
  } catch (err) {
    log().warn({ err: (err as Error).name }, 'inline tool execution threw');
    return { content: [{ type: 'text', text: 'The tool ran and failed; a side effect may have occurred.' }], isError: true };
  }
}

/**
 * The caller's view of its task `taskId` for `Tool.admit`: open while `working` or
 * `input_required`; else ended, with its status and stored result while retained.
 */
async function taskViewOf(deps: GateDeps, call: GateCall, taskId: string): Promise<TaskView> {
  const snap = await deps.tasks.get(taskId, call.principal);
  if (!snap) return { open: false };
  if (snap.status === 'working' || snap.status === 'input_required') return { open: true };
  return { open: false, status: snap.status, ...(snap.result ? { result: snap.result } : {}) };
}

/** The tool's record of a call that proceeds (`Tool.own` / `Tool.disown`), bound to one call. */
interface Ownership {
  /** Own the tool's key (with `taskId` once the task exists); true when this call took it first. Throws -32602 on refusal. */
  own(taskId?: string): Promise<boolean>;
  /** Undo a first `own` that nothing came of. */
  disown(): Promise<void>;
}

/**
 * Start or join the task and answer `CreateTaskResult` (or, without tasks, the companion-tools
 * result). The tool's key is owned before the task is made (a refusal is -32602 and nothing is
 * created), recorded with the task id after, and given back when a per-principal submission limit
 * refuses the task (no task exists). After any other failure it stays owned: the task may exist, and
 * the same call's retry joins it.
 */
async function createOrJoinTask(
  deps: GateDeps,
  call: GateCall,
  log: Logger,
  binding: CallBinding,
  accessRequest: AccessRequestHint,
  submissionInput: { justification: string } | undefined,
  ownership: Ownership,
  options: CreateOptions | undefined,
): Promise<Record<string, unknown>> {
  const tookKey = await ownership.own();
  try {
    const { taskId, snapshot } = await deps.tasks.createOrJoin(binding, accessRequest, submissionInput, options);
    await ownership.own(taskId);
    log.info(
      { decision: 'deny', requestable: true, status: snapshot.status, tasks: call.clientSupportsTasks },
      'approval task created or joined',
    );
    return call.clientSupportsTasks ? createTaskResult(taskId, snapshot) : approvalOpenedResult(taskId, snapshot);
  } catch (err) {
    if (err instanceof TaskCreationPendingError) {
      log.warn({ progress: err.progress }, 'approval task not confirmed in time; client should retry');
      throw taskCreationPending(err.progress);
    }
    if (err instanceof SubmissionLimitedError) {
      if (tookKey) await ownership.disown(); // no task was created: the call leaves no trace
      // SEP-2848 approval-request amplification: a non-requestable denial, so the agent does not retry-loop
      log.warn({ decision: 'deny', requestable: false, limit: err.reason }, 'approval submission refused by a per-principal limit');
      return submissionLimitedResult(err.reason);
    }
    throw err;
  }
}

/**
 * The answer to an MRTR retry whose justification was declined or cancelled (SEP-2848 §Collecting
 * submission input; MCP elicitation: decline and cancel are answers): an `isError` result saying the
 * tool did not run and no approval request was submitted, with the SEP-2643 envelope at
 * `remediation: "unavailable"` — nothing is pending, and repeating the call starts over.
 */
export function inputRefusedResult(reason: string, action: 'decline' | 'cancel'): Record<string, unknown> {
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
    _meta: { [META.authorization]: { reason: 'insufficient_authorization', remediation: 'unavailable' } },
  };
}
