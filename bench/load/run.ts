// Scope: `npm run load` (docs/TESTING.md §Load, docs/LOAD.md). Starts the stack as `npm start`
// runs it (bench/load/stack-process.ts), builds a backlog of pending approval tasks over many
// principals, then drives mixed MCP traffic at a fixed arrival rate (open model: each request
// leaves on schedule, whatever earlier ones are doing) over the real wire with real bearer tokens —
// `tasks/get` on known tasks, allowed `wire_transfer` calls, new gated calls (requestable
// denials → tasks) — while approving pending requests through the real approval API and following
// each approved task to its end. Afterwards it checks the tool's ledger: every approved task
// executed exactly once, nothing unapproved executed, and no gated call that got an error left a
// request behind. Reports per method (achieved rate, errors by kind, p50/p99), approval → finished,
// and each process's memory at start, after warm-up and at the end; writes docs/LOAD.md.
// `--target cluster` runs it against the production-shaped cluster instead (PostgreSQL, the
// Temporal server built from source, each Countersign role its own process, two workers and two MCP
// fronts: bench/load/cluster-process.ts); the traffic of each principal goes to one front, the
// principals round-robin over both. A Ctrl-C or SIGTERM stops every process the run started.
// Exit code 1 when the exactly-once check fails or the stack breaks; errors are reported, not fatal.
import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpRpcError, WireClient } from '@countersign/client';
import { PROJECT_ROOT } from '../../src/temporal/binaries.js';
import { TASKS_CAPS } from '../lib/context.js';
import { closedLoop, percentile, round } from '../lib/stats.js';
import { machineInfo, memOf, type MachineInfo } from '../lib/procs.js';
import { checkExactlyOnce, memosWithApprovalRequest, readToolRecords, type ExactlyOnceResult } from './exactly-once.js';
import { startStackProcess, type StackMember, type StackProcess } from './stack-process.js';
import { startClusterProcesses } from './cluster-process.js';
import { errorKind, openSchedule, parseMix, Tally, weightedSequence, type MethodFigures } from './traffic.js';
import { loadMarkdown } from './report.js';
import {
  approvalTimelines,
  creationStages,
  stuckRuns,
  type ApprovalTimeline,
  type CreationStages,
  type StuckRun,
} from './creation-stages.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { freePort } from '../../src/temporal/dev-server.js';
import { sampleWorkerCache, type WorkerCacheSample } from './worker-cache.js';

const KINDS = ['get', 'allowed', 'gated'] as const;
type Kind = (typeof KINDS)[number];

/** Options of a load run. Durations in ms, rates per second. */
export interface LoadOptions {
  /** `embedded`: the stack as `npm start` runs it (default); `cluster`: bench/load/cluster-process.ts. */
  target?: 'embedded' | 'cluster';
  pending: number;
  rate: number;
  durationMs: number;
  mix: Record<Kind, number>;
  approvalsPerSec: number;
  warmupMs: number;
  principals?: number;
  /** Extra environment of the stack process (experiments: `--stack-env KEY=VALUE`). */
  stackEnv: Record<string, string>;
  /** Directory for a V8 CPU profile of the stack process (`--cpu-prof`). */
  cpuProfDir?: string;
  /** Where the report goes; null: nowhere. */
  out: string | null;
  notes: string[];
  /** Keep the stack running this long after the checks, ms (to inspect stuck runs by hand); default 0. */
  holdMs?: number;
  /** The command line, printed at the top of the report. */
  command: string;
  log: (line: string) => void;
}

/** RSS of the stack's processes at one point, MiB, by process name (`LoadResults.processes`; null: not running). */
export interface MemoryPoint {
  label: string;
  atS: number;
  rssMiB: Record<string, number | null>;
}

/** A memory point as runs before `--target` recorded it (two fixed processes). */
export interface LegacyMemoryPoint {
  label: string;
  atS: number;
  mainMiB: number | null;
  temporalMiB: number | null;
}

