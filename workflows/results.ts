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
  'request-unfollowed': 'Nobody followed this task, so the approval request was closed without a decision.',
};

/**
 * The narrower call an approver would accept instead of the denied one (docs/APPROVERS.md
 * §Narrowing a request): `tool`, its complete `arguments` (hidden fields restored from the call
 * binding), and until when (`expiresAt`, ISO 8601) a new call with exactly these arguments is
 * approved by the proposal. `structuredContent.counterProposal` of a denial carries it.
 */
export interface CounterProposalResult {
  tool: string;
  arguments: Record<string, unknown>;
  expiresAt: string;
}

/** Longest rendering of one argument value in a counter-proposal's sentence, in characters. */
const MAX_VALUE_TEXT = 120;

/** A value for the sentence: a number as it is, anything else as JSON (control characters escaped), clipped. */
function valueText(v: unknown): string {
  const text = typeof v === 'number' ? String(v) : (JSON.stringify(v) ?? 'null');
  return text.length > MAX_VALUE_TEXT ? `${text.slice(0, MAX_VALUE_TEXT)}…` : text;
}

/**
 * The sentence stating a counter-proposal: `The approver would accept wire_transfer with amount
 * 20000 (requested 50000), until <time>: …`, naming each top-level argument that differs from
 * `requested`, in key order.
 */
export function counterProposalSentence(p: CounterProposalResult, requested: Record<string, unknown>): string {
  const changed = Object.keys(p.arguments)
    .sort()
    .filter((k) => JSON.stringify(p.arguments[k]) !== JSON.stringify(requested[k]))
    .map((k) => `${k} ${valueText(p.arguments[k])} (requested ${valueText(requested[k])})`);
  const what = changed.length === 0 ? 'the same arguments' : changed.join(', ');
  return `The approver would accept ${p.tool} with ${what}, until ${p.expiresAt}: to have that run, make it as a new tools/call with exactly the arguments in structuredContent.counterProposal; it is evaluated afresh and approved once by this proposal.`;
}

/**
 * Disposition + SEP-2643 denial envelope (`remediation: "unavailable"`): the tool did not run.
 * With `counterProposal` (a denial by a counter-proposal, only from new activity results) the body
 * also states the narrower call the approver would accept, and `structuredContent.counterProposal`
 * carries it; `requested` are the call's own arguments, for the sentence.
 */
export function deniedResult(
  reason: DenialReason,
  counterProposal?: { proposal: CounterProposalResult; requested: Record<string, unknown> },
): StoredCallToolResult {
  const lead = `Not executed: ${DENIAL_SENTENCE[reason]} The tool did not run and no side effect occurred. Outcome: denied-not-executed.`;
  return {
    content: [
      {
        type: 'text',
        text:
          counterProposal === undefined ? lead : `${lead} ${counterProposalSentence(counterProposal.proposal, counterProposal.requested)}`,
      },
    ],
    ...(counterProposal !== undefined ? { structuredContent: { counterProposal: counterProposal.proposal } } : {}),
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

/** An `execution-error` result whose whole body is the fixed `text` (no denial envelope: authorization succeeded). */
export function executionErrorWithText(text: string): StoredCallToolResult {
  return {
    content: [{ type: 'text', text }],
    isError: true,
    _meta: { [META.disposition]: 'execution-error' satisfies Disposition },
  };
}

/** The tool was invoked and threw: it ran (at least partly) and failed. */
export function executionErrorResult(): StoredCallToolResult {
  return executionErrorWithText(
    'Approved; the tool ran and failed, so a side effect may have occurred. It will not be retried. Outcome: execution-error.',
  );
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

/** Fixed model-facing text of {@link notExecutedResult}. */
export const NOT_EXECUTED_TEXT =
  'Approved, but the call never reached the tool (its server could not be reached, or the tool was gone), so the tool did not run and no side effect occurred. Make a new call to try again. Outcome: execution-error.';

/**
 * Approved and claimed, but the tool provably did not run (`ToolNotExecutedError`: the request
 * never left, e.g. its upstream could not start or refused the connection; or the tool or its
 * arguments were gone). After the claim a failure is `execution-error` or `outcome-unknown`
 * (SEP-2848 §Lifecycle and task status), so `execution-error`, with a body saying the tool did not run, and no
 * SEP-2643 denial envelope (authorization succeeded).
 */
export function notExecutedResult(): StoredCallToolResult {
  return executionErrorWithText(NOT_EXECUTED_TEXT);
}

const ANSWER_DISCARDED_LEAD = 'Approved; the tool ran once, but its answer';

/**
 * The tool ran once; its answer (`sizeBytes`) exceeded the gateway's limit (`limitBytes`) and was
 * discarded (`ToolAnswerDiscardedError`): `execution-error` — it ran, its result is lost, a side
 * effect may have occurred — and it is not run again.
 */
export function answerDiscardedResult(sizeBytes: number, limitBytes: number): StoredCallToolResult {
  const n = (v: number) => (Number.isSafeInteger(v) && v >= 0 ? v : 0);
  return executionErrorWithText(
    `${ANSWER_DISCARDED_LEAD} (${n(sizeBytes)} bytes) exceeded the gateway's limit of ${n(limitBytes)} bytes and was discarded, so its result is not available and a side effect may have occurred. It will not be run again. Outcome: execution-error.`,
  );
}

/**
 * What an `execution-error` result says about the tool: it did not run ({@link notExecutedResult},
 * or an execution lost and fenced before it took effect), it ran and its answer was discarded
 * ({@link answerDiscardedResult}), or it ran and failed. Reads the fixed lead text of these templates.
 */
export function executionErrorKind(result: { content: Array<{ text?: string }> } | undefined): 'not-run' | 'answer-discarded' | 'ran' {
  const text = result?.content[0]?.text;
  if (text === NOT_EXECUTED_TEXT) return 'not-run';
  if (text?.startsWith(ANSWER_DISCARDED_LEAD)) return 'answer-discarded';
  return 'ran';
}
