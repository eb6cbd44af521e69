// Scope: the worker's workflow cache during a load run (docs/LOAD.md §Worker cache): the Temporal
// SDK runtime's Prometheus counters, scraped from the stack's runtime exporter
// (`COUNTERSIGN_TEMPORAL_METRICS_ADDRESS`) at the start and the end of the traffic, and the MCP
// front's task reads by source (`countersign_task_reads_total`, absent before it existed).

/** Counters of one scrape (absent ones are null). */
export interface WorkerCacheSample {
  /** `temporal_sticky_cache_total_forced_eviction`: runs evicted from a full cache to make room. */
  forcedEvictions: number | null;
  /** `temporal_sticky_cache_size` at that moment. */
  cacheSize: number | null;
  /** `temporal_workflow_task_execution_failed` (workflow tasks the worker failed). */
  workflowTaskFailures: number | null;
  /** `countersign_task_reads_total` by `source`. */
  readsBySource: Record<string, number>;
}

/** Sum of every series of `name` in a Prometheus text body (null when there is none). */
export function counterSum(text: string, name: string): number | null {
  let sum: number | null = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (Number.isFinite(v)) sum = (sum ?? 0) + v;
  }
  return sum;
}

/**
 * Scrape the SDK runtime exporters (one per worker process) and the stack's `/metrics` (one per MCP
 * front); each counter is summed over them (cache size: the workers' caches together). Unreachable
 * ones give nulls when none answered.
 */
export async function sampleWorkerCache(runtimeMetricsUrls: string[], appMetricsUrls: string[]): Promise<WorkerCacheSample> {
  const text = async (url: string) => {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      return res.ok ? await res.text() : '';
    } catch {
      return '';
    }
  };
  const [runtimes, apps] = await Promise.all([Promise.all(runtimeMetricsUrls.map(text)), Promise.all(appMetricsUrls.map(text))]);
  const readsBySource: Record<string, number> = {};
  for (const app of apps)
    for (const m of app.matchAll(/^countersign_task_reads_total\{[^}]*source="([a-z]+)"[^}]*\} (\S+)$/gm))
      readsBySource[m[1]!] = (readsBySource[m[1]!] ?? 0) + Number(m[2]);
  const answering = runtimes.filter(Boolean);
  const sum = (name: string, absentIsZero: boolean): number | null => {
    let total: number | null = null;
    for (const runtime of answering) {
      // the runtime registers a counter at its first increment: absent from an answering exporter is 0
      const v = counterSum(runtime, name) ?? (absentIsZero ? 0 : null);
      if (v !== null) total = (total ?? 0) + v;
    }
    return total;
  };
  return {
    forcedEvictions: sum('temporal_sticky_cache_total_forced_eviction', true),
    cacheSize: sum('temporal_sticky_cache_size', false),
    workflowTaskFailures: sum('temporal_workflow_task_execution_failed', true),
    readsBySource,
  };
}
