/**
 * Follower reports: this MCP instance tells the approval service that a client still follows an
 * approval task — it read the task (`tasks/get`, the `approval_status` companion tool) or holds a
 * `subscriptions/listen` stream naming it — so the approver sees who is waiting and a policy can
 * ask for a confirmation before approving a request nobody follows (docs/DESIGN.md §Who is waiting,
 * docs/APPROVERS.md §Who is waiting). Each report is one `POST /access/v1/tasks/:task_ref/followers`
 * (`FollowerReportBodySchema` of `@countersign/arap`), sent in the background after the read was
 * answered: it never delays or fails a read, and it costs no Temporal action (no query, update or
 * signal: the read itself came from the task record or the feed, docs/PERFORMANCE-ACTIONS.md).
 *
 * Bounds, per instance:
 * - at most one report per task per `intervalMs` (default 60 s); the one exception is the first
 *   report after a subscription starts on a task whose last report said `subscribed: false`, so
 *   the approver sees the subscription at once (at most one extra per hold);
 * - a held subscription is reported again every `intervalMs` while it lasts;
 * - at most `maxInFlight` (default 4) reports at once: a report that finds them all busy is
 *   dropped, and the task's next read reports instead;
 * - a task the service answers 404 for (no request of it) is never reported again (the most
 *   recent `maxTracked` such tasks are remembered, default 10,000);
 * - only a task waiting for an approver's decision (phase `awaiting-approval`, so its request
 *   exists at the service) is reported by a read; a subscription is reported while it is held.
 *
 * Deliberately does not: retry a failed report (the next read or interval is the retry), report
 * anything of the caller but the client's self-reported `clientInfo`, or log task ids with
 * client names together with principals.
 */
import type { Logger } from 'pino';
import type { FollowerReportBody } from '@countersign/arap';
import type { ClientIdentity } from '../backends/approval-backend.js';
import type { TaskSnapshot } from '../../workflows/types.js';

/** What one report send came to: `ok` (2xx), `gone` (404: no request of this task), `failed` (anything else). */
export type ReportOutcome = 'ok' | 'gone' | 'failed';

/** Sends one report; resolves (never rejects) with its outcome. */
export type ReportSender = (taskRef: string, body: FollowerReportBody) => Promise<ReportOutcome>;

