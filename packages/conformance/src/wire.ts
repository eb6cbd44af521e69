/**
 * The wire side of the SEP-2848 black-box suite: the suite's option and report types, a stateless
 * MCP client over Streamable HTTP that records every exchange, and the check outcome helpers.
 * Imports nothing from Countersign. Does not judge anything: the checks do (`checks-*.ts`).
 */
import { CLIENT_CAPABILITIES } from '../vectors/verify.mjs';
import type { Judgement } from './judge.js';

export const PROTOCOL_VERSION = '2026-07-28';
// The extension identifiers and `_meta` keys have one home: the vectors' verifier (vectors/verify.mjs).
export { APPROVAL_EXT, AUTHZ, DISPOSITION, DISPOSITIONS, MIR, TASKS_EXT } from '../vectors/verify.mjs';

/** What the suite needs to know about the server under test. */
export interface SuiteOptions {
  /** The MCP endpoint (Streamable HTTP). */
  url: string;
  /** Bearer token of principal A (the requester); empty: no `Authorization` header (a server that needs none). */
  token: string;
  /** Bearer token of another principal B; checks that need one are skipped without it. */
  tokenB?: string;
  /**
   * Base URL of the HTTP test-hook API (the package's TEST-HOOKS.md, hooks 1 and 2); Countersign:
   * `<approval service>/access/v1`. Required unless `hooks` is given.
   */
  approverUrl?: string;
  /**
   * Approvers, none of them the requester. With `approverUrl`: HTTP Basic credentials, at least one.
   * With `hooks`: identities only (`secret` optional), passed to the hooks; may be empty.
   */
  approvers: Array<{ id: string; secret?: string }>;
  /**
   * Hooks 1 and 2 in process instead of over HTTP (e.g. `commandHooks`, the `--decide` command of
   * TEST-HOOKS.md); `approverUrl` and the paths are then unused.
   */
  hooks?: ApprovalHooks;
  /** Hook paths relative to `approverUrl`; `{id}` is replaced by the request id. */
  pendingPath?: string;
  decisionPath?: string;
  /** The tool whose call with `arguments` is a requestable denial. */
  tool: string;
  arguments: Record<string, unknown>;
  /** Argument that carries each check's unique marker (a free-text field of the tool). */
  markerField: string;
  /** Arguments of a requestable denial whose request deadline is short (seconds). */
  expiringArguments?: Record<string, unknown>;
  /** Arguments of a requestable denial that asks for submission input before the task (MRTR). */
  justifyArguments?: Record<string, unknown>;
  /** Arguments of a requestable denial whose task asks for input (in-task, `tasks/update`). */
  inTaskArguments?: Record<string, unknown>;
  /** Arguments of a denial that is not requestable. */
  blockedArguments?: Record<string, unknown>;
  /** The server's result retention, when known: the ttl checks then include it. */
  resultRetentionMs?: number;
  /** Side-effect probe: how many times the tool ran for a marker (hook 3). */
  effects?: (marker: string) => Promise<number>;
  /** Upper bound of every wait for a state change (default 20 s); the expiry wait has its own. */
  timeoutMs?: number;
  expiryTimeoutMs?: number;
  /** Poll no slower than this, whatever `pollIntervalMs` the server suggests (default 250 ms). */
  maxPollMs?: number;
  /** Run only these check ids (cross-cutting checks then judge only what those recorded). */
  only?: string[];
  /** Called with each printed line as soon as it is known, in check order. */
  log?: (line: string) => void;
}

/** One pending approval request, as hook 1 lists it (TEST-HOOKS.md). */
export interface PendingItem {
  /** The backend's request id. */
  id: string;
  /** The complete arguments of the denied `tools/call`. */
  arguments: Obj;
  /** The request's decision deadline (RFC 3339), when the backend knows it. */
  expires_at?: string;
  [k: string]: unknown;
}