/** Everything a run measured. */
export interface LoadResults {
  generatedAt: string;
  command: string;
  /** Absent in runs from before `--target`: embedded. */
  target?: 'embedded' | 'cluster';
  /** The processes of the stack (memory columns, in this order); absent before `--target`: main, temporal. */
  processes?: Array<Omit<StackMember, 'pid'> & { pid: number | null }>;
  stackCommand: string;
  machine: MachineInfo;
  settings: {
    pending: number;
    rate: number;
    durationS: number;
    mix: Record<Kind, number>;
    approvalsPerSec: number;
    principals: number;
    warmupS: number;
  };
  backlog: { created: number; seconds: number; perSec: number; errors: Record<string, number> };
  methods: Record<string, MethodFigures>;
  approvals: {
    approved: number;
    finished: number;
    notFinished: number;
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
    dispositions: Record<string, number>;
  };
  /** The (up to 3) slowest approvals past 5 s, with their runs' history after the decision. */
  slowApprovals?: ApprovalTimeline[];
  /** Approved tasks not finished in time: each run's last failed workflow task, if any. */
  stuck?: StuckRun[];
  /** Gated calls answered with an error whose approval request nevertheless exists (the client got no handle). */
  erroredButCreated: { errored: number; created: number };
  maxInFlight: number;
  /** Where creation spent its time, from the histories of up to 100 tasks created during the traffic. */
  creation: CreationStages;
  /** The worker's workflow cache and the front's reads by source, at the start and the end of the traffic (`worker-cache.ts`). */
  workerCache?: { start: WorkerCacheSample; end: WorkerCacheSample; watchdog: string };
  memory: Array<MemoryPoint | LegacyMemoryPoint>;
  exactlyOnce: ExactlyOnceResult;
  notes: string[];
}

const TRANSFER_TO = 'acct-200';
const GATED_AMOUNT = 50_000; // over the 25,000 of policies/wire_transfer.cedar, under the two-approver 100,000
const ALLOWED_AMOUNT = 100;
const FOLLOW_GAP_MS = 500;
const GATED_ATTEMPTS = 4;
const FOLLOW_LIMIT_MS = 120_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Principal {
  sub: string;
  client: WireClient;
}
interface KnownTask {
  taskId: string;
  owner: Principal;
}

