/**
 * Terminal `CallToolResult`s of an approval task, from fixed templates (SEP-2848 §Execution
 * disposition, §Completion). The body says in words what `_meta` says as a disposition — whether
 * the tool ran, did not run, or may have run — and a denial alone carries the SEP-2643 envelope
 * with `remediation: "unavailable"`. No backend or approver text is ever copied in.
 * Pure functions: used inside workflow code.
 */
import { META, type DenialReason, type Disposition, type StoredCallToolResult, type ToolResult } from './types.js';

const DENIAL_SENTENCE: Record<DenialReason, string> = {
  'backend-denied': 'The approval request was denied.',
  'request-expired': 'The approval request expired before anyone decided it.',
  'approval-expired': 'The approval expired before the tool could run.',
  'policy-denied': 'Policy denied the call when it was re-checked after approval.',
  'request-chain-exhausted': 'Policy kept asking for further approvals; the request limit was reached.',
  'tool-changed': 'The tool changed while the request was pending, so the approval no longer applies.',
  'binding-invalid': 'The stored call no longer matched its binding, so it was refused.',
  'input-declined': 'The input a further approval needed was declined, so no further approval request was submitted.',
};

/** Disposition + SEP-2643 denial envelope (`remediation: "unavailable"`): the tool did not run. */
export function deniedResult(reason: DenialReason): StoredCallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: `Not executed: ${DENIAL_SENTENCE[reason]} The tool did not run and no side effect occurred. Outcome: denied-not-executed.`,
      },
    ],
    isError: true,
    _meta: {
      [META.disposition]: 'denied-not-executed' satisfies Disposition,
      [META.authorization]: { reason: 'insufficient_authorization', remediation: 'unavailable' },
    },
  };
}

/** The tool ran once after approval; its own content follows the fixed lead sentence. */
export function executedResult(tool: ToolResult): StoredCallToolResult {
  const ok = tool.isError !== true;
  const lead = ok
    ? 'Approved and executed once. Outcome: approved-executed.'
    : 'Approved; the tool ran and reported an error, so a side effect may have occurred. Outcome: execution-error.';
  return {
    content: [{ type: 'text', text: lead }, ...tool.content],
    ...(tool.structuredContent ? { structuredContent: tool.structuredContent } : {}),
    isError: !ok,
    _meta: { [META.disposition]: (ok ? 'approved-executed' : 'execution-error') satisfies Disposition },
  };
}

/** The tool was invoked and threw: it ran (at least partly) and failed. */
export function executionErrorResult(): StoredCallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: 'Approved; the tool ran and failed, so a side effect may have occurred. It will not be retried. Outcome: execution-error.',
      },
    ],
    isError: true,
    _meta: { [META.disposition]: 'execution-error' satisfies Disposition },
  };
}

/** The claim was made but whether the tool ran cannot be determined; never re-run. */
export function outcomeUnknownResult(): StoredCallToolResult {
  return {
    content: [
      {
        type: 'text',
        text: 'Approved, but the tool may or may not have run: its outcome could not be determined, and it will not be run again. Check the target system before retrying. Outcome: outcome-unknown.',
      },
    ],
    isError: true,
    _meta: { [META.disposition]: 'outcome-unknown' satisfies Disposition },
  };
}
