/**
 * Origin check as hono middleware: the Streamable HTTP transport's defence against DNS rebinding
 * (the MCP transports specification requires servers to validate `Origin` on every connection).
 *
 * A request carrying an `Origin` header other than the server's own origin is refused with 403
 * problem+json (`forbidden`, "Origin not allowed"); a request without `Origin` (any non-browser
 * client) passes. Deliberately does not: answer CORS preflights, allow-list further origins, or
 * normalize the header (the comparison is exact, e.g. `http://127.0.0.1:8787`).
 */
import type { MiddlewareHandler } from 'hono';
import { problem } from './problem.js';

/** Middleware refusing any browser `Origin` other than `origin` (scheme://host[:port], exact). */
export function sameOriginOnly(origin: string): MiddlewareHandler {
  return async (c, next) => {
    const originHeader = c.req.header('origin');
    if (originHeader !== undefined && originHeader !== origin) {
      return problem('forbidden', 'Origin not allowed');
    }
    await next();
  };
}
