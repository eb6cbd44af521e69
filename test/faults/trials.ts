// Scope: one fault-injection trial per call: drive an approval task over the MCP wire, crash one
// role at the trial's point (fault hook or observed state), restart it, approve as an approver
// through the approval service's API, and count what happened.
import { randomUUID } from 'node:crypto';
import { McpRpcError, WireClient } from '@countersign/client';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, signCallback } from '@countersign/arap';
import { parseTaskId } from '../../workflows/task-id.js';
import { APPROVAL_WORKFLOW_ID_PREFIX, TASKS_EXTENSION } from '../../workflows/wire.js';
import type { Cluster } from './cluster.js';
import type { Role } from '../../src/stack-roles.js';
import { backendRequestsOf, invocationsOf, ledgerRowsOf, upstreamCallsOf } from './observe.js';
import { UPSTREAM_NAME } from './cluster.js';
import type { RecordedRequest } from './proxy.js';

/**
 * The matrix rows: the crash points 1–9 of `packages/http/src/fault-point.ts` (3 as a fault-hook point and a proxy kill; 7 split in two:
 * before and after the effect commits), and points 6 and 7 again for an upstream tool of the gateway ({@link UPSTREAM_POINTS}). `via`: `hook` — a named `faultPoint` SIGKILLs the role;
 * `observed` — the harness kills at a state it observes. Every task of a trial must end with the
 * point's `expect` disposition, `ledger` rows and `invocations` (the ledger's audit trail):
 * anything else is a violation.
 */
export const POINTS = [
  {
    id: 'worker.submit.before',
    issue: 1,
    via: 'hook',
    role: 'worker',
    what: 'worker killed after the workflow started, before the submit activity contacted the backend',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'worker.submit.after',
    issue: 2,
    via: 'hook',
    role: 'worker',
    what: 'worker killed during the submit activity: backend stored the request, reply lost',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'approvals.submit.after-store',
    issue: 3,
    via: 'hook',
    role: 'approvals',
    what: 'approval service killed inside the submission request, after the store committed and before the reply',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'approvals.kill',
    issue: 3,
    via: 'observed',
    role: 'approvals',
    what: 'approval service killed by the proxy in front of it when a submission arrives (odd trials: before forwarding it; even: after it answered, reply dropped)',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'mcp.create.after-start',
    issue: 4,
    via: 'hook',
    role: 'mcp',
    what: 'MCP server killed between the start (and taskCreated) and returning CreateTaskResult; the client retries the call',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'worker.evaluate.after',
    issue: 5,
    via: 'hook',
    role: 'worker',
    what: 'worker killed after the approval (re-evaluation allowed), before the execution claim',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'worker.execute.before',
    issue: 6,
    via: 'hook',
    role: 'worker',
    what: 'worker killed after the claim, before the tool was invoked',
    expect: 'execution-error',
    ledger: 0,
    invocations: 0,
  },
  {
    id: 'tool.effect.before',
    issue: 7,
    via: 'hook',
    role: 'worker',
    what: 'worker killed while the tool runs, before its ledger row commits',
    expect: 'execution-error',
    ledger: 0,
    invocations: 1,
  },
  {
    id: 'tool.effect.after',
    issue: 7,
    via: 'hook',
    role: 'worker',
    what: 'worker killed while the tool runs, after its ledger row committed',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'temporal.kill',
    issue: 8,
    via: 'observed',
    role: 'temporal',
    what: 'Temporal dev server killed while two tasks are pending, restarted from the same SQLite file',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'callback.replay',
    issue: 9,
    via: 'observed',
    role: 'mcp',
    what: 'the approval callback delivered twice, then a fresh signed callback for the consumed generation',
    expect: 'approved-executed',
    ledger: 1,
    invocations: 1,
  },
  {
    id: 'upstream.execute.before',
    issue: 6,
    via: 'hook',
    role: 'worker',
    what: 'upstream tool (gateway, stdio): worker killed after the claim, before the upstream call was sent',
    expect: 'outcome-unknown',
    ledger: 0,
    invocations: 0,
  },
  {
    id: 'upstream.call.in-flight',
    issue: 7,
    via: 'observed',
    role: 'worker',
    what: 'upstream tool (gateway, stdio): worker killed while the upstream call is in flight (the upstream recorded it, no answer yet)',
    expect: 'outcome-unknown',
    ledger: 0,
    invocations: 1,
  },
] as const;

