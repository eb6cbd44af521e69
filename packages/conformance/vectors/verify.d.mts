/**
 * Types of `verify.mjs`, the SEP-2848 static test vectors' verifier (README.md in this folder).
 * Hand-written: `verify.mjs` is plain JavaScript so another SDK can vendor the folder as it is.
 * (`.d.mts`, not `.d.ts`: TypeScript pairs a `.mjs` module with a `.d.mts` declaration.)
 */

/** Extension identifiers and `_meta` keys (SEP-2848, SEP-2663, SEP-2643, SEP-2575). */
export declare const TASKS_EXT: 'io.modelcontextprotocol/tasks';
export declare const APPROVAL_EXT: 'io.modelcontextprotocol/tool-approval';
/** The identifier an earlier draft used; a client may still declare it, a server never emits it alone. */
export declare const LEGACY_APPROVAL_EXT: 'net.openid.authzen/tool-approval';
export declare const AUTHZ: 'io.modelcontextprotocol/authorization';
export declare const DISPOSITION: 'io.modelcontextprotocol/tool-approval-disposition';
export declare const MIR: 'io.modelcontextprotocol/model-immediate-response';
export declare const CLIENT_CAPABILITIES: 'io.modelcontextprotocol/clientCapabilities';
/** The registered dispositions (SEP-2848 §Execution disposition). */
export declare const DISPOSITIONS: readonly ['approved-executed', 'denied-not-executed', 'execution-error', 'outcome-unknown'];
/** Missing Required Client Capability as the tasks extension numbers it (SEP-2663 §Capability Negotiation). */
export declare const MISSING_CAPABILITY: -32021;
/** The number SEP-2848's text still prints for the same error; a violation when a server sends it (README §Decisions). */
export declare const MISSING_CAPABILITY_SEP_2848_TEXT: -32003;

/** The id of a rule the verifier judges (README §Rules). */
export type RuleId =
  | 'jsonrpc-response'
  | 'capability.server-declares'
  | 'capability.missing-tasks-error'
  | 'capability.tasks-only-if-declared'
  | 'capability.degraded-result'
  | 'create-task.shape'
  | 'create-task.no-result-body'
  | 'task.fields'
  | 'tasks-get.shape'
  | 'envelope.pending'
  | 'envelope.terminal'
  | 'envelope.no-context-id'
  | 'disposition.present'
  | 'disposition.body-agrees'
  | 'disposition.only-completed'
  | 'artifacts.none'
  | 'artifacts.no-approver-identity'
  | 'model-text.sanitized'
  | 'pending.not-completed'
  | 'retention.covers-deadline'
  | 'tasks.unknown-task-error'
  | 'expired.not-before-ttl'
  | 'expired.unknown-alike'
  | 'ack.shape'
  | 'terminal.stable';

/** A rule: the SEP-2848 statements it checks, the vectors folder holding its examples, the SEP sections it comes from, what it says. */
export interface Rule {
  /** Ids of SEP-2848's normative statements in the kit's `traceability/sep-2848.json` (Countersign's `conformance/sep-2848.yaml`), e.g. `S05`. */
  statements: string[];
  dir: string;
  source: string;
  summary: string;
}
export declare const RULES: Readonly<Record<RuleId, Rule>>;

/** What `checkMessage` is told the message is (README §Kinds). */
export type MessageKind =
  | 'discover-result'
  | 'create-task-result'
  | 'call-tool-result'
  | 'input-required-result'
  | 'tasks-get-result'
  | 'tasks-update-result'
  | 'tasks-cancel-result'
  | 'task-notification'
  | 'error'
  | 'other';
export declare const KINDS: readonly MessageKind[];

/** A JSON-RPC error object. */
export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * What is known around a message (README §Context); every member optional, and a rule whose
 * context is missing is not judged. Times are ISO 8601 strings, durations integer milliseconds.
 */
export interface CheckContext {
  /** The JSON-RPC request answered, as sent (its `params._meta` carries the per-request client capabilities). */
  request?: { jsonrpc?: '2.0'; id?: string | number; method: string; params?: Record<string, unknown> };
  /** The call could be satisfied only through approval (a requestable denial). */
  gated?: boolean;
  /** The server implements SEP-2643: the envelope is then required where the SEP puts it. */
  sep2643?: boolean;
  /** The task is an approval task (default true): CreateTaskResult status working, a disposition when completed. */
  approvalTask?: boolean;
  /** The task as the caller last saw it, for the ttl rules. */
  task?: { createdAt: string; ttlMs: number | null };
  /** When the request was sent (ISO 8601). */
  at?: string;
  /** The caller knows the server does not hold this task id for it (never issued, another principal's, purged). */
  taskUnknown?: boolean;
  /** What the server answers for a task id it never issued (to compare messages). */
  unknownTaskError?: RpcError;
  /** The error tasks/get answered for this task after its createdAt + ttlMs. */
  expiredGetError?: RpcError;
  /** The backend request deadline (or the approval validity after a grant), ISO 8601. */
  pendingDeadline?: string;
  /** The server's result retention, ms. */
  resultRetentionMs?: number;
  /** Strings that must appear nowhere in the message: backend request ids, hosts, binding tokens. */
  backendArtifacts?: string[];
  /** Approver identities that must not appear in statusMessage or model-immediate-response. */
  approvers?: string[];
  /** Untrusted strings (argument values, approver comments) that must not appear in model-facing text. */
  untrusted?: string[];
  /** An earlier CreateTaskResult or tasks/get result of the same task, received before this request was sent. */
  previous?: Record<string, unknown>;
  /**
   * Phrase lists for `disposition.body-agrees` in place of the English defaults, per class a
   * regular-expression source matched case-insensitively (flags `iu`) against the normalized body
   * (lower-case, ASCII quotes); a class not given keeps its default. An unknown class, an empty or
   * non-string source, or one that does not compile makes `checkMessage` throw `TypeError`.
   */
  phrases?: Partial<Record<PhraseClass, string>>;
}

