/**
 * Bounded, fail-fast calls from the MCP front to Temporal.
 *
 * Every Temporal operation the front makes for a client request runs through a {@link TemporalGuard}:
 * - it gets a deadline (`callTimeoutMs`, or the caller's own), so no MCP method waits unbounded on a
 *   stopped server or on a workflow no worker is running;
 * - a failure that means "Temporal did not answer" (gRPC `UNAVAILABLE`, `DEADLINE_EXCEEDED`, the
 *   update RPC timing out) becomes a {@link TemporalUnavailableError} carrying a retry hint, which the
 *   front answers as HTTP 503 with `Retry-After` and a retryable JSON-RPC error;
 * - `failureThreshold` consecutive such failures open a circuit for `openMs`: until then every
 *   guarded call fails at once with the same error, instead of each request paying the timeout. The
 *   first call after `openMs` is let through (half-open) and closes the circuit if it succeeds.
 *   The SDK retries `UNAVAILABLE` internally, so a stopped server usually shows as a deadline: a
 *   missed deadline counts unless a probe of the server itself (`GetSystemInfo`) answers — then the
 *   wait was for a busy worker, not for Temporal, and the circuit stays closed (docs/LOAD.md: under
 *   load, slow queries opened it and every task method failed for 10 s).
 *
 * Deliberately does not: retry (the client does, after `Retry-After`), or guard the worker's own
 * connection (the worker reconnects by itself).
 *
 * Why no resilience library: the deadline is the Temporal client's own `withDeadline`, a gRPC
 * deadline the server sees too, which a library's timer (cockatiel's `timeout`) cannot set. For the
 * breaker, cockatiel's `circuitBreaker` with a `ConsecutiveBreaker` was considered: whether a miss
 * counts is decided only after an asynchronous probe of the server, some calls must fail fast
 * without ever counting (`tripsCircuit: false`), and the breaker reads `Date.now` where this one
 * takes the guard's clock (its tests move it; the gRPC deadlines beside it need the real one).
 * Wrapping those rules around it would take more code than the counter and the timestamp below;
 * and its current major (4) needs Node 22, above this package's floor.
 */
import { isGrpcDeadlineError, isGrpcServiceError, WorkflowUpdateRPCTimeoutOrCancelledError, type Client } from '@temporalio/client';

/** gRPC status code UNAVAILABLE (the server could not be reached). */
const GRPC_UNAVAILABLE = 14;
/** gRPC status code CANCELLED (the call was cut off on the client side). */
const GRPC_CANCELLED = 1;
/** gRPC status code RESOURCE_EXHAUSTED (a server limit: rate limits, a full query buffer). */
const GRPC_RESOURCE_EXHAUSTED = 8;

/**
 * Temporal (or a worker behind it) did not answer in time. Local error, never serialized as is: the
 * MCP front maps it to a retryable JSON-RPC error and HTTP 503 with `Retry-After: retryAfterSeconds`.
 * `reason`: `unreachable` (the server refused or dropped the connection), `no-answer` (the deadline
 * passed: no worker, or overload), `overloaded` (the server answered RESOURCE_EXHAUSTED),
 * `circuit-open` (recent calls found the server unreachable). `detail`: `workflow-task-failing` when
 * the server answered that the run's workflow task is being retried (a `no-answer` that persists for
 * one run while others answer is a worker holding that run: docs/OPERATIONS.md §A workflow task
 * nobody answers).
 */
export class TemporalUnavailableError extends Error {
  constructor(
    readonly reason: 'unreachable' | 'no-answer' | 'overloaded' | 'circuit-open',
    readonly retryAfterSeconds: number,
    readonly detail?: 'workflow-task-failing',
  ) {
    super(`Temporal unavailable (${reason})`);
    this.name = 'TemporalUnavailableError';
  }
}

/** True when `err` says the Temporal server could not be reached (gRPC UNAVAILABLE, possibly wrapped). */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcServiceError(e) && e.code === GRPC_UNAVAILABLE) return true;
    if ((e as { code?: unknown }).code === GRPC_UNAVAILABLE && e instanceof Error) return true;
  }
  return false;
}

/**
 * True when `err` is a deadline that passed before Temporal (or a worker) answered: gRPC
 * DEADLINE_EXCEEDED, the update RPC timing out, or gRPC CANCELLED, which is how a call cut off by
 * the deadline of `withDeadline` sometimes ends (nothing else in the front cancels a call).
 */
export function isTemporalNoAnswer(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (isGrpcDeadlineError(e) || e instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return true;
    if (e instanceof Error && (e as { code?: unknown }).code === GRPC_CANCELLED) return true;
  }
  return false;
}

/**
 * True when Temporal answered that it is over a limit (gRPC RESOURCE_EXHAUSTED, possibly wrapped:
 * a namespace or per-host rate limit, a full buffer of queries for one run). It answered, so it
 * is no reason to open the circuit, but the same call later may well succeed: retryable.
 */