/** Run the load scenario (module header). */
export async function runLoad(o: LoadOptions): Promise<LoadResults> {
  const log = o.log;
  const machine = machineInfo();
  const gatedPlanned = Math.ceil(((o.rate * o.durationMs) / 1000) * (o.mix.gated / (o.mix.get + o.mix.allowed + o.mix.gated)));
  // default limits (src/config.ts): 20 new tasks per principal per hour, 50 pending; stay under both
  const principalsN = o.principals ?? Math.max(10, Math.ceil((o.pending + gatedPlanned) / 15));
  const target = o.target ?? 'embedded';
  const nodeFlags = o.cpuProfDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] } : {};
  let starting: Promise<StackProcess>;
  if (target === 'cluster') {
    log('load: starting the cluster (PostgreSQL, Temporal server, approvals, issuer, 2 workers, 2 MCP fronts)');
    starting = startClusterProcesses({ env: o.stackEnv, ...nodeFlags, log });
  } else {
    log(`load: starting the stack (as npm start)`);
    // the SDK runtime's exporter, for the worker cache's counters (unless the run sets its own)
    const runtimeMetrics = o.stackEnv.COUNTERSIGN_TEMPORAL_METRICS_ADDRESS ?? `127.0.0.1:${await freePort()}`;
    starting = startStackProcess({ env: { COUNTERSIGN_TEMPORAL_METRICS_ADDRESS: runtimeMetrics, ...o.stackEnv }, ...nodeFlags, log });
  }
  startingStack = starting;
  const stack: StackProcess = await starting;
  const layout = stack.members();
  for (const m of layout) log(`load: process ${m.name} (pid ${m.pid ?? '?'}): ${m.role}`);
  const t0 = performance.now();
  const memory: MemoryPoint[] = [];
  const sampleMemory = (label: string) => {
    const rssMiB: Record<string, number | null> = {};
    for (const m of stack.members()) rssMiB[m.name] = m.pid === null ? null : (memOf(m.pid)?.rssMiB ?? null);
    memory.push({ label, atS: round((performance.now() - t0) / 1000, 1), rssMiB });
    log(
      `load: memory ${label}: ${Object.entries(rssMiB)
        .map(([k, v]) => `${k} ${v ?? '–'} MiB`)
        .join(', ')}`,
    );
  };
  try {
    sampleMemory('start');
    const principals: Principal[] = [];
    for (let p = 0; p < principalsN; p++) {
      const sub = `load-${p}`;
      principals.push({
        sub,
        client: new WireClient({
          // round-robin over the fronts by principal (one front in the embedded stack)
          url: stack.mcpFronts[p % stack.mcpFronts.length]!,
          token: await stack.issuer.mintToken({ sub, ttlSeconds: 12 * 3600 }),
          capabilities: TASKS_CAPS,
        }),
      });
    }
    const approver = stack.approvers.find((a) => a.groups.includes('treasury'));
    if (!approver) throw new Error('no treasury approver in secrets.json');
    const approverAuth = `Basic ${Buffer.from(`${approver.id}:${approver.secret}`).toString('base64')}`;

    const known: KnownTask[] = [];
    const byMemo = new Map<string, KnownTask>();
    /** Every gated call of the run (backlog included) by memo; `approved` once the decision was accepted. */
    const gated = new Map<string, { approved: boolean; errored: boolean; unfinished?: boolean }>();
    const gatedCall = async (owner: Principal, memo: string): Promise<KnownTask> => {
      gated.set(memo, { approved: false, errored: false });
      const out = await owner.client.request<{ resultType?: string; taskId?: string; isError?: boolean }>('tools/call', {
        name: 'wire_transfer',
        arguments: { to: TRANSFER_TO, amount: GATED_AMOUNT, memo },
      });
      if (out.resultType !== 'task' || !out.taskId) throw new Error(out.isError ? 'not-a-task:isError' : 'not-a-task');
      const t = { taskId: out.taskId, owner };
      known.push(t);
      byMemo.set(memo, t);
      return t;
    };

    // 1. the backlog: closed loop, a retry of a retryable error joins the same task (dedup)
    log(`load: building a backlog of ${o.pending} pending tasks over ${principalsN} principals`);
    const backlogErrors: Record<string, number> = {};
    const b0 = performance.now();
    await closedLoop(o.pending, 8, async (i) => {
      const memo = `backlog-${i}`;
      for (let attempt = 1; ; attempt++) {
        try {
          await gatedCall(principals[i % principalsN]!, memo);
          return;
        } catch (err) {
          const kind = err instanceof Error && err.message.startsWith('not-a-task') ? err.message : errorKind(err);
          backlogErrors[kind] = (backlogErrors[kind] ?? 0) + 1;
          if (attempt >= 5) throw new Error(`backlog task ${memo} not created after 5 attempts (${kind})`, { cause: err });
          await sleep(1000 * attempt);
        }
      }
    });
    const backlogS = (performance.now() - b0) / 1000;
    log(`load: backlog of ${known.length} in ${round(backlogS, 1)} s`);
    sampleMemory('after backlog');

    // 2. mixed traffic, open model, plus approvals
    const tallies: Record<string, Tally> = {
      'tasks/get': new Tally(),
      'tools/call (allowed)': new Tally(),
      'tools/call (gated, each answer)': new Tally(),
      'tools/call (gated) → task handle, retries included': new Tally(),
      'approval decision (approval API)': new Tally(),
      'tasks/get (following approved tasks)': new Tally(),
    };
    const inFlight = new Set<Promise<unknown>>();
    let maxInFlight = 0;
    const track = (p: Promise<unknown>) => {
      inFlight.add(p);
      maxInFlight = Math.max(maxInFlight, inFlight.size);
      void p.finally(() => inFlight.delete(p));
    };
    const timed = async (tally: Tally, fn: () => Promise<unknown>): Promise<boolean> => {
      tally.sent++;
      const s = performance.now();
      try {
        await fn();
        tally.record(performance.now() - s);
        return true;
      } catch (err) {
        tally.record(performance.now() - s, err instanceof Error && err.message.startsWith('not-a-task') ? err.message : errorKind(err));
        return false;
      }
    };
    const createdInTraffic: Array<{ workflowId: string; runId: string; sentAtMs: number }> = [];
    let allowedSeq = 0;
    let gatedSeq = 0;
    const next = weightedSequence(o.mix);
    const fire = () => {
      const kind = next();
      if (kind === 'get') {
        const t = known[Math.floor(Math.random() * known.length)]!;
        track(timed(tallies['tasks/get']!, () => t.owner.client.request('tasks/get', { taskId: t.taskId })));
      } else if (kind === 'allowed') {
        const n = allowedSeq++;
        const p = principals[n % principalsN]!;
        track(
          timed(tallies['tools/call (allowed)']!, async () => {
            const r = await p.client.request<{ isError?: boolean; resultType?: string }>('tools/call', {
              name: 'wire_transfer',
              arguments: { to: TRANSFER_TO, amount: ALLOWED_AMOUNT, memo: `allowed-${n}` },
            });
            if (r.isError || r.resultType === 'task') throw new Error('not-a-task:unexpected-answer');
          }),
        );
      } else {
        const n = gatedSeq++;
        const memo = `gated-${n}`;
        const p = principals[n % principalsN]!;
        const sentAtMs = Date.now();
        // a client that does what a retryable creation error says: repeat the same call after
        // Retry-After (it joins the task, docs/DESIGN.md §3.1), at most GATED_ATTEMPTS times
        track(
          (async () => {
            const s = performance.now();
            let last: unknown;
            for (let attempt = 1; ; attempt++) {
              let retryAfterS: number | undefined;
              const ok = await timed(tallies['tools/call (gated, each answer)']!, async () => {
                try {
                  const t = await gatedCall(p, memo);
                  const ids = parseTaskId(t.taskId);
                  if (ids) createdInTraffic.push({ ...ids, sentAtMs });
                } catch (err) {
                  last = err;
                  const data =
                    err instanceof McpRpcError
                      ? (err.data as { retryJoins?: unknown; retryAfterSeconds?: unknown } | undefined)
                      : undefined;
                  if (data?.retryJoins === true && attempt < GATED_ATTEMPTS)
                    retryAfterS = typeof data.retryAfterSeconds === 'number' ? data.retryAfterSeconds : 1;
                  throw err;
                }
              });
              if (ok || retryAfterS === undefined) {
                tallies['tools/call (gated) → task handle, retries included']!.sent++;
                tallies['tools/call (gated) → task handle, retries included']!.record(
                  performance.now() - s,
                  ok ? undefined : errorKind(last),
                );
                if (!ok) gated.get(memo)!.errored = true;
                return;
              }
              await sleep(retryAfterS * 1000);
            }
          })(),
        );
      }
    };

    // approvals: take the oldest pending requests the approver sees, approve those whose task we know
    const approvalLatencies: number[] = [];
    const dispositions: Record<string, number> = {};
    let notFinished = 0;
    const queue: Array<{ id: string; memo: string }> = [];
    let refill: Promise<void> | undefined;
    const refillQueue = () =>
      (refill ??= (async () => {
        try {
          const res = await fetch(`${stack.urls.approvals}/access/v1/approvals/pending`, { headers: { authorization: approverAuth } });
          const body = (await res.json()) as { items?: Array<{ id: string; arguments?: { memo?: string } }> };
          const seen = new Set(queue.map((q) => q.id));
          for (const it of body.items ?? []) {
            const memo = it.arguments?.memo;
            if (memo && byMemo.has(memo) && !gated.get(memo)?.approved && !seen.has(it.id)) queue.push({ id: it.id, memo });
          }
        } finally {
          refill = undefined;
        }
      })());
    const finishedApprovals: Array<{ workflowId: string; runId: string; decidedAtMs: number; finishedAfterMs: number }> = [];
    const follow = async (t: KnownTask, memo: string, decidedAt: number, decidedWallMs: number) => {
      for (;;) {
        let status: string | undefined;
        let result: { _meta?: Record<string, unknown> } | undefined;
        const answered = await timed(tallies['tasks/get (following approved tasks)']!, async () => {
          const r = await t.owner.client.request<{ status: string; result?: { _meta?: Record<string, unknown> } }>('tasks/get', {
            taskId: t.taskId,
          });
          status = r.status;
          result = r.result;
        });
        if (status !== undefined && status !== 'working' && status !== 'input_required') {
          approvalLatencies.push(performance.now() - decidedAt);
          const ids = parseTaskId(t.taskId);
          if (ids) finishedApprovals.push({ ...ids, decidedAtMs: decidedWallMs, finishedAfterMs: performance.now() - decidedAt });
          const d = result?._meta?.['io.modelcontextprotocol/tool-approval-disposition'];
          const key = status === 'completed' ? (typeof d === 'string' ? d : 'unknown') : status;
          dispositions[key] = (dispositions[key] ?? 0) + 1;
          return;
        }
        if (performance.now() - decidedAt > FOLLOW_LIMIT_MS) {
          notFinished++;
          gated.get(memo)!.unfinished = true;
          return;
        }
        await sleep(answered ? FOLLOW_GAP_MS : 2 * FOLLOW_GAP_MS);
      }
    };
    const follows: Array<Promise<void>> = [];
    const approveOne = async () => {
      if (queue.length === 0) await refillQueue();
      const item = queue.shift();
      if (!item) return;
      const entry = gated.get(item.memo)!;
      const task = byMemo.get(item.memo)!;
      const decidedAt = performance.now();
      const decidedWallMs = Date.now();
      const ok = await timed(tallies['approval decision (approval API)']!, async () => {
        const res = await fetch(`${stack.urls.approvals}/access/v1/requests/${item.id}/decision`, {
          method: 'POST',
          headers: { authorization: approverAuth, 'content-type': 'application/json' },
          body: JSON.stringify({ decision: 'approve', comment: 'load run' }),
        });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`not-a-task:approval-http-${res.status}`);
      });
      if (ok) {
        entry.approved = true;
        follows.push(follow(task, item.memo, decidedAt, decidedWallMs));
      }
    };

    log(`load: ${o.rate} req/s for ${o.durationMs / 1000} s (mix ${JSON.stringify(o.mix)}), ${o.approvalsPerSec} approvals/s`);
    const cacheSample = () => sampleWorkerCache(stack.metrics.runtime, stack.metrics.app);
    const cacheAtStart = await cacheSample();
    const p0 = performance.now();
    const checkpoints = [setTimeout(() => sampleMemory('after warm-up'), o.warmupMs)];
    for (let k = 1; k < 10; k++) {
      const at = (o.durationMs * k) / 10;
      if (at > o.warmupMs) checkpoints.push(setTimeout(() => sampleMemory(`at ${Math.round(at / 1000)} s`), at));
    }
    await Promise.all([openSchedule(o.rate, o.durationMs, fire), openSchedule(o.approvalsPerSec, o.durationMs, () => track(approveOne()))]);
    const phaseS = (performance.now() - p0) / 1000;
    log(`load: schedule done after ${round(phaseS, 1)} s; waiting for ${inFlight.size} answers and ${follows.length} approved tasks`);
    await Promise.allSettled([...inFlight]);
    await Promise.allSettled(follows);
    for (const c of checkpoints) clearTimeout(c);
    sampleMemory('end');
    const cacheAtEnd = await cacheSample();

    // 3. checks on the tool's records and the approval service's
    const calls = [...gated.entries()].map(([memo, g]) => ({ memo, approved: g.approved, unfinished: g.unfinished === true }));
    const exactlyOnce = checkExactlyOnce(calls, readToolRecords(stack.dataDir));
    const erroredMemos = [...gated.entries()].filter(([m, g]) => g.errored && !byMemo.has(m)).map(([m]) => m);
    const created = memosWithApprovalRequest(stack.dataDir, erroredMemos).length;
    const approved = calls.filter((c) => c.approved).length;
    const step = Math.max(1, Math.ceil(createdInTraffic.length / 100));
    const slowest = finishedApprovals
      .filter((a) => a.finishedAfterMs > 5_000)
      .sort((a, b) => b.finishedAfterMs - a.finishedAfterMs)
      .slice(0, 3);
    const slowApprovals = slowest.length ? await approvalTimelines(stack.urls.temporal, stack.namespace, slowest) : [];
    const unfinishedRuns = [...gated.entries()]
      .filter(([, g]) => g.unfinished)
      .flatMap(([memo]) => {
        const ids = parseTaskId(byMemo.get(memo)?.taskId);
        return ids ? [ids] : [];
      })
      .slice(0, 10);
    const stuck = unfinishedRuns.length ? await stuckRuns(stack.urls.temporal, stack.namespace, unfinishedRuns) : [];
    const creation = await creationStages(
      stack.urls.temporal,
      stack.namespace,
      createdInTraffic.filter((_, i) => i % step === 0),
    );
    const results: LoadResults = {
      generatedAt: new Date().toISOString(),
      command: o.command,
      target,
      processes: layout,
      stackCommand: stack.command,
      machine: { ...machine, loadAvgEnd: round((await import('node:os')).default.loadavg()[0]!, 2) },
      settings: {
        pending: o.pending,
        rate: o.rate,
        durationS: o.durationMs / 1000,
        mix: o.mix,
        approvalsPerSec: o.approvalsPerSec,
        principals: principalsN,
        warmupS: o.warmupMs / 1000,
      },
      backlog: { created: o.pending, seconds: round(backlogS, 1), perSec: round(o.pending / backlogS, 1), errors: backlogErrors },
      methods: Object.fromEntries(Object.entries(tallies).map(([k, t]) => [k, t.figures(phaseS)])),
      approvals: {
        approved,
        finished: approvalLatencies.length,
        notFinished,
        p50Ms: approvalLatencies.length ? round(percentile(approvalLatencies, 50), 1) : null,
        p99Ms: approvalLatencies.length ? round(percentile(approvalLatencies, 99), 1) : null,
        maxMs: approvalLatencies.length ? round(Math.max(...approvalLatencies), 1) : null,
        dispositions,
      },
      erroredButCreated: { errored: erroredMemos.length, created },
      maxInFlight,
      slowApprovals,
      stuck,
      creation,
      workerCache: { start: cacheAtStart, end: cacheAtEnd, watchdog: o.stackEnv.COUNTERSIGN_WORKER_WATCHDOG_MS === '0' ? 'off' : 'on' },
      memory,
      exactlyOnce,
      notes: o.notes,
    };
    return results;
  } finally {
    if (o.holdMs) {
      log(`load: holding the stack for ${o.holdMs / 1000} s: Temporal ${stack.urls.temporal}, data ${stack.dataDir}`);
      await new Promise((r) => setTimeout(r, o.holdMs));
    }
    log('load: stopping the stack');
    await stack.stop();
    startingStack = undefined;
  }
}

