/**
 * The check context of the SEP-2848 black-box suite: the test hooks (TEST-HOOKS.md of this package:
 * list pending approval requests, decide one), the per-check context, and the helpers the checks
 * share (create / poll tasks, count side effects, answer MRTR forms, clean up).
 */
import type { Judgement } from './judge.js';
import {
  type ApprovalHooks,
  DISPOSITION,
  type Exchange,
  get,
  isObj,
  must,
  type Obj,
  type PendingItem,
  Recorder,
  Rpc,
  show,
  skip,
  sleep,
  type SuiteOptions,
  TASKS_EXT,
} from './wire.js';
// ---------------------------------------------------------------------------------------------
// The test hooks (TEST-HOOKS.md)

/** Hooks 1 and 2 over HTTP (TEST-HOOKS.md): `GET {approverUrl}/approvals/pending`, `POST {approverUrl}/requests/{id}/decision`, HTTP Basic. */
export function httpHooks(opts: SuiteOptions): ApprovalHooks {
  const base = opts.approverUrl;
  must(base, 'an approver URL (hooks 1 and 2 over HTTP) or in-process hooks are needed');
  const creds = opts.approvers.filter((a): a is { id: string; secret: string } => typeof a.secret === 'string');
  must(creds.length > 0, 'at least one approver credential (ID:SECRET) is needed for the HTTP hooks');
  const auth = (i: number) => {
    const a = creds[i % creds.length]!;
    return `Basic ${Buffer.from(`${a.id}:${a.secret}`).toString('base64')}`;
  };
  const url = (path: string) => `${base.replace(/\/$/, '')}${path}`;
  return {
    artifacts: [new URL(base).host],
    secrets: creds.map((a) => a.secret),
    async pending() {
      const res = await fetch(url(opts.pendingPath ?? '/approvals/pending'), {
        headers: { authorization: auth(0), accept: 'application/json' },
      });
      must(res.ok, `test hook: GET pending answered HTTP ${res.status}`);
      const items = get((await res.json()) as unknown, 'items');
      must(Array.isArray(items), 'test hook: GET pending did not return {items: [...]}');
      return items as PendingItem[];
    },
    async decide({ id, decision, approver, comment }) {
      const res = await fetch(url((opts.decisionPath ?? '/requests/{id}/decision').replace('{id}', encodeURIComponent(id))), {
        method: 'POST',
        headers: { authorization: auth(approver), 'content-type': 'application/json' },
        body: JSON.stringify({ decision, ...(comment ? { comment } : {}) }),
      });
      await res.text();
      return res.status;
    },
  };
}

/** The suite's view of the hooks: remembers every item and comment seen (for `conf:no-backend-artifacts`). */
export class Hooks {
  constructor(
    private readonly opts: SuiteOptions,
    private readonly impl: ApprovalHooks,
  ) {}
  readonly seenItems: PendingItem[] = [];
  readonly comments: string[] = [];
  get artifacts(): readonly string[] {
    return this.impl.artifacts ?? [];
  }
  get secrets(): readonly string[] {
    return [...(this.impl.secrets ?? []), ...this.opts.approvers.flatMap((a) => (a.secret ? [a.secret] : []))];
  }

  async pending(): Promise<PendingItem[]> {
    const out = (await this.impl.pending()).filter((i): i is PendingItem => isObj(i) && typeof i.id === 'string' && isObj(i.arguments));
    for (const i of out) if (!this.seenItems.some((s) => s.id === i.id)) this.seenItems.push(i);
    return out;
  }

  async itemsFor(marker: string): Promise<PendingItem[]> {
    return (await this.pending()).filter((i) => i.arguments[this.opts.markerField] === marker);
  }

  /** Wait until `n` items carry `marker` (default 1); returns them. */
  async waitItems(marker: string, n = 1, timeoutMs = 5_000): Promise<PendingItem[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const items = await this.itemsFor(marker);
      if (items.length >= n || Date.now() > until) return items;
      await sleep(100);
    }
  }

  /** Decide request `id` as approver number `approver`; returns the HTTP(-like) status. */
  async decide(id: string, decision: 'approve' | 'deny', approver = 0, comment?: string): Promise<number> {
    if (comment) this.comments.push(comment);
    const item = this.seenItems.find((i) => i.id === id);
    return this.impl.decide({ id, decision, approver, ...(comment ? { comment } : {}), ...(item ? { item } : {}) });
  }
}

