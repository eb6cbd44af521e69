/**
 * The tool port: what the gate runs once a call is allowed.
 *
 * A tool declares its MCP descriptor and an `execute` function. Native tools are described by a
 * zod schema; upstream tools of the gateway (`src/gateway/`) by the upstream's JSON descriptor.
 * `execute` is called at most once per approval task (SEP-2848 §Completion); inline calls that policy allows call it directly.
 * This module holds types and one error class.
 */
import type { z } from 'zod';
import type { DisplayHints } from '@countersign/arap';

/**
 * One MCP content block, passed through unchanged: `text` (with `text`), `image` / `audio` (`data`,
 * `mimeType`), `resource_link`, `resource` (embedded), and whatever later revisions add. Native
 * tools produce `text` blocks; upstream tools (`src/gateway/`) return the upstream's blocks whole.
 */
export interface ContentBlock {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** A tool result, MCP `CallToolResult` (content of any type, structured content, `isError`). */
export interface ToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  /** True when the tool ran and failed (an execution error). */
  isError?: boolean;
}

/**
 * MCP tool annotations (MCP schema `ToolAnnotations`): untrusted hints from the tool's author. The
 * gateway carries them to Cedar as resource attributes (docs/GATEWAY.md).
 */
export interface ToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
  [key: string]: unknown;
}

/**
 * An MCP `Tool` descriptor given as JSON, for a tool not described by a zod schema (an upstream
 * tool of the gateway). Served as is in `tools/list`, under the tool's own `name`.
 */
export interface JsonToolDescriptor {
  title?: string;
  description?: string;
  /** JSON Schema of the arguments (MCP default dialect 2020-12). */
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** Per-execution context. */
export interface ToolExecutionContext {
  /** The MCP task id when the call runs under an approval task; absent for inline calls. */
  taskId?: string;
  /** Idempotency key of this execution (unique per task), usable as a dedup key by the effect. */
  executionId: string;
  /**
   * Report progress of a long-running execution (`Tool.longRunning`): recorded as the activity's
   * heartbeat details and shown by `tasks/get` (docs/CHANGE-GATE.md §Progress). Absent for inline
   * calls and for tools that are not long-running. Never throws.
   */
  progress?(p: ToolProgress): void;
  /**
   * Aborted when the execution attempt was given up (its heartbeat or start-to-close timeout, a
   * worker shutdown): a long-running tool should stop at its next safe point instead of applying
   * more of its effect for a task that already ended. Absent for inline calls.
   */
  signal?: AbortSignal;
}

/**
 * Progress of a long-running execution: `step` of `of` (1-based, `step` ≤ `of`), and a short label
 * of what that step does (sanitized before it reaches a client; never a claim of completion).
 */
export interface ToolProgress {
  step: number;
  of: number;
  label: string;
}

/**
 * A tool's declaration that its single execution attempt runs long: the attempt may take up to
 * `timeoutMs` (instead of the installation's `COUNTERSIGN_EXECUTION_TIMEOUT_MS`) and heartbeats
 * (every `heartbeatMs / 4`, and on every progress report). Captured into the approval workflow's
 * input when the task starts, so a run keeps the options it started with. No heartbeat within
 * `heartbeatMs` ends the attempt as lost: the idempotency hook's answer, else `outcome-unknown`;
 * never a re-run (docs/CHANGE-GATE.md §Long-running execution).
 */
export interface LongRunning {
  /** Start-to-close bound of the one execution attempt, ms. */
  timeoutMs: number;
  /** Heartbeat timeout, ms (≥ 1000); the attempt heartbeats four times per this interval. */
  heartbeatMs: number;
}

/**
 * What `Tool.admit` answers: admitted (`ok: true`; the call goes on to policy), refused with the
 * failing argument path (-32602), or `answered`: the call is a repeat of one whose execution was
 * already claimed, and `result` is the answer (its recorded outcome); nothing is evaluated or run.
 */
export type Admission =
  | { ok: true }
  | { ok: false; path: string; message: string }
  | { ok: 'answered'; result: ToolResult & { _meta?: Record<string, unknown> } };

/**
 * The caller's view of one of its own tasks, for `Tool.admit`: open (working or waiting for
 * input: a repeat joins it), or ended, with its terminal status and stored `CallToolResult` while
 * the task is still retained (neither, once it is gone or was never visible to this caller).
 */
export type TaskView =
  | { open: true }
  | { open: false; status?: 'completed' | 'failed' | 'cancelled'; result?: ToolResult & { _meta?: Record<string, unknown> } };

/** What the gate gives `Tool.admit` and `Tool.own`. */
export interface AdmissionContext {
  /** The caller's originating context as a SHA-256 hex key (issuer, subject, delegation chain). */
  callerKey: string;
  /** Read one of the caller's tasks by its MCP task id (`tasks/get` rules: another's task reads as gone). */
  taskOf(taskId: string): Promise<TaskView>;
}

/**
 * Thrown by `execute` when the tool cannot tell whether its effect happened (e.g. a remote call
 * timed out or its connection dropped after the request was sent). An approved execution then
 * completes `outcome-unknown` (after asking `resolveExecution`, when the tool has it), not
 * `execution-error` (SEP-2848 §Execution disposition). Any other throw means the tool ran and failed.
 */
export class ToolOutcomeUnknownError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ToolOutcomeUnknownError';
  }
}

