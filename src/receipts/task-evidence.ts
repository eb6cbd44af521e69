/**
 * What a closed approval task proves, derived after the fact from its durable records: the
 * workflow's Temporal history (the call binding and policy hint in its input, every activity's
 * result, the terminal snapshot) and the approval backend's record of who decided (a
 * {@link DecisionRecordSource}). Nothing here runs inside the workflow, so the workflow stays as it
 * was recorded (every history in `test/workflow/fixtures/` replays unchanged) and a receipt can be
 * issued for any task whose history is still retained, including ones that ended before receipts
 * existed.
 *
 * Deliberately does not: keep the call's arguments (only `argumentsOf` returns them, for an export
 * that discloses them on request), or trust anything the history does not hold.
 */
import { DecisionRecordBodySchema, requestUrl } from '@countersign/arap';
import { parseJsonWithLimits, readUtf8Body } from '@countersign/http/json-limits';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type {
  ApprovalMaterial,
  ApprovalWorkflowInput,
  BackendHandle,
  BackendStatus,
  ReEvaluation,
  TaskSnapshot,
} from '../../workflows/types.js';
import { taskIdFor } from '../../workflows/task-id.js';
import type {
  ReceiptApprovalRequest,
  ReceiptApproverDecision,
  ReceiptEvidence,
  ReceiptGrantUse,
  ReceiptPolicyDecision,
} from '@countersign/receipts';

type History = temporal.api.history.v1.IHistory;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** The backend's record of one request's decisions (quorum and each counted decision). */
export interface DecisionRecord {
  /** The request's status at the backend now (`pending`, `approved`, `denied`, `expired`, `cancelled`, `failed`). */
  status: ReceiptApprovalRequest['outcome'];
  quorum: { required: number; rule: string | null };
  decisions: ReceiptApproverDecision[];
  /** The break-glass mark, when the request was approved under that role. */
  breakGlass?: { by: string; reason: string; at: string };
  /** The grant use, when a grant approved the request. */
  grant?: ReceiptGrantUse;
}

/** Where the approvers' decisions are read from (the reference service's decisions API, or another backend's adapter). */
export interface DecisionRecordSource {
  /** The record of request `requestId`; undefined when the backend does not know it. Rejects when the backend cannot be read. */
  decisionsOf(requestId: string): Promise<DecisionRecord | undefined>;
  close(): void;
}

/**
 * The reference approval service's decision records over its ARAP API: `GET
 * <baseUrl>/access/v1/requests/:id/decisions` with the client token (`DecisionRecordBodySchema` of
 * `@countersign/arap`): quorum and every counted decision (approver, decision, channel, time).
 * 404 → undefined (the service does not know the request); any other answer, a body outside the
 * schema (or `@countersign/http/json-limits`), a network error or a timeout rejects, naming the
 * request and the HTTP status: a receipt is issued once, so it is never issued from a partial read.
 */
export function approvalServiceRecords(opts: {
  baseUrl: string;
  clientToken: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}): DecisionRecordSource {
  const doFetch = opts.fetch ?? globalThis.fetch;
  const base = opts.baseUrl.replace(/\/+$/, '');
  return {
    async decisionsOf(requestId) {
      const url = `${requestUrl(base, requestId)}/decisions`;
      let res: Response;
      try {
        res = await doFetch(url, {
          headers: { Accept: 'application/json, application/problem+json', Authorization: `Bearer ${opts.clientToken}` },
          signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
          redirect: 'error',
        });
      } catch (err) {
        throw new Error(`could not read the decisions of request ${requestId} from ${base}: ${(err as Error).message}`, { cause: err });
      }
      if (res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new Error(`could not read the decisions of request ${requestId} from ${base}: HTTP ${res.status}`);
      }
      const json = parseJsonWithLimits((await readUtf8Body(res)) ?? '');
      const parsed = json.ok ? DecisionRecordBodySchema.safeParse(json.value) : undefined;
      if (!parsed?.success || parsed.data.id !== requestId)
        throw new Error(`the decisions of request ${requestId} from ${base} are not a decision record`);
      const { status, quorum, decisions, break_glass: glass, grant } = parsed.data;
      return {
        status,
        quorum,
        decisions,
        ...(glass !== undefined ? { breakGlass: glass } : {}),
        ...(grant !== undefined
          ? { grant: { id: grant.id, createdBy: grant.created_by, use: grant.use, maxUses: grant.max_uses, expiresAt: grant.expires_at } }
          : {}),
      };
    },
    close() {},
  };
}

/** A history that cannot give a receipt (not an approval workflow, or not closed with a result). */
export class EvidenceError extends Error {
  override readonly name = 'EvidenceError';
}

