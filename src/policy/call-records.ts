/**
 * Call records: the calls that open no task — allowed (run inline), plainly denied, and the
 * requestable or in-band calls that end without one — kept so that `countersign policy replay`
 * sees them too (docs/PRODUCTION.md §Trying a policy change; why a file per instance, encrypted:
 * docs/DESIGN.md §10). A call that opens a task is recorded already, as its approval workflow's
 * input (`replay-source.ts`), and is not written here, so no call is counted twice.
 *
 * Two entry points: {@link CallRecorder.observe} at the decision, which records allowed and plainly
 * denied calls (they end there); {@link CallRecorder.record} from the gate's outcome handlers for a
 * requestable or in-band decision that ends without a task (`src/mcp/gate-outcomes.ts`: an in-band
 * confirmation answered and the tool run inline or refused; a requestable call from a client
 * without tasks answered with the degraded result or -32021; a justification declined; a
 * submission limit). A call left at an `input_required` round is not recorded: it has not ended.
 *
 * One JSON line per call in `<dir>/calls-<YYYY-MM-DD>-<instance>.jsonl` (UTC day, one file per
 * front instance, so instances never share a file): `{v: 1, at (ISO 8601), ref (the gate's keyed
 * call reference: the `approval-<HMAC>` id the call's task would have), tool, principal {iss, sub,
 * act?}, outcome ("allowed" | "denied" | "in-band" | "requestable"), payload}`, where `payload` is
 * the arguments as a Temporal payload (`json/plain`) passed through the installation's payload
 * codec (`src/temporal/payload-codec.ts`: AES-256-GCM), its metadata and data base64 — so the
 * arguments are never on disk in the clear, and the keys that read workflow histories read these
 * files. Written after the call is answered (a later turn of the event loop, appends in order; the
 * call reference too is computed then), never failing or delaying it; a record over
 * {@link MAX_RECORD_BYTES} is skipped and counted. Day files older than the retention are deleted
 * when a new day begins.
 *
 * Deliberately does not: record a call that opens a task (its workflow does), ship records
 * between instances (replay reads the folder; point every instance at one shared folder or copy
 * them together), or log arguments.
 */
