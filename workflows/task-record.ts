/**
 * The task record: the approval run's client-facing snapshot, kept in the run's memo so that any
 * MCP front instance reads a waiting task with one DescribeWorkflowExecution — no query, no worker,
 * no billable action (docs/DESIGN.md §4.5 Reads).
 *
 * The record is the same `TaskSnapshot` the `task` query returns, written by the same workflow
 * code: {@link publishTaskRecord} waits on a condition over the live snapshot and upserts the memo
 * whenever it differs from what was last written. Temporal evaluates conditions after every step of
 * an activation, so the upsert is a command of the same workflow task as the change it records:
 * when that workflow task completes, history, query and record hold the same state; before, none
 * of them shows it. The memo passes through the payload codec like every payload, so the record is
 * encrypted at rest like the run's input.
 *
 * Size: everything but a completed task's tool result is small (well under 2 KiB: statuses, times,
 * the policy's reason, at most one justification form). The result is copied into the record only
 * when its JSON is at most {@link RECORD_RESULT_MAX_BYTES}; a larger one is left out
 * (`resultOmitted: true`) and read where it already is — the workflow's result once the run
 * closes, the query in the moment before. Each write is one `WorkflowPropertiesModified` event
 * holding the whole record (memo upserts are not Temporal Cloud actions).
 *
 * Deterministic: no I/O, no clock; deliberately does not decide anything about the task.
 */
import { condition, upsertMemo } from '@temporalio/workflow';
import type { TaskSnapshot } from './types.js';

/** Memo key of the task record. */
export const TASK_RECORD_MEMO_KEY = 'task';

/** Largest tool result (UTF-8 bytes of its JSON) copied into the record; larger ones are read from the run's result. */
export const RECORD_RESULT_MAX_BYTES = 16 * 1024;

/** Version of the record's shape; a reader that does not know it reads the run by query instead. */
export const TASK_RECORD_VERSION = 1;

/**
 * The memo entry: `snapshot` is the `task` query's answer at the same workflow task, except that a
 * completed task's `result` is absent when `resultOmitted` (larger than {@link RECORD_RESULT_MAX_BYTES}).
 */
export interface TaskRecord {
  v: typeof TASK_RECORD_VERSION;
  snapshot: TaskSnapshot;
  resultOmitted?: true;
}

/** The record of `snapshot` (a copy; the live snapshot is never shared with the memo). */
export function taskRecordOf(snapshot: TaskSnapshot): TaskRecord {
  const { result, ...rest } = snapshot;
  if (result !== undefined && utf8Length(JSON.stringify(result)) > RECORD_RESULT_MAX_BYTES) {
    return { v: TASK_RECORD_VERSION, snapshot: copy(rest as TaskSnapshot), resultOmitted: true };
  }
  return { v: TASK_RECORD_VERSION, snapshot: copy(snapshot) };
}

/**
 * `value` as a {@link TaskRecord} when it has the shape this version writes (from a memo decoded by
 * the client's data converter), else undefined: a run without a record, a record of another
 * version, or anything else is read by query.
 */
export function readTaskRecord(value: unknown): TaskRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Partial<TaskRecord>;
  if (r.v !== TASK_RECORD_VERSION || typeof r.snapshot !== 'object' || r.snapshot === null) return undefined;
  const s = r.snapshot as Partial<TaskSnapshot>;
  if (typeof s.status !== 'string' || typeof s.ownerKey !== 'string' || typeof s.createdAt !== 'string') return undefined;
  return r as TaskRecord;
}

/** The record's snapshot as `tasks/get` may serve it, or undefined when the result it needs was left out. */
export function servableSnapshot(record: TaskRecord): TaskSnapshot | undefined {
  return record.resultOmitted ? undefined : record.snapshot;
}

/**
 * Keep the run's memo record equal to `snapshot()` for the rest of the run (call once, in the
 * first activation). Returns `flush`, which writes a pending change at once: the workflow calls it
 * right before returning, so the terminal record is in the run's last workflow task whatever the
 * order of the coroutines in it.
 */
export function publishTaskRecord(snapshot: () => TaskSnapshot): { flush: () => void } {
  let written = '';
  // Compared without the result: the result is set once, at terminalization, with the status.
  const keyOf = (s: TaskSnapshot): string => {
    const { result, ...rest } = s;
    return JSON.stringify(rest) + (result === undefined ? '' : '+result');
  };
  const flush = (): void => {
    const s = snapshot();
    const key = keyOf(s);
    if (key === written) return;
    written = key;
    upsertMemo({ [TASK_RECORD_MEMO_KEY]: taskRecordOf(s) });
  };
  void (async () => {
    for (;;) {
      await condition(() => keyOf(snapshot()) !== written);
      flush();
    }
  })();
  return { flush };
}

/** A deep copy of plain JSON data. */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** UTF-8 length of `text` without an encoder (the workflow sandbox needs none of Node's). */
function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
