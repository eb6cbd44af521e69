/**
 * The per-principal submission limiter: one workflow per principal (`limiter-<ownerKey>`), shared
 * by every MCP front instance, so the limits hold across stateless instances (SEP-2848 §Security
 * Implications, "Approval-request amplification": deployments MUST rate-limit submission per caller
 * and SHOULD bound outstanding pending tasks).
 *
 * - `reserve` (update, with Update-with-Start from the front): in one synchronous step, an approval
 *   workflow id that already holds a reservation is admitted as `joined` without counting anything
 *   (dedup joins and retries never consume budget); otherwise the pending count is checked against
 *   `maxPendingPerPrincipal` (→ `too-many-pending`), then the admissions inside the sliding window
 *   against `maxSubmissionsPerWindow` (→ `rate-limited`); an admission records a reservation
 *   (uuid4 from workflow randomness) and its time.
 * - `release` (signal, from the approval workflow when it terminalizes): frees exactly the
 *   reservation it names; a stale or repeated release is a no-op.
 * - Leak guard: a reservation whose approval workflow died without releasing (terminated, failed,
 *   never started) would hold a slot forever. When `reserve` is about to refuse for
 *   `too-many-pending`, the limiter first asks Temporal (one activity, at most once per
 *   `auditMinIntervalMs`) which of its reservations older than `auditGraceMs` have no running
 *   workflow, drops those, and decides again.
 * - History stays bounded: continue-as-new at `maxHistoryEvents` (or when the server suggests it),
 *   carrying only `LimiterState`; the run closes itself once nothing is pending and the latest
 *   admission has left the window, so an idle principal costs nothing. A later call starts a fresh
 *   run through Update-with-Start.
 *
 * Deliberately does not: know principals (only the hashed owner key), hold arguments, or talk to
 * the network itself (the audit is an activity). Time is workflow time.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  sleep,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import type { LimiterActivities } from '../activities/limiter-activities.js';
import {
  limiterCountsQuery,
  claimSignal,
  releaseSignal,
  reserveUpdate,
  type LimiterInput,
  type LimiterState,
  type LimiterTuning,
  type ReserveRequest,
  type ReserveResult,
} from './limiter-messages.js';

const DEFAULT_TUNING: LimiterTuning = { auditGraceMs: 5 * 60_000, auditMinIntervalMs: 60_000, maxHistoryEvents: 2_000 };

const temporal = proxyActivities<LimiterActivities>({
  startToCloseTimeout: '10s',
  scheduleToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', maximumAttempts: 3 },
});

/** Workflow entry point. Returns when idle (nothing pending, window empty). */
export async function submissionLimiterWorkflow(input: LimiterInput): Promise<void> {
  const tuning: LimiterTuning = { ...DEFAULT_TUNING, ...input.tuning };
  const state: LimiterState = input.state ?? { admissionsMs: [], pending: {}, windowMs: 0, lastAuditAtMs: 0 };

  const pendingCount = (): number => Object.keys(state.pending).length;
  const lastAdmissionMs = (): number => state.admissionsMs[state.admissionsMs.length - 1] ?? 0;
  const prune = (now: number): void => {
    while (state.admissionsMs.length > 0 && state.admissionsMs[0]! <= now - state.windowMs) state.admissionsMs.shift();
  };

  /** The atomic check-and-record. */
  const decide = (req: ReserveRequest): ReserveResult => {
    const now = Date.now();
    state.windowMs = req.limits.submissionWindowMs;
    prune(now);
    const held = state.pending[req.approvalWorkflowId];
    if (held) return { admitted: true, reservationId: held.reservationId, joined: true };
    if (pendingCount() >= req.limits.maxPendingPerPrincipal) return { admitted: false, reason: 'too-many-pending' };
    if (state.admissionsMs.length >= req.limits.maxSubmissionsPerWindow) return { admitted: false, reason: 'rate-limited' };
    const reservationId = uuid4();
    state.pending[req.approvalWorkflowId] = { reservationId, reservedAtMs: now };
    state.admissionsMs.push(now);
    return { admitted: true, reservationId, joined: false };
  };

  /** Drop reservations whose approval workflow is no longer running. One audit at a time. */
  let audit: Promise<void> | undefined;
  const runAudit = async (): Promise<void> => {
    const now = Date.now();
    state.lastAuditAtMs = now;
    const candidates = Object.entries(state.pending).filter(([, r]) => now - r.reservedAtMs >= tuning.auditGraceMs);
    if (candidates.length === 0) return;
    let closed: string[];
    try {
      closed = await temporal.closedWorkflowIds(candidates.map(([id]) => id));
    } catch {
      return; // Temporal not answering: keep every slot (fail closed)
    }
    for (const [id, r] of candidates) {
      if (closed.includes(id) && state.pending[id]?.reservationId === r.reservationId) delete state.pending[id];
    }
  };
  const auditOnce = (): Promise<void> =>
    (audit ??= runAudit().finally(() => {
      audit = undefined;
    }));

  setHandler(
    reserveUpdate,
    async (req): Promise<ReserveResult> => {
      const first = decide(req);
      if (first.admitted || first.reason !== 'too-many-pending') return first;
      if (!audit && Date.now() - state.lastAuditAtMs < tuning.auditMinIntervalMs) return first;
      await auditOnce();
      return decide(req);
    },
    {
      validator: (req) => {
        const { limits } = req;
        const ok = (n: unknown) => typeof n === 'number' && Number.isInteger(n) && n >= 1;
        if (typeof req.approvalWorkflowId !== 'string' || req.approvalWorkflowId.length === 0 || req.approvalWorkflowId.length > 256) {
          throw new Error('approvalWorkflowId must be a non-empty string');
        }
        if (!limits || !ok(limits.maxSubmissionsPerWindow) || !ok(limits.submissionWindowMs) || !ok(limits.maxPendingPerPrincipal)) {
          throw new Error('limits must be positive integers');
        }
      },
    },
  );
  setHandler(releaseSignal, ({ approvalWorkflowId, reservationId, runId }) => {
    const held = state.pending[approvalWorkflowId];
    if (held?.reservationId !== reservationId) return;
    if (held.runId !== undefined && runId !== undefined && held.runId !== runId) return; // a newer run holds it
    delete state.pending[approvalWorkflowId];
  });
  setHandler(claimSignal, ({ approvalWorkflowId, reservationId, runId }) => {
    const held = state.pending[approvalWorkflowId];
    if (held?.reservationId === reservationId) held.runId = runId;
    else if (!held) state.pending[approvalWorkflowId] = { reservationId, reservedAtMs: Date.now(), runId }; // re-count
  });
  setHandler(limiterCountsQuery, () => {
    const from = Date.now() - state.windowMs;
    return { pending: pendingCount(), admissionsInWindow: state.admissionsMs.filter((t) => t > from).length };
  });

  const mustContinueAsNew = (): boolean => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= tuning.maxHistoryEvents;
  /** When the run may close: nothing pending and the latest admission out of the window. */
  const idleAtMs = (): number | undefined => (pendingCount() === 0 ? lastAdmissionMs() + state.windowMs : undefined);

  // One idle timer across busy spells, not one each time the pending count drops to zero
  // (docs/PERFORMANCE-ACTIONS.md: every started timer is an action).
  let idleTimerArmed = false;
  let idleTimerFired = false;
  const armIdleTimer = (atMs: number): void => {
    if (idleTimerArmed) return;
    idleTimerArmed = true;
    void sleep(Math.max(1, atMs - Date.now())).then(() => {
      idleTimerArmed = false;
      idleTimerFired = true;
    });
  };

  for (;;) {
    const idleAt = idleAtMs();
    if (idleAt !== undefined && Date.now() >= idleAt) {
      await condition(allHandlersFinished);
      if (idleAtMs() !== undefined && Date.now() >= idleAtMs()!) return;
      continue;
    }
    // Wake when the idle time may have moved (a slot freed or taken, a new admission, a new window).
    const key = `${pendingCount() === 0}:${lastAdmissionMs()}:${state.windowMs}`;
    const changed = () => `${pendingCount() === 0}:${lastAdmissionMs()}:${state.windowMs}` !== key || mustContinueAsNew();
    // One timer at a time: a timer armed for an earlier idle time is left running (it wakes the
    // loop early, which re-checks and arms the next), so a busy spell costs no timer per task.
    if (idleAt !== undefined) armIdleTimer(idleAt);
    idleTimerFired = false;
    await condition(() => changed() || idleTimerFired);
    if (mustContinueAsNew()) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof submissionLimiterWorkflow>({ ...input, state });
    }
  }
}