/**
 * The rows that call an upstream tool (`rec__op` of the recording upstream, `cluster.ts`) instead
 * of wire_transfer: their cluster runs with the gateway, and `invocations` counts the calls the
 * upstream received (its `calls.log`). MCP offers no way to ask an upstream what happened, so a
 * lost upstream execution ends `outcome-unknown` and is never sent again (docs/GATEWAY.md §5).
 */
export const UPSTREAM_POINTS: readonly PointId[] = ['upstream.execute.before', 'upstream.call.in-flight'];

/** A point id of {@link POINTS}. */
export type PointId = (typeof POINTS)[number]['id'];

/** What one task of a trial ended as, and the counts that prove it. */
export interface TaskOutcome {
  taskId: string;
  status: string;
  disposition: string;
  ledgerRows: number;
  /** Entries into the tool under this task (the ledger's invocation audit trail). */
  invocations: number;
  backendRows: number;
  backendPerGeneration: Record<number, number>;
  lost: boolean;
}

/** One trial: its tasks, any violation (must be none) and whether the outcome was the expected one. */
export interface TrialResult {
  point: PointId;
  trial: number;
  tasks: TaskOutcome[];
  violations: string[];
  /** Kept for older JSON; always empty now (an outcome other than the point's is a violation). */
  unexpected: string[];
  notes: string[];
  ms: number;
}

const AMOUNT = 50_000; // requestable (> $25,000) under policies/wire_transfer.cedar

function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The harness's view of the stack: an MCP client for alice and approver helpers. */
export class Driver {
  constructor(
    readonly cluster: Cluster,
    private readonly client: WireClient,
  ) {}

  static async create(cluster: Cluster): Promise<Driver> {
    const token = await cluster.token('alice');
    return new Driver(cluster, new WireClient({ url: cluster.mcpUrl, token, capabilities: { extensions: { [TASKS_EXTENSION]: {} } } }));
  }

  /** `tools/call` wire_transfer for `memo`; resolves with the CreateTaskResult (throws on transport errors). */
  call(memo: string): Promise<{ taskId: string; status: string; createdAt: string }> {
    return this.client.request('tools/call', { name: 'wire_transfer', arguments: { to: 'acct-991', amount: AMOUNT, memo } });
  }

  /** `tools/call` the recording upstream's `op` (served as `rec__op`) with `label`; resolves with the CreateTaskResult. */
  callUpstream(label: string): Promise<{ taskId: string; status: string; createdAt: string }> {
    return this.client.request('tools/call', { name: `${UPSTREAM_NAME}__op`, arguments: { label } });
  }

  /** Approve the pending request carrying `memo` (bob, then carol if a quorum wants more); retries while the service is down. */
  async approve(memo: string, deadlineMs = 90_000): Promise<void> {
    const end = Date.now() + deadlineMs;
    for (;;) {
      try {
        let decided = false;
        for (const a of this.cluster.secrets.approvers) {
          const res = await fetch(`${this.cluster.approvalsUrl}/access/v1/approvals/pending?limit=200`, {
            headers: { authorization: basic(a.id, a.secret) },
          });
          const items = ((await res.json()) as { items: Array<{ id: string; arguments: Record<string, unknown> }> }).items;
          const req = items.find((r) => r.arguments.memo === memo || r.arguments.label === memo);
          if (!req) continue;
          await fetch(`${this.cluster.approvalsUrl}/access/v1/requests/${req.id}/decision`, {
            method: 'POST',
            headers: { authorization: basic(a.id, a.secret), 'content-type': 'application/json' },
            body: JSON.stringify({ decision: 'approve', comment: 'fault harness' }),
          });
          decided = true;
        }
        if (decided && !(await this.isPending(memo))) return;
      } catch {
        // service restarting
      }
      if (Date.now() > end) throw new Error(`could not approve ${memo}`);
      await sleep(250);
    }
  }

