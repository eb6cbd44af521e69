#!/usr/bin/env node
/**
 * The SEP-2848 static test vectors' verifier: judges one JSON-RPC message against the wire rules
 * a server implementing `io.modelcontextprotocol/tool-approval` (SEP-2848, over the tasks
 * extension SEP-2663) must keep, and runs the vector files of this folder. Plain ESM, zero
 * dependencies, Node ≥ 20, no network; types in `verify.d.mts`; the format and the rules in
 * `README.md`. Vendor the whole folder to use it without this repository.
 *
 * Deliberately not here: anything that needs more than one message and its context (at-most-once
 * execution, dedup, "a cancelled task never runs" — the black-box suite proves those by calling a
 * server), the 2025-11-25 tasks utility (a different wire), and judging tool output beyond the
 * sentences the SEP requires of it. Text rules (the body says whether the tool ran, model-facing
 * text is sanitized, no approver identity) are heuristics over English phrasing (README §Heuristics);
 * for the body's disposition, a server in another language passes its own phrases in `context.phrases`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const TASKS_EXT = 'io.modelcontextprotocol/tasks';
export const APPROVAL_EXT = 'io.modelcontextprotocol/tool-approval';
/** The identifier an earlier draft used; a client may still declare it, a server never emits it alone. */
export const LEGACY_APPROVAL_EXT = 'net.openid.authzen/tool-approval';
export const AUTHZ = 'io.modelcontextprotocol/authorization';
export const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
export const MIR = 'io.modelcontextprotocol/model-immediate-response';
export const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
/** The registered dispositions (SEP-2848 §Execution disposition); future values MAY be registered. */
export const DISPOSITIONS = ['approved-executed', 'denied-not-executed', 'execution-error', 'outcome-unknown'];
/** Missing Required Client Capability: SEP-2663 §Capability Negotiation (SEP-2848 still names it -32003). */
export const MISSING_CAPABILITY = -32021;
export const MISSING_CAPABILITY_SEP_2848_TEXT = -32003;

/**
 * Every rule the verifier judges: id → the SEP-2848 normative statements it checks on the wire (ids
 * of the kit's traceability/sep-2848.json, from Countersign's conformance/sep-2848.yaml; none where the rule comes from
 * SEP-2663 alone), its vectors' folder, the sections it comes from, and what it says. A violation's
 * `rule` is one of these ids; a vector's `rule` and `violates` name them.
 */
