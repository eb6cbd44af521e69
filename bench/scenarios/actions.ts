// Scope: Temporal Cloud actions per task. Creates N approval tasks that the approver approves (the
// tool executes) and N that the approver denies, through MCP server instance A and the reference
// approval service, polls each with `tasks/get` until it is terminal, then fetches the histories of
// every approval workflow and of its principal's submission-limiter workflow and counts the actions
// they show (bench/lib/actions.ts; rule in docs/PERFORMANCE-ACTIONS.md). Each outcome runs under its
// own fresh principal, so its limiter holds only its tasks and its share divides evenly.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { parseTaskId } from '../../workflows/task-id.js';
import {
  addActions,
  countActions,
  divideActions,
  scheduledActivityTypes,
  signalledWorkflowIds,
  totalActions,
  zeroActions,
  type ActionCounts,
} from '../lib/actions.js';
import { createTask, type BenchContext } from '../lib/context.js';
import { round } from '../lib/stats.js';

/** Mean actions per task of one outcome. */
export interface OutcomeActions {
  tasks: number;
  /** Terminal status and disposition seen by `tasks/get`, with counts. */
  outcomes: Record<string, number>;
  /** The approval workflow's own actions per task, by kind (its signals to the limiter are counted at the limiter). */
  approvalWorkflow: ActionCounts;
  /** The principal's submission-limiter workflow's actions divided by its tasks, by kind (its start amortised over them). */
  limiterShare: ActionCounts;
  /** Both, by kind. */
  perTask: ActionCounts;
  /** Sum of `perTask`: the fixed cost of one task, client reads excluded. */
  total: number;
  /** Regular activities scheduled per task, by type (local activities are not scheduled on the server). */
  activities: Record<string, number>;
  /**
   * `tasks/get` calls per task that found it open. Instance A reads the task record (a describe, or its
   * task feed: no action); on the query path (`COUNTERSIGN_TASK_READS=query`) each would be a query a
   * worker answers (one action). The last poll, of a closed run, is no action either way.
   */
  openPollsPerTask: number;
}

export interface ActionsResult {
  tasksPerOutcome: number;
  pollGapMs: number;
  approved: OutcomeActions;
  denied: OutcomeActions;
  /** Actions per `tasks/get` of an open task: on the record path (A, the default) and the query path. */
  actionsPerOpenPoll: { record: 0; query: 1 };
}

const POLL_GAP_MS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type History = temporal.api.history.v1.IHistory;

/** The limiter's history once it has received `releases` release signals and finished its workflow task (5 s at most). */
async function settledLimiterHistory(client: Client, limiterId: string, releases: number): Promise<History> {
  const handle = client.workflow.getHandle(limiterId);
  for (let i = 0; ; i++) {
    const h = await handle.fetchHistory();
    const events = h.events ?? [];
    const got = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'release').length;
    const last = events[events.length - 1];
    if ((got >= releases && last?.workflowTaskCompletedEventAttributes) || i >= 50) return h;
    await sleep(100);
  }
}

async function runOutcome(ctx: BenchContext, decision: 'approve' | 'deny', n: number): Promise<OutcomeActions> {
  const client = await ctx.client(`bench-actions-${decision}-${randomUUID()}`);
  const outcomes: Record<string, number> = {};
  const taskIds: string[] = [];
  let openPolls = 0;
  for (let i = 0; i < n; i++) {
    const memo = `actions ${decision} ${i} ${randomUUID()}`;
    const taskId = await createTask(client, memo);
    taskIds.push(taskId);
    const list = (await (
      await fetch(`${ctx.stack.urls.approvals}/access/v1/approvals/pending?limit=200`, { headers: { authorization: ctx.approverAuth } })
    ).json()) as { items: Array<{ id: string; arguments: { memo?: string } }> };
    const req = list.items.find((x) => x.arguments.memo === memo);
    if (!req) throw new Error('approval request not found at the approval service');
    const d = await fetch(`${ctx.stack.urls.approvals}/access/v1/requests/${req.id}/decision`, {
      method: 'POST',
      headers: { authorization: ctx.approverAuth, 'content-type': 'application/json' },
      body: JSON.stringify({ decision, comment: 'bench actions' }),
    });
    if (!d.ok) throw new Error(`decision refused: ${d.status}`);
    for (;;) {
      const t = await client.request<{ status: string; result?: { _meta?: Record<string, unknown> } }>('tasks/get', { taskId });
      if (t.status === 'working' || t.status === 'input_required') {
        openPolls++;
        await sleep(POLL_GAP_MS);
        continue;
      }
      const disp = t.result?._meta?.['io.modelcontextprotocol/tool-approval-disposition'];
      const key = `${t.status}${disp === undefined ? '' : ` ${typeof disp === 'string' ? disp : JSON.stringify(disp)}`}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      break;
    }
  }

  let approval = zeroActions();
  const activities: Record<string, number> = {};
  const limiterTasks = new Map<string, number>();
  for (const taskId of taskIds) {
    const ids = parseTaskId(taskId);
    if (!ids) throw new Error(`not a task id: ${taskId}`);
    const h = await ctx.rawClient.workflow.getHandle(ids.workflowId, ids.runId).fetchHistory();
    // each signal is one action: counted where it is received, in the limiter's history below
    approval = addActions(approval, { ...countActions(h), signalSent: 0 });
    for (const t of scheduledActivityTypes(h)) activities[t] = (activities[t] ?? 0) + 1;
    for (const id of signalledWorkflowIds(h)) limiterTasks.set(id, (limiterTasks.get(id) ?? 0) + 1);
  }
  let limiter = zeroActions();
  for (const [id, tasks] of limiterTasks)
    limiter = addActions(limiter, countActions(await settledLimiterHistory(ctx.rawClient, id, tasks)));
  const approvalWorkflow = divideActions(approval, n);
  const limiterShare = divideActions(limiter, n);
  const perTask = divideActions(addActions(approval, limiter), n);
  return {
    tasks: n,
    outcomes,
    approvalWorkflow,
    limiterShare,
    perTask,
    total: round(totalActions(perTask)),
    activities: Object.fromEntries(Object.entries(activities).map(([k, v]) => [k, round(v / n)])),
    openPollsPerTask: round(openPolls / n),
  };
}

export async function actionsScenario(ctx: BenchContext, tasksPerOutcome?: number): Promise<ActionsResult> {
  const n = tasksPerOutcome ?? (ctx.smoke ? 2 : 10);
  ctx.log(`bench: Temporal actions, ${n} approved and ${n} denied tasks`);
  const approved = await runOutcome(ctx, 'approve', n);
  const denied = await runOutcome(ctx, 'deny', n);
  ctx.log(`  approved: ${approved.total} actions per task ${JSON.stringify(approved.perTask)}`);
  ctx.log(`  denied: ${denied.total} actions per task ${JSON.stringify(denied.perTask)}`);
  return { tasksPerOutcome: n, pollGapMs: POLL_GAP_MS, approved, denied, actionsPerOpenPoll: { record: 0, query: 1 } };
}