/**
 * Thrown by `execute` when the tool provably did not run and now cannot (e.g. the request to a
 * remote tool never left: the connection was refused, the process could not start). `message` is
 * model-facing text built from fixed templates and operator configuration only (no remote text),
 * saying the tool did not run. Inline, the caller gets it as an `isError` result; an approved
 * execution completes `execution-error` (after the claim SEP-2848 §Lifecycle and task status allows only
 * `execution-error` or `outcome-unknown`) with a body saying the tool did not run and no side
 * effect occurred, and no denial envelope.
 */
export class ToolNotExecutedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ToolNotExecutedError';
  }
}

/**
 * Thrown by `execute` when the tool ran (its answer arrived) but the answer was too large to
 * carry and was discarded: `sizeBytes` of it against a limit of `limitBytes`. `message` is
 * model-facing text as for {@link ToolNotExecutedError}. Inline, an `isError` result with it; an
 * approved execution completes `execution-error` saying the tool ran once and its answer was
 * discarded (a side effect may have occurred; it is not run again).
 */
export class ToolAnswerDiscardedError extends Error {
  constructor(
    message: string,
    readonly sizeBytes: number,
    readonly limitBytes: number,
  ) {
    super(message);
    this.name = 'ToolAnswerDiscardedError';
  }
}

/**
 * What a tool can prove about one execution after a crash (docs/DESIGN.md §5, at most once): the effect happened (with
 * the result it recorded), or it did not and now never will (the execution id is fenced).
 */
export type ExecutionRecord = { executed: true; result: ToolResult } | { executed: false };

