/**
 * `@countersign/client`: clients of a Countersign MCP endpoint (MCP 2026-07-28 over Streamable
 * HTTP): `TasksClient` (a gated `tools/call`, then `tasks/get` / `tasks/cancel` / `tasks/update`
 * and `subscriptions/listen` push, with a persistent `TaskIdStore`), the JSON-RPC `WireClient`,
 * SSE parsing and `executionOutcome` (what a finished task says about the tool). The
 * `@modelcontextprotocol/ext-tasks` dispatch helper is the `./ext-tasks` entry (docs/CLIENTS.md).
 */
export * from './tasks-client.js';
export * from './wire-client.js';
export * from './sse.js';
export * from './execution-outcome.js';
export * from './task-id-store.js';
