/**
 * Named crash points for the fault-injection harness (`test/faults/`, docs/TESTING.md): `faultPoint('worker.submit.after')`
 * marks a step where a crash is interesting. In the product it does nothing: it calls a hook that
 * only the harness installs (`test/faults/install-fault-hook.mjs`, loaded with `node --import`), so
 * production code never reads a fault variable and never exits on purpose.
 *
 * Deliberately does not: read the environment, log, or throw. Call it only from Node code (never
 * from `workflows/`, whose sandbox has no access to this global).
 */

/** The steps the harness can crash at. Names are stable: docs/RELIABILITY.md lists them. */
export const FAULT_POINTS = [
  /** Worker, submit activity started, before contacting the backend. */
  'worker.submit.before',
  /** Worker, the backend accepted the submission, before the activity reports it (point 2). */
  'worker.submit.after',
  /** Worker, re-evaluation returned allow, before the workflow can make the claim (point 5). */
  'worker.evaluate.after',
  /** Worker, after the claim, execute activity started, before the tool is invoked (point 6). */
  'worker.execute.before',
  /** Worker, inside the tool, before its side effect is committed (point 7a). */
  'tool.effect.before',
  /** Worker, inside the tool, after its side effect is committed, before it returns (point 7b). */
  'tool.effect.after',
  /** Approval service, a new submission is committed to its store, before the reply is sent (point 3). */
  'approvals.submit.after-store',
  /** MCP server, the workflow was started or joined, before `CreateTaskResult` is returned (point 4). */
  'mcp.create.after-start',
] as const;

/** One of {@link FAULT_POINTS}. */
export type FaultPointName = (typeof FAULT_POINTS)[number];

/** The global slot the harness fills; a function that may end the process. */
export const FAULT_HOOK_KEY = Symbol.for('countersign.fault-hook');

type HookHolder = { [FAULT_HOOK_KEY]?: (name: FaultPointName) => void };

/** Mark step `name`. A no-op unless the fault harness installed its hook in this process. */
export function faultPoint(name: FaultPointName): void {
  (globalThis as HookHolder)[FAULT_HOOK_KEY]?.(name);
}
