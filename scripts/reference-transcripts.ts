/**
 * The transcripts of the reference chapter (`docs/reference/`), generated from the running
 * product: the embedded stack of `npm start` (`src/stack.ts`, composed by `src/compose.ts`, started
 * by the end-to-end harness `test/support/stack-harness.ts` with no tunable changed) on a
 * Temporal dev server in a fresh temporary folder, with the default configuration and the default
 * policies plus the chapter's three extra rules ({@link REFERENCE_POLICIES}). Each scenario is
 * driven as a curl user would drive it: one `fetch` POST per JSON-RPC request on the 2026-07-28
 * wire, approvals decided through the reference approval service's API (`/access/v1`).
 *
 * A transcript lives between two marker comments in a file of `docs/reference/`:
 *
 *     <!-- transcript:requestable-denial -->
 *     …generated…
 *     <!-- /transcript -->
 *
 * Volatile values become stable placeholders ({@link normalize}; the chapter's README lists them),
 * so two runs write the same text. Waiting is on observable state only: a `subscriptions/listen`
 * stream for a task's next status, the approval service's pending list, and for retention the
 * deadline `createdAt + ttlMs` the server itself stated.
 *
 * Usage: `npm run docs:reference` rewrites the transcripts; `-- --check` exits 1 when a file is
 * out of date; `-- --write-policies <dir>` writes the policy folder the generator runs with (for
 * "run it yourself") and exits. test/e2e/reference-transcripts.test.ts regenerates them in memory
 * and fails when a checked-in file would change.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROTOCOL_VERSION, readSseEvents } from '@countersign/client';
import { createLogger } from '@countersign/http/log';
import { PROJECT_ROOT } from '../src/project-root.js';
import { ensureTemporalBinaries } from '../src/temporal/binaries.js';
import { startMcpInstance, type McpInstance } from '../test/support/mcp-instance.js';
import { headersFor } from '../test/support/sse.js';
import { freshStackConfig, startTestStack, writePolicyFolder } from '../test/support/stack-harness.js';
import { JUSTIFY_POLICY, QUICK_EXPIRY_POLICY, SECOND_APPROVAL_POLICY } from '../test/support/test-policies.js';
import { TASKS_EXTENSION } from '../workflows/wire.js';

/** The folder of the chapter, relative to the project root. */
export const CHAPTER_DIR = join('docs', 'reference');

/**
 * The rules the generator adds to `policies/` (file name → Cedar; the names sort before
 * `wire_transfer.cedar`, so theirs is the requestable denial submitted): 77,777 has a 6-second
 * request window, 88,888 needs a justification before the task (MRTR), 66,666 asks in-task for a
 * second, justified approval after a first one by anyone but carol.
 */
export const REFERENCE_POLICIES: Readonly<Record<string, string>> = {
  'a-quick-expiry.cedar': QUICK_EXPIRY_POLICY,
  'a-justify.cedar': JUSTIFY_POLICY,
  'b-second-approval.cedar': SECOND_APPROVAL_POLICY,
};

/** resultRetention of the second front that the retention scenario runs on, ms (`COUNTERSIGN_RESULT_RETENTION_MS`). */
export const SHORT_RETENTION_MS = 3000;

const BEGIN = /<!-- transcript:([a-z0-9-]+) -->\n/g;
const END = '<!-- /transcript -->';

// ---------------------------------------------------------------------------------------------
// Normalization

