/**
 * The JSON-RPC errors only the 2025-11-25 face (`legacy-server.ts`) returns; everything shared
 * with the 2026-07-28 face (unknown task, internal error, ...) stays in `errors.ts`. Kept apart
 * only to keep that module untouched by this face; fold them in when convenient.
 */
import { ProtocolError } from '@modelcontextprotocol/server';

/** -32602 for `tasks/cancel` of a task already in a terminal status (2025-11-25 tasks utility). */
export function taskAlreadyTerminal(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: cannot cancel a task in a terminal status');
}

/** -32602 for `tasks/result` of a cancelled task: it has no result. */
export function cancelledTaskHasNoResult(): ProtocolError {
  return new ProtocolError(-32602, 'Invalid params: the task was cancelled and has no result');
}

/** A failed task's own error (`code`, `message` as the workflow recorded them), for `tasks/result`. */
export function failedTaskError(error: { code?: number; message?: string } | undefined): ProtocolError {
  return new ProtocolError(error?.code ?? -32603, error?.message ?? 'Internal error');
}

/** -32603, retryable: `tasks/result` gave up waiting (or was cancelled) before the task ended. */
export function resultNotReady(): ProtocolError {
  return new ProtocolError(-32603, 'Internal error: the task has not finished yet; call tasks/result again or poll tasks/get', {
    retryable: true,
  });
}

/**
 * -32601 for a task-augmented call of a tool whose `execution.taskSupport` is `forbidden` (the
 * companion tools `approval_status` / `approval_cancel`; 2025-11-25 tools, tool-level negotiation).
 */
export function taskForbiddenForTool(): ProtocolError {
  return new ProtocolError(-32601, 'Method not found: this tool cannot be called as a task; call it without params.task');
}

/**
 * -32600 for a `tools/call` without `params.task` that can only go through an approval, under
 * `COUNTERSIGN_NO_TASKS_RESPONSE=error` (2025-11-25 tasks utility, error handling: a receiver that
 * requires task augmentation MAY answer -32600). Nothing was opened.
 */
export function taskAugmentationRequired(): ProtocolError {
  return new ProtocolError(
    -32600,
    'Invalid request: task augmentation required for this tools/call (send params.task); the tool did not run',
  );
}
