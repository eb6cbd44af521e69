/**
 * The suite's one rule set: every response the suite receives is judged by the static vectors'
 * verifier (`vectors/verify.mjs`, its README §Rules), `checkMessage(kindFor(method, message),
 * message, context)`, with the context the run knows (the request as sent, approver ids, the
 * backend's artifacts the test hooks showed, untrusted text, SEP-2643 seen, the earlier terminal
 * answer for the same task). The cross-cutting checks of `checks-observed.ts` fail on the
 * violations of the rules they own (`RULE_OWNERS`); the rest fail `conf:every-response-conforms`.
 */
import { checkMessage, kindFor, RULES, type CheckContext, type RuleId, type Violation } from '../vectors/verify.mjs';
import { AUTHZ, CheckFailure, type Exchange, get, isObj, type Obj, type RpcAnswer } from './wire.js';

/** The check that fails on a rule's violations in the judgement of every response (the other rules: `conf:every-response-conforms`). */
export const RULE_OWNERS: Readonly<Partial<Record<RuleId, string>>> = {
  'envelope.pending': 'conf:envelope-on-nonterminal',
  'envelope.terminal': 'conf:envelope-only-on-denials',
  'disposition.present': 'conf:disposition-on-completed',
  'disposition.body-agrees': 'conf:disposition-on-completed',
  'disposition.only-completed': 'conf:disposition-on-completed',
  'pending.not-completed': 'conf:pending-not-presented-completed',
  'artifacts.none': 'conf:no-backend-artifacts',
  'artifacts.no-approver-identity': 'conf:no-backend-artifacts',
  'terminal.stable': 'conf:terminal-state-stable',
};
/** The check that owns every rule `RULE_OWNERS` does not name. */
export const EVERY_RESPONSE_CHECK = 'conf:every-response-conforms';
/** The check whose verdict rests on rule `rule`. */
export const ownerOf = (rule: RuleId): string => RULE_OWNERS[rule] ?? EVERY_RESPONSE_CHECK;

/** One violation in a judged response: the verifier's rule, JSON path and message, and which response. */
export interface JudgedViolation extends Violation {
  /** The check that fails on it. */
  check: string;
  method: string;
  /** The response's position on the suite's event clock (`Exchange.seq`). */
  seq: number;
  who: 'A' | 'B';
}

/** The judgement of a run's responses (the report's `verifier`). */
export interface Judgement {
  /** Every verifier rule applied to each response, with the check it rests on and the SEP sections it comes from. */
  rules: Array<{ id: RuleId; check: string; source: string }>;
  /** Responses judged (every exchange that carried a JSON-RPC response). */
  responses: number;
  violations: JudgedViolation[];
}

/** What the run knows around every response. */
export interface RunContext {
  approvers: readonly string[];
  backendArtifacts: readonly string[];
  untrusted: readonly string[];
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** A task-shaped answer: a CreateTaskResult or a tasks/get result. */
const taskOf = (e: Exchange): Obj | undefined =>
  e.result && ((e.method === 'tools/call' && e.result.resultType === 'task') || e.method === 'tasks/get') ? e.result : undefined;

/** Whether the server emits the SEP-2643 envelope: some non-terminal task answer carries it. */
export function emitsEnvelope(exchanges: readonly Exchange[]): boolean {
  return exchanges.some((e) => {
    const t = taskOf(e);
    return t !== undefined && !TERMINAL.has(String(t.status)) && get(t, '_meta', AUTHZ) !== undefined;
  });
}

/**
 * Judge every recorded response with the verifier. `previous` for a task answer is the first
 * terminal answer for the same task that arrived before its request was sent (overlapping polls
 * are not compared).
 */
export function judgeExchanges(exchanges: readonly Exchange[], run: RunContext): Judgement {
  const sep2643 = emitsEnvelope(exchanges);
  const firstTerminal = new Map<string, { seq: number; task: Obj }>();
  const ordered = [...exchanges].sort((x, y) => x.seq - y.seq);
  const violations: JudgedViolation[] = [];
  let responses = 0;
  for (const e of ordered) {
    if (!e.message) continue;
    responses++;
    const t = taskOf(e);
    const seen = t ? firstTerminal.get(String(t.taskId)) : undefined;
    const context: CheckContext = {
      request: e.request as CheckContext['request'],
      sep2643,
      approvers: [...run.approvers],
      backendArtifacts: [...run.backendArtifacts],
      untrusted: [...run.untrusted],
      ...(seen && seen.seq < e.sent ? { previous: seen.task } : {}),
    };
    for (const v of checkMessage(kindFor(e.method, e.message), e.message, context))
      violations.push({ ...v, check: ownerOf(v.rule), method: e.method, seq: e.seq, who: e.who });
    if (t && TERMINAL.has(String(t.status)) && !firstTerminal.has(String(t.taskId)))
      firstTerminal.set(String(t.taskId), { seq: e.seq, task: t });
  }
  const rules = (Object.keys(RULES) as RuleId[]).map((id) => ({ id, check: ownerOf(id), source: RULES[id].source }));
  return { rules, responses, violations };
}

/** One violation as a line: `<rule> at <JSON path> (<method> response #<seq>): <message>`. */
export const formatViolation = (v: Violation & { method?: string; seq?: number }): string =>
  `${v.rule} at ${v.path}${v.method ? ` (${v.method} response #${String(v.seq)})` : ''}: ${v.message}`;

/** Fail the running check with the first violations (rule id and JSON path each), unless there are none. */
export function mustConform(violations: ReadonlyArray<Violation & { method?: string; seq?: number }>): void {
  if (violations.length === 0) return;
  const shown = violations.slice(0, 3).map(formatViolation).join('; ');
  throw new CheckFailure(`${shown}${violations.length > 3 ? ` (${violations.length - 3} more in the report)` : ''}`);
}

/** The violations `rules` the judgement holds against the responses of `check`'s rules. */
export function violationsOf(j: Judgement, check: string): JudgedViolation[] {
  return j.violations.filter((v) => v.check === check);
}

/**
 * Judge one answer of a check with its own context (e.g. `taskUnknown`, `pendingDeadline`) and
 * return the violations of `rules` only. An answer without a JSON-RPC response is a violation of
 * `jsonrpc-response`.
 */
export function judgeAnswer(
  method: string,
  answer: Pick<RpcAnswer, 'request' | 'message'>,
  context: CheckContext,
  rules: readonly RuleId[],
): Violation[] {
  if (!isObj(answer.message)) return [{ rule: 'jsonrpc-response', path: '$', message: `${method}: no JSON-RPC response` }];
  return checkMessage(kindFor(method, answer.message), answer.message, {
    request: answer.request as CheckContext['request'],
    ...context,
  })
    .filter((v) => rules.includes(v.rule))
    .map((v) => ({ ...v, message: `${method}: ${v.message}` }));
}
