/**
 * The fixture tools and prompt of the conformance profile: the names, schemas and behaviours the
 * official MCP conformance runner (`@modelcontextprotocol/conformance` 0.2.0 pre-release) expects
 * of a server under test, read from its scenario sources (`src/scenarios/server/tasks/*.ts`,
 * `input-required-result.ts`, `stateless.ts`).
 *
 * Kinds:
 * - `sync`: runs inline and returns a `CallToolResult` (`greet`, diagnostics).
 * - `task`: runs as a fixture task workflow (`fixture-workflow.ts`) for a client that declares
 *   `io.modelcontextprotocol/tasks`; without it, `optional` tools fall through to inline
 *   execution and `required` ones answer -32021 (SEP-2663 §Required Capabilities).
 * - `mrtr`: stateless SEP-2322 multi-round tools (`input_required` + sealed `requestState`).
 *
 * Deliberately has nothing to do with approval: no policy, no SEP-2848 metadata.
 */
import type { FixtureTaskTool } from './fixture-types.js';

/** How a fixture tool is served. */
export type FixtureKind =
  { kind: 'sync' } | { kind: 'task'; tool: FixtureTaskTool; taskSupport: 'optional' | 'required'; mrtrFirst?: boolean } | { kind: 'mrtr' };

/** One tool of the profile: its `tools/list` descriptor and how it is served. */
export interface FixtureTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  serve: FixtureKind;
}

const obj = (properties: Record<string, unknown> = {}, required: string[] = []): Record<string, unknown> => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
});
const mrtr = (name: string, description: string): FixtureTool => ({ name, description, inputSchema: obj(), serve: { kind: 'mrtr' } });

/** Every fixture tool, in `tools/list` order. */
export const FIXTURE_TOOLS: readonly FixtureTool[] = [
  {
    name: 'greet',
    description: 'Sync-only: returns "Hello, {name}!".',
    inputSchema: obj({ name: { type: 'string' } }, ['name']),
    serve: { kind: 'sync' },
  },
  {
    name: 'slow_compute',
    description: 'Task-supporting (optional): waits `seconds` (0-3600) then returns a result; cancellable while running.',
    inputSchema: obj({ seconds: { type: 'number', minimum: 0, maximum: 3600 }, label: { type: 'string' } }),
    serve: { kind: 'task', tool: 'slow_compute', taskSupport: 'optional' },
  },
  {
    name: 'failing_job',
    description: 'Task-required: after about 1 s the tool reports an error (completed, isError).',
    inputSchema: obj(),
    serve: { kind: 'task', tool: 'failing_job', taskSupport: 'required' },
  },
  {
    name: 'protocol_error_job',
    description: 'Task-required: the job crashes; the task fails with a JSON-RPC error.',
    inputSchema: obj(),
    serve: { kind: 'task', tool: 'protocol_error_job', taskSupport: 'required' },
  },
  {
    name: 'confirm_delete',
    description: 'Task-required: the task asks for a confirmation (input_required, answered with tasks/update), then completes.',
    inputSchema: obj({ filename: { type: 'string' } }),
    serve: { kind: 'task', tool: 'confirm_delete', taskSupport: 'required' },
  },
  {
    name: 'multi_input',
    description: 'Task-required: the task asks two questions at once; each may be answered separately.',
    inputSchema: obj(),
    serve: { kind: 'task', tool: 'multi_input', taskSupport: 'required' },
  },
  {
    name: 'test_tool_with_task',
    description: 'Task-required: asks for user_name over MRTR on the call, then returns a task whose result greets that name.',
    inputSchema: obj(),
    serve: { kind: 'task', tool: 'test_tool_with_task', taskSupport: 'required', mrtrFirst: true },
  },
  mrtr('test_input_required_result_elicitation', 'MRTR: asks for user_name (elicitation), then greets.'),
  mrtr('test_input_required_result_sampling', 'MRTR: asks for a sampling completion, then returns its text.'),
  mrtr('test_input_required_result_list_roots', 'MRTR: asks for the client roots, then lists them.'),
  mrtr('test_input_required_result_request_state', 'MRTR: round 2 verifies the echoed requestState and says state-ok.'),
  mrtr('test_input_required_result_multiple_inputs', 'MRTR: asks for an elicitation, a sampling completion and the roots at once.'),
  mrtr('test_input_required_result_multi_round', 'MRTR: two input rounds with an evolving requestState, then a result.'),
  mrtr('test_input_required_result_tampered_state', 'MRTR: integrity-protected requestState; a tampered one is -32602.'),
  mrtr('test_input_required_result_capabilities', 'MRTR: only asks for input kinds the request declared in its client capabilities.'),
  {
    name: 'test_missing_capability',
    description: 'Needs the sampling client capability; without it -32021.',
    inputSchema: obj(),
    serve: { kind: 'mrtr' },
  },
  {
    name: 'test_streaming_elicitation',
    description: 'Asks for input over MRTR (never a server-to-client request on the response stream).',
    inputSchema: obj(),
    serve: { kind: 'mrtr' },
  },
  {
    name: 'test_logging_tool',
    description: 'Returns a result; logs only when the request set a log level.',
    inputSchema: obj(),
    serve: { kind: 'sync' },
  },
];

/** The MRTR prompt. */
export const FIXTURE_PROMPT = {
  name: 'test_input_required_result_prompt',
  description: 'MRTR on prompts/get: asks for context (elicitation), then returns the prompt.',
} as const;

/** Look up a fixture tool by name. */
export function fixtureTool(name: string): FixtureTool | undefined {
  return FIXTURE_TOOLS.find((t) => t.name === name);
}