const TASK_ID = /[0-9a-f]{32}\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
const ISO_TIME = /\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)\b/g;
const HEX_DIGEST = /\b[0-9a-f]{64}\b/g;
const JWT = /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g;
const LEDGER_ENTRY = /\bledger entry \d+\b/g;
/** The approval service's ids: `ar_…` a request, `apv_…` an approval (16 random bytes, base64url). */
const SERVICE_ID = /\b(ar|apv)_[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])/g;
const SERVICE_ID_KIND: Record<string, string> = { ar: 'request', apv: 'approval' };
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Numbering of the volatile ids of one scenario, by first appearance: `<task-1>`, `<id-1>`, … */
class Placeholders {
  private readonly seen = new Map<string, string>();
  private readonly counts = new Map<string, number>();
  of(kind: string, value: string): string {
    let p = this.seen.get(value);
    if (p === undefined) {
      const n = (this.counts.get(kind) ?? 0) + 1;
      this.counts.set(kind, n);
      p = `<${kind}-${n}>`;
      this.seen.set(value, p);
    }
    return p;
  }
  /** `s` with task ids, other UUIDs, timestamps, digests, tokens and ledger entry numbers replaced. */
  text(s: string): string {
    return s
      .replace(TASK_ID, (v) => this.of('task', v))
      .replace(SERVICE_ID, (v, prefix: string) => this.of(SERVICE_ID_KIND[prefix] ?? 'id', v))
      .replace(UUID, (v) => this.of('id', v))
      .replace(ISO_TIME, '<timestamp>')
      .replace(HEX_DIGEST, '<sha256>')
      .replace(JWT, '<jwt>')
      .replace(LEDGER_ENTRY, 'ledger entry <entryId>');
  }
}

/**
 * `value` with its volatile parts as placeholders: `createdAt` / `lastUpdatedAt` by name, any other
 * timestamp `<timestamp>`; `pollIntervalMs` and the approval tools' `checkAgainAfterMs` (they grow
 * with the time since the last change);
 * `requestState` (sealed, fresh each time); `entryId`; a terminal task's `ttlMs` when it is exactly
 * `lastUpdatedAt − createdAt + retention` for a known retention (else left as it is, so a change
 * shows); ids, digests and tokens inside any string.
 */
export function normalize(value: unknown, ids: Placeholders, retentions: readonly number[]): unknown {
  if (typeof value === 'string') return ids.text(value);
  if (Array.isArray(value)) return value.map((v) => normalize(v, ids, retentions));
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if ((k === 'createdAt' || k === 'lastUpdatedAt') && typeof v === 'string') out[k] = `<${k}>`;
    else if ((k === 'pollIntervalMs' || k === 'checkAgainAfterMs') && typeof v === 'number') out[k] = `<${k}>`;
    else if (k === 'requestState' && typeof v === 'string') out[k] = '<requestState>';
    else if (k === 'entryId' && typeof v === 'number') out[k] = '<entryId>';
    else if (k === 'ttlMs' && typeof v === 'number' && TERMINAL.has(o.status as string)) out[k] = terminalTtl(o, v, retentions);
    else out[k] = normalize(v, ids, retentions);
  }
  return out;
}

function terminalTtl(task: Record<string, unknown>, ttlMs: number, retentions: readonly number[]): unknown {
  const created = Date.parse(String(task.createdAt));
  const updated = Date.parse(String(task.lastUpdatedAt));
  const r = retentions.find((ms) => updated - created + ms === ttlMs);
  return r === undefined ? ttlMs : `<lastUpdatedAt − createdAt + ${r}>`;
}

// ---------------------------------------------------------------------------------------------
// Recording

/** One HTTP exchange as a transcript shows it. */
interface Exchange {
  caption: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  status: number;
  responseHeaders: Record<string, string>;
  /** A JSON body, or the messages of an SSE stream ({@link LEFT_OUT} where some were left out). */
  response: { json: unknown } | { events: unknown[] };
}

/** In a recorded stream: the place of the notifications left out (shown as an SSE comment). */
const LEFT_OUT = Symbol('left out');
const LEFT_OUT_TEXT = ': (the notifications/tasks between these two, if any, are left out: how many depends on timing)';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  202: 'Accepted',
  400: 'Bad Request',
  404: 'Not Found',
  409: 'Conflict',
  429: 'Too Many Requests',
};
const SHOWN_RESPONSE_HEADERS = ['content-type', 'retry-after'];

/** The 2026-07-28 per-request `_meta` of a curl user: protocol version, capabilities, client info. */
function requestMeta(capabilities: Record<string, unknown>): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'curl', version: '1' },
  };
}

