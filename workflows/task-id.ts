/**
 * Task id format: `<workflow-id hash>.<run id>`, e.g.
 * `3f2a…c1.786512e2-9e0d-44bd-8f29-789f320fe840`. The hash part is the 128-bit HMAC of the call
 * binding (not computable without the server key) and the run id is Temporal's UUID (v7 here:
 * a millisecond timestamp and 74 random bits): over 200 bits nobody outside can guess. Never a counter. Pure string functions, usable in workflow code.
 */
import { APPROVAL_WORKFLOW_ID_PREFIX as PREFIX } from './wire.js';

/** Task id for a workflow run. */
export function taskIdFor(workflowId: string, runId: string): string {
  return `${workflowId.startsWith(PREFIX) ? workflowId.slice(PREFIX.length) : workflowId}.${runId}`;
}

/** Parse a task id; `null` for anything not of our shape (the caller answers -32602). */
export function parseTaskId(taskId: unknown): { workflowId: string; runId: string } | null {
  if (typeof taskId !== 'string' || taskId.length > 100) return null;
  const m = /^([0-9a-f]{32})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/.exec(taskId);
  if (!m) return null;
  return { workflowId: `${PREFIX}${m[1]}`, runId: m[2]! };
}
