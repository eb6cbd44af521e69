/**
 * Plain-data types of the conformance profile's fixture tasks, shared by the fixture workflow and
 * the profile's MCP front. Deterministic-safe: types only, no Node built-ins, no adapters.
 *
 * These tasks exist only so the official MCP conformance runner (`@modelcontextprotocol/conformance`)
 * can exercise the tasks extension (SEP-2663) on the same Temporal machinery that carries
 * Countersign's approval tasks. They are not approval tasks and carry no SEP-2848 metadata.
 */
import type { TaskStatus } from '../../workflows/wire.js';

/** The fixture tools that run as tasks (see `fixture-tools.ts` for what each does). */
export type FixtureTaskTool =
  'slow_compute' | 'failing_job' | 'protocol_error_job' | 'confirm_delete' | 'multi_input' | 'test_tool_with_task';

/** One embedded input request (SEP-2322 `InputRequest`): the method and its params. */
export interface FixtureInputRequest {
  method: 'elicitation/create';
  params: { mode?: 'form'; message: string; requestedSchema: Record<string, unknown> };
}

/** A `CallToolResult` as stored in a completed fixture task (text content only). */
export interface FixtureToolResult {
  content: Array<{ type: 'text'; text: string }>;
  isError: boolean;
}

/** Workflow input. `ttlMs` is the minimum lifetime from `createdAt`; `retentionMs` how long a terminal task stays retrievable. */
export interface FixtureTaskInput {
  tool: FixtureTaskTool;
  arguments: Record<string, unknown>;
  /** SHA-256 hex of the caller's principal key; compared by the front, never sent. */
  ownerKey: string;
  ttlMs: number;
  retentionMs: number;
  pollIntervalMs: number;
}

/**
 * The task as `tasks/get` needs it (plus `ownerKey`, which the front compares and strips). Times
 * are ISO 8601; `ttlMs` is measured from `createdAt` and only grows.
 */
export interface FixtureTaskSnapshot {
  ownerKey: string;
  tool: FixtureTaskTool;
  status: TaskStatus;
  statusMessage: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  pollIntervalMs: number;
  /** Outstanding input requests while `input_required`; answered keys are removed. */
  inputRequests?: Record<string, FixtureInputRequest>;
  /** Set only when `completed`. */
  result?: FixtureToolResult;
  /** Set only when `failed`: a JSON-RPC error object. */
  error?: { code: number; message: string };
}

/** What `tasks/cancel` found: cancelled now, or already terminal (both are acked). */
export type FixtureCancelOutcome = 'cancelled' | 'already-terminal';