/** The stack of the run in progress (starting or started), for the signal handlers of `main`. */
let startingStack: Promise<StackProcess> | undefined;

/**
 * On SIGINT / SIGTERM: stop the run's stack (once it is up, if it is starting), then exit 130. A
 * second signal more than 2 s later exits at once; one sooner is the same Ctrl-C twice (the
 * terminal's to the process group, and tsx relaying it to this process) and is ignored.
 */
function stopOnSignals(): void {
  let signalledAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalledAt !== undefined) {
      if (performance.now() - signalledAt > 2_000) process.exit(130);
      return;
    }
    signalledAt = performance.now();
    process.stderr.write(`load: ${signal}: stopping every process of the run (again to exit at once)\n`);
    void (async () => {
      try {
        await (await startingStack)?.stop(10_000);
      } catch {
        // it failed to start and stopped what it had started
      }
      process.exit(130);
    })();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

const positive = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`${name} must be a number ≥ 0`);
  return n;
};
/** `arg` as a POSIX shell word: as is when plain, else in single quotes. */
export const shellQuoted = (arg: string): string => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);

/** `90`, `90s`, `3m`, `1500ms` → ms. */
const duration = (v: string): number => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError('durations look like 90s, 3m or 1500ms');
  return Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 'm' ? 60_000 : 1000);
};