export const RULES = {
  'jsonrpc-response': {
    statements: [],
    dir: 'jsonrpc-response',
    source: 'JSON-RPC 2.0 §5; SEP-2663 §Protocol Errors',
    summary:
      'A response has jsonrpc "2.0", the request id and exactly one of result or error; an error has an integer code and a string message.',
  },
  'capability.server-declares': {
    statements: ['S01'],
    dir: 'identifier-capability',
    source: 'SEP-2848 §Extension identifier and capability',
    summary:
      'The server declares io.modelcontextprotocol/tasks and io.modelcontextprotocol/tool-approval in capabilities.extensions (the earlier net.openid.authzen/tool-approval alone does not count).',
  },
  'capability.missing-tasks-error': {
    statements: ['S02'],
    dir: 'identifier-capability',
    source: 'SEP-2848 §Extension identifier and capability; SEP-2663 §Capability Negotiation, §Protocol Errors',
    summary:
      'A client that did not declare the tasks extension gets -32021 (Missing Required Client Capability) naming io.modelcontextprotocol/tasks, for a call only a task can serve and for every tasks/* method; -32003 is the number SEP-2848 still prints.',
  },
  'capability.tasks-only-if-declared': {
    statements: [],
    dir: 'identifier-capability',
    source: 'SEP-2663 §Capability Negotiation, §Protocol Errors',
    summary:
      'A CreateTaskResult or a tasks/* result goes only to a request that declared io.modelcontextprotocol/tasks, and the missing-capability error only to one that did not.',
  },
  'capability.degraded-result': {
    statements: ['S02', 'S03'],
    dir: 'identifier-capability',
    source: 'SEP-2848 §Extension identifier and capability',
    summary:
      'The degraded answer to a client without tasks, for a call only approval can satisfy, is a CallToolResult with isError: true and text, never one that reads as done or carries approved-executed.',
  },
  'create-task.shape': {
    statements: ['S04', 'S59'],
    dir: 'create-task-result',
    source: 'SEP-2848 §Denied-but-requestable returns a task; SEP-2663 §Polymorphic Results',
    summary: 'A requestable denial answers resultType "task" with status "working" and a non-empty, human-readable statusMessage.',
  },
  'create-task.no-result-body': {
    statements: ['S04'],
    dir: 'create-task-result',
    source: 'SEP-2848 §Denied-but-requestable returns a task; SEP-2663 §Task Creation',
    summary:
      'A CreateTaskResult is the task handle in place of the tool result: no result, content, structuredContent, isError, error or inputRequests, and no disposition.',
  },
  'task.fields': {
    statements: [],
    dir: 'create-task-result',
    source: 'SEP-2663 §Tasks',
    summary:
      'Every task carries taskId, status (one of five), createdAt and lastUpdatedAt (ISO 8601, not before createdAt), ttlMs (integer ms ≥ 0 or null), optional pollIntervalMs (integer ms > 0) and optional string statusMessage; no 2025-11-25 keys (ttl, pollInterval, task).',
  },
  'tasks-get.shape': {
    statements: [],
    dir: 'tasks-get-status',
    source: 'SEP-2663 §Task Polling (Response), §Task Status',
    summary:
      'tasks/get answers resultType "complete", the task asked for, and the payload of its status: working nothing more; input_required a non-empty inputRequests; completed a CallToolResult in result; failed a JSON-RPC error in error; cancelled nothing more.',
  },
  'envelope.pending': {
    statements: ['S05'],
    dir: 'envelope',
    source: 'SEP-2848 §Denied-but-requestable returns a task, §Lifecycle and task status',
    summary:
      'While a task is non-terminal its _meta envelope is reason insufficient_authorization, remediation available, a task hint; a SEP-2643 server repeats it on every such answer.',
  },
  'envelope.terminal': {
    statements: ['S51', 'S52'],
    dir: 'envelope',
    source: 'SEP-2848 §Completion (the envelope appears only on a denial), §Lifecycle and task status, §At-most-once and deduplication',
    summary:
      'On a terminal task the envelope appears only with denied-not-executed and says remediation unavailable; never on approved-executed, execution-error, outcome-unknown, failed or cancelled.',
  },
  'envelope.no-context-id': {
    statements: ['S58'],
    dir: 'envelope',
    source: 'SEP-2848 §What the client carries',
    summary: 'The envelope never carries authorizationContextId.',
  },
  'disposition.present': {
    statements: ['S30', 'S48'],
    dir: 'disposition-agreement',
    source: 'SEP-2848 §Execution disposition, §Completion',
    summary: 'Every completed approval task carries a string disposition in the _meta of the CallToolResult in its result field.',
  },
  'disposition.body-agrees': {
    statements: ['S49', 'S50', 'S51'],
    dir: 'disposition-agreement',
    source: 'SEP-2848 §Completion, §Execution disposition; SEP-2663 §Task Execution Errors',
    summary:
      'Body, isError and disposition agree (the body, not only _meta, says what happened; English phrase lists unless context.phrases gives others): approved-executed is not isError, says the tool ran and does not say it did not run, may have run or was denied; denied-not-executed is isError, says it did not run and does not say it ran or may have run; execution-error is isError and says it ran and failed, or did not run; outcome-unknown is isError and says whether it ran is unknown.',
  },
  'disposition.only-completed': {
    statements: [],
    dir: 'disposition-agreement',
    source: 'SEP-2848 §Execution disposition',
    summary: 'The disposition is set only on completed tasks, never on working, input_required, failed or cancelled ones.',
  },
  'artifacts.none': {
    statements: ['S06', 'S60'],
    dir: 'no-backend-artifacts',
    source: 'SEP-2848 §Denied-but-requestable returns a task (binding material), §Security Implications (Artifacts stay server-side)',
    summary:
      "No backend binding material or endpoints: no binding_token, evaluation_id, access_request, status endpoint, request schema or form URLs, idempotency key or compact JWS anywhere; no URL in model-facing text; none of the context's backendArtifacts.",
  },
  'artifacts.no-approver-identity': {
    statements: ['S66'],
    dir: 'no-backend-artifacts',
    source: 'SEP-2848 §Security Implications (Task access control)',
    summary:
      'statusMessage and model-immediate-response name no approver: none of the context approvers, no e-mail address, no "approved by …".',
  },
  'model-text.sanitized': {
    statements: ['S20', 'S72'],
    dir: 'model-text-sanitized',
    source: 'SEP-2848 §Model-facing text is untrusted, §Security Implications (Untrusted model-facing text)',
    summary:
      "statusMessage and model-immediate-response carry none of the context's untrusted strings, no markup, control or invisible format characters, and no instruction-injection phrasing.",
  },
  'pending.not-completed': {
    statements: ['S21', 'S73'],
    dir: 'pending-not-completed',
    source: 'SEP-2848 §Model-facing text is untrusted, §Security Implications (Untrusted model-facing text)',
    summary: 'A working or input_required task is never presented as completed in statusMessage or model-immediate-response.',
  },
  'retention.covers-deadline': {
    statements: ['S15', 'S17', 'S18'],
    dir: 'retention',
    source: 'SEP-2848 §Retention',
    summary:
      'While pending, createdAt + ttlMs covers the pending deadline + resultRetention; once terminal, lastUpdatedAt + resultRetention; null covers both.',
  },
  'tasks.unknown-task-error': {
    statements: ['S65'],
    dir: 'expired-task',
    source: 'SEP-2663 §Protocol Errors; SEP-2848 §Security Implications (Task access control)',
    summary:
      "A task id the server does not hold for this caller (never issued, another principal's, purged) is answered -32602 by tasks/get, tasks/update and tasks/cancel, with the same message as any other unknown id.",
  },
  'expired.not-before-ttl': {
    statements: ['S16'],
    dir: 'expired-task',
    source: 'SEP-2663 §Tasks (ttlMs); SEP-2848 §Retention',
    summary: 'Before createdAt + ttlMs a task this caller was given is not answered as unknown.',
  },
  'expired.unknown-alike': {
    statements: [],
    dir: 'expired-task',
    source: 'SEP-2663 §Protocol Errors, §Task Polling; SEP-2848 §Lifecycle and task status (retention)',
    summary:
      'After createdAt + ttlMs, once tasks/get answers the task unknown, tasks/update and tasks/cancel answer the same error: no acknowledgement, no "terminal" or "no outstanding input" answer for a task that no longer exists.',
  },
  'ack.shape': {
    statements: [],
    dir: 'task-acks',
    source: 'SEP-2663 §Task Update Requests (Response), §Task Cancellation (Response)',
    summary: 'tasks/update and tasks/cancel answer an empty acknowledgement: resultType "complete", optional _meta, no task.',
  },
  'terminal.stable': {
    statements: ['S14', 'S29'],
    dir: 'terminal-stable',
    source: 'SEP-2848 §At-most-once and deduplication (never reopened), §Lifecycle and task status (never changes to failed)',
    summary: 'Once a task was seen terminal, every later answer for it has the same status, result and error; createdAt never changes.',
  },
};

/** The kinds of message `checkMessage` judges. */
export const KINDS = [
  'discover-result',
  'create-task-result',
  'call-tool-result',
  'input-required-result',
  'tasks-get-result',
  'tasks-update-result',
  'tasks-cancel-result',
  'task-notification',
  'error',
  'other',
];

const TASK_KINDS = new Set(['create-task-result', 'tasks-get-result', 'task-notification']);
const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const TASK_METHODS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

// ---------------------------------------------------------------------------------------------
// Small helpers

const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const get = (v, ...path) => path.reduce((o, k) => (isObj(o) ? o[k] : undefined), v);
const has = (o, k) => isObj(o) && Object.prototype.hasOwnProperty.call(o, k);
const isInt = (v) => typeof v === 'number' && Number.isInteger(v);
const show = (v, max = 120) => String(JSON.stringify(v) ?? 'nothing').slice(0, max);
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const isIso = (v) => typeof v === 'string' && ISO_8601.test(v) && Number.isFinite(Date.parse(v));
const ms = (v) => (typeof v === 'string' ? Date.parse(v) : NaN);
/** `base` extended by member names as a JSON path: `$.result._meta["io.modelcontextprotocol/authorization"]`. */
const pathOf = (base, ...keys) =>
  keys.reduce((acc, k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `${acc}.${k}` : `${acc}[${JSON.stringify(k)}]`), base);

/** The text of a CallToolResult's text blocks, joined by spaces. */
export function bodyText(result) {
  const content = get(result, 'content');
  return Array.isArray(content) ? content.map((b) => (isObj(b) && typeof b.text === 'string' ? b.text : '')).join(' ') : '';
}

/**
 * The text the phrase rules read (README §Heuristics): NFKC, typographic quotes as ASCII ' and ",
 * dashes as -, soft hyphens and zero-width characters dropped, lower-cased, whitespace collapsed.
 */
