/**
 * The one test for "Temporal has no such workflow execution", shared by the MCP front, the callback
 * receiver, the submission limiter, the conformance profile and the limiter's activity.
 *
 * Deliberately does not tell a closed run from one that never existed: Temporal answers both the
 * same way once the run is past namespace retention, and every caller treats them alike.
 */
import { WorkflowNotFoundError } from '@temporalio/client';

/** gRPC status `NOT_FOUND`. */
const GRPC_NOT_FOUND = 5;

/**
 * True when `err` says the workflow execution does not exist: the client's `WorkflowNotFoundError`,
 * a raw gRPC `NOT_FOUND` (code 5) from a call the client does not translate, or a client error
 * wrapping one (`cause.code` 5). Anything else (unavailable server, refused update) is false, and
 * the caller rethrows it.
 */
export function isWorkflowNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null | undefined;
  return e?.code === GRPC_NOT_FOUND || e?.cause?.code === GRPC_NOT_FOUND;
}