/** A gated tool. */
export interface Tool<S extends z.ZodType<Record<string, unknown>> = z.ZodType<Record<string, unknown>>> {
  name: string;
  title?: string;
  description: string;
  /**
   * Validates the arguments (a failure is -32602 with the failing paths). For a native tool it is
   * also the source of the MCP `inputSchema` (`z.toJSONSchema`); a tool with `jsonDescriptor`
   * validates through it (the gateway wraps an ajv validator) and is described by that instead.
   */
  inputSchema: S;
  /**
   * The MCP descriptor as JSON (inputSchema, outputSchema, annotations, title, description), when
   * the tool is not described by `inputSchema`. Absent for native tools.
   */
  jsonDescriptor?: JsonToolDescriptor;
  /**
   * Attributes of the tool's Cedar resource entity (`Countersign::Tool::"<name>"`), converted by
   * `src/policy/cedar-values.ts`. Absent: no attributes (native tools).
   */
  policyAttributes?: Record<string, unknown>;
  /**
   * JSON Pointers (RFC 6901) of arguments the operator marks sensitive (the gateway's per-tool
   * `sensitive`, docs/GATEWAY.md): masked for display, besides `writeOnly` properties and the
   * descriptor's `_meta["io.countersign/sensitive"]` (`tool-presentation.ts`). Absent: none.
   */
  sensitiveArguments?: string[];
  /**
   * How approvers read this tool's calls (`packages/arap/src/display.ts`): title, headline
   * arguments, labels, currency or unit per argument, facts. A native tool's hints are validated
   * when the registry is built and served as `_meta["io.countersign/display"]` in `tools/list`;
   * an upstream tool's are the gateway's defaults from its schema, its descriptor's `_meta` and
   * the configuration's `display` (`src/gateway/upstream-tool.ts`). Absent: the descriptor's `_meta`, if valid.
   */
  display?: DisplayHints;
  /**
   * Version string; bump when the implementation changes materially (drift detection). Upstream
   * tools use a digest of the whole upstream descriptor, so any change to it is drift.
   */
  version: string;
  /** Present when one execution may run long; see {@link LongRunning}. */
  longRunning?: LongRunning;
  /**
   * Optional admission check of validated arguments against the tool's own records, asked by the
   * gate before policy on every call (e.g. `submit_change`: one caller and body per `change_id`,
   * one execution per `change_id`). `ctx.callerKey` is the caller's originating context as a
   * SHA-256 hex key (the same notion of caller as the call binding's). A refusal is -32602 with
   * `path` and `message`; an `answered` admission is returned to the caller as the call's result.
   * Must record nothing: a call that is then denied or refused must leave no trace (see `own`).
   */
  admit?(args: z.infer<S>, ctx: AdmissionContext): Promise<Admission>;
  /**
   * Optional: record that this caller's call with these arguments proceeds, asked by the gate only
   * when it does — just before an inline run, and just before its approval task is created or
   * joined (then again with the task's `taskId`). `created` is true when this call took the key
   * first. A refusal (`ok: false`: another caller or body took the key since `admit`) is -32602 at
   * `path`, and nothing is run or created. Must be idempotent for the same caller and arguments.
   */
  own?(
    args: z.infer<S>,
    ctx: { callerKey: string; taskId?: string },
  ): Promise<{ ok: true; created: boolean } | { ok: false; path: string; message: string }>;
  /**
   * Optional: undo an `own` that took the key first (`created`) when nothing came of the call after
   * all (no task was created, nothing ran: e.g. a per-principal submission limit refused it), so the
   * call leaves no trace. Must leave a key that has a task or a claimed execution untouched.
   */
  disown?(args: z.infer<S>, ctx: { callerKey: string }): Promise<void>;
  /**
   * Run the effect. Throw only for an execution error; the caller maps it to `execution-error`.
   * Three throws say more: {@link ToolNotExecutedError} (it did not run), {@link ToolOutcomeUnknownError}
   * (it may have run), {@link ToolAnswerDiscardedError} (it ran; its answer was too large).
   */
  execute(args: z.infer<S>, ctx: ToolExecutionContext): Promise<ToolResult>;
  /**
   * Optional idempotency hook: "did the effect of execution `executionId` happen?" Asked only when
   * an approved execution was lost (worker crash, timeout) and the task would otherwise end
   * `outcome-unknown` (SEP-2848 §Completion: outcome-unknown is for a server that "cannot determine
   * whether invocation or the side effect completed"). Contract, which the caller relies on for
   * at-most-once:
   * - `{executed: true, result}` only when the effect for that id is durably recorded; `result` is
   *   what the tool reports for it (the task completes `approved-executed` with it);
   * - `{executed: false}` only when the effect did not happen AND can no longer happen: the answer
   *   must atomically fence the id (a late invocation with it, e.g. from a worker thought dead,
   *   must then fail without effect). The tool is never re-invoked either way; the task completes
   *   `execution-error` (after the claim a failure is never a denial, SEP-2848 §Completion) with a
   *   fixed body saying the execution was lost and fenced, no side effect occurred, and a new call
   *   is needed to try again.
   * Must be idempotent (asked again, it answers the same). When it knows it cannot tell (e.g. the
   * run began and may be partly applied), throw {@link ToolOutcomeUnknownError}: the task ends
   * `outcome-unknown` at once. Any other throw is taken as transient (the record is unreachable) and
   * asked again under the activity's retry policy (up to 15 minutes) before the task ends
   * `outcome-unknown`. Tools without the hook always end `outcome-unknown` after a loss.
   */
  resolveExecution?(executionId: string): Promise<ExecutionRecord>;
}
