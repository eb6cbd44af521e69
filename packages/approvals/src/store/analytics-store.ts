/**
 * The analytics part of the approval store (`../analytics.ts`): `request_opens` (when each approver
 * first and last opened a pending request's page, and how often: the "read before deciding" mark)
 * and the aggregate reads the analytics page and `/metrics` are computed from — over
 * `access_requests`, `approval_votes` and `audit_events`, grouped by the raw tool, approver group
 * and channel (capping them into bounded label sets is `../analytics.ts`'s job). The table is
 * created by the schema (`store-schema.ts`, version 7). Times are ms since the epoch; every read
 * takes `sinceMs` (rows at or after it; `Number.NEGATIVE_INFINITY`-like `-1` for all of them).
 * Deliberately does not: keep per-approver figures beyond the open mark, or delete rows.
 */
import type Database from 'better-sqlite3';
import type { Sync } from './async.js';

/** One decision by a person or a machine: a request approved or denied, with how long it waited. */
export interface DecisionRow {
  tool: string;
  group: string;
  /** The channel of the deciding audit row (`approved`/`denied`; `counter-proposal` or `grant` for an approval at submission by one), or null on rows without one. */
  via: string | null;
  outcome: 'approved' | 'denied';
  /** From submission to the decision, ms. */
  durationMs: number;
}

/** Decisions of one (tool, group, channel), counted per upper bound: `le[i]` decided within `boundsMs[i]`. */
export interface DecisionBucketRow {
  tool: string;
  group: string;
  via: string | null;
  le: number[];
  count: number;
  /** Sum of the durations, ms. */
  sumMs: number;
}

/** Requests of one (tool, group) that reached `status` (approved, denied, expired, cancelled, failed). */
export interface ResolvedRow {
  tool: string;
  group: string;
  status: string;
  count: number;
}

/**
 * People's approvals (votes through the inbox, Slack, e-mail or the CLI/API; not those a permit or a
 * grant gave at submission) of one (tool, group)
 * by how the voter had read the request: `quick` (voted within the threshold of first opening its
 * page), `read` (opened it longer before), `unopened` (never opened its page, e.g. a Slack button).
 */
export interface ReadingRow {
  tool: string;
  group: string;
  reading: 'quick' | 'read' | 'unopened';
  count: number;
}

/** Pending requests of one approver group by age at `atMs`: `ageIndex` i is younger than `boundsMs[i]`, or `boundsMs.length` for older than all. */
export interface PendingAgeRow {
  group: string;
  ageIndex: number;
  count: number;
}

/** When an approver opened a request's page. */
export interface RequestOpen {
  requestId: string;
  /** Lower-cased approver id. */
  approver: string;
  firstOpenedAtMs: number;
  lastOpenedAtMs: number;
  opens: number;
}

/** The store's analytics API. Every method returns a promise (`async.ts`). */
export interface AnalyticsStore {
  /** Record that `approver` opened pending request `requestId`'s page at `atMs` (the first open is kept, later ones counted). */
  recordOpen(requestId: string, approver: string, atMs: number): Promise<void>;
  /** The open mark of `approver` (any case) on `requestId`, or undefined. */
  openOf(requestId: string, approver: string): Promise<RequestOpen | undefined>;
  /**
   * Approved and denied requests resolved at or after `sinceMs`, of approver `groups` only when
   * given (filtered before the limit), at most `limit` (newest first).
   */
  decisions(sinceMs: number, limit: number, groups?: readonly string[]): Promise<DecisionRow[]>;
  /** Decisions resolved at or after `sinceMs`, grouped by tool, group and channel, counted per bound of `boundsMs` (ascending). */
  decisionBuckets(boundsMs: readonly number[], sinceMs: number): Promise<DecisionBucketRow[]>;
  /** Requests resolved at or after `sinceMs` by tool, group and final status. */
  resolved(sinceMs: number): Promise<ResolvedRow[]>;
  /** Requests escalated at or after `sinceMs`, by approver group. */
  escalations(sinceMs: number): Promise<Array<{ group: string; count: number }>>;
  /** People's approval votes cast at or after `sinceMs`, by tool, group and {@link ReadingRow.reading} with threshold `quickMs`. */
  readings(quickMs: number, sinceMs: number): Promise<ReadingRow[]>;
  /** Pending requests at `atMs` by approver group and age (`boundsMs` ascending). */
  pendingAges(atMs: number, boundsMs: readonly number[]): Promise<PendingAgeRow[]>;
}

