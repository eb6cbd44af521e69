// Scope: what the read scenarios read from a bench MCP server process (bench/roles/mcp-server.ts):
// its `countersign_task_reads_total` counters by source (from `/metrics`), its task-feed watches
// (`/__bench/stats`), and counter differences.

/** `countersign_task_reads_total` by `source` (feed, record, query, closed) of the instance at `origin`. */
export async function taskReads(origin: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^countersign_task_reads_total\{source="([^"]+)"\} (\S+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/** The task feed of the instance at `origin`: runs watched now, and history long-polls made so far. */
export async function feedStats(origin: string): Promise<{ watches: number; longPolls: number }> {
  const s = (await (await fetch(`${origin}/__bench/stats`)).json()) as { feed: { watches: number; longPolls: number } };
  return s.feed;
}

/** `after - before`, key by key (keys of either; zeros left out). */
export function counterDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const d = (after[k] ?? 0) - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}