  private async isPending(memo: string): Promise<boolean> {
    for (const a of this.cluster.secrets.approvers) {
      const res = await fetch(`${this.cluster.approvalsUrl}/access/v1/approvals/pending?limit=200`, {
        headers: { authorization: basic(a.id, a.secret) },
      });
      const items = ((await res.json()) as { items: Array<{ arguments: Record<string, unknown> }> }).items;
      if (items.some((r) => r.arguments.memo === memo || r.arguments.label === memo)) return true;
    }
    return false;
  }

  /**
   * Poll `tasks/get` until terminal, riding out restarts; `lost` when the task is unknown or never
   * ends. `upstreamLabel`: the task called the recording upstream with that label, so its
   * invocations are the upstream's recorded calls, not ledger entries.
   */
  async settle(taskId: string, deadlineMs = 120_000, upstreamLabel?: string): Promise<TaskOutcome> {
    const end = Date.now() + deadlineMs;
    let status = 'unknown';
    let disposition = '';
    let lost = false;
    for (;;) {
      try {
        const t = await this.client.request<{ status: string; result?: { _meta?: Record<string, unknown> } }>('tasks/get', { taskId });
        status = t.status;
        if (status !== 'working' && status !== 'input_required') {
          disposition = String(t.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition'] ?? '');
          break;
        }
      } catch (err) {
        if (err instanceof McpRpcError && err.code === -32602) {
          lost = true;
          break;
        }
      }
      if (Date.now() > end) {
        lost = true;
        break;
      }
      await sleep(250);
    }
    const workflowId = parseTaskId(taskId)?.workflowId ?? '';
    const backend = backendRequestsOf(this.cluster.dataDir, workflowId);
    const invocations =
      upstreamLabel === undefined ? invocationsOf(this.cluster.dataDir, taskId) : upstreamCallsOf(this.cluster.upstreamDir, upstreamLabel);
    return {
      taskId,
      status,
      disposition,
      lost,
      ledgerRows: ledgerRowsOf(this.cluster.dataDir, taskId),
      invocations,
      backendRows: backend.rows,
      backendPerGeneration: backend.perGeneration,
    };
  }
}

/** What a point predicts for each of its tasks. */
export interface Expectation {
  expect: string;
  ledger: number;
  invocations: number;
}

/**
 * The oracle. The SEP-2848 invariants every task must satisfy whatever was killed — invoked at
 * most once (counted on the invocation audit trail, which a second run cannot hide), at most one
 * ledger row, no disposition contradicting the rows, one backend request per generation, nothing
 * lost — and, given the point's expectation, exactly the predicted disposition, rows and invocations.
 */
export function violationsOf(t: TaskOutcome, expected?: Expectation): string[] {
  const v: string[] = [];
  if (t.lost) v.push('task lost');
  if (t.status !== 'completed') v.push(`status ${t.status}, not completed`);
  if (t.invocations > 1) v.push(`${t.invocations} tool invocations (at most once)`);
  if (t.ledgerRows > 1) v.push(`${t.ledgerRows} ledger rows`);
  if (t.ledgerRows > t.invocations) v.push(`${t.ledgerRows} ledger rows but ${t.invocations} invocations`);
  if (t.disposition === 'approved-executed' && t.ledgerRows !== 1) v.push('approved-executed without its ledger row');
  if (t.disposition === 'denied-not-executed' && (t.ledgerRows !== 0 || t.invocations !== 0))
    v.push('denied-not-executed, but the tool was invoked or wrote a row');
  for (const [g, n] of Object.entries(t.backendPerGeneration)) if (n !== 1) v.push(`generation ${g}: ${n} backend requests`);
  if (t.backendRows === 0) v.push('no backend request stored');
  if (expected && !t.lost && t.status === 'completed') {
    if (t.disposition !== expected.expect) v.push(`disposition ${t.disposition || '(none)'}, expected ${expected.expect}`);
    if (t.ledgerRows !== expected.ledger) v.push(`${t.ledgerRows} ledger rows, expected ${expected.ledger}`);
    if (t.invocations !== expected.invocations) v.push(`${t.invocations} invocations, expected ${expected.invocations}`);
  }
  return v;
}

/** The expectation of point `id`. */
export function expectationOf(id: PointId): Expectation {
  const p = POINTS.find((x) => x.id === id)!;
  return { expect: p.expect, ledger: p.ledger, invocations: p.invocations };
}

/** Restart `role` armed with `fault` (replacing the running one). */
async function arm(c: Cluster, role: Role, fault: string): Promise<void> {
  await c.stopRole(role);
  await c.startRole(role, fault);
}

/**
 * Wait (bounded) for `role`, armed at `point`, to die there; then start a clean one. Violations
 * unless it ended by SIGKILL right after announcing `point`; a point that never fires within
 * `timeoutMs` is a violation too (the role is then stopped and restarted clean), never a hang.
 */
async function awaitFaultKill(
  c: Cluster,
  role: Role,
  point: string,
  violations: string[],
  notes: string[],
  timeoutMs = 60_000,
): Promise<void> {
  const info = await c.exited(role, timeoutMs);
  if (info === 'timeout') {
    violations.push(`fault point ${point} did not fire within ${timeoutMs / 1000} s (no kill happened)`);
    await c.stopRole(role);
  } else {
    const hit = c.faultHit(role);
    if (info.signal !== 'SIGKILL' || hit !== point)
      violations.push(
        `${role} ended by ${info.signal ?? `exit ${info.code}`} at ${hit ?? 'no announced fault point'}, expected SIGKILL at ${point}`,
      );
    else notes.push(`${role} SIGKILLed at ${point}`);
  }
  await c.startRole(role);
}

/** Check a harness kill of `role` really ended it with SIGKILL. */
function checkKilled(role: Role, info: Awaited<ReturnType<Cluster['kill']>>, violations: string[], notes: string[]): void {
  if (!info) violations.push(`${role} was not running when it was to be killed (no kill happened)`);
  else if (info.signal !== 'SIGKILL') violations.push(`${role} ended by ${info.signal ?? `exit ${info.code}`}, not SIGKILL`);
  else notes.push(`${role} SIGKILLed`);
}

/**
 * The approval workflows started on the cluster's Temporal server since `sinceMs` (the harness
 * runs one trial at a time per cluster, so these are the trial's), as workflow id + run id.
 */
async function workflowsStartedSince(c: Cluster, sinceMs: number): Promise<Array<{ workflowId: string; runId: string }>> {
  const conn = await c.temporal();
  try {
    const out: Array<{ workflowId: string; runId: string }> = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await conn.workflowService.listWorkflowExecutions({
        namespace: 'default',
        pageSize: 1000,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const e of page.executions ?? []) {
        const started = Number(e.startTime?.seconds ?? 0) * 1000 + Math.floor((e.startTime?.nanos ?? 0) / 1e6);
        if (started >= sinceMs && e.execution?.workflowId?.startsWith(APPROVAL_WORKFLOW_ID_PREFIX))
          out.push({ workflowId: e.execution.workflowId, runId: e.execution.runId ?? '' });
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return out;
  } finally {
    await conn.close();
  }
}

/** Run one trial of `point` (numbered `trial`, 1-based). */
export async function runTrial(d: Driver, point: PointId, trial: number): Promise<TrialResult> {
  const c = d.cluster;
  const t0 = Date.now();
  const notes: string[] = [];
  const violations: string[] = [];
  const memo = `${point} #${trial} ${randomUUID().slice(0, 8)}`;
  const taskIds: string[] = [];
  let upstreamLabel: string | undefined;
  switch (point) {
    case 'worker.submit.before':
    case 'worker.submit.after': {
      await arm(c, 'worker', point);
      const created = d.call(memo);
      await awaitFaultKill(c, 'worker', point, violations, notes);
      taskIds.push((await created).taskId);
      await d.approve(memo);
      break;
    }
    case 'worker.evaluate.after':
    case 'worker.execute.before':
    case 'tool.effect.before':
    case 'tool.effect.after': {
      await arm(c, 'worker', point);
      taskIds.push((await d.call(memo)).taskId);
      await d.approve(memo);
      await awaitFaultKill(c, 'worker', point, violations, notes);
      break;
    }
    case 'approvals.submit.after-store': {
      await arm(c, 'approvals', point);
      const created = d.call(memo);
      await awaitFaultKill(c, 'approvals', point, violations, notes);
      taskIds.push((await created).taskId);
      await d.approve(memo);
      break;
    }
    case 'approvals.kill': {
      const afterStore = trial % 2 === 0;
      let killed: Promise<void> | undefined;
      let armed = true;
      c.approvalsProxy.decide = (r: RecordedRequest) => {
        if (
          !armed ||
          r.method !== 'POST' ||
          r.path !== '/access/v1/requests' ||
          !r.body.toString().includes(JSON.stringify(memo).slice(1, -1))
        )
          return { kind: 'forward' };
        armed = false;
        const act = async () => {
          const p = (async () => {
            checkKilled('approvals', await c.kill('approvals'), violations, notes);
            notes.push(
              afterStore
                ? 'killed after the service answered the submission (reply dropped)'
                : 'killed before the submission was forwarded',
            );
            await c.startRole('approvals');
          })();
          killed = p;
          await p.catch(() => undefined);
        };
        return afterStore ? { kind: 'drop-after', act } : { kind: 'drop-before', act };
      };
      try {
        const created = await d.call(memo);
        taskIds.push(created.taskId);
      } finally {
        c.approvalsProxy.decide = () => ({ kind: 'forward' });
      }
      if (killed) await killed;
      else violations.push('no kill happened: the submission never reached the proxy');
      await d.approve(memo);
      break;
    }
    case 'mcp.create.after-start': {
      await arm(c, 'mcp', point);
      const sentAt = Date.now() - 1000; // Temporal's clock vs ours: same host; a second of slack
      let firstTaskId: string | undefined;
      const first = await d.call(memo).then(
        (r) => ((firstTaskId = r.taskId), 'answered'),
        () => 'connection lost',
      );
      notes.push(`first call: ${first}`);
      await awaitFaultKill(c, 'mcp', point, violations, notes);
      const retry = await d.call(memo);
      taskIds.push(retry.taskId);
      // joined, not duplicated: the retry names the first call's task, and exactly that one workflow run exists
      if (firstTaskId !== undefined && firstTaskId !== retry.taskId)
        violations.push('retry returned a different task than the first response');
      const started = await workflowsStartedSince(c, sentAt);
      const ids = parseTaskId(retry.taskId);
      if (started.length !== 1 || started[0]!.workflowId !== ids?.workflowId || started[0]!.runId !== ids?.runId) {
        violations.push(`retry did not join the first task: ${started.length} workflow runs started in the trial`);
      } else notes.push('retry joined the first task (one workflow run)');
      await d.approve(memo);
      break;
    }
    case 'temporal.kill': {
      const memos = [memo, `${memo} b`];
      for (const m of memos) taskIds.push((await d.call(m)).taskId);
      checkKilled('temporal', await c.kill('temporal'), violations, notes);
      await c.startRole('temporal');
      // a worker or MCP server that gave up on the lost server is restarted like any crashed role
      for (const role of ['worker', 'mcp'] as const) {
        if (!c.alive(role)) {
          notes.push(`${role} exited while Temporal was down; restarted`);
          await c.startRole(role);
        }
      }
      for (const m of memos) await d.approve(m);
      break;
    }
    case 'upstream.execute.before': {
      // the same hook point as worker.execute.before, reached by an upstream tool's execution
      upstreamLabel = memo;
      await arm(c, 'worker', 'worker.execute.before');
      taskIds.push((await d.callUpstream(upstreamLabel)).taskId);
      await d.approve(upstreamLabel);
      await awaitFaultKill(c, 'worker', 'worker.execute.before', violations, notes);
      break;
    }
    case 'upstream.call.in-flight': {
      // a `hang-` label is recorded by the upstream and never answered: the call stays in flight
      upstreamLabel = `hang-${memo}`;
      taskIds.push((await d.callUpstream(upstreamLabel)).taskId);
      await d.approve(upstreamLabel);
      for (let i = 0; i < 3000 && upstreamCallsOf(c.upstreamDir, upstreamLabel) === 0; i++) await sleep(20);
      if (upstreamCallsOf(c.upstreamDir, upstreamLabel) === 0)
        violations.push('the upstream call was never sent, so no kill happened in flight');
      else {
        checkKilled('worker', await c.kill('worker'), violations, notes);
        notes.push('killed after the upstream recorded the call, before any answer');
      }
      await c.startRole('worker');
      break;
    }
    case 'callback.replay': {
      const deliveries: RecordedRequest[] = [];
      const replays: number[] = [];
      const replay = async (r: RecordedRequest, headers: Record<string, string> = {}) => {
        const res = await fetch(`http://127.0.0.1:${c.ports.mcp}${r.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...pick(r.headers), ...headers },
          body: new Uint8Array(r.body),
        });
        replays.push(res.status);
      };
      const created = await d.call(memo);
      taskIds.push(created.taskId);
      const wf = parseTaskId(created.taskId)!.workflowId;
      c.callbackProxy.decide = (r) => {
        if (r.path.includes(wf)) deliveries.push(r);
        return { kind: 'forward' };
      };
      await d.approve(memo);
      for (let i = 0; i < 200 && deliveries.length === 0; i++) await sleep(50);
      const first = deliveries[0];
      if (first) await replay(first); // delivered twice
      await d.settle(created.taskId);
      if (first) {
        await replay(first); // again, after the task ended
        // a fresh, validly signed callback for the consumed generation 1
        const ts = String(Math.floor(Date.now() / 1000));
        const signed = signCallback(c.secrets.callbackSecret, first.path, first.body.toString(), Number(ts));
        await replay(first, { [CALLBACK_TIMESTAMP_HEADER]: signed.timestamp, [CALLBACK_SIGNATURE_HEADER]: signed.signature });
      } else violations.push('no callback observed, so none was replayed');
      c.callbackProxy.decide = () => ({ kind: 'forward' });
      notes.push(`callback replies: first ${first?.status ?? '-'}, replays ${replays.join('/')}`);
      if (replays.some((s) => s >= 500)) violations.push(`a replayed callback got a server error (${replays.join('/')})`);
      break;
    }
  }
  const tasks: TaskOutcome[] = [];
  for (const id of taskIds) tasks.push(await d.settle(id, undefined, upstreamLabel));
  const expected = expectationOf(point);
  violations.push(...tasks.flatMap((t) => violationsOf(t, expected).map((v) => `${t.taskId.slice(0, 12)}…: ${v}`)));
  return { point, trial, tasks, violations, unexpected: [], notes, ms: Date.now() - t0 };
}

function pick(h: RecordedRequest['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [CALLBACK_TIMESTAMP_HEADER, CALLBACK_SIGNATURE_HEADER]) {
    const v = h[k.toLowerCase()];
    if (typeof v === 'string') out[k] = v;
  }
  return out;
}