// ---------------------------------------------------------------------------------------------
// Check context and helpers

export interface Ctx {
  opts: SuiteOptions;
  a: Rpc;
  /** Principal A without any capability declared. */
  plain: Rpc;
  b?: Rpc;
  hooks: Hooks;
  rec: Recorder;
  marker(label: string): string;
  /** Task ids to cancel when the check ends. */
  cleanup: Array<{ rpc: Rpc; taskId: string }>;
  /**
   * The verifier's judgement of every response recorded so far (`judge.ts`), computed once, when a
   * cross-cutting check first asks (after every other check has ended).
   */
  judged(): Judgement;
}

export const timeout = (c: Ctx) => c.opts.timeoutMs ?? 20_000;

export function argsWith(c: Ctx, base: Record<string, unknown>, marker: string): Obj {
  return { ...base, [c.opts.markerField]: marker };
}

/** `tools/call` that must answer a `CreateTaskResult` in `working`. */
export async function createTask(c: Ctx, rpc: Rpc, args: Obj, what = 'requestable call'): Promise<Obj & { taskId: string }> {
  const r = await rpc.ok('tools/call', { name: c.opts.tool, arguments: args });
  must(r.resultType === 'task', `${what}: expected resultType "task", got ${show(r, 300)}`);
  must(typeof r.taskId === 'string' && r.taskId.length > 0, `${what}: CreateTaskResult without a taskId`);
  must(r.status === 'working', `${what}: CreateTaskResult status ${String(r.status)}, expected working`);
  c.cleanup.push({ rpc, taskId: r.taskId });
  return r as Obj & { taskId: string };
}

export async function getTask(rpc: Rpc, taskId: string): Promise<Obj> {
  return rpc.ok('tasks/get', { taskId });
}

export const isTerminal = (status: unknown) => status === 'completed' || status === 'failed' || status === 'cancelled';

/** Poll `tasks/get` until the task is terminal (or `until` says so). */
export async function waitTask(
  c: Ctx,
  rpc: Rpc,
  taskId: string,
  ms = timeout(c),
  until: (t: Obj) => boolean = (t) => isTerminal(t.status),
): Promise<Obj> {
  const deadline = Date.now() + ms;
  for (;;) {
    const t = await getTask(rpc, taskId);
    if (until(t)) return t;
    must(Date.now() < deadline, `task still ${String(t.status)} after ${ms} ms`);
    const suggested = typeof t.pollIntervalMs === 'number' ? t.pollIntervalMs : 250;
    await sleep(Math.max(50, Math.min(suggested, c.opts.maxPollMs ?? 250)));
  }
}

export async function effects(c: Ctx, marker: string): Promise<number | undefined> {
  return c.opts.effects ? c.opts.effects(marker) : undefined;
}

/** "no side effect (probe)" / "" when there is no probe; fails if the probe counts otherwise. */
export async function expectEffects(c: Ctx, marker: string, n: number): Promise<string> {
  const e = await effects(c, marker);
  if (e === undefined) return '';
  must(e === n, `side-effect probe counts ${e} executions, expected ${n}`);
  return `, probe: ${n} execution${n === 1 ? '' : 's'}`;
}

export const disposition = (t: Obj) => get(t, 'result', '_meta', DISPOSITION);
/** The joined text of a CallToolResult's text blocks; the phrasing heuristics (vectors README §Heuristics). */
export { bodyText as texts, MAY_HAVE_RUN, NOT_RUN } from '../vectors/verify.mjs';

