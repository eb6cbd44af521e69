/**
 * The grants part of the approval store (`../grants.ts`, docs/APPROVERS.md §Grants): `grants` (one
 * row per grant: for whom, which tool, which approver group, its argument constraints, at most how
 * many uses and how many so far, until when, who created it through which channel and why, the
 * request it was made from, its revocation) and `grant_uses` (which request used which grant, with
 * its use number). Tables are created by the schema (`store-schema.ts`, version 8). Times ms since epoch.
 *
 * A use is counted by one compare-and-set `UPDATE … SET uses = uses + 1 WHERE uses < max_uses AND
 * not revoked AND not expired`, inside the transaction that inserts the request it approves
 * (`store.ts` `insertWithPermit`): SQLite serialises writers, so a grant of 3 approves exactly 3
 * requests however many MCP front instances submit at once, and a CHECK keeps `uses <= max_uses`.
 * Deliberately does not: delete grants (they are the trail), or match arguments in SQL (`../grants.ts`).
 */
import type Database from 'better-sqlite3';
import type { GrantConstraints } from '@countersign/arap';
import type { Sync } from './async.js';

/** Channel a grant was created or revoked through. */
export type GrantChannel = 'inbox' | 'api';

/** One grant. */
export interface Grant {
  id: string;
  /** The requester (`subject.sub`) whose calls it covers. */
  principal: string;
  /**
   * The issuer of the requester's token (`subject.iss`, a URL) the grant is bound to: set from the
   * request a grant is made from, or given as `principal_issuer`. Null: any issuer (a grant made from
   * scratch without one, or before store version 9 without a request).
   */
  principalIssuer: string | null;
  tool: string;
  /** The approver group whose approval it stands for (requests of that group only). */
  approverGroup: string;
  constraints: GrantConstraints;
  /** At most this many uses, or null: bounded by time only. */
  maxUses: number | null;
  uses: number;
  createdBy: string;
  via: GrantChannel;
  reason: string;
  /** The request it was made from, or null (made from scratch). */
  fromRequest: string | null;
  createdAtMs: number;
  expiresAtMs: number;
  revokedAtMs: number | null;
  revokedBy: string | null;
}

/** A grant's state at a time: usable, or why not. */
export type GrantState = 'active' | 'used-up' | 'expired' | 'revoked';

/** The state of `g` at `nowMs` (revoked first, then used up, then expired). */
export function grantState(g: Grant, nowMs: number): GrantState {
  if (g.revokedAtMs !== null) return 'revoked';
  if (g.maxUses !== null && g.uses >= g.maxUses) return 'used-up';
  if (nowMs >= g.expiresAtMs) return 'expired';
  return 'active';
}

/** One use of a grant: the request it approved and its 1-based use number. */
export interface GrantUse {
  grantId: string;
  requestId: string;
  use: number;
  atMs: number;
}

/** The store's grants API. Every method returns a promise (`async.ts`). */
export interface GrantStore {
  create(g: Omit<Grant, 'uses' | 'revokedAtMs' | 'revokedBy'>): Promise<Grant>;
  get(id: string): Promise<Grant | undefined>;
  /** Grants for `principal` and `tool` of `approverGroup` usable at `atMs`, oldest first (arguments not checked). */
  candidates(principal: string, tool: string, approverGroup: string, atMs: number): Promise<Grant[]>;
  /**
   * Count one use of grant `id` by request `requestId` at `atMs`, if it is still usable then (not
   * revoked, not expired, uses left): the compare-and-set and the `grant_uses` row in one
   * transaction. Returns the use, or null (nothing written).
   */
  consume(id: string, requestId: string, atMs: number): Promise<GrantUse | null>;
  /** Revoke `id` (by `by` at `atMs`) if not yet revoked; returns whether it did. */
  revoke(id: string, by: string, atMs: number): Promise<boolean>;
  /**
   * Grants, newest first: all, or only those usable at `activeAt`; only those of approver groups
   * `groups` or created by `createdBy` (case-insensitively) when either is given (filtered in SQL,
   * before the limit); at most `limit` (default 200).
   */
  list(opts?: { activeAt?: number; limit?: number; groups?: readonly string[]; createdBy?: string }): Promise<Grant[]>;
  /** The use that approved request `requestId`, if a grant did. */
  useBy(requestId: string): Promise<GrantUse | undefined>;
  /** Every use of grant `id`, in order. */
  uses(id: string): Promise<GrantUse[]>;
}

interface GrantRow {
  id: string;
  principal: string;
  principal_iss: string | null;
  tool: string;
  approver_group: string;
  constraints_json: string;
  max_uses: number | null;
  uses: number;
  created_by: string;
  via: GrantChannel;
  reason: string;
  from_request: string | null;
  created_at_ms: number;
  expires_at_ms: number;
  revoked_at_ms: number | null;
  revoked_by: string | null;
}

interface UseRow {
  grant_id: string;
  request_id: string;
  use: number;
  at_ms: number;
}

const fromRow = (r: GrantRow): Grant => ({
  id: r.id,
  principal: r.principal,
  principalIssuer: r.principal_iss,
  tool: r.tool,
  approverGroup: r.approver_group,
  constraints: JSON.parse(r.constraints_json) as GrantConstraints,
  maxUses: r.max_uses,
  uses: r.uses,
  createdBy: r.created_by,
  via: r.via,
  reason: r.reason,
  fromRequest: r.from_request,
  createdAtMs: r.created_at_ms,
  expiresAtMs: r.expires_at_ms,
  revokedAtMs: r.revoked_at_ms,
  revokedBy: r.revoked_by,
});

