/**
 * The last-resort answers of every problem+json app (the approval service, the development token
 * issuer, the MCP front outside `/mcp`): an unknown route is 404 problem+json, an `HTTPException`
 * thrown by a hono middleware (`csrf()`'s 403, `bodyLimit`'s 413) keeps its status as problem+json,
 * and any other thrown error is logged by name and message and answered 500 problem+json without
 * either. Never plain text.
 *
 * Deliberately does not: decide per route (routes answer their own problems first), or build
 * JSON-RPC errors (the MCP endpoint's are in `src/mcp/errors.ts`).
 */
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { Logger } from 'pino';
import { PROBLEMS, problem, problemKindOf } from './problem.js';

/** `app.notFound` handler: 404 problem+json `not-found`. */
export const problemNotFound: NotFoundHandler = () => problem('not-found', 'No such resource.');

/**
 * `app.onError` handler: an `HTTPException` keeps its status (problem kind by {@link problemKindOf},
 * detail its message or the kind's title); anything else is logged as `unhandled error in <part>`
 * and answered 500 problem+json `internal` (`logger` undefined: not logged).
 */
export function problemOnError(logger: Logger | undefined, part: string): ErrorHandler {
  return (err: Error, _c: Context) => {
    if (err instanceof HTTPException) {
      const kind = problemKindOf(err.status);
      return problem(kind, err.message !== '' ? err.message : PROBLEMS[kind].title);
    }
    logger?.error({ err: { name: err.name, message: err.message } }, `unhandled error in ${part}`);
    return problem('internal', 'The service could not complete the request.');
  };
}
