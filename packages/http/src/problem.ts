/**
 * RFC 9457 `application/problem+json` responses, shared by the reference Access Request Service
 * (`packages/approvals/src/`) and the MCP front's HTTP-level refusals (the Origin check, the backend
 * callback receiver in `src/backends/arap-callbacks.ts`).
 *
 * Every error those routes return goes through here, so clients (the ARAP HTTP adapter, a backend
 * posting callbacks) see one shape: `{type, title, status, detail}`. Deliberately does not carry
 * stack traces, request bodies or any caller-supplied value other than what a route puts into
 * `detail` (routes put only server-authored text there: zod issue paths/messages, never argument
 * values). JSON-RPC errors of the MCP protocol are built in `src/mcp/errors.ts`, not here.
 */

/** Problem kinds these routes emit, with their HTTP status and fixed title. */
export const PROBLEMS = {
  unauthorized: { status: 401, title: 'Unauthorized' },
  'invalid-request': { status: 400, title: 'Invalid request' },
  'idempotency-key-required': { status: 400, title: 'Idempotency-Key header required' },
  'idempotency-conflict': { status: 409, title: 'Idempotency-Key reused with a different body' },
  forbidden: { status: 403, title: 'Forbidden' },
  'not-found': { status: 404, title: 'Not found' },
  'not-pending': { status: 409, title: 'Request is not pending' },
  unfollowed: { status: 409, title: 'Nobody follows this request' },
  'break-glass-reason-required': { status: 400, title: 'Break-glass needs a reason' },
  'not-break-glass': { status: 403, title: 'Not in the break-glass role' },
  'break-glass-limit': { status: 429, title: 'Break-glass limit reached' },
  'not-narrowable': { status: 409, title: 'Request cannot be narrowed' },
  'invalid-narrowing': { status: 400, title: 'Not a narrowing this request allows' },
  'no-grant-right': { status: 403, title: 'May not create grants' },
  'grant-too-broad': { status: 400, title: 'Grant beyond the rules' },
  'already-revoked': { status: 409, title: 'Grant already revoked' },
  'payload-too-large': { status: 413, title: 'Payload too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'too-many-attempts': { status: 429, title: 'Too many failed sign-ins' },
  'not-recorded-yet': { status: 503, title: 'Request not recorded yet' },
  internal: { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

/** One of the problem kinds in {@link PROBLEMS}. */
export type ProblemKind = keyof typeof PROBLEMS;

/** RFC 9457 problem body. `type` is `urn:countersign:problem:<kind>`. */
export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
}

/** Media type of every error response (RFC 9457 §3). */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Build a problem+json `Response` for `kind` (status and title from {@link PROBLEMS}).
 * `detail` must be server-authored text; `headers` adds e.g. `WWW-Authenticate`.
 */
export function problem(kind: ProblemKind, detail: string, headers: Record<string, string> = {}): Response {
  const { status, title } = PROBLEMS[kind];
  const body: ProblemBody = { type: `urn:countersign:problem:${kind}`, title, status, detail };
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Cache-Control': 'no-store', ...headers },
  });
}

/**
 * The problem kind for an HTTP status set elsewhere (a hono `HTTPException`, e.g. the `csrf()`
 * middleware's 403): the kind with that status, else `invalid-request` for other 4xx and
 * `internal` for 5xx.
 */
export function problemKindOf(status: number): ProblemKind {
  const byStatus: Record<number, ProblemKind> = {
    400: 'invalid-request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not-found',
    413: 'payload-too-large',
    415: 'unsupported-media-type',
    429: 'too-many-attempts',
  };
  return byStatus[status] ?? (status >= 500 ? 'internal' : 'invalid-request');
}