import { appendFile, mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import type { AppMetrics } from '../ops/metrics.js';
import type { AccessEvaluationRequest, Decision } from './pdp.js';
import { outcomeOf, type RecordedCall } from './replay.js';

/** Largest record line written, bytes; a larger one is skipped and counted. */
export const MAX_RECORD_BYTES = 256 * 1024;

const FILE = /^calls-(\d{4}-\d{2}-\d{2})-[A-Za-z0-9_.-]+\.jsonl$/;

/** What a record says the live decision was: one of the four outcomes of `replay.ts`. */
export type RecordedOutcome = 'allowed' | 'denied' | 'in-band' | 'requestable';

/** What the gate calls on every decision (like the shadow policy, `shadow.ts`), and where a requestable or in-band call ends without a task. */
export interface CallRecorder {
  /**
   * At the decision: record the call of `request` when `decision` is allowed or plainly denied
   * (nothing else happens to it); other decisions are left to {@link record} or the task. Returns
   * at once, never throws; `callRef` is called later, off the answer path.
   */
  observe(request: AccessEvaluationRequest, decision: Decision, callRef: () => string): void;
  /**
   * A requestable or in-band call that ends without a task (module header): record it with that
   * `outcome`. Returns at once, never throws; `callRef` is called later, off the answer path.
   */
  record(request: AccessEvaluationRequest, outcome: 'in-band' | 'requestable', callRef: () => string): void;
  /** Resolves when every record observed so far is written (tests, shutdown). */
  idle(): Promise<void>;
}

/** Options of {@link createCallRecorder}. */
export interface CallRecorderOptions {
  /** The folder (created mode 0700 when missing). */
  dir: string;
  /** The installation's payload codec: encrypts the arguments. */
  codec: PayloadCodec;
  /** This front instance's name in file names (characters outside `[A-Za-z0-9_.-]` become `_`). */
  instance: string;
  /** Day files older than this many days are deleted; default 30. */
  retentionDays?: number;
  logger: Logger;
  metrics?: AppMetrics;
  /** Clock, ms since the epoch; default `Date.now`. */
  now?: () => number;
}

const toB64 = (b: Uint8Array | null | undefined) => Buffer.from(b ?? new Uint8Array()).toString('base64');
const fromB64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

/** Start a recorder writing into `opts.dir` (module header). */
export function createCallRecorder(opts: CallRecorderOptions): CallRecorder {
  const instance = opts.instance.replace(/[^A-Za-z0-9_.-]/g, '_') || 'front';
  const now = opts.now ?? Date.now;
  const retentionMs = (opts.retentionDays ?? 30) * 86_400_000;
  let ready: Promise<void> | undefined;
  let lastDay = '';
  let queue: Promise<void> = Promise.resolve();

  async function prune(day: string): Promise<void> {
    const oldest = new Date(Date.parse(`${day}T00:00:00Z`) - retentionMs).toISOString().slice(0, 10);
    for (const name of await readdir(opts.dir)) {
      const m = FILE.exec(name);
      if (m && m[1]! < oldest) await unlink(join(opts.dir, name)).catch(() => undefined);
    }
  }

  async function write(request: AccessEvaluationRequest, outcome: RecordedOutcome, callRef: () => string, atMs: number): Promise<void> {
    ready ??= mkdir(opts.dir, { recursive: true, mode: 0o700 }).then(() => undefined);
    await ready;
    const [payload] = await opts.codec.encode([
      {
        metadata: { encoding: new TextEncoder().encode('json/plain') },
        data: new TextEncoder().encode(JSON.stringify(request.context.arguments)),
      },
    ]);
    const metadata = Object.fromEntries(Object.entries(payload!.metadata ?? {}).map(([k, v]) => [k, toB64(v)]));
    const at = new Date(atMs).toISOString();
    const ref = callRef();
    const line = `${JSON.stringify({ v: 1, at, ref, tool: request.resource.id, principal: request.subject, outcome, payload: { metadata, data: toB64(payload!.data) } })}\n`;
    if (Buffer.byteLength(line) > MAX_RECORD_BYTES) {
      opts.metrics?.callRecords.inc({ result: 'skipped' });
      opts.logger.warn({ tool: request.resource.id, bytes: Buffer.byteLength(line) }, 'call record over the size limit; not recorded');
      return;
    }
    const day = at.slice(0, 10);
    if (day !== lastDay) {
      lastDay = day;
      await prune(day);
    }
    await appendFile(join(opts.dir, `calls-${day}-${instance}.jsonl`), line, { mode: 0o600 });
    opts.metrics?.callRecords.inc({ result: 'written' });
  }

  function enqueue(request: AccessEvaluationRequest, outcome: RecordedOutcome, callRef: () => string): void {
    const atMs = now();
    queue = queue
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => write(request, outcome, callRef, atMs))
      .catch((err: unknown) => {
        opts.metrics?.callRecords.inc({ result: 'failed' });
        opts.logger.warn({ tool: request.resource.id, err: (err as Error).name }, 'call record not written');
      });
  }

  return {
    observe(request, decision, callRef) {
      const { outcome } = outcomeOf(decision);
      if (outcome === 'allowed' || outcome === 'denied') enqueue(request, outcome, callRef);
    },
    record: enqueue,
    idle: () => queue,
  };
}

/** What {@link readCallRecords} read: the calls, oldest first, and the lines it could not read. */
export interface CallRecordsRead {
  calls: RecordedCall[];
  /** Lines that were not a record, or whose payload the codec could not decode (another key). */
  unreadable: number;
}

/**
 * The calls recorded in `dir` at or after `sinceMs` (ms since the epoch), decoded with `codec`,
 * oldest first. A missing folder reads as none. Throws only on a folder that exists and cannot be
 * read.
 */
export async function readCallRecords(dir: string, codec: PayloadCodec, sinceMs: number): Promise<CallRecordsRead> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { calls: [], unreadable: 0 };
    throw err;
  }
  const sinceDay = new Date(sinceMs).toISOString().slice(0, 10);
  const calls: RecordedCall[] = [];
  let unreadable = 0;
  for (const name of names.sort()) {
    const m = FILE.exec(name);
    if (!m || m[1]! < sinceDay) continue;
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
      if (line.trim() === '') continue;
      try {
        const r = JSON.parse(line) as {
          at: string;
          ref: string;
          tool: string;
          principal: Principal;
          payload: { metadata: Record<string, string>; data: string };
        };
        if (!(Date.parse(r.at) >= sinceMs)) continue;
        const encoded: Payload = {
          metadata: Object.fromEntries(Object.entries(r.payload.metadata).map(([k, v]) => [k, fromB64(v)])),
          data: fromB64(r.payload.data),
        };
        const [decoded] = await codec.decode([encoded]);
        const args = JSON.parse(new TextDecoder().decode(decoded!.data ?? new Uint8Array())) as Record<string, unknown>;
        calls.push({ ref: r.ref, at: r.at, tool: r.tool, principal: r.principal, arguments: args });
      } catch {
        unreadable++;
      }
    }
  }
  calls.sort((a, b) => a.at.localeCompare(b.at) || a.ref.localeCompare(b.ref));
  return { calls, unreadable };
}
