/**
 * Paging of pending approvals: the opaque keyset cursor and the `limit` / `cursor` query
 * parameters shared by `GET /access/v1/approvals/pending` (`arap-routes.ts`) and the inbox queue
 * (`../inbox/routes.tsx`). A cursor is the base64url of the JSON array `[created_at_ms, id]` of a
 * request (a position in the store's pending order, `PendingKey` in `../store/store.ts`), never an
 * offset, so requests that arrive while someone pages neither repeat nor hide older ones.
 * A cursor is not a capability: it only positions the keyset, and what a page may hold comes from
 * the caller's credentials. Deliberately does not: sign cursors (any well-formed `[ms, "id"]` is
 * accepted, and only moves the caller's own view; every row is still filtered by the caller's
 * scope, and the values are bound SQL parameters).
 */
import type { PendingKey } from '../store/store.js';

/** Page size when `limit` is absent. */
export const DEFAULT_PAGE_LIMIT = 50;
/** Largest accepted `limit`. */
export const MAX_PAGE_LIMIT = 200;
/** Longest accepted cursor, in characters (an id is at most a few dozen). */
const MAX_CURSOR_LENGTH = 512;

/** The opaque cursor for `key`: base64url of `[createdAtMs, id]`. */
export function encodePageCursor(key: PendingKey): string {
  return Buffer.from(JSON.stringify([key.createdAtMs, key.id]), 'utf8').toString('base64url');
}

/** The position a cursor names, or null when `cursor` is not one {@link encodePageCursor} makes. */
export function decodePageCursor(cursor: string): PendingKey | null {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [createdAtMs, id] = value as [unknown, unknown];
  if (typeof createdAtMs !== 'number' || !Number.isSafeInteger(createdAtMs) || createdAtMs < 0) return null;
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) return null;
  return { createdAtMs, id };
}

/** A parsed `limit` / `cursor` pair, or the specific reason it was refused (a 400 detail). */
export type PageQuery = { ok: true; limit: number; after?: PendingKey } | { ok: false; detail: string };

/**
 * Parse `limit` (decimal integer 1…{@link MAX_PAGE_LIMIT}, default {@link DEFAULT_PAGE_LIMIT})
 * and `cursor` (from a previous page's `next_cursor`). Undefined means absent.
 */
export function parsePageQuery(limit: string | undefined, cursor: string | undefined): PageQuery {
  let n = DEFAULT_PAGE_LIMIT;
  if (limit !== undefined) {
    if (!/^[0-9]{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_PAGE_LIMIT) {
      return { ok: false, detail: `limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}.` };
    }
    n = Number(limit);
  }
  if (cursor === undefined) return { ok: true, limit: n };
  const after = decodePageCursor(cursor);
  if (after === null) return { ok: false, detail: 'cursor is malformed; use next_cursor from a previous page.' };
  return { ok: true, limit: n, after };
}

/** Query parameters of `GET /access/v1/approvals/pending` that must appear at most once, by their plain name. */
export const PAGE_QUERY_PARAMETERS: readonly string[] = ['limit', 'cursor', 'tool', 'group'];

/**
 * The 400 detail for a query that repeats one of `names` (`limit=1&limit=2`) or gives one in
 * bracket form (`cursor[]=x`, `limit[0]=1`), which would otherwise be read as its first value or
 * as absent; null when each appears at most once under its plain name. `search` is the request
 * URL's query; its names are percent-decoded, so `cursor%5B%5D` counts as `cursor[]`. Other
 * parameters are not looked at.
 */
export function pageQueryShapeProblem(search: URLSearchParams, names: readonly string[] = PAGE_QUERY_PARAMETERS): string | null {
  const seen = new Set<string>();
  for (const key of search.keys()) {
    const bracket = key.indexOf('[');
    const base = bracket === -1 ? key : key.slice(0, bracket);
    if (!names.includes(base)) continue;
    if (bracket !== -1) return `${base} must be a plain query parameter (${base}=…), not ${key}.`;
    if (seen.has(key)) return `${key} must be given at most once.`;
    seen.add(key);
  }
  return null;
}