/** Options of {@link createFollowerReporter}. Times in ms. */
export interface FollowerReporterOptions {
  send: ReportSender;
  /** Least time between two reports of one task, and the period of a held subscription's reports; default 60,000. */
  intervalMs?: number;
  /** Reports in flight at once; default 4. */
  maxInFlight?: number;
  /** Tasks remembered as gone (404); default 10,000. */
  maxTracked?: number;
  /** Clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
  logger?: Logger;
}

/** The instance's follower reports (module header). */
export interface FollowerReporter {
  /** A client read task `taskId` and was answered `snapshot`: report it unless reported within the interval. */
  read(taskId: string, snapshot: TaskSnapshot, client: ClientIdentity | undefined): void;
  /**
   * A subscription to the open task `taskId` is held: reported now and every interval until the
   * returned release is called (idempotent). `awaiting`: whether the task waits for a decision now;
   * false defers the first report to the next interval.
   */
  hold(taskId: string, client: ClientIdentity | undefined, awaiting: boolean): () => void;
  /** Stop the interval timer; later calls report nothing. */
  close(): void;
  /** Reports sent, dropped (all slots busy) and in flight, for tests and metrics. */
  stats(): { sent: number; dropped: number; inFlight: number };
}

/** Build the reporter (module header). */
export function createFollowerReporter(opts: FollowerReporterOptions): FollowerReporter {
  const intervalMs = opts.intervalMs ?? 60_000;
  const maxInFlight = opts.maxInFlight ?? 4;
  const maxTracked = opts.maxTracked ?? 10_000;
  const now = opts.now ?? Date.now;
  /** Last report per task: when, and whether it said subscribed. Pruned each interval. */
  const last = new Map<string, { atMs: number; subscribed: boolean }>();
  /** Held subscriptions per task: how many, and the client of the latest. */
  const held = new Map<string, { count: number; client: ClientIdentity | undefined }>();
  /** Tasks the service does not know (404), oldest first. */
  const gone = new Set<string>();
  let inFlight = 0;
  let sent = 0;
  let dropped = 0;
  let closed = false;

  function report(taskId: string, subscribed: boolean, client: ClientIdentity | undefined): void {
    if (closed || gone.has(taskId)) return;
    const prev = last.get(taskId);
    const at = now();
    const flip = subscribed && prev !== undefined && !prev.subscribed;
    if (prev !== undefined && at - prev.atMs < intervalMs && !flip) return;
    if (inFlight >= maxInFlight) {
      dropped += 1;
      return;
    }
    last.set(taskId, { atMs: at, subscribed });
    inFlight += 1;
    sent += 1;
    const body: FollowerReportBody = { subscribed, ...(client ? { client: { ...client } } : {}) };
    void opts
      .send(taskId, body)
      .then((outcome) => {
        if (outcome === 'gone') forget(taskId);
        else if (outcome === 'failed') opts.logger?.debug('follower report not accepted; the next read reports again');
      })
      .catch(() => undefined)
      .finally(() => {
        inFlight -= 1;
      });
  }

  function forget(taskId: string): void {
    gone.add(taskId);
    held.delete(taskId);
    last.delete(taskId);
    while (gone.size > maxTracked) gone.delete(gone.values().next().value as string);
  }

  const timer = setInterval(() => {
    const at = now();
    for (const [taskId, r] of last) if (at - r.atMs >= intervalMs && !held.has(taskId)) last.delete(taskId);
    for (const [taskId, h] of held) report(taskId, true, h.client);
  }, intervalMs);
  timer.unref?.();

  return {
    read(taskId, snapshot, client) {
      if (snapshot.phase !== 'awaiting-approval') return;
      // a held subscription's reports already say more than a read
      report(taskId, held.has(taskId), client ?? held.get(taskId)?.client);
    },
    hold(taskId, client, awaiting) {
      if (closed || gone.has(taskId)) return () => undefined;
      const h = held.get(taskId);
      held.set(taskId, { count: (h?.count ?? 0) + 1, client: client ?? h?.client });
      if (awaiting) report(taskId, true, client);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const cur = held.get(taskId);
        if (cur === undefined) return;
        if (cur.count <= 1) held.delete(taskId);
        else held.set(taskId, { ...cur, count: cur.count - 1 });
      };
    },
    close() {
      closed = true;
      clearInterval(timer);
      held.clear();
    },
    stats: () => ({ sent, dropped, inFlight }),
  };
}

/**
 * The sender of reports to an ARAP approval service at `baseUrl` (the reference service, or any
 * that implements the followers route), with the MCP server's client bearer token: 2xx `ok`, 404
 * `gone`, anything else (including a network error or `timeoutMs`, default 5,000, passing)
 * `failed`. The response body is discarded unread.
 */
export function arapReportSender(opts: {
  /** The service's base URL (no trailing slash needed), or a function giving it (read at the first report). */
  baseUrl: string | (() => string);
  /** The bearer secret, or a function giving it (read at the first report). */
  clientToken: string | (() => string);
  fetch?: typeof fetch;
  timeoutMs?: number;
}): ReportSender {
  const doFetch = opts.fetch ?? globalThis.fetch;
  let known: { base: string; token: string } | undefined;
  const target = () =>
    (known ??= {
      base: (typeof opts.baseUrl === 'string' ? opts.baseUrl : opts.baseUrl()).replace(/\/+$/, ''),
      token: typeof opts.clientToken === 'string' ? opts.clientToken : opts.clientToken(),
    });
  return async (taskRef, body) => {
    try {
      const { base, token } = target();
      const res = await doFetch(`${base}/access/v1/tasks/${encodeURIComponent(taskRef)}/followers`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
        redirect: 'error',
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.ok) return 'ok';
      return res.status === 404 ? 'gone' : 'failed';
    } catch {
      return 'failed';
    }
  };
}
