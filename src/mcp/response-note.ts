/**
 * A per-request note from the MCP handlers to the HTTP layer (`http.ts`), carried in the request's
 * `authInfo.extra` (one object per HTTP request, never shared between callers).
 *
 * `http.ts` reads and rewrites a JSON answer only when it may need one of its two fix-ups (a task
 * result's `content: []`, a retryable "unavailable" error's HTTP 503); a handler that returned a
 * plain `CallToolResult` marks the note so that answer passes through unread — neither fix-up can
 * apply to it (bench/perf-notes.md, allowed-call overhead).
 */
import { isRecord } from './narrow.js';

/** Key of the note in `authInfo.extra`. */
export const RESPONSE_NOTE_KEY = 'responseNote';

/** The note. `plainToolResult`: the `tools/call` handler returned a `CallToolResult` (no `resultType`), not a task or an MRTR answer. */
export interface ResponseNote {
  plainToolResult: boolean;
}

/** A fresh note for one request. */
export function newResponseNote(): ResponseNote {
  return { plainToolResult: false };
}

/**
 * Mark the request's note when `result` is a plain `CallToolResult` (no `resultType`). `extra` is
 * the handler context's `authInfo.extra`; without a note there (e.g. a caller that set none) nothing happens.
 */
export function noteToolResult(extra: Record<string, unknown> | undefined, result: Record<string, unknown>): void {
  const note = extra?.[RESPONSE_NOTE_KEY];
  if (isResponseNote(note) && result.resultType === undefined) note.plainToolResult = true;
}

function isResponseNote(v: unknown): v is ResponseNote {
  return isRecord(v) && typeof v.plainToolResult === 'boolean';
}