const WITH_TASKS = { extensions: { [TASKS_EXTENSION]: {} } };
/** The extension's identifier in earlier drafts, which proxies still declare (docs/reference/01-identifier-and-capability.md). */
const EARLIER_TOOL_APPROVAL_EXTENSION = 'net.openid.authzen/tool-approval';
/** The tasks extension and form elicitation: what a client that can answer `inputRequests` declares. */
const WITH_FORMS = { ...WITH_TASKS, elicitation: { form: {} } };

type RpcAnswer = { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } };

/** A caller of one MCP endpoint and the approval service, recording what a scenario shows. */
class Session {
  private nextId = 1;
  constructor(
    private readonly mcpUrl: string,
    private readonly approvalsUrl: string,
    private readonly token: string,
    private readonly approvers: ReadonlyArray<{ id: string; secret: string }>,
    readonly exchanges: Exchange[] = [],
  ) {}

  /** The same caller with an empty transcript (a new scenario). */
  fresh(): Session {
    return new Session(this.mcpUrl, this.approvalsUrl, this.token, this.approvers);
  }

  /** Another caller (a token of another subject) on the same endpoint, recording into this transcript. */
  as(token: string): Session {
    const s = new Session(this.mcpUrl, this.approvalsUrl, token, this.approvers, this.exchanges);
    s.nextId = this.nextId;
    return s;
  }

  private headers(method: string, name?: string): Record<string, string> {
    return headersFor({ url: this.mcpUrl, token: this.token }, method, name);
  }

  /** One JSON-RPC request; recorded under `caption` unless it is undefined. Returns the parsed answer. */
  async rpc(
    caption: string | undefined,
    method: string,
    params: Record<string, unknown>,
    capabilities: Record<string, unknown> = WITH_TASKS,
  ): Promise<RpcAnswer> {
    const name = typeof params.taskId === 'string' ? params.taskId : typeof params.name === 'string' ? params.name : undefined;
    const headers = this.headers(method, name);
    const body = { jsonrpc: '2.0', id: this.nextId++, method, params: { ...params, _meta: requestMeta(capabilities) } };
    const res = await fetch(this.mcpUrl, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await res.json()) as RpcAnswer;
    if (caption !== undefined) this.exchanges.push(exchange(caption, 'POST', '/mcp', headers, body, res, { json }));
    return json;
  }

  /** `rpc` that must answer a result; returns it. */
  async result(
    caption: string | undefined,
    method: string,
    params: Record<string, unknown>,
    capabilities: Record<string, unknown> = WITH_TASKS,
  ): Promise<Record<string, unknown>> {
    const a = await this.rpc(caption, method, params, capabilities);
    if (!a.result) throw new Error(`${method} answered ${JSON.stringify(a.error)}`);
    return a.result;
  }

  /**
   * Open `subscriptions/listen` for `taskId` and read notifications until `until` holds for one
   * (`notifications/tasks` params); the stream is then dropped, or, when recorded (`caption` set),
   * read to its end. A recording shows the acknowledgement, the first notification, the matching
   * one and what follows it (the `working` ones between are left out, their number depends on timing). `onOpen` runs once the first notification (the
   * task as it is) has arrived, so what it causes is pushed on this stream. Returns the matching
   * notification's params.
   */
  async listen(
    caption: string | undefined,
    taskId: string,
    until: (t: Record<string, unknown>) => boolean,
    onOpen?: () => Promise<void>,
  ): Promise<Record<string, unknown>> {
    const headers = this.headers('subscriptions/listen');
    const body = {
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'subscriptions/listen',
      params: { notifications: { taskIds: [taskId] }, _meta: requestMeta(WITH_TASKS) },
    };
    const abort = new AbortController();
    const res = await fetch(this.mcpUrl, { method: 'POST', headers, body: JSON.stringify(body), signal: abort.signal });
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream'))
      throw new Error(`subscriptions/listen answered HTTP ${res.status}: ${await res.text()}`);
    const shown: unknown[] = [];
    let notifications = 0;
    let matched: Record<string, unknown> | undefined;
    try {
      for await (const ev of readSseEvents(res.body)) {
        const m = JSON.parse(ev.data) as { method?: string; params?: Record<string, unknown> };
        // after the awaited notification a recorded stream is read to its end (the server closes it with the result)
        if (matched !== undefined || m.method !== 'notifications/tasks') {
          shown.push(m);
          continue;
        }
        notifications++;
        const params = m.params ?? {};
        if (until(params)) {
          if (caption === undefined) return params;
          if (notifications > 1) shown.push(LEFT_OUT);
          shown.push(m);
          matched = params;
          continue;
        }
        if (notifications === 1) {
          shown.push(m);
          await onOpen?.();
        }
      }
    } finally {
      abort.abort();
    }
    if (matched === undefined || caption === undefined) throw new Error(`the stream for ${taskId} ended before the awaited notification`);
    this.exchanges.push(exchange(caption, 'POST', '/mcp', headers, body, res, { events: shown }));
    return matched;
  }