/** A decision the suite asks hook 2 for. */
export interface DecisionRequest {
  /** The request id, from `PendingItem.id`. */
  id: string;
  decision: 'approve' | 'deny';
  /** Which approver decides: an index the hooks map onto their approvers (several for concurrency and chains). */
  approver: number;
  /** Free text that must never reach an MCP response. */
  comment?: string;
  /** The listed request being decided, when the suite saw it (its arguments carry the check's marker). */
  item?: PendingItem;
}

/**
 * The out-of-band side of a run (TEST-HOOKS.md): hook 1 lists pending approval requests, hook 2
 * decides one. Implemented over HTTP (`httpHooks`), by a command (`commandHooks`, `--decide`), or by
 * the caller. Errors thrown fail the running check.
 */
export interface ApprovalHooks {
  /** Hook 1: the requests awaiting a decision. */
  pending(): Promise<PendingItem[]>;
  /** Hook 2: an HTTP-like status, 2xx decided, 4xx refused (e.g. 409, no longer pending). */
  decide(req: DecisionRequest): Promise<number>;
  /** Strings of the hook side (e.g. its host) that must never appear in an MCP response. */
  artifacts?: readonly string[];
  /** Credentials of the hook side: must never appear in an MCP response either, and are never printed. */
  secrets?: readonly string[];
}

export type CheckStatus = 'pass' | 'fail' | 'skip';
export interface CheckResult {
  id: string;
  status: CheckStatus;
  detail: string;
  ms: number;
}
export interface SuiteReport {
  results: CheckResult[];
  passed: number;
  failed: number;
  skipped: number;
  /** The closing line: `N passed, N failed[, N skipped]`. */
  summary: string;
  /** When the run started and ended (ISO 8601). */
  startedAt: string;
  endedAt: string;
  /** The vectors' verifier over every response received: the rules applied and every violation (`judge.ts`). */
  verifier: Judgement;
}

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export const get = (v: unknown, ...path: string[]): unknown => path.reduce<unknown>((o, k) => (isObj(o) ? o[k] : undefined), v);
/** A short JSON rendering for messages (never throws on undefined). */
export const show = (v: unknown, max = 200): string => String(JSON.stringify(v) ?? 'nothing').slice(0, max);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class CheckFailure extends Error {}
export class CheckSkip extends Error {}
/** Fail the running check with `msg` unless `cond`. */
export function must(cond: unknown, msg: string): asserts cond {
  if (!cond) throw new CheckFailure(msg);
}
export function skip(reason: string): never {
  throw new CheckSkip(reason);
}

// ---------------------------------------------------------------------------------------------
// The wire

/** One recorded MCP exchange. */
export interface Exchange {
  /** Position on the suite's event clock when the request was sent and when its response arrived. */
  sent: number;
  seq: number;
  who: 'A' | 'B';
  method: string;
  params: Obj;
  /** The JSON-RPC request exactly as sent (its id and per-request `_meta`). */
  request: Obj;
  httpStatus: number;
  raw: string;
  /** The JSON-RPC response as received (parsed; from the SSE stream when the server streamed it); absent when none was. */
  message?: Obj;
  result?: Obj;
  error?: { code: number; message: string; data?: unknown };
}

export interface RpcAnswer {
  /** The JSON-RPC id this client gave the request. */
  id: number;
  /** The request as sent and the response as received (for the verifier: `judge.ts`). */
  request: Obj;
  message?: Obj;
  result?: Obj;
  error?: { code: number; message: string; data?: unknown };
  httpStatus: number;
}

export class Recorder {
  readonly exchanges: Exchange[] = [];
  /** Untrusted text the checks put into arguments (injection attempts): never in model-facing text (`model-text.sanitized`). */
  readonly untrusted: string[] = [];
  private clock = 0;
  /** The next tick of the event clock (sends and receipts share it). */
  tick(): number {
    return this.clock++;
  }
  add(e: Omit<Exchange, 'seq'>): void {
    this.exchanges.push({ ...e, seq: this.tick() });
  }
}

/** A stateless MCP client: one POST per request, the 2026-07-28 per-request `_meta`, every exchange recorded. */
export class Rpc {
  private nextId = 1;
  constructor(
    private readonly url: string,
    private readonly token: string,
    private readonly capabilities: Obj,
    private readonly recorder: Recorder,
    readonly who: 'A' | 'B',
  ) {}