async function main(): Promise<void> {
  const program = new Command()
    .name('npm run load --')
    .description('mixed MCP load against the stack as npm start runs it; writes docs/LOAD.md')
    .addOption(
      new Option(
        '--target <target>',
        'embedded: the stack as npm start runs it; cluster: PostgreSQL, the Temporal server and each role its own process',
      )
        .choices(['embedded', 'cluster'])
        .default('embedded'),
    )
    .option('--pending <n>', 'pending approval tasks built before the traffic', positive('--pending'), 1000)
    .option('--rate <perSec>', 'requests per second of the mixed traffic (open model)', positive('--rate'), 20)
    .option('--duration <time>', 'length of the mixed traffic (90s, 10m)', duration, 600_000)
    .option('--mix <spec>', 'weights of tasks/get, allowed calls, new gated calls', 'get=60,allowed=30,gated=10')
    .option('--approvals <perSec>', 'approvals per second through the approval API', positive('--approvals'), 0.5)
    .option('--warmup <time>', 'when the "after warm-up" memory point is taken, from the start of the traffic', duration, 60_000)
    .option(
      '--principals <n>',
      'principals the calls are spread over (default: enough for the default submission limits)',
      positive('--principals'),
    )
    .option('--stack-env <KEY=VALUE...>', 'extra environment of the stack process (cluster: of every role) (experiments)', [])
    .option('--cpu-prof <dir>', 'write a V8 CPU profile of the stack process (cluster: of every role) there')
    .option('--out <file>', 'report file', join(PROJECT_ROOT, 'docs', 'LOAD.md'))
    .option('--no-write', 'print the results only')
    .option('--hold <time>', 'keep the stack running this long after the checks (to inspect stuck runs)', duration, 0)
    .option('--note <text...>', 'a line for the report (e.g. that the machine was shared)', [])
    .option('--report-from <results.json>', 'only write the report from the results a run printed');
  program.parse();
  const f = program.opts<{
    target: 'embedded' | 'cluster';
    pending: number;
    rate: number;
    duration: number;
    mix: string;
    approvals: number;
    warmup: number;
    principals?: number;
    stackEnv: string[];
    cpuProf?: string;
    out: string;
    write: boolean;
    note: string[];
    hold: number;
    reportFrom?: string;
  }>();
  if (f.reportFrom) {
    const text = readFileSync(f.reportFrom, 'utf8');
    writeFileSync(f.out, loadMarkdown(JSON.parse(text.slice(text.indexOf('{'))) as LoadResults));
    process.stderr.write(`load: wrote ${f.out}\n`);
    return;
  }
  const stackEnv = Object.fromEntries(
    f.stackEnv.map((kv) => {
      const i = kv.indexOf('=');
      if (i <= 0) throw new InvalidArgumentError(`--stack-env: "${kv}" is not KEY=VALUE`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  );
  stopOnSignals();
  const results = await runLoad({
    target: f.target,
    pending: Math.round(f.pending),
    rate: f.rate,
    durationMs: f.duration,
    mix: parseMix(f.mix, KINDS),
    approvalsPerSec: f.approvals,
    warmupMs: f.warmup,
    ...(f.principals ? { principals: Math.round(f.principals) } : {}),
    stackEnv,
    ...(f.cpuProf ? { cpuProfDir: f.cpuProf } : {}),
    out: f.write ? f.out : null,
    notes: f.note,
    holdMs: f.hold,
    command: ['npm run load --', ...process.argv.slice(2).map(shellQuoted)].join(' '),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  if (f.write) {
    writeFileSync(f.out, loadMarkdown(results));
    // the figures behind the report, for `--report-from`
    writeFileSync(join(PROJECT_ROOT, 'bench', 'load', 'last-run.json'), `${JSON.stringify(results, null, 2)}\n`);
    process.stderr.write(`load: wrote ${f.out} and bench/load/last-run.json\n`);
  }
  if (!results.exactlyOnce.ok) {
    process.stderr.write('load: the exactly-once check FAILED\n');
    process.exitCode = 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((err) => {
    process.stderr.write(`load: ${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
