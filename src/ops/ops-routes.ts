/**
 * Health and metrics endpoints in front of a role's HTTP handler (docs/OPERATIONS.md §Health,
 * §Metrics), answered before the role's own routes see the request:
 *
 * - `GET /livez`: 200 `ok` while the process serves HTTP (restart it when this fails);
 * - `GET /readyz`: 200 `{"status":"ready","checks":{name:"ok"}}` when every readiness check passes
 *   within 2 s, else 503 with each failing check's message (take it out of rotation);
 * - `GET /metrics`: Prometheus text: the role's application metrics (`src/ops/metrics.ts`) and,
 *   when configured, the Temporal SDK runtime's own exporter appended (`temporalMetricsUrl`);
 * - and, for the MCP front, a count of refused backend callbacks by the status it answered.
 *
 * With `metricsToken` (`COUNTERSIGN_METRICS_TOKEN`), `/metrics` answers only a request carrying
 * `Authorization: Bearer <token>` (compared in constant time): else 401, an RFC 9457 problem with
 * `WWW-Authenticate: Bearer`. Deliberately does not: authenticate `/livez` and `/readyz` (they say
 * nothing but up and check names; bind the ports to an internal network), or expose anything beyond
 * closed-set labels and check names.
 */
import type { FetchFn } from '@countersign/http/server-lifecycle';
import { bearerMatches } from '@countersign/http/bearer';
import type { AppMetrics } from './metrics.js';

/** One readiness condition: resolves when ready, rejects (with a short operator-facing message) when not. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

/** Options of {@link withOpsRoutes}. */
export interface OpsRoutesOptions {
  metrics: AppMetrics;
  checks: ReadinessCheck[];
  /** The Temporal runtime's Prometheus exporter (`http://host:port/metrics`), appended to `/metrics`. */
  temporalMetricsUrl?: string;
  /** Per check deadline, ms; default 2000. */
  checkTimeoutMs?: number;
  /** Bearer token `/metrics` requires; unset: `/metrics` is open. */
  metricsToken?: string;
}

const CALLBACK_REFUSALS: Record<number, string> = { 400: 'malformed', 401: 'unauthorized', 409: 'not-pending', 413: 'too-large' };

/** `fetch` with the ops endpoints in front of it. Never throws for a request `fetch` would accept. */
export function withOpsRoutes(fetch: FetchFn, opts: OpsRoutesOptions): FetchFn {
  const timeoutMs = opts.checkTimeoutMs ?? 2000;
  return async (req, env) => {
    const url = new URL(req.url);
    if (req.method === 'GET') {
      if (url.pathname === '/livez') return new Response('ok\n', { headers: { 'content-type': 'text/plain' } });
      if (url.pathname === '/readyz') return readiness(opts.checks, timeoutMs);
      if (url.pathname === '/metrics')
        return opts.metricsToken === undefined || bearerMatches(req.headers.get('authorization'), opts.metricsToken)
          ? metricsResponse(opts)
          : metricsUnauthorized();
    }
    const res = await fetch(req, env);
    if (req.method === 'POST' && url.pathname.startsWith('/callbacks/')) {
      const reason = CALLBACK_REFUSALS[res.status];
      if (reason) opts.metrics.callbackRefusals.inc({ reason });
    }
    return res;
  };
}

function metricsUnauthorized(): Response {
  return Response.json(
    {
      type: 'about:blank',
      title: 'Unauthorized',
      status: 401,
      detail: '/metrics needs Authorization: Bearer <COUNTERSIGN_METRICS_TOKEN> (docs/OPERATIONS.md#metrics).',
    },
    { status: 401, headers: { 'content-type': 'application/problem+json', 'www-authenticate': 'Bearer realm="metrics"' } },
  );
}

async function readiness(checks: ReadinessCheck[], timeoutMs: number): Promise<Response> {
  const results = await Promise.all(
    checks.map(async (c) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          c.check(),
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs))),
        ]);
        return [c.name, 'ok'] as const;
      } catch (err) {
        return [c.name, (err as Error).message.slice(0, 200)] as const;
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  const ready = results.every(([, r]) => r === 'ok');
  return Response.json({ status: ready ? 'ready' : 'not-ready', checks: Object.fromEntries(results) }, { status: ready ? 200 : 503 });
}

async function metricsResponse(opts: OpsRoutesOptions): Promise<Response> {
  let text = await opts.metrics.registry.metrics();
  if (opts.temporalMetricsUrl) {
    try {
      const core = await fetch(opts.temporalMetricsUrl, { signal: AbortSignal.timeout(2000) });
      if (core.ok) text += `\n${await core.text()}`;
    } catch {
      // the runtime exporter did not answer: serve the application metrics alone
    }
  }
  return new Response(text, { headers: { 'content-type': opts.metrics.registry.contentType } });
}
