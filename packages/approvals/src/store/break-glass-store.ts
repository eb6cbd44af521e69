/**
 * The break-glass part of the approval store (`../break-glass.ts`): `break_glass_sessions` (one
 * row per session an approver opened with a reason: when, until when, when ended early) and
 * `break_glass` (one row per request approved under the role: by whom, why, in which session, the
 * approvers it skipped, when its review is due, and the review — who, when, comment). Tables are
 * created by the schema (`store-schema.ts`, version 5). Times are ms since the epoch.
 * Deliberately does not: delete sessions or reviews (they are the trail).
 */
import type Database from 'better-sqlite3';
import type { Sync } from './async.js';

/** One break-glass session. */
export interface BreakGlassSession {
  id: string;
  approver: string;
  reason: string;
  openedAtMs: number;
  /** The session's end as opened (`openedAtMs + windowMs`). */
  untilMs: number;
  /** When the approver ended it early, or null. */
  endedAtMs: number | null;
}

/** One break-glass approval and its review. */
export interface BreakGlassUse {
  requestId: string;
  sessionId: string;
  /** Who broke glass (the approver id). */
  approver: string;
  reason: string;
  atMs: number;
  /** When the review is overdue. */
  reviewDueMs: number;
  /** Approver ids who could have decided the request and were skipped. */
  skipped: string[];
  reviewedBy: string | null;
  reviewedAtMs: number | null;
  reviewComment: string | null;
}

/** Outcome of {@link BreakGlassStore.sessionFor}. */
export type SessionOutcome =
  | { kind: 'active'; session: BreakGlassSession; opened: boolean }
  /** `maxPerDay` sessions were opened in the last day; the next may open at `retryAtMs`. */
  | { kind: 'limit'; retryAtMs: number };

/** The store's break-glass API. Every method returns a promise (`async.ts`). */
export interface BreakGlassStore {
  /** The approver's session active at `atMs` (not ended, `atMs < untilMs`), or undefined. */
  active(approver: string, atMs: number): Promise<BreakGlassSession | undefined>;
  /**
   * The approver's active session, or a new one opened with `reason` for `windowMs` — unless
   * `maxPerDay` sessions were opened by them in the `dayMs` before `atMs` (then `limit`). One transaction.
   */
  sessionFor(
    approver: string,
    reason: string,
    atMs: number,
    windowMs: number,
    maxPerDay: number,
    dayMs: number,
    newId: string,
  ): Promise<SessionOutcome>;
  /** End the approver's active session at `atMs`; returns it, or undefined when none was active. */
  end(approver: string, atMs: number): Promise<BreakGlassSession | undefined>;
  /** Record a break-glass approval (and its `break-glass` audit row is the caller's). */
  recordUse(use: Omit<BreakGlassUse, 'reviewedBy' | 'reviewedAtMs' | 'reviewComment'>): Promise<void>;
  /** The break-glass approval of a request, or undefined. */
  use(requestId: string): Promise<BreakGlassUse | undefined>;
  /** Break-glass approvals, oldest first: `unreviewed` only those without a review (at most `limit`, default 200). */
  list(filter: { unreviewed?: boolean }, limit?: number): Promise<BreakGlassUse[]>;
  /** How many are unreviewed, and of those how many are overdue at `atMs`. */
  counts(atMs: number): Promise<{ unreviewed: number; overdue: number }>;
  /** Mark a use reviewed (compare-and-set on "not yet reviewed"); false when it was already, or is unknown. */
  markReviewed(requestId: string, reviewer: string, comment: string, atMs: number): Promise<boolean>;
}

interface SessionRow {
  id: string;
  approver: string;
  reason: string;
  opened_at_ms: number;
  until_ms: number;
  ended_at_ms: number | null;
}

interface UseRow {
  request_id: string;
  session_id: string;
  approver: string;
  reason: string;
  at_ms: number;
  review_due_ms: number;
  skipped_json: string;
  reviewed_by: string | null;
  reviewed_at_ms: number | null;
  review_comment: string | null;
}

const sessionOf = (r: SessionRow): BreakGlassSession => ({
  id: r.id,
  approver: r.approver,
  reason: r.reason,
  openedAtMs: r.opened_at_ms,
  untilMs: r.until_ms,
  endedAtMs: r.ended_at_ms,
});

const useOf = (r: UseRow): BreakGlassUse => ({
  requestId: r.request_id,
  sessionId: r.session_id,
  approver: r.approver,
  reason: r.reason,
  atMs: r.at_ms,
  reviewDueMs: r.review_due_ms,
  skipped: JSON.parse(r.skipped_json) as string[],
  reviewedBy: r.reviewed_by,
  reviewedAtMs: r.reviewed_at_ms,
  reviewComment: r.review_comment,
});

