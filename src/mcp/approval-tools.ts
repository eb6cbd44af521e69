/**
 * The plain tier (COUNTERSIGN_NO_TASKS_RESPONSE=approval-tools, the default): a client that did
 * not declare `io.modelcontextprotocol/tasks` still gets an approval it can follow, through
 * ordinary MCP tools instead of `tasks/*` (SEP-2848 §Extension identifier and capability: a
 * client without tasks gets "an isError tool result with next-step guidance").
 *
 * - A requestable denial opens (or joins) the same approval workflow as for a tasks client —
 *   same binding, same dedup — and `approvalOpenedResult` answers with an `isError` result whose
 *   text and `structuredContent` carry the approval id (the task id), the status, and what to
 *   call next.
 * - `approval_status {approvalId}`: the workflow's task query, as `tasks/get` reads it; once
 *   completed it carries the tool's own result and whether the tool ran.
 * - `approval_cancel {approvalId}`: the workflow's cancel update, as `tasks/cancel`; answers with
 *   the status after it.
 * Both are bound to the caller exactly like `tasks/*` (`TaskService.get` / `cancel`, keyed on the
 * task's originating principal): an unknown, expired or foreign id gets one fixed answer.
 *
 * All text is fixed templates plus `statusMessage` (status-text.ts) and the tool's own stored
 * result. Deliberately does not: list a caller's approvals (no enumeration oracle), answer in-task
 * input (a plain client cannot; such a task waits for a tasks client or expires), or go through
 * the policy decision point (these tools only read or withdraw the caller's own request).
 */
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { META, type TaskSnapshot } from '../../workflows/types.js';
import { statusMessage } from './status-text.js';
import type { TaskService } from './task-service.js';
import type { ContentBlock } from '../tools/tool.js';

/** Tool names. */
export const APPROVAL_STATUS_TOOL = 'approval_status';
export const APPROVAL_CANCEL_TOOL = 'approval_cancel';

/** Whether the tool ran, read from the task: the disposition once completed (SEP-2848 §Execution disposition). */
export type ApprovalOutcome = 'pending' | 'executed' | 'not-executed' | 'possibly-executed';

/** `structuredContent` of the plain-tier results (shape of `outputSchema` below). */
export interface ApprovalState {
  approvalId: string;
  status: TaskSnapshot['status'];
  statusMessage: string;
  outcome: ApprovalOutcome;
  /** Set once completed: `approved-executed`, `denied-not-executed`, `execution-error` or `outcome-unknown`. */
  disposition?: string;
  /** Suggested wait before the next `approval_status`, ms; only while pending. */
  checkAgainAfterMs?: number;
  /** What to call next; absent once terminal. */
  next?: { tool: string; arguments: { approvalId: string } };
  /** The tool's own result once completed (content, isError, structuredContent). */
  result?: { content: ContentBlock[]; isError: boolean; structuredContent?: Record<string, unknown> };
}

const ArgsSchema = z.object({ approvalId: z.string().min(1).max(512) });

const INPUT_SCHEMA: Tool['inputSchema'] = {
  type: 'object',
  properties: {
    approvalId: {
      type: 'string',
      minLength: 1,
      maxLength: 512,
      description: 'The approval id from the result of the call that opened the approval.',
    },
  },
  required: ['approvalId'],
  additionalProperties: false,
};

const OUTPUT_SCHEMA: Tool['outputSchema'] = {
  type: 'object',
  properties: {
    approvalId: { type: 'string' },
    status: { type: 'string', enum: ['working', 'input_required', 'completed', 'failed', 'cancelled'] },
    statusMessage: { type: 'string' },
    outcome: { type: 'string', enum: ['pending', 'executed', 'not-executed', 'possibly-executed'] },
    disposition: { type: 'string' },
    checkAgainAfterMs: { type: 'integer' },
    next: { type: 'object', properties: { tool: { type: 'string' }, arguments: { type: 'object' } }, required: ['tool', 'arguments'] },
    result: { type: 'object' },
  },
  required: ['approvalId', 'status', 'statusMessage', 'outcome'],
};

