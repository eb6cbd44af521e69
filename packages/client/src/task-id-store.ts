/**
 * Durable task ids for `TasksClient` (SEP-2848 §Security Implications: clients store task ids
 * durably, because a task may stand for a call that has already run or may yet run).
 *
 * A `TaskIdStore` maps a caller-chosen call key (e.g. `"invoice-4411/transfer"`) to the task that
 * carries that call. `TasksClient.callTool(..., {callKey})` records the task id before it returns
 * or polls, and a later `callTool` with the same key resumes that task instead of calling the tool
 * again — so a process that crashed mid-poll, or a caller that retries, never starts a second
 * execution.
 *
 * `FileTaskIdStore` keeps one JSON object (`{version: 1, calls: {[callKey]: TaskRecord}}`) in one
 * file. Every write goes to a temporary file in the same folder, is flushed (`fsync`), and is
 * renamed over the store, so a crash leaves the old or the new file, never a torn one. Writes from
 * one store object are serialized; two processes sharing a file are not coordinated (last writer
 * wins per write) — give each process its own file.
 *
 * Deliberately does not: expire records (a record outlives its task on the server; `delete` when
 * the caller is done with the outcome), or store arguments, results or tokens.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** What is recorded for one call key. Times are ISO 8601. */
export interface TaskRecord {
  taskId: string;
  /** The tool the call named. */
  tool: string;
  /** When the task id was first recorded. */
  recordedAt: string;
  /** The last status seen, once terminal (`completed`, `failed` or `cancelled`). */
  status?: string;
}

/** Where task ids are kept. Every method may reject with the underlying I/O error. */
export interface TaskIdStore {
  get(callKey: string): Promise<TaskRecord | undefined>;
  /** Record (or replace) the task of `callKey`; resolves once it is durable. */
  put(callKey: string, record: TaskRecord): Promise<void>;
  delete(callKey: string): Promise<void>;
  /** Every record, e.g. to resume all unfinished calls at start-up. */
  list(): Promise<Record<string, TaskRecord>>;
}

interface StoreFile {
  version: 1;
  calls: Record<string, TaskRecord>;
}

/** A `TaskIdStore` in one JSON file, written atomically (temporary file, fsync, rename). */
export class FileTaskIdStore implements TaskIdStore {
  private queue: Promise<unknown> = Promise.resolve();

  /** `path`: the store file; its folder is created on first write. A missing file is an empty store. */
  constructor(readonly path: string) {}

  async get(callKey: string): Promise<TaskRecord | undefined> {
    await this.queue.catch(() => undefined);
    return (await this.read()).calls[callKey];
  }

  async list(): Promise<Record<string, TaskRecord>> {
    await this.queue.catch(() => undefined);
    return (await this.read()).calls;
  }

  put(callKey: string, record: TaskRecord): Promise<void> {
    return this.update((calls) => {
      calls[callKey] = record;
    });
  }

  delete(callKey: string): Promise<void> {
    return this.update((calls) => {
      delete calls[callKey];
    });
  }

  private update(change: (calls: Record<string, TaskRecord>) => void): Promise<void> {
    const next = this.queue
      .catch(() => undefined)
      .then(async () => {
        const file = await this.read();
        change(file.calls);
        await this.writeAtomically(JSON.stringify(file, null, 2));
      });
    this.queue = next;
    return next;
  }

  private async read(): Promise<StoreFile> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, calls: {} };
      throw err;
    }
    const parsed = JSON.parse(text) as Partial<StoreFile>;
    if (parsed.version !== 1 || typeof parsed.calls !== 'object' || parsed.calls === null)
      throw new Error(`${this.path} is not a task id store (version 1)`);
    return { version: 1, calls: parsed.calls };
  }

  private async writeAtomically(text: string): Promise<void> {
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${basename(this.path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const fh = await open(tmp, 'w', 0o600);
      try {
        await fh.writeFile(text, 'utf8');
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    // make the rename itself durable where the platform allows opening a folder
    try {
      const d = await open(dir, 'r');
      try {
        await d.sync();
      } finally {
        await d.close();
      }
    } catch {
      // not supported here (e.g. Windows); the file itself is synced
    }
  }
}
