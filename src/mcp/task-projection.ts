/**
 * Workflow snapshot → SEP-2663 wire task. Adds the SEP-2643 envelope (`remediation: "available"`,
 * task hint) on every non-terminal task and never on a terminal one (a terminal denial carries its
 * own `unavailable` envelope inside `result._meta`); strips `ownerKey`; composes `statusMessage`.
 */
import { META, type TaskSnapshot } from '../../workflows/types.js';
import { modelImmediateResponse, progressText, statusMessage } from './status-text.js';
import type { CreateTaskResult, GetTaskResult, WireTask } from './wire-results.js';

/** The SEP-2643 envelope while an approval is pending. */
export const PENDING_ENVELOPE = {
  reason: 'insufficient_authorization',
  remediation: 'available',
  remediationHints: [{ type: 'task' }],
} as const;

const isTerminal = (s: TaskSnapshot): boolean => s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled';

/**
 * A stored `CallToolResult` as a complete 2026-07-28 `CallToolResult`: `resultType: "complete"`
 * first, then the stored fields unchanged. The tasks extension (SEP-2663 `tasks/get`, a
 * `completed` task's `result`) embeds the tool's `CallToolResult`, and in 2026-07-28 every
 * `CallToolResult` carries `resultType` (the official `@modelcontextprotocol/ext-tasks` 0.2.2
 * rejects one without it). Added here, at the one place results reach the wire, so every kind —
 * approved-executed, denied-not-executed, execution-error, outcome-unknown — and results stored by
 * runs that started before this projection existed all get it. SEP-2848's end-to-end example
 * omits it (conformance/sep-2848.yaml, header).
 */
export function completeCallToolResult<T extends object>(result: T): { resultType: 'complete' } & T {
  return { resultType: 'complete', ...result };
}

/**
 * The `_meta` of an open task: a fresh copy of the pending envelope (the shared constant must not
 * be mutable through one task's result) and, only while a long-running tool executes, its latest
 * heartbeat (`task-service.ts`).
 */
function openTaskMeta(s: TaskSnapshot): Record<string, unknown> {
  const meta: Record<string, unknown> = { [META.authorization]: structuredClone(PENDING_ENVELOPE) };
  if (s.phase === 'executing' && s.progress) {
    meta[META.progress] = { progress: s.progress.step, total: s.progress.of, message: progressText(s.progress) };
  }
  return meta;
}

/** Fields common to `CreateTaskResult` and the `tasks/get` result. */
export function wireTask(taskId: string, s: TaskSnapshot): WireTask {
  return {
    taskId,
    status: s.status,
    statusMessage: statusMessage(s),
    createdAt: s.createdAt,
    lastUpdatedAt: s.lastUpdatedAt,
    ttlMs: s.ttlMs,
    ...(isTerminal(s) ? {} : { pollIntervalMs: s.pollIntervalMs, _meta: openTaskMeta(s) }),
    ...(s.status === 'input_required' && s.inputRequests ? { inputRequests: s.inputRequests } : {}),
    ...(s.status === 'completed' && s.result ? { result: completeCallToolResult(s.result) } : {}),
    ...(s.status === 'failed' ? { error: s.error ?? { code: -32603, message: 'Internal error' } } : {}),
  };
}

/** `CreateTaskResult` (SEP-2663) for a requestable denial (SEP-2848 §Denied-but-requestable). */
export function createTaskResult(taskId: string, s: TaskSnapshot): CreateTaskResult {
  const base = wireTask(taskId, s);
  const meta = { ...(base._meta ?? {}) };
  if (!isTerminal(s)) meta[META.modelImmediateResponse] = modelImmediateResponse(s);
  return { resultType: 'task', ...base, ...(Object.keys(meta).length ? { _meta: meta } : {}) };
}

/** `tasks/get` result. */
export function getTaskResult(taskId: string, s: TaskSnapshot): GetTaskResult {
  return { resultType: 'complete', ...wireTask(taskId, s) };
}