export function normalizeText(text) {
  return String(text)
    .normalize('NFKC')
    .replace(/[\u2018\u2019\u201a\u201b\u2032\u02bc\u0060\u00b4]/g, "'")
    .replace(/[\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/[\u00ad\u200b-\u200d\u2060\ufeff]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

// The English phrase lists, over normalized text (they also match raw text: case-insensitive, either apostrophe).
const NEG =
  "(?:did not|didn['\u2019]t|does not|doesn['\u2019]t|was not|wasn['\u2019]t|were not|weren['\u2019]t|has not|hasn['\u2019]t|have not|haven['\u2019]t|had not|hadn['\u2019]t|is not|isn['\u2019]t|never|not been)";
const ACT =
  '(?:run|ran|executed?|performed|invoked|carried out|completed?|processed|took effect|taken effect|take effect|go through|went through|gone through|reach(?:ed)? the tool)';
/** Says the tool did not run: "did not run", "didn't run", "was never carried out", "not executed", "no side effect". */
export const NOT_RUN = new RegExp(
  `\\b${NEG}\\b[^.;:!?,]{0,30}?\\b${ACT}\\b|\\bnot[- ](?:executed|run|performed|carried out)\\b|\\bno side[- ]effects?\\b|\\bnothing (?:was|has been) (?:run|executed|done|changed)\\b`,
  'i',
);
/** Says the tool may have run: "may have run", "might have gone through", "may or may not have run", "unknown whether", "outcome unknown". */
export const MAY_HAVE_RUN =
  /\b(?:may|might|could)(?: or (?:may|might|could) not)? have\b|\bmay or may not\b|\b(?:unknown|unclear|not known|uncertain) whether\b|\boutcome (?:is |was |remains )?(?:unknown|undetermined)\b/i;
/** Says whether it ran is uncertain: {@link MAY_HAVE_RUN}, or "unknown", "cannot be confirmed", "not known", "could not be determined". */
export const UNCERTAIN = new RegExp(
  `${MAY_HAVE_RUN.source}|\\b(?:unknown|unclear|uncertain|undetermined|not known)\\b|\\b(?:cannot|can['\u2019]t|could not|couldn['\u2019]t|can not)(?: yet)? be (?:confirmed|determined|verified|known|established)\\b|\\bnot (?:been )?(?:confirmed|determined|verified)\\b`,
  'i',
);
/**
 * Asserts the tool ran: "ran", "executed", "completed", "succeeded", "went through", "carried out",
 * "was performed". Read after the {@link NOT_RUN} and {@link MAY_HAVE_RUN} phrases and "whether …"
 * clauses are cut out, so "did not run" and "may have run" do not count.
 */
export const RAN =
  /\b(?:ran|executed|completed|succeeded|successful(?:ly)?|went through|(?:has|have) gone through|carried out|took effect|(?:has|have) taken effect|performed|processed|(?:was|were|has been|have been) (?:run|invoked))\b/i;
/** Says the tool failed (with {@link RAN}, an execution error): "failed", "error", "exception", "timed out", "discarded". */
export const FAILED =
  /\b(?:fail(?:ed|ure|s)?|errors?|exception|threw|thrown|crash(?:ed)?|timed out|time-?out|aborted|unsuccessful|discarded|lost|rolled back)\b|\bdid not succeed\b/i;
/** Says the call was denied: "denied", "not approved", "the request was rejected / declined / refused / expired". */
export const DENIED =
  /(?<!\b(?:not|never|nothing was|none was|no call was) )\bdenied\b|\bnot approved\b|\b(?:approval|request)\b[^.;:!?]{0,30}?\b(?:rejected|declined|refused|expired)\b/i;
/** The registered disposition values as words ("Outcome: denied-not-executed."): not a statement of what happened. */
const DISPOSITION_TOKENS = /\b(?:approved-executed|denied-not-executed|execution-error|outcome-unknown)\b/g;
/** The phrase classes `context.phrases` may replace, each a regular-expression source over normalized text. */
export const PHRASE_CLASSES = ['notRun', 'mayHaveRun', 'uncertain', 'ran', 'failed', 'denied'];
const DEFAULT_PHRASES = { notRun: NOT_RUN, mayHaveRun: MAY_HAVE_RUN, uncertain: UNCERTAIN, ran: RAN, failed: FAILED, denied: DENIED };

/** The phrase regexps: the English defaults, each class `context.phrases` names replaced. Throws TypeError on a bad one. */
function phrasesOf(context) {
  const given = context.phrases;
  if (given === undefined) return DEFAULT_PHRASES;
  if (!isObj(given)) throw new TypeError('checkMessage: context.phrases must be an object of regular-expression sources');
  const out = { ...DEFAULT_PHRASES };
  for (const [k, src] of Object.entries(given)) {
    if (!PHRASE_CLASSES.includes(k)) throw new TypeError(`checkMessage: context.phrases.${k} is not one of ${PHRASE_CLASSES.join(', ')}`);
    if (typeof src !== 'string' || src.length === 0) throw new TypeError(`checkMessage: context.phrases.${k} is not a non-empty string`);
    try {
      out[k] = new RegExp(src, 'iu');
    } catch (e) {
      throw new TypeError(`checkMessage: context.phrases.${k} is not a regular expression (${e.message})`, { cause: e });
    }
  }
  return out;
}

/** `text` with every match of `re` replaced by " | " (so what is left is what the text asserts outright). */
const cut = (text, re) => text.replace(new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`), ' | ');

/**
 * What a CallToolResult body says about the tool, by the phrase classes: `notRun`, `mayHave` (the
 * narrow "may have run"), `uncertain`, `ran` (outright, negated and uncertain phrases cut out),
 * `failed`, `denied`. The disposition values themselves are cut out first.
 */
export function readBody(text, phrases = DEFAULT_PHRASES) {
  const t = normalizeText(text).replace(DISPOSITION_TOKENS, ' | ');
  const outright = cut(cut(cut(t, phrases.notRun), phrases.mayHaveRun), /\bwhether\b[^.;:!?]*/);
  return {
    notRun: phrases.notRun.test(t),
    mayHave: phrases.mayHaveRun.test(t),
    uncertain: phrases.uncertain.test(t),
    ran: phrases.ran.test(outright),
    failed: phrases.failed.test(t),
    denied: phrases.denied.test(cut(t, phrases.notRun)),
  };
}
/** Reads as done: what a pending task must never say. */
export const DONE =
  /^\s*(completed|done|success)|\b(has been (completed|executed)|was (completed|executed|successful)|succeeded|completed successfully)\b/i;
const MARKUP = /<\/?[A-Za-z][^<>]*>/;
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const FORMAT = /[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/;
const INJECTION = /\b(ignore|disregard) (all |any )?(previous|prior|above) (instructions|rules)\b|\b(system|assistant) prompt\b/i;
const URL_IN_TEXT = /\bhttps?:\/\//i;
const EMAIL = /\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b/;
const DECIDED_BY = /\b(approved|denied|rejected|declined|decided|reviewed|signed off) by\b/i;
const JWS = /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/;
/** Member names of the backend's binding material and endpoints (SEP-2848, ARAP binding), compared lower-case. */
const BACKEND_KEYS = new Set([
  'binding_token',
  'evaluation_id',
  'access_request',
  'status_endpoint',
  'request_schema_url',
  'form_url',
  'request_catalogs_url',
  'idempotency-key',
  'idempotency_key',
  'cancellation_endpoint',
]);

/** Whether a request declares the tasks extension in its per-request capabilities (SEP-2575 `_meta`). */
export function declaresTasks(request) {
  return isObj(get(request, 'params', '_meta', CLIENT_CAPABILITIES, 'extensions', TASKS_EXT));
}

/**
 * The kind of an answer to a request of `method` (the kit calls this before `checkMessage`):
 * `tools/call` → `create-task-result` | `input-required-result` | `call-tool-result` by
 * `resultType`; `tasks/get|update|cancel` → their result kinds; `server/discover` →
 * `discover-result`; any error → `error`; `notifications/tasks` → `task-notification`; else `other`.
 */
export function kindFor(method, message) {
  if (get(message, 'method') === 'notifications/tasks') return 'task-notification';
  if (has(message, 'error')) return 'error';
  const rt = get(message, 'result', 'resultType');
  switch (method) {
    case 'server/discover':
      return 'discover-result';
    case 'tools/call':
      return rt === 'task' ? 'create-task-result' : rt === 'input_required' ? 'input-required-result' : 'call-tool-result';
    case 'tasks/get':
      return 'tasks-get-result';
    case 'tasks/update':
      return 'tasks-update-result';
    case 'tasks/cancel':
      return 'tasks-cancel-result';
    default:
      return 'other';
  }
}

// ---------------------------------------------------------------------------------------------
// The judges

/**
 * Judge one JSON-RPC message (the response, or a `notifications/tasks` notification, exactly as
 * received) of `kind` (one of {@link KINDS}) with what is known around it (`context`, README
 * §Context). Returns the violations, `[]` when it conforms; `path` is a JSON path into the message
 * (`$.result._meta`). Throws `TypeError` for an unknown kind, a context that is not an object, or a bad
 * `context.phrases`.
 */
export function checkMessage(kind, message, context = {}) {
  if (!KINDS.includes(kind)) throw new TypeError(`checkMessage: unknown kind ${show(kind)} (one of ${KINDS.join(', ')})`);
  if (!isObj(context)) throw new TypeError('checkMessage: context must be an object');
  phrasesOf(context); // a bad context.phrases throws whatever the message
  const out = [];
  const v = (rule, path, text) => out.push({ rule, path, message: text });
  if (!envelopeOk(kind, message, context, v)) return out;
  const body = kind === 'task-notification' ? message.params : message.result;
  const at = kind === 'task-notification' ? '$.params' : '$.result';
  checkCapability(kind, message, context, v);
  if (kind === 'discover-result') checkDiscover(body, v);
  if (kind === 'error') checkTaskErrors(message.error, context, v);
  if (kind === 'tasks-update-result' || kind === 'tasks-cancel-result') {
    checkAck(body, v);
    checkExpiredAck(kind, context, v);
  }
  if (kind === 'call-tool-result') checkCallToolResult(body, context, v);
  if (TASK_KINDS.has(kind)) checkTask(kind, body, at, context, v);
  checkEnvelopes(message, v);
  checkArtifacts(message, context, v);
  return out;
}

function envelopeOk(kind, m, context, v) {
  const R = 'jsonrpc-response';
  if (!isObj(m)) return (v(R, '$', 'the message is not a JSON object'), false);
  if (m.jsonrpc !== '2.0') v(R, '$.jsonrpc', `jsonrpc is ${show(m.jsonrpc)}, not "2.0"`);
  if (kind === 'task-notification') {
    if (m.method !== 'notifications/tasks') v(R, '$.method', `a task notification has method ${show(m.method)}`);
    if (has(m, 'id')) v(R, '$.id', 'a notification has no id');
    if (!isObj(m.params)) return (v(R, '$.params', 'a task notification without params'), false);
    return true;
  }
  const idOk = typeof m.id === 'string' || isInt(m.id) || (m.id === null && has(m, 'error'));
  if (!idOk) v(R, '$.id', `id ${show(m.id)} is neither a string nor an integer`);
  const reqId = get(context, 'request', 'id');
  if (reqId !== undefined && idOk && m.id !== null && m.id !== reqId) v(R, '$.id', `id ${show(m.id)} is not the request's ${show(reqId)}`);
  if (has(m, 'result') === has(m, 'error')) return (v(R, '$', 'a response has exactly one of result and error'), false);
  if (kind === 'error') {
    if (!has(m, 'error')) return (v(R, '$.result', 'expected an error, got a result'), false);
    if (!isObj(m.error) || !isInt(m.error.code) || typeof m.error.message !== 'string')
      return (v(R, '$.error', `an error needs an integer code and a string message: ${show(m.error)}`), false);
    return true;
  }
  if (kind === 'other' && has(m, 'error')) return true;
  if (!has(m, 'result')) return (v(R, '$.error', `expected a result, got error ${show(m.error)}`), false);
  if (!isObj(m.result)) return (v(R, '$.result', 'the result is not an object'), false);
  return true;
}

function checkCapability(kind, m, context, v) {
  const request = context.request;
  const method = get(request, 'method');
  const declared = request === undefined ? undefined : declaresTasks(request);
  const C = 'capability.missing-tasks-error';
  if (kind === 'error') {
    const { code, message, data } = m.error;
    const namesTasks = JSON.stringify(data ?? '').includes(TASKS_EXT) || message.includes(TASKS_EXT);
    const needsTasks = declared === false && (TASK_METHODS.has(method) || (method === 'tools/call' && context.gated === true));
    if (code === MISSING_CAPABILITY_SEP_2848_TEXT && (namesTasks || needsTasks))
      v(
        C,
        '$.error.code',
        `-32003 for the missing tasks extension: the tasks extension (SEP-2663 §Capability Negotiation) numbers Missing Required Client Capability ${MISSING_CAPABILITY}`,
      );
    if (code === MISSING_CAPABILITY) {
      const named = isObj(get(data, 'requiredCapabilities', 'extensions', TASKS_EXT)) || message.includes(TASKS_EXT);
      if (!named) v(C, '$.error', `-32021 that does not name ${TASKS_EXT} (data.requiredCapabilities.extensions or the message)`);
      if (declared === true) v('capability.tasks-only-if-declared', '$.error.code', `-32021 to a request that declared ${TASKS_EXT}`);
    } else if (needsTasks && code !== MISSING_CAPABILITY_SEP_2848_TEXT) {
      const what = method === 'tools/call' ? 'a call only a task can serve' : method;
      v(C, '$.error.code', `${what}, from a client without ${TASKS_EXT}, answered ${code}, not ${MISSING_CAPABILITY}`);
    }
    return;
  }
  if (declared !== false) return;
  if (kind === 'create-task-result')
    v('capability.tasks-only-if-declared', '$.result.resultType', `a CreateTaskResult to a request that did not declare ${TASKS_EXT}`);
  if (TASK_METHODS.has(method) && kind !== 'other')
    v(
      'capability.tasks-only-if-declared',
      '$.result',
      `a ${method} result to a request that did not declare ${TASKS_EXT} (expected ${MISSING_CAPABILITY})`,
    );
}

function checkDiscover(result, v) {
  const R = 'capability.server-declares';
  const ext = get(result, 'capabilities', 'extensions');
  if (!isObj(ext)) return v(R, '$.result.capabilities', 'no capabilities.extensions');
  if (!isObj(ext[TASKS_EXT]))
    v(R, `$.result.capabilities.extensions`, `${TASKS_EXT} is not declared (a tool-approval server MUST support it)`);
  if (!isObj(ext[APPROVAL_EXT]))
    v(
      R,
      '$.result.capabilities.extensions',
      `${APPROVAL_EXT} is not declared${isObj(ext[LEGACY_APPROVAL_EXT]) ? ` (only the earlier ${LEGACY_APPROVAL_EXT})` : ''}`,
    );
}

function checkAck(result, v) {
  if (result.resultType !== 'complete') v('ack.shape', '$.result.resultType', `resultType ${show(result.resultType)}, not "complete"`);
  const extra = Object.keys(result).filter((k) => k !== 'resultType' && k !== '_meta');
  if (extra.length) v('ack.shape', '$.result', `an acknowledgement is empty; it carries ${extra.join(', ')}`);
}

/** The task of a tasks/* request's context, and whether `context.at` is past its createdAt + ttlMs. */
function expiry(context) {
  const t = context.task;
  if (!isObj(t) || !isInt(t.ttlMs) || !isIso(t.createdAt) || !isIso(context.at)) return undefined;
  return { past: ms(context.at) >= ms(t.createdAt) + t.ttlMs, end: new Date(ms(t.createdAt) + t.ttlMs).toISOString() };
}

function checkExpiredAck(kind, context, v) {
  const e = expiry(context);
  const method = kind === 'tasks-update-result' ? 'tasks/update' : 'tasks/cancel';
  if (e?.past && isObj(context.expiredGetError))
    v(
      'expired.unknown-alike',
      '$.result',
      `${method} acknowledged a task tasks/get answers unknown since ${e.end} (${show(context.expiredGetError)})`,
    );
  if (context.taskUnknown === true)
    v('tasks.unknown-task-error', '$.result', `${method} of a task id this caller does not hold was acknowledged`);
}

function checkTaskErrors(error, context, v) {
  const method = get(context, 'request', 'method');
  const u = context.unknownTaskError;
  const same = (ref) => isObj(ref) && ref.code === error.code && ref.message === error.message;
  if (context.taskUnknown === true && TASK_METHODS.has(method)) {
    if (error.code !== -32602)
      v('tasks.unknown-task-error', '$.error.code', `${method} of a task id this caller does not hold answered ${error.code}, not -32602`);
    else if (isObj(u) && !same(u))
      v(
        'tasks.unknown-task-error',
        '$.error.message',
        `"${error.message}" differs from the answer for any unknown id, "${String(u.message)}"`,
      );
  }
  const e = expiry(context);
  if (e && !e.past && TASK_METHODS.has(method) && error.code === -32602 && (method === 'tasks/get' || same(u)))
    v('expired.not-before-ttl', '$.error', `${method} answered the task unknown before its createdAt + ttlMs (${e.end})`);
  if (
    e?.past &&
    isObj(context.expiredGetError) &&
    (method === 'tasks/update' || method === 'tasks/cancel') &&
    !same(context.expiredGetError)
  )
    v(
      'expired.unknown-alike',
      '$.error',
      `${method} of an expired task answered ${error.code} "${error.message}", tasks/get ${String(context.expiredGetError.code)} "${String(context.expiredGetError.message)}"`,
    );
}

function checkCallToolResult(result, context, v) {
  const R = 'capability.degraded-result';
  if (!(context.gated === true && get(context, 'request') !== undefined && !declaresTasks(context.request))) return;
  if (result.isError !== true) v(R, '$.result.isError', 'the degraded answer to a client without tasks is not isError: true');
  const text = bodyText(result);
  if (!text.trim()) v(R, '$.result.content', 'the degraded answer carries no text describing the denial');
  else if (DONE.test(normalizeText(text)) && !NOT_RUN.test(normalizeText(text)))
    v(R, '$.result.content', `the degraded answer reads as done: "${text.slice(0, 100)}"`);
  if (get(result, '_meta', DISPOSITION) === 'approved-executed') v(R, '$.result._meta', 'the degraded answer carries approved-executed');
  modelText(result, '$.result', context, v, { pending: true });
}

function checkTask(kind, t, at, context, v) {
  const F = 'task.fields';
  if (typeof t.taskId !== 'string' || t.taskId.length === 0) v(F, `${at}.taskId`, `taskId ${show(t.taskId)} is not a non-empty string`);
  if (!STATUSES.includes(t.status)) v(F, `${at}.status`, `status ${show(t.status)} is not one of ${STATUSES.join(', ')}`);
  for (const k of ['createdAt', 'lastUpdatedAt']) if (!isIso(t[k])) v(F, `${at}.${k}`, `${k} ${show(t[k])} is not an ISO 8601 date-time`);
  if (isIso(t.createdAt) && isIso(t.lastUpdatedAt) && ms(t.lastUpdatedAt) < ms(t.createdAt))
    v(F, `${at}.lastUpdatedAt`, 'lastUpdatedAt is before createdAt');
  if (!has(t, 'ttlMs')) v(F, `${at}.ttlMs`, 'ttlMs is missing (integer ms or null)');
  else if (t.ttlMs !== null && !(isInt(t.ttlMs) && t.ttlMs >= 0))
    v(F, `${at}.ttlMs`, `ttlMs ${show(t.ttlMs)} is neither a non-negative integer nor null`);
  if (has(t, 'pollIntervalMs') && !(isInt(t.pollIntervalMs) && t.pollIntervalMs > 0))
    v(F, `${at}.pollIntervalMs`, `pollIntervalMs ${show(t.pollIntervalMs)} is not a positive integer`);
  if (has(t, 'statusMessage') && typeof t.statusMessage !== 'string') v(F, `${at}.statusMessage`, 'statusMessage is not a string');
  for (const k of ['ttl', 'pollInterval', 'ttlSeconds', 'pollIntervalMilliseconds', 'task'])
    if (has(t, k)) v(F, `${at}.${k}`, `"${k}" is not a field of the tasks extension's task (2025-11-25 or draft shape)`);

  const approval = context.approvalTask !== false;
  if (kind === 'create-task-result') {
    const S = 'create-task.shape';
    if (t.resultType !== 'task') v(S, `${at}.resultType`, `resultType ${show(t.resultType)}, not "task"`);
    if (approval && t.status !== 'working') v(S, `${at}.status`, `a requestable denial's task is ${show(t.status)}, not "working"`);
    if (approval && !(typeof t.statusMessage === 'string' && t.statusMessage.trim()))
      v(S, `${at}.statusMessage`, 'a requestable denial needs a human-readable statusMessage');
    for (const k of ['result', 'content', 'structuredContent', 'isError', 'error', 'inputRequests'])
      if (has(t, k))
        v(
          'create-task.no-result-body',
          `${at}.${k}`,
          `a CreateTaskResult carries "${k}": the task handle stands in place of the tool result`,
        );
    if (get(t, '_meta', DISPOSITION) !== undefined)
      v('create-task.no-result-body', `${at}._meta`, 'a CreateTaskResult carries a disposition: nothing has been decided or executed');
  } else {
    checkStatusPayload(kind, t, at, v);
    const asked = get(context, 'request', 'params', 'taskId');
    if (kind === 'tasks-get-result' && typeof asked === 'string' && t.taskId !== asked)
      v('tasks-get.shape', `${at}.taskId`, `tasks/get of ${show(asked)} answered task ${show(t.taskId)}`);
    if (kind === 'tasks-get-result' && context.taskUnknown === true)
      v('tasks.unknown-task-error', at, 'tasks/get of a task id this caller does not hold answered the task');
  }
  checkTaskEnvelope(t, at, context, v);
  checkDisposition(t, at, approval, phrasesOf(context), v);
  modelText(t, at, context, v, { pending: !TERMINAL.has(t.status) });
  checkRetention(t, at, context, v);
  checkStable(t, at, context, v);
}

function checkStatusPayload(kind, t, at, v) {
  const G = 'tasks-get.shape';
  if (kind === 'tasks-get-result' && t.resultType !== 'complete')
    v(G, `${at}.resultType`, `resultType ${show(t.resultType)}, not "complete"`);
  const allowed = { working: [], input_required: ['inputRequests'], completed: ['result'], failed: ['error'], cancelled: [] }[t.status];
  if (!allowed) return;
  for (const k of ['inputRequests', 'result', 'error'])
    if (has(t, k) && !allowed.includes(k)) v(G, `${at}.${k}`, `a ${t.status} task carries "${k}"`);
  if (t.status === 'input_required') {
    const reqs = t.inputRequests;
    if (!isObj(reqs) || Object.keys(reqs).length === 0)
      v(G, `${at}.inputRequests`, 'an input_required task without outstanding inputRequests');
    else
      for (const [key, r] of Object.entries(reqs))
        if (!(isObj(r) && typeof r.method === 'string' && (r.params === undefined || isObj(r.params))))
          v(G, pathOf(`${at}.inputRequests`, key), `input request ${key} is not a {method, params} request`);
  }
  if (t.status === 'completed') {
    if (!isObj(t.result)) v(G, `${at}.result`, 'a completed task without a result object');
    else {
      if (!Array.isArray(t.result.content)) v(G, `${at}.result.content`, 'the result is not a CallToolResult (no content array)');
      if (has(t.result, 'resultType') && t.result.resultType !== 'complete')
        v(G, `${at}.result.resultType`, `the embedded CallToolResult has resultType ${show(t.result.resultType)}`);
    }
  }
  if (t.status === 'failed' && !(isObj(t.error) && isInt(t.error.code) && typeof t.error.message === 'string'))
    v(G, `${at}.error`, `a failed task needs the JSON-RPC error {code, message}: ${show(t.error)}`);
}

function checkTaskEnvelope(t, at, context, v) {
  const outer = get(t, '_meta', AUTHZ);
  const inner = get(t, 'result', '_meta', AUTHZ);
  if (!TERMINAL.has(t.status)) {
    const P = 'envelope.pending';
    if (outer === undefined) {
      if (context.sep2643 === true) v(P, `${at}._meta`, `a ${t.status} task without the SEP-2643 envelope (${AUTHZ})`);
      return;
    }
    if (get(outer, 'reason') !== 'insufficient_authorization' || get(outer, 'remediation') !== 'available')
      v(
        P,
        pathOf(`${at}._meta`, AUTHZ),
        `a pending task's envelope is reason insufficient_authorization, remediation available: ${show(outer)}`,
      );
    const hints = get(outer, 'remediationHints');
    if (!(Array.isArray(hints) && hints.some((h) => get(h, 'type') === 'task')))
      v(
        P,
        pathOf(`${at}._meta`, AUTHZ, 'remediationHints'),
        `a pending task's envelope has a remediationHints entry of type "task": ${show(outer)}`,
      );
    return;
  }
  const T = 'envelope.terminal';
  const d = get(t, 'result', '_meta', DISPOSITION);
  if (t.status === 'completed' && d === 'denied-not-executed') {
    for (const [env, p] of [
      [outer, `${at}._meta`],
      [inner, `${at}.result._meta`],
    ])
      if (env !== undefined && get(env, 'remediation') !== 'unavailable')
        v(T, pathOf(p, AUTHZ), `a terminal denial's envelope says remediation ${show(get(env, 'remediation'))}, not "unavailable"`);
    if (context.sep2643 === true && outer === undefined && inner === undefined)
      v(T, `${at}.result._meta`, 'a SEP-2643 server classifies a terminal denial with the envelope (remediation unavailable)');
    return;
  }
  const what = `a ${t.status}${d !== undefined ? ` ${String(d)}` : ''} task`;
  if (outer !== undefined) v(T, pathOf(`${at}._meta`, AUTHZ), `${what} carries the envelope: it asserts the operation was not performed`);
  if (inner !== undefined)
    v(T, pathOf(`${at}.result._meta`, AUTHZ), `${what} carries the envelope: it asserts the operation was not performed`);
}

function checkDisposition(t, at, approval, phrases, v) {
  const d = get(t, 'result', '_meta', DISPOSITION);
  const outerD = get(t, '_meta', DISPOSITION);
  if (t.status !== 'completed') {
    if (d !== undefined || outerD !== undefined) v('disposition.only-completed', at, `a ${String(t.status)} task carries a disposition`);
    return;
  }
  if (!approval || !isObj(t.result)) return;
  if (typeof d !== 'string' || d.length === 0) {
    v(
      'disposition.present',
      `${at}.result._meta`,
      `a completed approval task without ${DISPOSITION} in result._meta${outerD !== undefined ? ' (it is in the outer _meta)' : ''}`,
    );
    return;
  }
  const B = 'disposition.body-agrees';
  const p = `${at}.result`;
  const text = bodyText(t.result);
  const isError = t.result.isError === true;
  if (!text.trim()) return v(B, `${p}.content`, `${d}: the body does not say what happened (only _meta does)`);
  const says = readBody(text, phrases);
  const c = `${p}.content`;
  if (d === 'approved-executed') {
    if (isError) v(B, `${p}.isError`, 'approved-executed with isError: true');
    if (!says.ran) v(B, c, 'approved-executed, but the body does not say the tool ran (executed, completed, succeeded)');
    if (says.notRun || says.mayHave || says.denied)
      v(B, c, `approved-executed, but the body says it ${says.notRun ? 'did not run' : says.mayHave ? 'may have run' : 'was denied'}`);
  } else if (d === 'denied-not-executed') {
    if (!isError) v(B, `${p}.isError`, 'denied-not-executed without isError: true');
    if (!says.notRun) v(B, c, 'denied-not-executed, but the body does not say the tool did not run');
    if (says.ran) v(B, c, 'denied-not-executed, but the body says the tool ran or completed');
    if (says.mayHave) v(B, c, 'denied-not-executed, but the body says it may have run (that is an execution error or outcome-unknown)');
  } else if (d === 'execution-error') {
    if (!isError) v(B, `${p}.isError`, 'execution-error without isError: true');
    if (!((says.ran && says.failed) || says.notRun))
      v(B, c, 'execution-error, but the body says neither that the tool ran and failed nor that it did not run');
  } else if (d === 'outcome-unknown') {
    if (!isError) v(B, `${p}.isError`, 'outcome-unknown without isError: true');
    if (!says.uncertain) v(B, c, 'outcome-unknown, but the body does not say whether the tool ran is unknown (may have run)');
    else if (says.notRun && !says.mayHave) v(B, c, 'outcome-unknown, but the body says the tool did not run');
  }
}

/** statusMessage and model-immediate-response of a task or result at `at`. */
function modelTexts(o, at) {
  const out = [];
  if (typeof o.statusMessage === 'string') out.push([o.statusMessage, `${at}.statusMessage`]);
  const mir = get(o, '_meta', MIR);
  if (mir !== undefined) out.push([mir, pathOf(`${at}._meta`, MIR)]);
  return out;
}

function modelText(o, at, context, v, { pending }) {
  const untrusted = (Array.isArray(context.untrusted) ? context.untrusted : []).filter((s) => typeof s === 'string' && s.length >= 4);
  const approvers = (Array.isArray(context.approvers) ? context.approvers : []).filter((s) => typeof s === 'string' && s.length >= 2);
  for (const [text, p] of modelTexts(o, at)) {
    if (typeof text !== 'string') {
      v('model-text.sanitized', p, `${MIR} is not a string`);
      continue;
    }
    const S = 'model-text.sanitized';
    const lower = text.toLowerCase();
    for (const s of untrusted) if (lower.includes(s.toLowerCase())) v(S, p, `carries untrusted text "${s.slice(0, 60)}"`);
    if (MARKUP.test(text)) v(S, p, `carries markup: "${text.slice(0, 100)}"`);
    if (CONTROL.test(text) || FORMAT.test(text)) v(S, p, 'carries control or invisible format characters');
    if (INJECTION.test(text)) v(S, p, `carries instruction-like text: "${text.slice(0, 100)}"`);
    const A = 'artifacts.no-approver-identity';
    for (const a of approvers)
      if (new RegExp(`(^|[^A-Za-z0-9_])${a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^A-Za-z0-9_])`, 'i').test(text))
        v(A, p, `names approver "${a}"`);
    if (EMAIL.test(text)) v(A, p, `carries an e-mail address: "${text.slice(0, 100)}"`);
    if (DECIDED_BY.test(text)) v(A, p, `says who decided: "${text.slice(0, 100)}"`);
    if (URL_IN_TEXT.test(text)) v('artifacts.none', p, `model-facing text carries a URL: "${text.slice(0, 100)}"`);
    if (pending && DONE.test(text)) v('pending.not-completed', p, `a pending task reads as done: "${text.slice(0, 100)}"`);
  }
}

function checkRetention(t, at, context, v) {
  if (t.ttlMs === null || !isInt(t.ttlMs) || !isIso(t.createdAt)) return;
  const R = 'retention.covers-deadline';
  const retention = isInt(context.resultRetentionMs) ? context.resultRetentionMs : 0;
  const end = ms(t.createdAt) + t.ttlMs;
  const iso = (n) => new Date(n).toISOString();
  if (!TERMINAL.has(t.status) && isIso(context.pendingDeadline)) {
    const need = ms(context.pendingDeadline) + retention;
    if (end < need)
      v(
        R,
        `${at}.ttlMs`,
        `createdAt + ttlMs = ${iso(end)} does not cover the pending deadline ${context.pendingDeadline}${retention ? ` + ${retention} ms retention` : ''}`,
      );
  }
  if (TERMINAL.has(t.status) && isInt(context.resultRetentionMs) && isIso(t.lastUpdatedAt)) {
    const need = ms(t.lastUpdatedAt) + retention;
    if (end < need)
      v(R, `${at}.ttlMs`, `createdAt + ttlMs = ${iso(end)} does not cover terminalization ${t.lastUpdatedAt} + ${retention} ms retention`);
  }
}

function checkStable(t, at, context, v) {
  const prev = context.previous;
  if (!isObj(prev) || prev.taskId !== t.taskId) return;
  const S = 'terminal.stable';
  if (prev.createdAt !== t.createdAt) v(S, `${at}.createdAt`, `createdAt changed from ${show(prev.createdAt)} to ${show(t.createdAt)}`);
  if (!TERMINAL.has(prev.status)) return;
  const snap = (x) => JSON.stringify({ status: x.status, result: x.result, error: x.error });
  if (snap(prev) !== snap(t))
    v(
      S,
      at,
      `the task was ${String(prev.status)} and is now ${show(t.status)}${prev.status === t.status ? ' with another result or error' : ''}`,
    );
}

/** Any SEP-2643 envelope anywhere in the message (an inline denial's too): never authorizationContextId. */
function checkEnvelopes(message, v) {
  walk(message, '$', (key, value, path) => {
    if (key === AUTHZ && isObj(value) && has(value, 'authorizationContextId'))
      v(
        'envelope.no-context-id',
        pathOf(path, 'authorizationContextId'),
        'the envelope carries authorizationContextId: the client forwards no authorization artifact',
      );
  });
}

function checkArtifacts(message, context, v) {
  const R = 'artifacts.none';
  walk(message, '$', (key, value, path) => {
    if (BACKEND_KEYS.has(key.toLowerCase())) v(R, path, `carries the backend's "${key}"`);
    if (typeof value === 'string' && JWS.test(value)) v(R, path, 'carries a compact JWS (a token)');
  });
  const raw = JSON.stringify(message);
  for (const s of Array.isArray(context.backendArtifacts) ? context.backendArtifacts : [])
    if (typeof s === 'string' && s.length >= 4 && raw.includes(s)) v(R, '$', `carries the backend artifact "${s.slice(0, 60)}"`);
}

function walk(value, path, visit) {
  if (Array.isArray(value)) value.forEach((x, i) => walk(x, `${path}[${i}]`, visit));
  else if (isObj(value))
    for (const [k, x] of Object.entries(value)) {
      const p = pathOf(path, k);
      visit(k, x, p);
      walk(x, p, visit);
    }
}

// ---------------------------------------------------------------------------------------------
// Vector files

/** A vector file that cannot be judged: `file` (relative to the folder run) and what is wrong. */
export class MalformedVector extends Error {
  constructor(file, problem) {
    super(`${file}: ${problem}`);
    this.name = 'MalformedVector';
    this.file = file;
    this.problem = problem;
  }
}

/** The `violates` of a vector as a list. */
const violatesOf = (vec) => (vec.violates === undefined ? [] : Array.isArray(vec.violates) ? vec.violates : [vec.violates]);

/** Parse and validate one vector file; throws {@link MalformedVector}. */
export function readVector(path, base = '.') {
  const file = relative(base, path) || path;
  let vec;
  try {
    vec = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new MalformedVector(file, `not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!isObj(vec)) throw new MalformedVector(file, 'a vector is a JSON object');
  for (const k of ['id', 'rule', 'source', 'description', 'kind', 'expect'])
    if (typeof vec[k] !== 'string' || vec[k].length === 0) throw new MalformedVector(file, `"${k}" must be a non-empty string`);
  const known = new Set(['id', 'rule', 'source', 'description', 'kind', 'expect', 'violates', 'context', 'message']);
  const unknown = Object.keys(vec).filter((k) => !known.has(k));
  if (unknown.length) throw new MalformedVector(file, `unknown member(s) ${unknown.join(', ')}`);
  if (!RULES[vec.rule]) throw new MalformedVector(file, `rule "${vec.rule}" is not one of the verifier's rules`);
  if (!KINDS.includes(vec.kind)) throw new MalformedVector(file, `kind "${vec.kind}" is not one of ${KINDS.join(', ')}`);
  if (vec.expect !== 'accept' && vec.expect !== 'reject')
    throw new MalformedVector(file, `expect must be "accept" or "reject", not "${vec.expect}"`);
  if (
    vec.violates !== undefined &&
    !(typeof vec.violates === 'string' || (Array.isArray(vec.violates) && vec.violates.every((x) => typeof x === 'string')))
  )
    throw new MalformedVector(file, '"violates" is a rule id or a list of them');
  const violates = violatesOf(vec);
  if (vec.expect === 'reject' && violates.length === 0) throw new MalformedVector(file, 'a rejecting vector names the rule(s) it violates');
  if (vec.expect === 'accept' && violates.length > 0) throw new MalformedVector(file, 'an accepting vector violates nothing');
  for (const r of violates) if (!RULES[r]) throw new MalformedVector(file, `violates "${r}", which is not one of the verifier's rules`);
  if (vec.context !== undefined && !isObj(vec.context)) throw new MalformedVector(file, '"context" must be an object');
  if (!has(vec, 'message')) throw new MalformedVector(file, '"message" is missing');
  return { ...vec, file, violates };
}

/** Every `*.json` file under `dir`, sorted, recursively; links, dot-folders and node_modules are not followed. */
function vectorFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const p = join(dir, e.name);
    if (e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules') out.push(...vectorFiles(p));
    else if (e.isFile() && e.name.endsWith('.json')) out.push(p);
  }
  return out;
}

/**
 * Run every vector under `dir` (default: this folder; a single vector file also works): an accepting vector passes when
 * `checkMessage` finds nothing, a rejecting one when at least one violation's rule is in its
 * `violates`. Returns `{passed, failed: [{id, why}], malformed: [{file, problem}], results}`;
 * `results` has one entry per well-formed vector in file order. Duplicate ids are malformed.
 */
export function runVectors(dir = fileURLToPath(new URL('.', import.meta.url))) {
  const report = { passed: 0, failed: [], malformed: [], results: [] };
  const target = resolve(dir);
  const stat = statSync(target, { throwIfNoEntry: false });
  if (!stat) return (report.malformed.push({ file: dir, problem: 'no such file or folder' }), report);
  const root = stat.isDirectory() ? target : dirname(target);
  const seen = new Map();
  const files = stat.isDirectory() ? vectorFiles(root) : [target];
  if (files.length === 0) report.malformed.push({ file: dir, problem: 'holds no *.json vector files' });
  for (const path of files) {
    let vec;
    try {
      vec = readVector(path, root);
      if (seen.has(vec.id)) throw new MalformedVector(vec.file, `id "${vec.id}" is also the id of ${seen.get(vec.id)}`);
      seen.set(vec.id, vec.file);
    } catch (err) {
      if (!(err instanceof MalformedVector)) throw err;
      report.malformed.push({ file: err.file, problem: err.problem });
      continue;
    }
    let violations;
    try {
      violations = checkMessage(vec.kind, vec.message, vec.context ?? {});
    } catch (err) {
      report.malformed.push({ file: vec.file, problem: err instanceof Error ? err.message : String(err) });
      continue;
    }
    let why;
    if (vec.expect === 'accept' && violations.length > 0)
      why = `expected to conform, but: ${violations.map((x) => `${x.rule} at ${x.path}: ${x.message}`).join('; ')}`;
    if (vec.expect === 'reject' && !violations.some((x) => vec.violates.includes(x.rule)))
      why = `expected a violation of ${vec.violates.join(' or ')}, got ${violations.length ? violations.map((x) => x.rule).join(', ') : 'none'}`;
    report.results.push({ id: vec.id, file: vec.file, expect: vec.expect, ok: why === undefined, violations, ...(why ? { why } : {}) });
    if (why === undefined) report.passed++;
    else report.failed.push({ id: vec.id, why });
  }
  return report;
}

// ---------------------------------------------------------------------------------------------
// Command line: node verify.mjs [dir] [--json]

/**
 * The verifier's command line on `argv` (the arguments after the program name: `[dir|file]
 * [--json]`; default dir: this folder): prints one line per vector and `N passed, N failed[, N
 * malformed]`, or with `--json` the `runVectors` report. Returns the exit status: 0 every vector
 * judged as it expects, 1 one was not, 2 a malformed vector file or a path without vectors. Also
 * `countersign-conformance vectors` of the kit.
 */
export function vectorsMain(argv) {
  const json = argv.includes('--json');
  const dirs = argv.filter((a) => !a.startsWith('--'));
  const report = runVectors(dirs[0] ?? fileURLToPath(new URL('.', import.meta.url)));
  if (json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    for (const r of report.results) process.stdout.write(`${r.ok ? 'PASS' : 'FAIL'} ${r.id} (${r.expect})${r.why ? ` ${r.why}` : ''}\n`);
    for (const m of report.malformed) process.stdout.write(`MALFORMED ${m.file}: ${m.problem}\n`);
    const bad = report.malformed.length ? `, ${report.malformed.length} malformed` : '';
    process.stdout.write(`${report.passed} passed, ${report.failed.length} failed${bad}\n`);
  }
  return report.malformed.length ? 2 : report.failed.length ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exitCode = vectorsMain(process.argv.slice(2));
