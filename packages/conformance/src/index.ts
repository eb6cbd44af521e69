/**
 * `@countersign/conformance`: the SEP-2848 (`io.modelcontextprotocol/tool-approval`) conformance kit.
 *
 * - `runSuite(options)`: the black-box suite against any server implementing the extension, over
 *   MCP (Streamable HTTP, protocol 2026-07-28) plus the test hooks of TEST-HOOKS.md, which may be
 *   HTTP (`approverUrl`), a command (`commandHooks`, the CLI's `--decide`) or in process (`hooks`);
 * - `buildReport(run, url)`: the machine-readable report (`report.schema.json`);
 * - `sepStatements()`, `referenceStatements()`: the SEP statements the checks cover;
 * - `conformanceMain(argv)` (also `./cli`): the `countersign-conformance` command line;
 * - `judgeExchanges`, `RULE_OWNERS`: every response judged by the static vectors' verifier, which is
 *   also exported on its own as `@countersign/conformance/vectors` (`vectors/verify.mjs`).
 */
export { CHECK_IDS, CHECK_TITLES, formatResult, runSuite } from './suite.js';
export { APPROVAL_EXT, AUTHZ, DISPOSITION, MIR, PROTOCOL_VERSION, TASKS_EXT } from './wire.js';
export type { ApprovalHooks, CheckResult, CheckStatus, DecisionRequest, Exchange, PendingItem, SuiteOptions, SuiteReport } from './wire.js';
export { httpHooks } from './context.js';
export { commandHooks, DECIDE_REFUSED_EXIT, type CommandHooksOptions } from './decide-command.js';
export {
  buildReport,
  statementStatus,
  suiteVersion,
  type ConformanceReport,
  type ReportCheckStatus,
  type StatementStatus,
} from './report.js';
export { referenceStatements, sepStatements, type ReferenceStatement, type SepStatement } from './traceability.js';
export { conformanceMain } from './cli.js';
export { EVERY_RESPONSE_CHECK, judgeExchanges, RULE_OWNERS, type JudgedViolation, type Judgement, type RunContext } from './judge.js';