/** Rules of approvals given at submission by something an approver set up before (not by reading the request). */
export const STANDING_RULES = ['counter-proposal', 'grant'] as const;

/** The channels through which a person approves (the votes {@link AnalyticsStore.readings} counts). */
export const PERSON_CHANNELS = ['inbox', 'slack', 'email', 'api'] as const;

/**
 * The channel of a request's deciding audit row; an approval at submission by a counter-proposal's
 * permit or a grant is named by its rule (`counter-proposal`, `grant`) rather than the channel its
 * creator used.
 */
const DECIDING_EVENT = `(SELECT CASE WHEN a.rule IN (${STANDING_RULES.map((r) => `'${r}'`).join(', ')}) THEN a.rule ELSE a.via END
  FROM audit_events a WHERE a.request_id = r.id AND a.event = r.status ORDER BY a.seq DESC LIMIT 1)`;

/**
 * The analytics store over an open database whose schema is at version 7 or later (`cs_lower`
 * registered), synchronous (`store.ts` wraps it).
 */
export function createAnalyticsStore(db: Database.Database): Sync<AnalyticsStore> {
  const upsertOpen = db.prepare(
    `INSERT INTO request_opens (request_id, approver, first_opened_at_ms, last_opened_at_ms, opens) VALUES (?, cs_lower(?), ?, ?, 1)
     ON CONFLICT (request_id, approver) DO UPDATE SET last_opened_at_ms = MAX(last_opened_at_ms, excluded.last_opened_at_ms), opens = opens + 1`,
  );
  const selectOpen = db.prepare<
    [string, string],
    { request_id: string; approver: string; first_opened_at_ms: number; last_opened_at_ms: number; opens: number }
  >('SELECT * FROM request_opens WHERE request_id = ? AND approver = cs_lower(?)');
  const selectDecisions = db.prepare<
    { since: number; limit: number; all: 0 | 1; groups: string },
    { tool: string; grp: string; via: string | null; status: string; d: number }
  >(
    `SELECT r.tool, r.approver_group AS grp, ${DECIDING_EVENT} AS via, r.status, r.resolved_at_ms - r.created_at_ms AS d
     FROM access_requests r
     WHERE r.status IN ('approved', 'denied') AND r.resolved_at_ms >= @since
       AND (@all = 1 OR r.approver_group IN (SELECT value FROM json_each(@groups)))
     ORDER BY r.resolved_at_ms DESC LIMIT @limit`,
  );
  const selectResolved = db.prepare<[number], { tool: string; grp: string; status: string; n: number }>(
    `SELECT tool, approver_group AS grp, status, COUNT(*) AS n FROM access_requests
     WHERE status <> 'pending' AND resolved_at_ms >= ? GROUP BY tool, approver_group, status`,
  );
  const selectEscalations = db.prepare<[number], { grp: string; n: number }>(
    'SELECT approver_group AS grp, COUNT(*) AS n FROM access_requests WHERE escalated_at_ms >= ? GROUP BY approver_group',
  );
  const selectReadings = db.prepare<[number, number], { tool: string; grp: string; reading: ReadingRow['reading']; n: number }>(
    `SELECT r.tool, r.approver_group AS grp,
       CASE WHEN o.first_opened_at_ms IS NULL OR o.first_opened_at_ms > v.at_ms THEN 'unopened'
            WHEN v.at_ms - o.first_opened_at_ms < ? THEN 'quick' ELSE 'read' END AS reading,
       COUNT(*) AS n
     FROM approval_votes v
     JOIN access_requests r ON r.id = v.request_id
     LEFT JOIN request_opens o ON o.request_id = v.request_id AND o.approver = cs_lower(COALESCE(v.cast_by, v.approver))
     WHERE v.via IN (${PERSON_CHANNELS.map((c) => `'${c}'`).join(', ')}) AND v.at_ms >= ?
       AND NOT EXISTS (SELECT 1 FROM audit_events u WHERE u.request_id = v.request_id AND u.event IN ('permit-used', 'grant-used'))
     GROUP BY r.tool, r.approver_group, reading`,
  );
  // prepared per bound list (the callers pass one fixed list each)
  const bucketQueries = new Map<string, Database.Statement<[number], Record<string, unknown>>>();
  const ageQueries = new Map<string, Database.Statement<[number], { grp: string; age: number; n: number }>>();
  const ints = (bounds: readonly number[]) => {
    if (!bounds.every((b) => Number.isSafeInteger(b) && b >= 0)) throw new Error('bounds must be non-negative integers (ms)');
    return bounds.join(',');
  };

  return {
    recordOpen(requestId, approver, atMs) {
      upsertOpen.run(requestId, approver, atMs, atMs);
    },
    openOf(requestId, approver) {
      const row = selectOpen.get(requestId, approver);
      return row === undefined
        ? undefined
        : {
            requestId: row.request_id,
            approver: row.approver,
            firstOpenedAtMs: row.first_opened_at_ms,
            lastOpenedAtMs: row.last_opened_at_ms,
            opens: row.opens,
          };
    },
    decisions(sinceMs, limit, groups) {
      const scope = groups === undefined ? { all: 1 as const, groups: '[]' } : { all: 0 as const, groups: JSON.stringify(groups) };
      return selectDecisions.all({ since: sinceMs, limit, ...scope }).map((r) => ({
        tool: r.tool,
        group: r.grp,
        via: r.via,
        outcome: r.status as DecisionRow['outcome'],
        durationMs: Math.max(0, r.d),
      }));
    },
    decisionBuckets(boundsMs, sinceMs) {
      const key = ints(boundsMs);
      let stmt = bucketQueries.get(key);
      if (stmt === undefined) {
        const sums = boundsMs.map((b, i) => `SUM(d <= ${b}) AS le${i}`).join(', ');
        stmt = db.prepare(
          `SELECT tool, grp, via, ${sums}${boundsMs.length > 0 ? ',' : ''} COUNT(*) AS n, SUM(d) AS sum_ms FROM (
             SELECT r.tool, r.approver_group AS grp, ${DECIDING_EVENT} AS via, MAX(0, r.resolved_at_ms - r.created_at_ms) AS d
             FROM access_requests r WHERE r.status IN ('approved', 'denied') AND r.resolved_at_ms >= ?
           ) GROUP BY tool, grp, via`,
        );
        bucketQueries.set(key, stmt);
      }
      return stmt.all(sinceMs).map((r) => ({
        tool: r.tool as string,
        group: r.grp as string,
        via: r.via as string | null,
        le: boundsMs.map((_, i) => Number(r[`le${i}`] ?? 0)),
        count: Number(r.n),
        sumMs: Number(r.sum_ms ?? 0),
      }));
    },
    resolved(sinceMs) {
      return selectResolved.all(sinceMs).map((r) => ({ tool: r.tool, group: r.grp, status: r.status, count: r.n }));
    },
    escalations(sinceMs) {
      return selectEscalations.all(sinceMs).map((r) => ({ group: r.grp, count: r.n }));
    },
    readings(quickMs, sinceMs) {
      return selectReadings.all(quickMs, sinceMs).map((r) => ({ tool: r.tool, group: r.grp, reading: r.reading, count: r.n }));
    },
    pendingAges(atMs, boundsMs) {
      const key = ints(boundsMs);
      let stmt = ageQueries.get(key);
      if (stmt === undefined) {
        const cases = boundsMs.map((b, i) => `WHEN age_ms < ${b} THEN ${i}`).join(' ');
        stmt = db.prepare<[number], { grp: string; age: number; n: number }>(
          `SELECT grp, CASE ${cases} ELSE ${boundsMs.length} END AS age, COUNT(*) AS n FROM (
             SELECT approver_group AS grp, ? - created_at_ms AS age_ms FROM access_requests WHERE status = 'pending'
           ) GROUP BY grp, age`,
        );
        ageQueries.set(key, stmt);
      }
      return stmt.all(atMs).map((r) => ({ group: r.grp, ageIndex: r.age, count: r.n }));
    },
  };
}