/** `tools/list` descriptors of the two companion tools (input and output JSON Schemas, annotations). */
export function approvalToolDescriptors(): Tool[] {
  return [
    {
      name: APPROVAL_STATUS_TOOL,
      title: 'Approval status',
      description:
        'Check an approval request opened for an earlier tool call: whether it is still pending, and once decided whether the tool ran and its result. ' +
        "Use the approvalId from that call's result. Do not repeat the original call to check on it.",
      inputSchema: INPUT_SCHEMA,
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    {
      name: APPROVAL_CANCEL_TOOL,
      title: 'Cancel approval request',
      description:
        'Withdraw a pending approval request opened for an earlier tool call, so the tool will not run. Has no effect once the tool has started or the request is decided.',
      inputSchema: INPUT_SCHEMA,
      outputSchema: OUTPUT_SCHEMA,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
  ];
}

/** Whether `name` is one of the companion tools. */
export function isApprovalTool(name: string): boolean {
  return name === APPROVAL_STATUS_TOOL || name === APPROVAL_CANCEL_TOOL;
}

function outcomeOf(s: TaskSnapshot): ApprovalOutcome {
  if (s.status === 'cancelled' || s.status === 'failed') return 'not-executed';
  if (s.status !== 'completed') return 'pending';
  if (s.disposition === 'approved-executed') return 'executed';
  if (s.disposition === 'denied-not-executed') return 'not-executed';
  return 'possibly-executed'; // execution-error, outcome-unknown, or none recognized
}

/** The plain-tier view of a task. */
export function approvalState(approvalId: string, s: TaskSnapshot): ApprovalState {
  const terminal = s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled';
  return {
    approvalId,
    status: s.status,
    statusMessage: statusMessage(s),
    outcome: outcomeOf(s),
    ...(s.status === 'completed' && s.disposition ? { disposition: s.disposition } : {}),
    ...(terminal ? {} : { checkAgainAfterMs: s.pollIntervalMs, next: { tool: APPROVAL_STATUS_TOOL, arguments: { approvalId } } }),
    ...(s.status === 'completed' && s.result
      ? {
          result: {
            content: s.result.content,
            isError: s.result.isError,
            ...(s.result.structuredContent ? { structuredContent: s.result.structuredContent } : {}),
          },
        }
      : {}),
  };
}

/**
 * The answer to a requestable denial for a client without the tasks extension, once the approval
 * is opened or joined: `isError: true` (the tool has not run), text naming the approval id and the
 * next call, `structuredContent` an `ApprovalState`, and the pending SEP-2643 envelope with a
 * `task` hint in `_meta` (the approval is the task).
 */
export function approvalOpenedResult(approvalId: string, s: TaskSnapshot): CallToolResult {
  const state = approvalState(approvalId, s);
  const args = JSON.stringify({ approvalId });
  const text =
    s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled'
      ? `An approval request for this exact call already exists and has ended (approval id: ${approvalId}). ${state.statusMessage} ` +
        `Call ${APPROVAL_STATUS_TOOL} with ${args} for its outcome; do not assume the tool did not run.`
      : `Not executed yet: ${state.statusMessage} An approval request was opened (approval id: ${approvalId}); the tool runs only if an approver approves it. ` +
        `Check it with the ${APPROVAL_STATUS_TOOL} tool with ${args} (not by repeating this call), and withdraw it with ${APPROVAL_CANCEL_TOOL} with ${args}.`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: state,
    isError: true,
    _meta: {
      [META.authorization]: { reason: 'insufficient_authorization', remediation: 'available', remediationHints: [{ type: 'task' }] },
    },
  };
}

const UNKNOWN_TEXT =
  'No approval with this id is known to this caller (it may never have existed, have expired, or belong to someone else).';

function stateResult(state: ApprovalState, lead: string): CallToolResult {
  const parts = [lead, state.statusMessage];
  if (state.next) parts.push(`Check again with ${APPROVAL_STATUS_TOOL} later.`);
  if (state.outcome === 'possibly-executed') parts.push('The tool may have run: check the target system before trying again.');
  const toolText = (state.result?.content ?? []).flatMap((c) => (c.type === 'text' ? [String(c.text ?? '')] : []));
  return { content: [{ type: 'text', text: [parts.join(' '), ...toolText].join('\n') }], structuredContent: state, isError: false };
}

/**
 * Run a companion tool for `caller`; `onRead` is told of each status read it answered (follower
 * reports, `follower-reports.ts`). Invalid arguments or an unknown/foreign id: an `isError`
 * result with fixed text (the same for unknown and foreign). Other failures propagate (the MCP
 * front answers them -32603).
 */
export async function callApprovalTool(
  tasks: TaskService,
  caller: Principal,
  name: string,
  args: unknown,
  onRead?: (taskId: string, snap: TaskSnapshot) => void,
): Promise<CallToolResult> {
  const parsed = ArgsSchema.safeParse(args ?? {});
  if (!parsed.success) return { content: [{ type: 'text', text: `${name} needs {"approvalId": "<the approval id>"}.` }], isError: true };
  const { approvalId } = parsed.data;
  const unknown: CallToolResult = { content: [{ type: 'text', text: UNKNOWN_TEXT }], isError: true };
  if (name === APPROVAL_CANCEL_TOOL) {
    const outcome = await tasks.cancel(approvalId, caller);
    if (!outcome) return unknown;
    if (outcome === 'recorded') {
      // no worker runs the task right now, so its state cannot be read: say what is known
      const state: ApprovalState = {
        approvalId,
        status: 'working',
        statusMessage:
          'The withdrawal is recorded and will be applied as soon as the task runs again, unless the tool was already starting.',
        outcome: 'pending',
        next: { tool: APPROVAL_STATUS_TOOL, arguments: { approvalId } },
      };
      return stateResult(state, 'Withdrawal recorded.');
    }
    const after = await tasks.get(approvalId, caller);
    if (!after) return unknown;
    const lead =
      outcome === 'cancelled'
        ? 'The approval request was withdrawn; the tool will not run.'
        : outcome === 'already-claimed'
          ? 'Too late to withdraw: the tool was already starting.'
          : 'The approval had already ended.';
    return stateResult(approvalState(approvalId, after), lead);
  }
  const snap = await getDecliningUnanswerableInput(tasks, approvalId, caller);
  if (!snap) return unknown;
  onRead?.(approvalId, snap);
  return stateResult(approvalState(approvalId, snap), `Approval ${approvalId}: ${snap.status}.`);
}

/**
 * The caller's task for a client that has no way to answer in-task input (no `tasks/update`: a
 * plain client following with `approval_status`, or the 2025-11-25 face). A task waiting for input
 * (a further approval that needs a justification) could never be answered by it, so the outstanding
 * request is declined on its behalf: the task ends as a denial that submitted nothing further
 * (`input-declined`) instead of waiting until it expires. null as `TaskService.get`.
 */
export async function getDecliningUnanswerableInput(tasks: TaskService, taskId: string, caller: Principal): Promise<TaskSnapshot | null> {
  const snap = await tasks.get(taskId, caller);
  if (snap?.status !== 'input_required' || !snap.inputRequests) return snap;
  const declined = Object.fromEntries(Object.keys(snap.inputRequests).map((k) => [k, { action: 'decline' }]));
  await tasks.provideInput(taskId, caller, declined);
  return tasks.get(taskId, caller);
}
