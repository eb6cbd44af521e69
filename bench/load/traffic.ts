// Scope: the load run's traffic primitives: an open-model schedule (requests leave on time, never
// waiting for earlier answers), the smooth weighted round-robin that turns a mix into an exact
// sequence of kinds, the per-method tally (latencies, errors by kind), and how an error is named.
import { McpRpcError } from '@countersign/client';
import { percentile, round } from '../lib/stats.js';

/** Per-method figures of a run. Rates per second, latencies in ms. */
export interface MethodFigures {
  sent: number;
  ok: number;
  /** Answered (ok or error) per second of the traffic phase. */
  achievedPerSec: number;
  errors: Record<string, number>;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** Latencies and outcomes of one method. */
export class Tally {
  private readonly lat: number[] = [];
  private readonly errs: Record<string, number> = {};
  sent = 0;
  ok = 0;

  /** Record an answer after `ms`; `error` names its kind when it was not a success. */
  record(ms: number, error?: string): void {
    this.lat.push(ms);
    if (error === undefined) this.ok++;
    else this.errs[error] = (this.errs[error] ?? 0) + 1;
  }

  /** Figures over a phase of `seconds`. */
  figures(seconds: number): MethodFigures {
    const has = this.lat.length > 0;
    return {
      sent: this.sent,
      ok: this.ok,
      achievedPerSec: round(this.lat.length / seconds, 2),
      errors: { ...this.errs },
      p50Ms: has ? round(percentile(this.lat, 50), 1) : null,
      p99Ms: has ? round(percentile(this.lat, 99), 1) : null,
      maxMs: has ? round(Math.max(...this.lat), 1) : null,
    };
  }
}

/**
 * The kind of a failed request: `-32603/503` for a JSON-RPC error with its HTTP status, then what
 * the error data says — `creation pending, taskStarted=true` (docs/DESIGN.md §3.1), `unavailable`
 * (Temporal did not answer or the circuit is open, `src/temporal/availability.ts`); `http-401`,
 * `network`, …
 */
export function errorKind(err: unknown): string {
  if (err instanceof McpRpcError) {
    if (err.code === 0) return `http-${err.httpStatus ?? '?'}`;
    const base = `${err.code}/${err.httpStatus ?? '?'}`;
    const data = err.data as { taskStarted?: unknown } | undefined;
    if (data && 'taskStarted' in data) return `${base} creation pending, taskStarted=${String(data.taskStarted)}`;
    if (err.message.startsWith('Service unavailable')) return `${base} unavailable`;
    return base;
  }
  if (err instanceof TypeError) return 'network';
  return 'other';
}

/** Parse `get=60,allowed=30,gated=10` into weights; throws on unknown names or non-positive weights. */
export function parseMix<K extends string>(text: string, kinds: readonly K[]): Record<K, number> {
  const out = Object.fromEntries(kinds.map((k) => [k, 0])) as Record<K, number>;
  for (const part of text.split(',')) {
    const [name, w] = part.split('=');
    const weight = Number(w);
    if (!kinds.includes(name as K) || !Number.isFinite(weight) || weight < 0)
      throw new Error(`--mix: bad entry "${part}" (kinds: ${kinds.join(', ')})`);
    out[name as K] = weight;
  }
  if (Object.values<number>(out).every((w) => w === 0)) throw new Error('--mix: every weight is 0');
  return out;
}

/** Smooth weighted round-robin: the kinds in exact proportion, evenly spread. */
export function weightedSequence<K extends string>(weights: Record<K, number>): () => K {
  const kinds = (Object.keys(weights) as K[]).filter((k) => weights[k] > 0);
  const total = kinds.reduce((s, k) => s + weights[k], 0);
  const current = new Map<K, number>(kinds.map((k) => [k, 0]));
  return () => {
    let best = kinds[0]!;
    for (const k of kinds) {
      current.set(k, current.get(k)! + weights[k]);
      if (current.get(k)! > current.get(best)!) best = k;
    }
    current.set(best, current.get(best)! - total);
    return best;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * Open model: call `fire(i)` at `perSec` for `durationMs`, on schedule (`fire` is not awaited).
 * Resolves when the last one has been sent, with the number sent.
 */
export async function openSchedule(perSec: number, durationMs: number, fire: (i: number) => void): Promise<number> {
  if (perSec <= 0) return 0;
  const t0 = performance.now();
  const gap = 1000 / perSec;
  let i = 0;
  for (; i * gap < durationMs; i++) {
    await sleep(t0 + i * gap - performance.now());
    fire(i);
  }
  return i;
}