  private auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  withCapabilities(capabilities: Obj): Rpc {
    return new Rpc(this.url, this.token, capabilities, this.recorder, this.who);
  }

  /**
   * Send `method` and return its answer. A `tasks/get` the server refuses as too frequent (HTTP 429,
   * a read that changed nothing) is sent again after the wait it names (`Retry-After` seconds, or
   * `error.data.retryAfterMs`; at most 10 times), as a polling client does; every attempt is recorded.
   */
  async call(method: string, params: Obj = {}): Promise<RpcAnswer> {
    for (let attempt = 1; ; attempt++) {
      const { answer, retryAfterMs } = await this.send(method, params);
      if (method !== 'tasks/get' || answer.httpStatus !== 429 || attempt >= 10) return answer;
      await sleep(Math.min(Math.max(retryAfterMs ?? 250, 50), 5_000));
    }
  }

  private async send(method: string, params: Obj): Promise<{ answer: RpcAnswer; retryAfterMs?: number }> {
    const id = this.nextId++;
    const body = {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
          [CLIENT_CAPABILITIES]: this.capabilities,
          'io.modelcontextprotocol/clientInfo': { name: 'sep-2848-conformance', version: '0.1.0' },
        },
      },
    };
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      'mcp-method': method,
      ...this.auth(),
    };
    const name = method === 'tools/call' ? params.name : method.startsWith('tasks/') ? params.taskId : undefined;
    if (typeof name === 'string') headers['mcp-name'] = name;
    const sent = this.recorder.tick();
    const res = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body) });
    const raw = await res.text();
    const message = parseResponse(raw, id, res.headers.get('content-type') ?? '');
    const answer: RpcAnswer = { id, request: body, ...(message ? { message } : {}), httpStatus: res.status };
    if (isObj(message?.result)) answer.result = message.result;
    const err = message?.error;
    if (isObj(err))
      answer.error = { code: Number(err.code), message: String(err.message), ...(err.data !== undefined ? { data: err.data } : {}) };
    const { id: _id, ...recorded } = answer;
    this.recorder.add({ who: this.who, method, params, raw, sent, ...recorded });
    if (!answer.result && !answer.error)
      throw new CheckFailure(`${method}: HTTP ${res.status} without a JSON-RPC response: ${raw.slice(0, 200)}`);
    const header = Number(res.headers.get('retry-after'));
    const data = get(answer.error?.data, 'retryAfterMs');
    const retryAfterMs = typeof data === 'number' ? data : Number.isFinite(header) && header > 0 ? header * 1000 : undefined;
    return { answer, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }

  /** Send a JSON-RPC notification (no id, no response expected); returns the HTTP status. */
  async notify(method: string, params: Obj = {}): Promise<number> {
    const body = {
      jsonrpc: '2.0',
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
          'io.modelcontextprotocol/clientCapabilities': this.capabilities,
        },
      },
    };
    const res = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': PROTOCOL_VERSION,
        'mcp-method': method,
        ...this.auth(),
      },
      body: JSON.stringify(body),
    });
    await res.text();
    return res.status;
  }

  /** `call`, failing the check on a JSON-RPC error. */
  async ok(method: string, params: Obj = {}): Promise<Obj> {
    const a = await this.call(method, params);
    must(a.result, `${method} answered error ${a.error?.code} ${a.error?.message}`);
    return a.result;
  }
}

/** A JSON body, or the response with id `id` in an SSE stream. */
export function parseResponse(raw: string, id: number, contentType: string): Obj | undefined {
  const tryJson = (s: string): unknown => {
    try {
      return JSON.parse(s);
    } catch {
      return undefined;
    }
  };
  if (!contentType.includes('text/event-stream')) {
    const v = tryJson(raw);
    return isObj(v) ? v : undefined;
  }
  for (const block of raw.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    const v = tryJson(data);
    if (isObj(v) && v.id === id && ('result' in v || 'error' in v)) return v;
  }
  return undefined;
}
