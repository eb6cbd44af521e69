/**
 * `countersign/testing`: test your own gate — policies, tool modules, upstream MCP servers — on
 * Temporal's time-skipping test server with a scripted approver (docs/TESTING-YOUR-GATE.md).
 * This is the package's public entry point for tests (package.json `exports["./testing"]`); the
 * implementation is in `gate-test-env.ts` and `scripted-approver.ts`.
 */
export { startGateTest, TEST_ISSUER } from './gate-test-env.js';
export type { CallOptions, CallOutcome, GateTest, GateTestOptions, TaskOutcome, ToolExecution } from './gate-test-env.js';
export { scriptedApprover } from './scripted-approver.js';
export type { ApproverRule, ScriptedApprover, ScriptedDecision, SubmittedRequest } from './scripted-approver.js';
export type { Tool, ToolResult, ToolExecutionContext } from '../tools/tool.js';