const fromUseRow = (r: UseRow): GrantUse => ({ grantId: r.grant_id, requestId: r.request_id, use: r.use, atMs: r.at_ms });

const USABLE = 'revoked_at_ms IS NULL AND expires_at_ms > @at AND (max_uses IS NULL OR uses < max_uses)';

/** The grants API over `db` (tables from `store-schema.ts`), synchronous (`store.ts` uses it inside its transactions and wraps it). */
export function createGrantStore(db: Database.Database): Sync<GrantStore> {
  const insert = db.prepare(
    `INSERT INTO grants (id, principal, principal_iss, tool, approver_group, constraints_json, max_uses, created_by, via, reason, from_request, created_at_ms, expires_at_ms)
     VALUES (@id, @principal, @principal_iss, @tool, @approver_group, @constraints_json, @max_uses, @created_by, @via, @reason, @from_request, @created_at_ms, @expires_at_ms)`,
  );
  const selectOne = db.prepare<[string], GrantRow>('SELECT * FROM grants WHERE id = ?');
  const selectCandidates = db.prepare<{ principal: string; tool: string; group: string; at: number }, GrantRow>(
    `SELECT * FROM grants WHERE principal = @principal AND tool = @tool AND approver_group = @group AND ${USABLE} ORDER BY created_at_ms, id`,
  );
  const countUse = db.prepare<{ id: string; at: number }>(`UPDATE grants SET uses = uses + 1 WHERE id = @id AND ${USABLE}`);
  const insertUse = db.prepare('INSERT INTO grant_uses (request_id, grant_id, use, at_ms) VALUES (?, ?, ?, ?)');
  const revokeStmt = db.prepare('UPDATE grants SET revoked_at_ms = ?, revoked_by = ? WHERE id = ? AND revoked_at_ms IS NULL');
  // @groups is a JSON array; @creator '' matches nobody; @scoped 0 lists every grant
  const SCOPE = `(@scoped = 0 OR approver_group IN (SELECT value FROM json_each(@groups)) OR lower(created_by) = lower(@creator))`;
  type ListParams = { at: number; limit: number; scoped: 0 | 1; groups: string; creator: string };
  const selectAll = db.prepare<ListParams, GrantRow>(`SELECT * FROM grants WHERE ${SCOPE} ORDER BY created_at_ms DESC, id LIMIT @limit`);
  const selectActive = db.prepare<ListParams, GrantRow>(
    `SELECT * FROM grants WHERE ${USABLE} AND ${SCOPE} ORDER BY created_at_ms DESC, id LIMIT @limit`,
  );
  const selectUseBy = db.prepare<[string], UseRow>('SELECT * FROM grant_uses WHERE request_id = ?');
  const selectUses = db.prepare<[string], UseRow>('SELECT * FROM grant_uses WHERE grant_id = ? ORDER BY use');

  const consumeTx = db.transaction((id: string, requestId: string, atMs: number): GrantUse | null => {
    if (countUse.run({ id, at: atMs }).changes !== 1) return null;
    const use = selectOne.get(id)?.uses ?? 0;
    insertUse.run(requestId, id, use, atMs);
    return { grantId: id, requestId, use, atMs };
  });

  return {
    create(g) {
      insert.run({
        id: g.id,
        principal: g.principal,
        principal_iss: g.principalIssuer,
        tool: g.tool,
        approver_group: g.approverGroup,
        constraints_json: JSON.stringify(g.constraints),
        max_uses: g.maxUses,
        created_by: g.createdBy,
        via: g.via,
        reason: g.reason,
        from_request: g.fromRequest,
        created_at_ms: g.createdAtMs,
        expires_at_ms: g.expiresAtMs,
      });
      return { ...g, uses: 0, revokedAtMs: null, revokedBy: null };
    },
    get(id) {
      const r = selectOne.get(id);
      return r === undefined ? undefined : fromRow(r);
    },
    candidates(principal, tool, approverGroup, atMs) {
      return selectCandidates.all({ principal, tool, group: approverGroup, at: atMs }).map(fromRow);
    },
    consume: (id, requestId, atMs) => consumeTx(id, requestId, atMs),
    revoke(id, by, atMs) {
      return revokeStmt.run(atMs, by, id).changes === 1;
    },
    list(opts = {}) {
      const scoped = opts.groups !== undefined || opts.createdBy !== undefined;
      const params: ListParams = {
        at: opts.activeAt ?? 0,
        limit: opts.limit ?? 200,
        scoped: scoped ? 1 : 0,
        groups: JSON.stringify(opts.groups ?? []),
        creator: opts.createdBy ?? '',
      };
      const rows = opts.activeAt === undefined ? selectAll.all(params) : selectActive.all(params);
      return rows.map(fromRow);
    },
    useBy(requestId) {
      const r = selectUseBy.get(requestId);
      return r === undefined ? undefined : fromUseRow(r);
    },
    uses(id) {
      return selectUses.all(id).map(fromUseRow);
    },
  };
}
