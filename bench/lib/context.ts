// Scope: what every scenario gets from the orchestrator (bench/run.ts): the running stack, the
// role processes, Temporal clients for the baselines, the memory sampler, and the task list that
// is cancelled at the end.
import type { Client } from '@temporalio/client';
import type { Config } from '../../src/config.js';
import type { Stack } from '../../src/stack.js';
import { WireClient } from '@countersign/client';
import type { RoleProcess, RoleSpec } from '../roles/spec.js';
import type { RssSampler } from './procs.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';

export const TASKS_CAPS = { extensions: { [TASKS_EXTENSION]: {} } };
/** Task queue of the baselines' own worker (bench/workflows). */
export const BASELINE_QUEUE = 'bench-baseline';

export interface BenchContext {
  smoke: boolean;
  log: (line: string) => void;
  stack: Stack;
  config: Config;
  /** Plain client (default data converter) for the baselines' workflows. */
  rawClient: Client;
  /** MCP server instance A (own process) and the worker (own process). */
  mcpA: RoleProcess & { url: string; origin: string };
  worker: RoleProcess;
  roleSpec: (ledgerName: string) => RoleSpec;
  sampler: RssSampler;
  /** A wire client for `sub` against `url` (default: instance A). */
  client(sub: string, url?: string): Promise<WireClient>;
  /** Tasks to cancel at the end of the run. */
  toCancel: Array<{ client: WireClient; taskId: string }>;
  /** HTTP Basic header of approver bob. */
  approverAuth: string;
}

/** Requestable denial arguments (amount over the threshold, distinct memo). */
export const requestable = (memo: string) => ({ name: 'wire_transfer', arguments: { to: 'acct-200', amount: 50_000, memo } });

export async function createTask(client: WireClient, memo: string): Promise<string> {
  const out = await client.request<{ resultType?: string; taskId?: string; isError?: boolean }>('tools/call', requestable(memo));
  if (out.resultType !== 'task' || !out.taskId) throw new Error(`expected CreateTaskResult, got ${JSON.stringify(out).slice(0, 300)}`);
  return out.taskId;
}

/** The approval service's id of the pending request made for `memo` (approver's pending list). */
export async function pendingRequestId(ctx: BenchContext, memo: string): Promise<string> {
  const list = (await (
    await fetch(`${ctx.stack.urls.approvals}/access/v1/approvals/pending?limit=200`, { headers: { authorization: ctx.approverAuth } })
  ).json()) as { items: Array<{ id: string; arguments: { memo?: string } }> };
  const req = list.items.find((i) => i.arguments.memo === memo);
  if (!req) throw new Error('approval request not found at the approval service');
  return req.id;
}

/** Decide request `id` as approver bob through the approval service API. */
export async function decide(ctx: BenchContext, id: string, decision: 'approve' | 'deny'): Promise<void> {
  const d = await fetch(`${ctx.stack.urls.approvals}/access/v1/requests/${id}/decision`, {
    method: 'POST',
    headers: { authorization: ctx.approverAuth, 'content-type': 'application/json' },
    body: JSON.stringify({ decision, comment: 'bench' }),
  });
  if (!d.ok) throw new Error(`decision refused: ${d.status}`);
}
