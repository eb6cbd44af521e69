// Scope: the statistics every scenario uses (median, nearest-rank percentile, rounding) and the
// closed-loop driver (N operations in flight until a total is done).

export interface LatencyFigures {
  p50Ms: number;
  p99Ms: number;
}

export const median = (xs: number[]): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Nearest-rank percentile (p in 0..100). */
export const percentile = (xs: number[], p: number): number => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

export const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;

export const latencies = (xs: number[]): LatencyFigures => ({ p50Ms: round(percentile(xs, 50)), p99Ms: round(percentile(xs, 99)) });

/** Median of per-run figures. */
export const medianFigures = (runs: LatencyFigures[]): LatencyFigures => ({
  p50Ms: round(median(runs.map((x) => x.p50Ms))),
  p99Ms: round(median(runs.map((x) => x.p99Ms))),
});

/** Run `total` operations with `concurrency` in flight; ops/s and per-op latencies (ms). */
export async function closedLoop(
  total: number,
  concurrency: number,
  op: (i: number) => Promise<void>,
): Promise<{ perSec: number; lat: number[] }> {
  let next = 0;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const i = next++;
        const s = performance.now();
        await op(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { perSec: total / ((performance.now() - t0) / 1000), lat };
}

/** Order of the two sides in run `r`: alternate so neither always goes first. */
export const interleave = <A, B>(r: number, a: A, b: B): [A | B, A | B] => (r % 2 === 0 ? [a, b] : [b, a]);