/**
 * The break-glass store over an open database whose schema is at version 5 or later, synchronous
 * (`store.ts` uses it inside its transactions and wraps it).
 */
export function createBreakGlassStore(db: Database.Database): Sync<BreakGlassStore> {
  const selectActive = db.prepare<[string, number], SessionRow>(
    'SELECT * FROM break_glass_sessions WHERE cs_lower(approver) = cs_lower(?) AND ended_at_ms IS NULL AND until_ms > ? ORDER BY opened_at_ms DESC LIMIT 1',
  );
  const selectOpenedSince = db.prepare<[string, number], { opened_at_ms: number }>(
    'SELECT opened_at_ms FROM break_glass_sessions WHERE cs_lower(approver) = cs_lower(?) AND opened_at_ms > ? ORDER BY opened_at_ms',
  );
  const insertSession = db.prepare(
    'INSERT INTO break_glass_sessions (id, approver, reason, opened_at_ms, until_ms) VALUES (?, ?, ?, ?, ?)',
  );
  const endSession = db.prepare('UPDATE break_glass_sessions SET ended_at_ms = ? WHERE id = ? AND ended_at_ms IS NULL');
  const insertUse = db.prepare(
    'INSERT INTO break_glass (request_id, session_id, approver, reason, at_ms, review_due_ms, skipped_json) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const selectUse = db.prepare<[string], UseRow>('SELECT * FROM break_glass WHERE request_id = ?');
  const selectUses = db.prepare<[number, number], UseRow>(
    'SELECT * FROM break_glass WHERE (? = 0 OR reviewed_at_ms IS NULL) ORDER BY at_ms, request_id LIMIT ?',
  );
  const selectCounts = db.prepare<[number], { unreviewed: number; overdue: number | null }>(
    'SELECT COUNT(*) AS unreviewed, SUM(review_due_ms <= ?) AS overdue FROM break_glass WHERE reviewed_at_ms IS NULL',
  );
  const review = db.prepare(
    'UPDATE break_glass SET reviewed_by = ?, reviewed_at_ms = ?, review_comment = ? WHERE request_id = ? AND reviewed_at_ms IS NULL',
  );

  const active = (approver: string, atMs: number) => {
    const row = selectActive.get(approver, atMs);
    return row === undefined ? undefined : sessionOf(row);
  };
  const sessionTx = db.transaction(
    (approver: string, reason: string, atMs: number, windowMs: number, maxPerDay: number, dayMs: number, newId: string): SessionOutcome => {
      const current = active(approver, atMs);
      if (current !== undefined) return { kind: 'active', session: current, opened: false };
      const opened = selectOpenedSince.all(approver, atMs - dayMs);
      if (opened.length >= maxPerDay) {
        // the oldest session of the day that must age out before one more fits
        const oldest = opened[opened.length - maxPerDay]!;
        return { kind: 'limit', retryAtMs: oldest.opened_at_ms + dayMs };
      }
      insertSession.run(newId, approver, reason, atMs, atMs + windowMs);
      return {
        kind: 'active',
        session: { id: newId, approver, reason, openedAtMs: atMs, untilMs: atMs + windowMs, endedAtMs: null },
        opened: true,
      };
    },
  );

  return {
    active,
    sessionFor: (approver, reason, atMs, windowMs, maxPerDay, dayMs, newId) =>
      sessionTx(approver, reason, atMs, windowMs, maxPerDay, dayMs, newId),
    end(approver, atMs) {
      const current = active(approver, atMs);
      if (current === undefined || endSession.run(atMs, current.id).changes !== 1) return undefined;
      return { ...current, endedAtMs: atMs };
    },
    recordUse(u) {
      insertUse.run(u.requestId, u.sessionId, u.approver, u.reason, u.atMs, u.reviewDueMs, JSON.stringify(u.skipped));
    },
    use(requestId) {
      const row = selectUse.get(requestId);
      return row === undefined ? undefined : useOf(row);
    },
    list(filter, limit = 200) {
      return selectUses.all(filter.unreviewed === true ? 1 : 0, limit).map(useOf);
    },
    counts(atMs) {
      const row = selectCounts.get(atMs);
      return { unreviewed: row?.unreviewed ?? 0, overdue: row?.overdue ?? 0 };
    },
    markReviewed(requestId, reviewer, comment, atMs) {
      return review.run(reviewer, atMs, comment, requestId).changes === 1;
    },
  };
}