function timeOf(e: HistoryEvent): string {
  const t = e.eventTime;
  if (!t) throw new EvidenceError(`history event ${String(e.eventId)} has no time`);
  const seconds = typeof t.seconds === 'object' && t.seconds !== null ? t.seconds.toNumber() : Number(t.seconds ?? 0);
  return new Date(seconds * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
}

/** Marker name the TypeScript SDK (Core) gives a local activity's result; its `data` names the activity type. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

async function decodeFirst(codec: PayloadCodec, payloads: temporal.api.common.v1.IPayloads | null | undefined): Promise<unknown> {
  const list = (payloads?.payloads ?? []) as Payload[];
  if (list.length === 0) return undefined;
  const [decoded] = await codec.decode(list.slice(0, 1));
  return defaultPayloadConverter.fromPayload(decoded!);
}

/** The workflow input of a history (decoded through `codec`): the call binding with its arguments. */
export async function workflowInputOf(history: History, codec: PayloadCodec): Promise<ApprovalWorkflowInput> {
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  if (!started || started.workflowType?.name !== 'approvalWorkflow') throw new EvidenceError('not an approval workflow history');
  return (await decodeFirst(codec, started.input)) as ApprovalWorkflowInput;
}

/**
 * The evidence of one closed approval workflow run from its `history` (payloads decoded with
 * `codec`) and, when given, the backend's decision records. Throws {@link EvidenceError} when the
 * run is not an approval workflow that completed with a task snapshot (a terminated run has none).
 */
export async function evidenceFromHistory(
  ids: { workflowId: string; runId: string },
  history: History,
  codec: PayloadCodec,
  records?: DecisionRecordSource,
): Promise<ReceiptEvidence> {
  const events = history.events ?? [];
  const input = await workflowInputOf(history, codec);
  const completed = events.find((e) => e.workflowExecutionCompletedEventAttributes);
  if (!completed) throw new EvidenceError('the run did not complete with a task result');
  const snapshot = (await decodeFirst(codec, completed.workflowExecutionCompletedEventAttributes!.result)) as TaskSnapshot;

  // Activities: name and time by scheduled event id, then each completion's decoded result.
  const scheduled = new Map<string, { name: string; at: string }>();
  const policyDecisions: ReceiptPolicyDecision[] = [];
  const requests: ReceiptApprovalRequest[] = [];
  let claimAt: string | null = null;
  const initialPolicyIds = input.confirmation ? [input.confirmation.policyId] : [input.accessRequest.policyId];
  policyDecisions.push({ stage: 'initial', decision: 'deny', requestable: true, policyIds: initialPolicyIds });
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) {
      const name = s.activityType?.name ?? '';
      scheduled.set(String(e.eventId), { name, at: timeOf(e) });
      if (name === 'executeTool' && claimAt === null) claimAt = timeOf(e); // the claim is the step right before
      continue;
    }
    // A completed regular activity, or a local activity's marker (the status fetch and the policy
    // re-check since the `local-reads` patch, docs/decisions/0001-local-reads.md): its type and result.
    let act: { name: string } | undefined;
    let result: temporal.api.common.v1.IPayloads | null | undefined;
    const c = e.activityTaskCompletedEventAttributes;
    const m = e.markerRecordedEventAttributes;
    if (c) {
      act = scheduled.get(String(c.scheduledEventId));
      result = c.result;
    } else if (m?.markerName === LOCAL_ACTIVITY_MARKER && m.details?.result) {
      // `data` is the SDK's own bookkeeping (activity type, attempt, times), written by the worker
      // core outside the payload codec: plain JSON, read without it. `result` went through the codec.
      const first = m.details.data?.payloads?.[0] as Payload | undefined;
      const data = (first ? defaultPayloadConverter.fromPayload(first) : undefined) as { activity_type?: unknown } | undefined;
      if (typeof data?.activity_type === 'string') act = { name: data.activity_type };
      result = m.details.result;
    }
    if (!act) continue;
    if (act.name === 'submitApprovalRequest') {
      const handle = (await decodeFirst(codec, result)) as BackendHandle;
      requests.push({ generation: requests.length + 1, requestId: handle.requestId, outcome: 'pending', quorum: null, decisions: [] });
    } else if (act.name === 'fetchApprovalStatus') {
      const status = (await decodeFirst(codec, result)) as BackendStatus;
      const current = requests[requests.length - 1];
      if (current && status.state !== 'pending') {
        current.outcome = status.state;
        if (status.state === 'approved') current.decisions = fromMaterial(status.approval);
      }
    } else if (act.name === 'evaluatePolicy') {
      const r = (await decodeFirst(codec, result)) as ReEvaluation & { policyIds?: string[] };
      policyDecisions.push({
        stage: 're-evaluation',
        decision: r.outcome === 'allow' ? 'allow' : 'deny',
        outcome: r.outcome,
        policyIds: r.policyIds ?? (r.outcome === 'request' ? [r.accessRequest.policyId] : []),
        at: timeOf(e),
      });
    }
  }
  for (const req of requests) {
    const record = await records?.decisionsOf(req.requestId);
    if (record) {
      // The task ended before the backend's answer (a cancel, a deadline): the backend's own status since.
      if (req.outcome === 'pending') req.outcome = record.status;
      req.quorum = record.quorum;
      req.decisions = record.decisions;
      if (record.breakGlass !== undefined) req.breakGlass = record.breakGlass;
      if (record.grant !== undefined) req.grant = record.grant;
    }
  }
  const terminal = snapshot.lastUpdatedAt ?? timeOf(completed);
  return {
    task: {
      taskId: taskIdFor(ids.workflowId, ids.runId),
      workflowId: ids.workflowId,
      runId: ids.runId,
      status: snapshot.status,
      createdAt: snapshot.createdAt,
      terminalAt: terminal,
    },
    callBinding: {
      digest: input.binding.digest,
      tool: input.binding.tool,
      principal: input.binding.principal,
      resource: input.binding.resource,
    },
    policyDecisions,
    approvalMode: input.confirmation ? 'in-band' : 'out-of-band',
    approvalRequests: requests,
    inBandConfirmation: input.confirmation
      ? { confirmedBy: input.confirmation.confirmedBy, confirmedAt: input.confirmation.confirmedAt, policyId: input.confirmation.policyId }
      : null,
    executionClaim: snapshot.claimed
      ? { claimed: true, at: claimAt, executionId: `${taskIdFor(ids.workflowId, ids.runId)}/execution` }
      : { claimed: false },
    disposition: snapshot.disposition ?? null,
  };
}

/** Decisions as the approval material names them (approvers only: no channel, the grant's time for each). */
function fromMaterial(m: ApprovalMaterial): ReceiptApproverDecision[] {
  return m.approvers.map((approver) => ({ approver, decision: 'approve', channel: null, at: m.approvedAt }));
}