/** Marker-free, fixed answers for an MRTR / in-task form: a value per property of `requestedSchema`. */
export function answerFor(inputRequests: unknown): Obj {
  const out: Obj = {};
  if (!isObj(inputRequests)) return out;
  for (const [key, req] of Object.entries(inputRequests)) {
    const props = get(req, 'params', 'requestedSchema', 'properties');
    const content: Obj = {};
    if (isObj(props)) {
      for (const [p, schema] of Object.entries(props)) {
        const s = isObj(schema) ? schema : {};
        if (Array.isArray(s.enum) && s.enum.length) content[p] = s.enum[0];
        else if (s.type === 'number' || s.type === 'integer') content[p] = typeof s.minimum === 'number' ? s.minimum : 1;
        else if (s.type === 'boolean') content[p] = true;
        else {
          const min = typeof s.minLength === 'number' ? s.minLength : 0;
          const max = typeof s.maxLength === 'number' ? s.maxLength : 200;
          let text = 'Conformance suite: routine settlement, reference CONF-0001.';
          while (text.length < min) text += ' Further detail.';
          content[p] = text.slice(0, Math.max(min, Math.min(max, text.length)));
        }
      }
    }
    out[key] = { action: 'accept', content };
  }
  return out;
}

/** Cancel what a check left open (best effort). */
export async function cleanUp(c: Ctx): Promise<void> {
  await Promise.all(
    c.cleanup.map(async ({ rpc, taskId }) => {
      try {
        const t = await rpc.call('tasks/get', { taskId });
        if (t.result && !isTerminal(t.result.status)) await rpc.call('tasks/cancel', { taskId });
      } catch {
        /* best effort */
      }
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The checks

export interface CheckDef {
  id: string;
  /** What it proves, in one line (printed by `--list`). */
  title: string;
  /** Cross-cutting: runs after every other check, over the recorded exchanges. */
  crossCutting?: boolean;
  run(c: Ctx): Promise<string>;
}

/** The capabilities a client needs to take part in MRTR form input. */
export const mrtrCapabilities = { extensions: { [TASKS_EXT]: {} }, elicitation: { form: {} } };

export async function mrtrFirst(c: Ctx, label: string): Promise<{ m: string; first: Obj; mrtr: Rpc; args: Obj }> {
  if (!c.opts.justifyArguments) skip('needs --justify-arguments (a requestable call that asks for submission input before the task)');
  const m = c.marker(label);
  const args = argsWith(c, c.opts.justifyArguments, m);
  const mrtr = c.a.withCapabilities(mrtrCapabilities);
  const first = await mrtr.ok('tools/call', { name: c.opts.tool, arguments: args });
  must(first.resultType === 'input_required', `expected resultType input_required, got ${show(first)}`);
  must(isObj(first.inputRequests) && Object.keys(first.inputRequests).length > 0, 'input_required without inputRequests');
  must(typeof first.requestState === 'string' && first.requestState.length > 0, 'input_required without a requestState');
  const decoded = first.requestState
    .split(/[.~:]/)
    .map((p) => Buffer.from(p, 'base64url').toString('utf8'))
    .join(' ');
  must(!first.requestState.includes(m) && !decoded.includes(m), 'the requestState carries the call arguments in the clear');
  return { m, first, mrtr, args };
}

/** The recorded exchange whose result is `result` (the very object a check got back). */
export function exchangeOf(c: Ctx, result: Obj): Exchange {
  const e = c.rec.exchanges.find((x) => x.result === result);
  must(e, 'the answer was not recorded');
  return e;
}

/**
 * The strings of the backend that must appear in no MCP response (`artifacts.none`): the test
 * hooks' own (e.g. their host), each request id they listed, their URL values and binding,
 * token, digest or evaluation members of 8 characters or more, and the approvers' comments.
 */
export function backendArtifacts(hooks: Hooks): string[] {
  const out = new Set<string>();
  for (const a of hooks.artifacts) if (a.length > 0) out.add(a);
  for (const item of hooks.seenItems) {
    out.add(item.id);
    for (const [k, v] of Object.entries(item))
      if (typeof v === 'string' && (/^https?:\/\//.test(v) || /digest|token|binding|evaluation/i.test(k)) && v.length >= 8) out.add(v);
  }
  for (const comment of hooks.comments) out.add(comment);
  return [...out];
}

/** Every task-shaped answer the suite received (CreateTaskResults and tasks/get results), in arrival order. */
export function taskObservations(c: Ctx): Array<{ e: Exchange; r: Obj }> {
  return c.rec.exchanges
    .filter((e) => e.result && ((e.method === 'tools/call' && e.result.resultType === 'task') || e.method === 'tasks/get'))
    .map((e) => ({ e, r: e.result as Obj }));
}
export const taskResults = (c: Ctx): Obj[] => taskObservations(c).map((o) => o.r);