/** One broken rule: which, where (a JSON path into the message, `$.result._meta`), and why. */
export interface Violation {
  rule: RuleId;
  path: string;
  message: string;
}

/**
 * Judge one JSON-RPC message of `kind`: the violations, `[]` when it conforms. Throws `TypeError`
 * for an unknown kind, a non-object context or a bad `context.phrases`. Pure: no I/O, no clock (times come from `context`).
 */
export declare function checkMessage(kind: MessageKind, message: unknown, context?: CheckContext): Violation[];

/** The kind of an answer to a request of `method` (for judging live answers). */
export declare function kindFor(method: string, message: unknown): MessageKind;

/** Whether a request declares `io.modelcontextprotocol/tasks` in its per-request capabilities. */
export declare function declaresTasks(request: unknown): boolean;

/** The joined text of a CallToolResult's text blocks. */
export declare function bodyText(result: unknown): string;

/**
 * The text the phrase rules read: NFKC, typographic quotes as ASCII, dashes as `-`, soft hyphens and
 * zero-width characters dropped, lower-cased, whitespace collapsed (README §Heuristics).
 */
export declare function normalizeText(text: string): string;

/** The English phrasing heuristics (README §Heuristics); case-insensitive, they also match raw text. */
export declare const NOT_RUN: RegExp;
export declare const MAY_HAVE_RUN: RegExp;
export declare const UNCERTAIN: RegExp;
/** Read only where the NOT_RUN and MAY_HAVE_RUN phrases and "whether …" clauses are cut out. */
export declare const RAN: RegExp;
export declare const FAILED: RegExp;
export declare const DENIED: RegExp;
export declare const DONE: RegExp;

/** The phrase classes {@link CheckContext.phrases} may replace. */
export type PhraseClass = 'notRun' | 'mayHaveRun' | 'uncertain' | 'ran' | 'failed' | 'denied';
export declare const PHRASE_CLASSES: readonly PhraseClass[];

/** What a body says about the tool, by phrase class (`ran`: outright, negated and uncertain phrases cut out). */
export interface BodyReading {
  notRun: boolean;
  mayHave: boolean;
  uncertain: boolean;
  ran: boolean;
  failed: boolean;
  denied: boolean;
}
/** Read a CallToolResult body's text with `phrases` (default: the English lists); the disposition values themselves do not count. */
export declare function readBody(text: string, phrases?: Partial<Record<PhraseClass, RegExp>>): BodyReading;

/** A vector file as read. */
export interface Vector {
  id: string;
  rule: RuleId;
  source: string;
  description: string;
  kind: MessageKind;
  expect: 'accept' | 'reject';
  /** Normalized to a list (empty for an accepting vector). */
  violates: RuleId[];
  context?: CheckContext;
  message: unknown;
  /** The file, relative to the folder run. */
  file: string;
}

/** A vector file that cannot be judged. */
export declare class MalformedVector extends Error {
  constructor(file: string, problem: string);
  readonly file: string;
  readonly problem: string;
}

/** Parse and validate one vector file (`base`: what `file` is relative to). Throws {@link MalformedVector}. */
export declare function readVector(path: string, base?: string): Vector;

export interface VectorResult {
  id: string;
  file: string;
  expect: 'accept' | 'reject';
  ok: boolean;
  violations: Violation[];
  why?: string;
}

export interface VectorReport {
  passed: number;
  failed: Array<{ id: string; why: string }>;
  malformed: Array<{ file: string; problem: string }>;
  results: VectorResult[];
}

/**
 * Run every `*.json` vector under `dir` (default: the verifier's own folder), or the one vector file
 * `dir` names. A missing path or a folder without vectors is reported in `malformed`.
 */
export declare function runVectors(dir?: string): VectorReport;

/**
 * The command line `node verify.mjs [dir|file] [--json]` (also `countersign-conformance vectors`):
 * prints the report and returns the exit status (0 all judged as expected, 1 a mismatch, 2 malformed).
 */
export declare function vectorsMain(argv: string[]): number;