  /** A task's status once it satisfies `until`, read by a subscription (no polling). */
  async waitFor(taskId: string, until: (t: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
    return this.listen(undefined, taskId, until);
  }

  private basic(approverId: string): string {
    const a = this.approvers.find((x) => x.id === approverId);
    if (!a) throw new Error(`no approver ${approverId}`);
    return `Basic ${Buffer.from(`${a.id}:${a.secret}`).toString('base64')}`;
  }

  /** A request to the approval service as `approverId`; recorded under `caption` unless undefined. */
  async approvals(
    caption: string | undefined,
    approverId: string,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const headers: Record<string, string> = {
      authorization: this.basic(approverId),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    };
    const res = await fetch(`${this.approvalsUrl}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const json = (await res.json()) as unknown;
    if (caption !== undefined) this.exchanges.push(exchange(caption, method, path, headers, body, res, { json }));
    return { status: res.status, json };
  }

  /** The approval service's id of the pending request whose `memo` argument is `memo`, as `approverId` sees it; undefined when none. */
  async pendingId(memo: string, approverId = 'bob'): Promise<string | undefined> {
    const { json } = await this.approvals(undefined, approverId, 'GET', '/access/v1/approvals/pending?limit=200');
    return (json as { items: Array<{ id: string; arguments: { memo?: unknown } }> }).items.find((i) => i.arguments.memo === memo)?.id;
  }

  /** Decide the pending request of `memo` as `approverId`, recorded (the list read first is not). Throws when it is not pending. */
  async decide(caption: string | undefined, memo: string, decision: 'approve' | 'deny', approverId: string): Promise<void> {
    const id = await this.pendingId(memo, approverId);
    if (id === undefined) throw new Error(`no pending request with memo ${memo}`);
    const { status } = await this.approvals(caption, approverId, 'POST', `/access/v1/requests/${id}/decision`, { decision });
    if (status !== 200) throw new Error(`deciding ${memo} answered HTTP ${status}`);
  }
}

/**
 * Open a task for a transfer of `amount` with `memo` (not recorded), have `approverId` decide it
 * (recorded under `caption` unless undefined) and wait until the task is terminal; returns its id.
 */
async function decidedTask(
  s: Session,
  amount: number,
  memo: string,
  decision: 'approve' | 'deny',
  approverId: string,
  caption?: string,
): Promise<string> {
  const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(amount, memo)));
  await s.decide(caption, memo, decision, approverId);
  await s.waitFor(taskId, isTerminal);
  return taskId;
}

function exchange(
  caption: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  res: Response,
  response: Exchange['response'],
): Exchange {
  const responseHeaders: Record<string, string> = {};
  for (const h of SHOWN_RESPONSE_HEADERS) {
    const v = res.headers.get(h);
    if (v !== null) responseHeaders[h] = h === 'content-type' ? v.replace(/;\s*charset=utf-8/i, '') : v;
  }
  return { caption, method, path, headers, ...(body !== undefined ? { body } : {}), status: res.status, responseHeaders, response };
}

/** The Markdown of a scenario's exchanges, normalized. */
export function renderExchanges(exchanges: readonly Exchange[], retentions: readonly number[]): string {
  const ids = new Placeholders();
  const json = (v: unknown) => JSON.stringify(normalize(v, ids, retentions), null, 2);
  const parts: string[] = [];
  for (const x of exchanges) {
    const headers = Object.entries(x.headers).map(([k, v]) =>
      k === 'authorization' ? `${k}: ${v.startsWith('Basic ') ? 'Basic <approver:password>' : 'Bearer <token>'}` : `${k}: ${ids.text(v)}`,
    );
    const request = [`${x.method} ${ids.text(x.path)}`, ...headers, ...(x.body !== undefined ? ['', json(x.body)] : [])].join('\n');
    const statusLine = `HTTP/1.1 ${x.status} ${STATUS_TEXT[x.status] ?? ''}`.trimEnd();
    const rh = Object.entries(x.responseHeaders).map(([k, v]) => `${k}: ${v}`);
    let body: string;
    if ('json' in x.response) body = json(x.response.json);
    else {
      body = x.response.events
        .map((e) =>
          e === LEFT_OUT
            ? LEFT_OUT_TEXT
            : `event: message\n${json(e)
                .split('\n')
                .map((l) => `data: ${l}`)
                .join('\n')}`,
        )
        .join('\n\n');
    }
    parts.push(`**${x.caption}**\n\n\`\`\`http\n${request}\n\`\`\`\n\n\`\`\`http\n${[statusLine, ...rh, '', body].join('\n')}\n\`\`\``);
  }
  return parts.join('\n\n');
}

// ---------------------------------------------------------------------------------------------
// Scenarios

/** What a scenario runs against besides its own session (alice on the stack's endpoint, an empty transcript). */
interface Ctx {
  /** alice on the stack's endpoint. */
  alice: Session;
  /** A token for `sub` of the stack's issuer. */
  token(sub: string): Promise<string>;
  /** alice on the second front, whose resultRetention is {@link SHORT_RETENTION_MS}. */
  shortRetention: Session;
}

const transfer = (amount: number, memo: string, to = 'acct-991') => ({ name: 'wire_transfer', arguments: { to, amount, memo } });
const isTerminal = (t: Record<string, unknown>) => TERMINAL.has(t.status as string);
const taskIdOf = (r: Record<string, unknown>) => {
  if (typeof r.taskId !== 'string') throw new Error(`not a task: ${JSON.stringify(r)}`);
  return r.taskId;
};

/**
 * The scenarios, in the order they run: name → what it does with a fresh session of alice's (its
 * recordings are the transcript, or those of the session it returns). Each opens its own tasks
 * (distinct `memo`).
 */
const SCENARIOS: Array<[string, (s: Session, c: Ctx) => Promise<Session | void>]> = [
  [
    'discover',
    async (s) => {
      await s.rpc('server/discover: the extensions the server declares', 'server/discover', {});
    },
  ],
  [
    'earlier-identifier',
    async (s) => {
      const created = await s.result(
        'tools/call declaring the tasks extension and the earlier identifier net.openid.authzen/tool-approval',
        'tools/call',
        transfer(47_000, 'reference: earlier identifier'),
        { extensions: { [TASKS_EXTENSION]: {}, [EARLIER_TOOL_APPROVAL_EXTENSION]: {} } },
      );
      await s.result(undefined, 'tasks/cancel', { taskId: taskIdOf(created) });
    },
  ],
  [
    'requestable-denial',
    async (s) => {
      const memo = 'reference: approve';
      const created = await s.result(
        'tools/call of a $50,000 transfer, declaring the tasks extension',
        'tools/call',
        transfer(50_000, memo),
      );
      const taskId = taskIdOf(created);
      await s.result('tasks/get while the approval is pending', 'tasks/get', { taskId });
      await s.approvals(
        'the approver bob lists what waits for him (approval service API)',
        'bob',
        'GET',
        '/access/v1/approvals/pending?limit=200',
      );
      await s.decide('bob approves it', memo, 'approve', 'bob');
      await s.waitFor(taskId, isTerminal);
      await s.result('tasks/get once the task is terminal', 'tasks/get', { taskId });
    },
  ],
  [
    'deny',
    async (s) => {
      const taskId = await decidedTask(s, 40_000, 'reference: deny', 'deny', 'carol', 'carol denies the request (approval service API)');
      await s.result('tasks/get: completed, denied-not-executed', 'tasks/get', { taskId });
    },
  ],
  [
    'input-validation',
    async (s) => {
      await s.rpc(
        'tools/call whose arguments the tool schema refuses (amount a string, an unknown key): a tool result the model reads',
        'tools/call',
        { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 'fifty thousand', memo: 'reference: invalid', currency: 'USD' } },
      );
      await s.rpc('tools/call of a tool that does not exist: a protocol error', 'tools/call', { name: 'wire_transfr', arguments: {} });
    },
  ],
  [
    'non-requestable',
    async (s) => {
      await s.rpc(
        'tools/call of a transfer to a blocked account: a denial nothing can approve',
        'tools/call',
        transfer(500, 'reference: blocked', 'acct-666'),
      );
    },
  ],
  [
    'no-tasks-extension',
    async (s) => {
      await s.rpc(
        'tools/call of a $45,000 transfer without the tasks extension (default COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools)',
        'tools/call',
        transfer(45_000, 'reference: no tasks'),
        {},
      );
      const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(45_001, 'reference: no tasks, then tasks/get')));
      await s.rpc('tasks/get of a task, without the tasks extension', 'tasks/get', { taskId }, {});
      await s.result(undefined, 'tasks/cancel', { taskId });
    },
  ],
  [
    'cancel',
    async (s) => {
      const memo = 'reference: cancel';
      const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(41_000, memo)));
      const requestId = await s.pendingId(memo);
      if (requestId === undefined) throw new Error('the cancel scenario has no pending request');
      await s.result('tasks/cancel while the approval is pending', 'tasks/cancel', { taskId });
      await s.result('tasks/get: cancelled', 'tasks/get', { taskId });
      // the workflow withdraws the backend request: wait until it has left the approver's queue
      for (let i = 0; (await s.pendingId(memo)) !== undefined; i++) {
        if (i > 100) throw new Error('the cancelled request stayed pending');
        await new Promise((r) => setTimeout(r, 100));
      }
      await s.approvals(
        'a late approval of the withdrawn request (approval service API)',
        'bob',
        'POST',
        `/access/v1/requests/${requestId}/decision`,
        {
          decision: 'approve',
        },
      );
    },
  ],
  [
    'cancel-race',
    async (s) => {
      const taskId = await decidedTask(s, 42_000, 'reference: cancel after approval', 'approve', 'bob', 'bob approves');
      await s.result('tasks/cancel after the execution claim won', 'tasks/cancel', { taskId });
      await s.result('tasks/get: still completed, approved-executed', 'tasks/get', { taskId });
    },
  ],
  [
    'request-expiry',
    async (s) => {
      const created = await s.result(
        'tools/call of a $77,777 transfer (a rule with a 6-second request window)',
        'tools/call',
        transfer(77_777, 'reference: expiry'),
      );
      const taskId = taskIdOf(created);
      await s.waitFor(taskId, isTerminal);
      await s.result('tasks/get once nobody decided in time', 'tasks/get', { taskId });
    },
  ],
  [
    'retention-expiry',
    async (_, { shortRetention }) => {
      const s = shortRetention.fresh();
      const taskId = await decidedTask(s, 43_000, 'reference: retention', 'deny', 'carol');
      const done = await s.result(`tasks/get of the denied task (resultRetention ${SHORT_RETENTION_MS} ms)`, 'tasks/get', { taskId });
      const deadline = Date.parse(String(done.createdAt)) + Number(done.ttlMs);
      // the deadline the server stated; then read until its answer changes
      await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now()) + 100));
      for (let i = 0; ; i++) {
        const read = await s.rpc(undefined, 'tasks/get', { taskId });
        if (read.error?.code === -32602) break;
        if (read.error !== undefined || i > 50) throw new Error(`after createdAt + ttlMs tasks/get answered ${JSON.stringify(read)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      await s.rpc('tasks/get after createdAt + ttlMs', 'tasks/get', { taskId });
      await s.rpc('tasks/update after createdAt + ttlMs', 'tasks/update', {
        taskId,
        inputResponses: { justification: { action: 'accept', content: { justification: 'Supplier settlement, ticket FIN-1.' } } },
      });
      await s.rpc('tasks/cancel after createdAt + ttlMs', 'tasks/cancel', { taskId });
      await s.rpc('tasks/get of an id that never existed, for comparison', 'tasks/get', {
        taskId: `${'0'.repeat(32)}.00000000-0000-4000-8000-000000000000`,
      });
      return s;
    },
  ],
  [
    'mrtr',
    async (s) => {
      const call = transfer(88_888, 'reference: justified');
      const first = await s.result(
        'tools/call of a $88,888 transfer (a rule that needs a justification first), declaring form elicitation',
        'tools/call',
        call,
        WITH_FORMS,
      );
      const created = await s.result(
        'the same tools/call again, with inputResponses and the requestState',
        'tools/call',
        {
          ...call,
          inputResponses: {
            justification: { action: 'accept', content: { justification: 'Quarterly supplier settlement, ticket FIN-1234.' } },
          },
          requestState: first.requestState,
        },
        WITH_FORMS,
      );
      await s.result(undefined, 'tasks/cancel', { taskId: taskIdOf(created) });
    },
  ],
  [
    'in-task-input',
    async (s) => {
      const memo = 'reference: second approval';
      const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(66_666, memo), WITH_FORMS));
      await s.decide(undefined, memo, 'approve', 'bob');
      await s.waitFor(taskId, (t) => t.status === 'input_required');
      await s.result('tasks/get after bob approved: policy asks for a second, justified approval', 'tasks/get', { taskId });
      await s.result(
        'tasks/update answering the outstanding input request',
        'tasks/update',
        {
          taskId,
          inputResponses: { 'justification-2': { action: 'accept', content: { justification: 'Carol owns this supplier relationship.' } } },
        },
        WITH_FORMS,
      );
      for (let i = 0; (await s.pendingId(memo, 'carol')) === undefined; i++) {
        if (i > 100) throw new Error('the second request was not submitted');
        await new Promise((r) => setTimeout(r, 100));
      }
      await s.decide(undefined, memo, 'approve', 'carol');
      await s.waitFor(taskId, isTerminal);
      await s.result('tasks/get once carol approved the second request', 'tasks/get', { taskId });
    },
  ],
  [
    'push',
    async (s) => {
      const memo = 'reference: push';
      const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(44_000, memo)));
      await s.listen('subscriptions/listen: the stream while bob approves', taskId, isTerminal, () =>
        s.decide(undefined, memo, 'approve', 'bob'),
      );
    },
  ],
  [
    'foreign-task',
    async (s, { token }) => {
      const taskId = taskIdOf(await s.result(undefined, 'tools/call', transfer(46_000, 'reference: foreign')));
      const mallory = s.as(await token('mallory'));
      await mallory.rpc("tasks/get of alice's task by another principal, mallory", 'tasks/get', { taskId });
      await s.result(undefined, 'tasks/cancel', { taskId });
    },
  ],
];

/** The names of the scenarios, in the order they run. */
export const SCENARIO_NAMES: readonly string[] = SCENARIOS.map(([n]) => n);

/**
 * Start the product, run every scenario, stop it, and return each transcript's Markdown by name.
 * Throws when a scenario's observable state never arrives or an answer is not of the expected kind.
 */
export async function generateTranscripts(): Promise<Map<string, string>> {
  ensureTemporalBinaries();
  const config = freshStackConfig({}, REFERENCE_POLICIES);
  const stack = await startTestStack(config, createLogger({ level: process.env.LOG_LEVEL ?? 'error' }));
  let short: McpInstance | undefined;
  try {
    // a second front over the same Temporal, worker and secrets, as `COUNTERSIGN_RESULT_RETENTION_MS=3000 npm start` would configure it
    short = await startMcpInstance(stack, { COUNTERSIGN_RESULT_RETENTION_MS: SHORT_RETENTION_MS });
    const token = (sub: string) => stack.issuer.mintToken({ sub });
    const aliceToken = await token('alice');
    const session = (url: string) => new Session(url, stack.urls.approvals, aliceToken, stack.secrets.approvers);
    const ctx: Ctx = { alice: session(stack.urls.mcp), shortRetention: session(short.url), token };
    const retentions = [config.COUNTERSIGN_RESULT_RETENTION_MS, SHORT_RETENTION_MS];
    const out = new Map<string, string>();
    for (const [name, run] of SCENARIOS) {
      const s = ctx.alice.fresh();
      out.set(name, renderExchanges(((await run(s, ctx)) ?? s).exchanges, retentions));
    }
    return out;
  } finally {
    await short?.stop();
    await stack.stop();
    for (const dir of [config.COUNTERSIGN_DATA_DIR, config.COUNTERSIGN_POLICY_DIR]) rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// The chapter's files

/** `text` with every marked transcript replaced by `transcripts`' one. Throws on an unknown name or a marker without its end. */
export function withTranscripts(text: string, transcripts: ReadonlyMap<string, string>): string {
  let out = '';
  let at = 0;
  for (const m of text.matchAll(BEGIN)) {
    if (m.index < at) throw new Error('transcript markers overlap');
    const name = m[1] as string;
    const transcript = transcripts.get(name);
    if (transcript === undefined) throw new Error(`transcript:${name}: no such scenario (${[...transcripts.keys()].join(', ')})`);
    const bodyStart = m.index + m[0].length;
    const end = text.indexOf(END, bodyStart);
    if (end < 0) throw new Error(`transcript:${name} has no ${END}`);
    out += text.slice(at, bodyStart) + transcript + '\n';
    at = end;
  }
  return out + text.slice(at);
}

/** The transcript names `text` marks. */
export function markedTranscripts(text: string): string[] {
  return [...text.matchAll(BEGIN)].map((m) => m[1] as string);
}

/** The chapter's Markdown files, relative to the project root. */
export function chapterFiles(): string[] {
  return readdirSync(join(PROJECT_ROOT, CHAPTER_DIR))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(CHAPTER_DIR, f));
}

/** Each chapter file's text as it is and as the transcripts make it; throws when a scenario is marked nowhere. */
export function chapterUpdates(transcripts: ReadonlyMap<string, string>): Array<{ file: string; text: string; next: string }> {
  const files = chapterFiles().map((file) => {
    const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
    return { file, text, next: withTranscripts(text, transcripts) };
  });
  const marked = new Set(files.flatMap((f) => markedTranscripts(f.text)));
  const unused = [...transcripts.keys()].filter((n) => !marked.has(n));
  if (unused.length > 0) throw new Error(`scenarios no chapter file shows: ${unused.join(', ')}`);
  return files;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const policiesAt = args.indexOf('--write-policies');
  if (policiesAt >= 0) {
    const dir = args[policiesAt + 1];
    if (!dir) throw new Error('--write-policies needs a folder');
    writePolicyFolder(dir, REFERENCE_POLICIES);
    process.stdout.write(`policies written to ${dir}\n`);
  } else {
    const check = args.includes('--check');
    const updates = chapterUpdates(await generateTranscripts());
    const stale = updates.filter((u) => u.next !== u.text);
    for (const u of stale) {
      if (!check) writeFileSync(join(PROJECT_ROOT, u.file), u.next);
      process.stdout.write(`${u.file}: ${check ? 'transcripts out of date (npm run docs:reference)' : 'transcripts written'}\n`);
    }
    if (stale.length === 0) process.stdout.write('transcripts up to date\n');
    if (check && stale.length > 0) process.exit(1);
  }
}