export function isTemporalOverloaded(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((isGrpcServiceError(e) || e instanceof Error) && (e as { code?: unknown }).code === GRPC_RESOURCE_EXHAUSTED) return true;
  }
  return false;
}

/** gRPC status code FAILED_PRECONDITION. */
const GRPC_FAILED_PRECONDITION = 9;

/**
 * True when Temporal refused a query because the run's workflow task is being retried
 * (FAILED_PRECONDITION, "failing workflow task"): the run is open and a worker has yet to answer
 * its current workflow task, so the same query later may well succeed. Other FAILED_PRECONDITION
 * answers are not this.
 */
export function isWorkflowTaskFailing(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof Error && (e as { code?: unknown }).code === GRPC_FAILED_PRECONDITION && /workflow task/i.test(e.message)) return true;
  }
  return false;
}

/** Options of {@link createTemporalGuard}. Times in ms. */
export interface TemporalGuardOptions {
  client: Client;
  /** Deadline of one guarded call unless the caller gives its own; default 5,000. */
  callTimeoutMs?: number;
  /** Consecutive calls Temporal did not answer that open the circuit; default 3. */
  failureThreshold?: number;
  /** How long the circuit stays open; also the `Retry-After` given while it is; default 10,000. */
  openMs?: number;
  /** Clock, ms since the epoch (tests move it); default `Date.now`. */
  now?: () => number;
  /**
   * Deadline of the probe that tells a busy worker from an absent server, ms; default 1,000. When a
   * call misses its deadline without the server refusing the connection, the guard asks the server
   * itself (`GetSystemInfo`, answered without any worker) before counting the miss: a server that
   * answers means the wait was for a worker (a query or update of a busy worker), which is no
   * reason to fail every other call fast (docs/DESIGN.md §6).
   */
  probeTimeoutMs?: number;
}

/** Runs Temporal calls with a deadline and a circuit breaker (module header). */
export interface TemporalGuard {
  /**
   * Run `fn` under a deadline (`deadlineMs` from now, default `callTimeoutMs`). Resolves with its
   * result; throws {@link TemporalUnavailableError} when Temporal did not answer or the circuit is
   * open; rethrows every other error unchanged.
   *
   * `options.tripsCircuit` (default true): whether a missed deadline counts toward opening the
   * circuit. False for a wait whose length is set by more than Temporal — the creation wait, which
   * lasts until a worker has submitted the request to the approval backend (`src/mcp/task-service.ts`):
   * a slow backend or a busy worker must not make every other call fail fast (docs/DESIGN.md §3.1).
   * An unreachable server always counts.
   */
  run<T>(fn: () => Promise<T>, deadlineMs?: number, options?: { tripsCircuit?: boolean }): Promise<T>;
  /** Whether the circuit is open now (for health reporting). */
  isOpen(): boolean;
}

/** Build a guard over `client` (module header). */
export function createTemporalGuard(opts: TemporalGuardOptions): TemporalGuard {
  const callTimeoutMs = opts.callTimeoutMs ?? 5_000;
  const failureThreshold = opts.failureThreshold ?? 3;
  const openMs = opts.openMs ?? 10_000;
  const now = opts.now ?? Date.now;
  const probeTimeoutMs = opts.probeTimeoutMs ?? 1_000;
  let failures = 0;
  let openUntil = 0;
  const retryAfter = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
  // one probe at a time; concurrent misses share its answer
  let probe: Promise<boolean> | undefined;
  const serverAnswers = (): Promise<boolean> =>
    (probe ??= opts.client
      .withDeadline(Date.now() + probeTimeoutMs, () => opts.client.connection.workflowService.getSystemInfo({}))
      .then(
        () => true,
        () => false,
      )
      .finally(() => {
        probe = undefined;
      }));

  return {
    async run(fn, deadlineMs = callTimeoutMs, options = {}) {
      const t = now();
      if (t < openUntil) throw new TemporalUnavailableError('circuit-open', retryAfter(openUntil - t));
      try {
        const out = await opts.client.withDeadline(t + deadlineMs, fn);
        failures = 0;
        return out;
      } catch (err) {
        const unreachable = isTemporalUnreachable(err);
        if (!unreachable && isTemporalOverloaded(err)) throw new TemporalUnavailableError('overloaded', 1);
        // the server answered; the run's worker has not yet: retryable, and no reason to open the circuit
        if (!unreachable && isWorkflowTaskFailing(err))
          throw new TemporalUnavailableError('no-answer', retryAfter(callTimeoutMs), 'workflow-task-failing');
        if (!unreachable && !isTemporalNoAnswer(err)) throw err;
        const counts = unreachable || (options.tripsCircuit !== false && !(await serverAnswers()));
        if (counts && ++failures >= failureThreshold) {
          openUntil = now() + openMs;
          failures = 0;
        }
        throw new TemporalUnavailableError(unreachable ? 'unreachable' : 'no-answer', retryAfter(unreachable ? openMs : callTimeoutMs));
      }
    },
    isOpen() {
      return now() < openUntil;
    },
  };
}
