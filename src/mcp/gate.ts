/**
 * The approval gate for `tools/call` (SEP-2848 §Denied-but-requestable returns a task; docs/DESIGN.md §3).
 *
 * One call is a pipeline of small steps, each its own function below:
 * 1. {@link validateCall}: the tool exists (-32602 otherwise), its arguments are well-formed
 *    Unicode (-32602) and pass its schema (otherwise an input validation error, below);
 * 2. {@link admitCall}: the tool's admission check (`Tool.admit`) may refuse (an input validation error) or answer a
 *    repeat of an already claimed execution from the tool's records (e.g. `submit_change`'s one
 *    execution per `change_id`), running nothing;
 * 3. {@link bindCall}: an MRTR retry must carry the same immutable call binding (-32602 otherwise);
 * 4. {@link decideCall}: the PDP answers allow, deny, or requestable deny (and a shadow policy set,
 *    when configured, is handed the decision to compare later, never enforced: `src/policy/shadow.ts`);
 * 5. {@link answerDecision}: one handler per outcome (`gate-outcomes.ts`): allowed → run inline;
 *    denied, not requestable → an `isError` result saying the tool did not run; in-band → the
 *    requester's MRTR confirmation; requestable for a client without tasks → by configuration the
 *    approval followed through the companion tools (`approval-tools.ts`, the default), the
 *    degraded `isError` result with next-step guidance, or -32021; requestable with submission
 *    input → the MRTR justification first; requestable → start or join the approval workflow and
 *    return `CreateTaskResult`. A new task past a per-principal submission limit is instead a
 *    non-requestable denial naming the limit (`submission-limiter.ts`; SEP-2848 §Security
 *    Implications, approval-request amplification).
 *
 * A call that proceeds (runs inline, or has its task) is then recorded with the tool (`Tool.own`);
 * a denied, refused or input-asking call records nothing with it. The call binding, its keyed
 * reference (logged as `callRef`) and the caller key are computed only when the call needs them
 * ({@link GatedCall}): an allowed call of a tool without admission records needs the binding only
 * for its audit line.
 *
 * **Input validation errors** (arguments the tool's schema refuses, or its records: `Tool.admit`,
 * `Tool.own`) are tool execution errors, not protocol errors, on both faces (2026-07-28 and
 * 2025-11-25; SEP-1303, in MCP since 2025-11-25): an `isError` result naming each failing path and
 * why, never a value, so the model can read it and correct the call ({@link ArgumentsRefusedError},
 * docs/reference/10-errors.md). Nothing is evaluated, opened or run. What stays -32602: an unknown tool,
 * a string that is not well-formed Unicode (the request itself is malformed), an MRTR retry of
 * another call, an answer off its form.
 *
 * Deliberately does not: execute on a requestable denial, log arguments, or echo any backend text.
 */
import type { ClientIdentity } from '../backends/approval-backend.js';
import type { FollowerReporter } from './follower-reports.js';
import type { CallToolResult, InputRequiredResult } from '@modelcontextprotocol/server';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import { taskOwnerKeyOf } from '../auth/principal-keys.js';
import { createCallBinding, type CallBinding } from '../binding/call-binding.js';
import type { AccessEvaluationRequest, Decision, PolicyDecisionPoint } from '../policy/pdp.js';
import type { CallRecorder } from '../policy/call-records.js';
import type { ShadowPolicy } from '../policy/shadow.js';
import type { ToolRegistry } from '../tools/registry.js';
import type { TaskView, Tool } from '../tools/tool.js';
import { findIllFormedString } from '@countersign/http/json-limits';
import { illFormedArguments, requestStateMismatch, unknownTool } from './errors.js';
import type { SubmissionState } from './submission-input.js';
import { sanitizeReason } from './status-text.js';
import type { TaskService } from './task-service.js';
import type { CreateTaskResult } from './wire-results.js';
import { toolCallResult } from './sdk-gaps.js';
import {
  allowInline,
  confirmInBand,
  denyNotRequestable,
  openTask,
  outOfBandOptions,
  requestableWithoutTasks,
  withSubmissionInput,
} from './gate-outcomes.js';

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
  /** The shadow policy set (`src/policy/shadow.ts`): handed every decision, never enforced; absent: none. */
  shadow?: ShadowPolicy;
  /** Call records of calls that open no task (`src/policy/call-records.ts`), for policy replay; absent: none. */
  callRecords?: CallRecorder;
  /** This instance's follower reports (`follower-reports.ts`): reads of a task tell the approval service someone waits; absent: none. */
  followers?: FollowerReporter;
}

/** Inputs of one `tools/call`. */
export interface GateCall {
  principal: Principal;
  name: string;
  arguments: Record<string, unknown> | undefined;
  /** Whether this request's `_meta` client capabilities declare `io.modelcontextprotocol/tasks`. */
  clientSupportsTasks: boolean;
  /** The client's `clientInfo`, bounded and escaped (`client-identity.ts`): shown to approvers with a task it opens. */
  client?: ClientIdentity;
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
 * What the gate answers: the SDK's `CallToolResult` (ran inline, denied, answered from the tool's
 * records, or the plain tier's approval) and `InputRequiredResult` (MRTR), or the tasks
 * extension's `CreateTaskResult` (`wire-results.ts`).
 */
export type GateResult = CallToolResult | CreateTaskResult | InputRequiredResult;

/** Whether the gate answered with a task: only `CreateTaskResult` carries `resultType: "task"`. */
export function isTaskAnswer(result: GateResult): result is CreateTaskResult {
  return result.resultType === 'task';
}

/** The tool's record of a call that proceeds (`Tool.own` / `Tool.disown`), bound to one call. */
export interface Ownership {
  /** Own the tool's key (with `taskId` once the task exists); true when this call took it first. Throws `ArgumentsRefusedError` on refusal. */
  own(taskId?: string): Promise<boolean>;
  /** Undo a first `own` that nothing came of. */
  disown(): Promise<void>;
}

/**
 * One validated call on its way through the gate. What is derived from it is computed on first
 * use and then kept (each costs microseconds of hashing or, for the child logger, of redaction):
 * an allowed call of a tool without admission records needs none of it unless its audit line is
 * written (bench/perf-notes.md, allowed-call overhead).
 */
export interface GatedCall {
  call: GateCall;
  tool: Tool;
  /** The arguments as the tool's schema parsed them. */
  args: Record<string, unknown>;
  /** The caller's key (`taskOwnerKeyOf`). */
  callerKey(): string;
  /** The immutable call binding: tool, complete arguments, principal, resource (DESIGN §3 step 3). */
  binding(): CallBinding;
  /** The call's logger: the tool and the keyed task reference, never the unkeyed binding digest (low-entropy arguments can be recovered from it). */
  log(): Logger;
  /** The tool's record of this call. */
  ownership: Ownership;
}

/**
 * Handle one `tools/call` (module header). Arguments the tool refuses are the `isError` result of
 * {@link argumentsRefusedResult} (SEP-1303). Throws `ProtocolError` -32602 (unknown tool, a string
 * in the arguments that is not well-formed Unicode, an MRTR retry of another call, an in-band
 * confirmation answer off its form, a fourth input round), -32021 (no tasks capability, when
 * configured), -32603 retryable (task not confirmed in time).
 */
export async function gateToolCall(deps: GateDeps, call: GateCall): Promise<GateResult> {
  try {
    return await gateToolCallNow(deps, call);
  } catch (err) {
    if (err instanceof ArgumentsRefusedError) return argumentsRefusedResult(err);
    throw err;
  }
}

/** {@link gateToolCall}'s steps; arguments the tool refuses throw {@link ArgumentsRefusedError}. */
async function gateToolCallNow(deps: GateDeps, call: GateCall): Promise<GateResult> {
  const { tool, args } = validateCall(deps.tools, call);
  const gated = gatedCall(deps, call, tool, args);
  const answered = await admitCall(deps, gated);
  if (answered) return answered;
  bindCall(gated);
  return answerDecision(deps, gated, await decideCall(deps, gated));
}

/**
 * Arguments the tool refuses: its schema (`validateCall`) or its records (`Tool.admit`, `Tool.own`).
 * `issues`: each failing path (dot-separated within the arguments, `""` for the arguments as a whole)
 * and why, never the value. A local error: the gate answers it with {@link argumentsRefusedResult}.
 */
export class ArgumentsRefusedError extends Error {
  constructor(
    readonly tool: string,
    readonly issues: Array<{ path: string; message: string }>,
  ) {
    super(`arguments refused by ${tool}`);
    this.name = 'ArgumentsRefusedError';
  }
}

/**
 * The input validation error as a tool execution error (SEP-1303, MCP 2025-11-25 §Tools, error
 * handling): `isError: true` and one text block naming the tool, each failing path and why (at
 * most 10, each line bounded and stripped of control and format characters), and that nothing ran, so the model can correct the call; no authorization
 * or disposition `_meta` (no denial, no task: nothing was evaluated).
 */
export function argumentsRefusedResult(err: ArgumentsRefusedError): CallToolResult {
  const shown = err.issues.slice(0, MAX_SHOWN_ISSUES);
  const lines = shown.map((i) => `- ${i.path === '' ? '(the arguments)' : modelSafe(i.path, 80)}: ${modelSafe(i.message, 160)}`);
  if (err.issues.length > shown.length) lines.push(`- and ${err.issues.length - shown.length} more`);
  const result: CallToolResult = {
    content: [
      {
        type: 'text',
        text: `Invalid arguments for ${err.tool}; the tool did not run. Correct these and call it again:\n${lines.join('\n')}`,
      },
    ],
    isError: true,
  };
  refusedResults.add(result);
  return result;
}

/** At most this many failing paths are listed; the rest are counted. */
const MAX_SHOWN_ISSUES = 10;

/**
 * Model-facing text from what the request sent (a path holds member names; a schema message may
 * quote an unrecognized key): control, format and separator characters (newlines, NUL, ESC, bidi
 * overrides) become spaces, whitespace collapses, and the text is cut at `max` characters, so a
 * refusal is never longer than a few lines and cannot inject a line of its own (SEP-2848 §Security
 * Implications, untrusted model-facing text).
 */
function modelSafe(text: string, max: number): string {
  const flat = text
    .replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return flat.length <= max ? flat : `${flat.slice(0, max)}…`;
}

const refusedResults = new WeakSet<object>();

/** Whether `result` is the gate's answer to refused arguments ({@link argumentsRefusedResult}): in-process only, nothing on the wire says so. */
export function isArgumentsRefusedResult(result: object): boolean {
  return refusedResults.has(result);
}

/**
 * Step 1, validate: the tool by name (-32602 unknown tool), then every string of the arguments
 * well-formed Unicode (-32602 naming its path), then the tool's schema (`ArgumentsRefusedError`
 * with the failing paths). The well-formedness check runs before the schema, which accepts any string: a lone
 * surrogate would otherwise reach the PDP (Cedar refuses it: a policy-evaluation denial) or the
 * approval service as a replacement character.
 */
export function validateCall(tools: ToolRegistry, call: GateCall): { tool: Tool; args: Record<string, unknown> } {
  const tool = tools.get(call.name);
  if (!tool) throw unknownTool();
  const illFormed = findIllFormedString(call.arguments ?? {}, '$.params.arguments');
  if (illFormed !== null) throw illFormedArguments(illFormed);
  const parsed = tool.inputSchema.safeParse(call.arguments ?? {});
  if (!parsed.success) {
    throw new ArgumentsRefusedError(
      tool.name,
      parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    );
  }
  return { tool, args: parsed.data };
}

/** The validated call with its lazily derived caller key, binding and logger, and its {@link Ownership}. */
function gatedCall(deps: GateDeps, call: GateCall, tool: Tool, args: Record<string, unknown>): GatedCall {
  let callerKey: string | undefined;
  let binding: CallBinding | undefined;
  let log: Logger | undefined;
  const gated: GatedCall = {
    call,
    tool,
    args,
    callerKey: () => (callerKey ??= taskOwnerKeyOf(call.principal)),
    binding: () =>
      (binding ??= createCallBinding({
        tool: tool.name,
        arguments: args,
        principal: call.principal,
        toolDescriptorDigest: deps.tools.descriptorDigest(tool.name),
      })),
    log: () => (log ??= deps.logger.child({ tool: tool.name, callRef: deps.tasks.referenceOf(gated.binding()) })),
    ownership: ownershipOf(tool, args, () => gated.callerKey()),
  };
  return gated;
}

/**
 * The tool's record of one call: `Tool.own` (a refusal is -32602 with the tool's path and
 * message) and `Tool.disown`; a tool without them owns nothing (`own` answers false).
 */
function ownershipOf(tool: Tool, args: Record<string, unknown>, callerKey: () => string): Ownership {
  return {
    async own(taskId?: string) {
      const owned = tool.own
        ? await tool.own(args, { callerKey: callerKey(), ...(taskId ? { taskId } : {}) })
        : { ok: true as const, created: false };
      if (!owned.ok) throw new ArgumentsRefusedError(tool.name, [{ path: owned.path, message: owned.message }]);
      return owned.created;
    },
    async disown() {
      if (tool.disown) await tool.disown(args, { callerKey: callerKey() });
    },
  };
}

/**
 * Step 2, admit: the tool's own records, before policy (e.g. one caller and body per
 * `submit_change` `change_id`). A refusal is -32602 with the tool's path and message; a repeat of
 * an execution already claimed is answered from them (returned here: its content, structured
 * content, `isError` and `_meta`), running nothing; undefined: the call proceeds.
 */
export async function admitCall(deps: GateDeps, g: GatedCall): Promise<CallToolResult | undefined> {
  if (!g.tool.admit) return undefined;
  const admission = await g.tool.admit(g.args, { callerKey: g.callerKey(), taskOf: (taskId) => taskViewOf(deps, g.call, taskId) });
  if (admission.ok === false) throw new ArgumentsRefusedError(g.tool.name, [{ path: admission.path, message: admission.message }]);
  if (admission.ok === true) return undefined;
  const { result } = admission;
  deps.logger.info({ tool: g.tool.name, isError: result.isError === true }, "tools/call answered from the tool's records; nothing run");
  return toolCallResult({
    content: result.content,
    ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
    isError: result.isError === true,
    ...(result._meta ? { _meta: result._meta } : {}),
  });
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

/**
 * Step 3, bind: an MRTR retry (a request echoing a verified `requestState`) must be the same call —
 * same tool, arguments and caller (the caller is bound by the codec, `submission-input.ts`) — so
 * its binding digest must be the one sealed in the first round (-32602 otherwise). The binding is
 * fixed from here on.
 */
export function bindCall(g: GatedCall): void {
  if (g.call.mrtr.state && g.call.mrtr.state.digest !== g.binding().digest) throw requestStateMismatch();
}

/**
 * Step 4, decide: ask the PDP about this call (an evaluation error is a non-requestable deny). With
 * a shadow policy set, the decision is also handed to it, which evaluates later and never changes it.
 */
export async function decideCall(deps: GateDeps, g: GatedCall): Promise<Decision> {
  const request: AccessEvaluationRequest = {
    subject: g.call.principal,
    action: { name: 'tools/call' },
    // the binding's resource (`createCallBinding`), without hashing the binding for it
    resource: { type: 'tool', id: g.tool.name },
    context: { arguments: g.args },
  };
  const decision = await deps.pdp.evaluate(request);
  deps.shadow?.observe(request, decision, () => deps.tasks.referenceOf(g.binding()));
  deps.callRecords?.observe(request, decision, () => deps.tasks.referenceOf(g.binding()));
  return decision;
}

/**
 * Step 5: the handler of the decision's outcome (`gate-outcomes.ts`). In-band confirmation is
 * answered for any client; a client without tasks is answered before any submission input is
 * asked for, unless it follows approvals through the companion tools.
 */
export function answerDecision(deps: GateDeps, g: GatedCall, decision: Decision): Promise<GateResult> | GateResult {
  if (decision.decision === 'allow') return allowInline(deps, g, decision.policyIds);
  const request = decision.accessRequest;
  if (!request) return denyNotRequestable(g, decision);
  const reason = sanitizeReason(request.reason);
  if (request.approvalMode === 'in-band') return confirmInBand(deps, g, request, reason);
  if (!g.call.clientSupportsTasks && deps.noTasksResponse !== 'approval-tools') return requestableWithoutTasks(deps, g, reason);
  if (request.requiresJustification) return withSubmissionInput(deps, g, request, reason);
  return openTask(deps, g, request, undefined, outOfBandOptions(g.tool, g.binding().arguments));
}
