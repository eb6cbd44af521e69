// Scope: the heap snapshot summarizer of `npm run bench:heap` (bench/heap/summarize.ts), on real
// snapshots of small Node processes built for each case: K enabled AsyncLocalStorage instances,
// then many promises, then `v8.writeHeapSnapshot`. The counts come from the snapshot file only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readHeapSnapshot, summarizeHeapSnapshot } from '../../bench/heap/summarize.js';

const dir = mkdtempSync(join(tmpdir(), 'countersign-heap-summarize-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A snapshot of a fresh Node process with `enabled` AsyncLocalStorage instances enabled (their
 * store an object while it runs, or undefined afterwards), `idle` never enabled, and 2,000 pending
 * promises made after that.
 */
function snapshotOf(c: { enabled: number; idle: number; store: 'object' | 'undefined' }): string {
  const file = join(dir, `k${c.enabled}-${c.idle}-${c.store}.heapsnapshot`);
  const script = `
    import { AsyncLocalStorage } from 'node:async_hooks';
    import v8 from 'node:v8';
    const enabled = Array.from({ length: ${c.enabled} }, () => new AsyncLocalStorage());
    const idle = Array.from({ length: ${c.idle} }, () => new AsyncLocalStorage());
    enabled.forEach((a, i) => ${c.store === 'object' ? 'a.enterWith({ i })' : 'a.run({ i }, () => {})'});
    globalThis.kept = Array.from({ length: 2000 }, () => new Promise(() => {}));
    globalThis.idle = idle;
    v8.writeHeapSnapshot(${JSON.stringify(file)});
  `;
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
  return file;
}

describe('heap snapshot summary', () => {
  it('counts one kResourceStore tag per enabled AsyncLocalStorage on each promise (40 enabled, stores undefined, dictionary-mode properties)', () => {
    const s = summarizeHeapSnapshot(readHeapSnapshot(snapshotOf({ enabled: 40, idle: 7, store: 'undefined' })), {
      promiseSample: 1_000_000,
    });
    expect(s.promises.count).toBeGreaterThanOrEqual(2000);
    expect(s.promises.resourceStoreTags.median).toBe(40);
    expect(s.promises.resourceStoreTags.max).toBe(40);
    // 2,000 promises each holding a dictionary of 40+ entries
    expect(s.promises.propertyArrayBytes).toBeGreaterThan(2000 * 40 * 8);
    // and they are the largest holder of property dictionaries
    expect(s.propertyArrayOwners[0]).toMatchObject({ kind: 'object Promise', bytes: s.promises.propertyArrayBytes });
    expect(s.propertyArrayOwners[0]!.count).toBeGreaterThanOrEqual(2000);
  });

  it('counts the tags of a few enabled AsyncLocalStorage instances whose stores are objects (fast-mode properties)', () => {
    const s = summarizeHeapSnapshot(readHeapSnapshot(snapshotOf({ enabled: 3, idle: 5, store: 'object' })), { promiseSample: 1_000_000 });
    expect(s.promises.resourceStoreTags.median).toBe(3);
    expect(s.promises.resourceStoreTags.max).toBe(3);
  });

  it('counts no tags when no AsyncLocalStorage is enabled, and promise property arrays stay small', () => {
    const s = summarizeHeapSnapshot(readHeapSnapshot(snapshotOf({ enabled: 0, idle: 5, store: 'object' })), { promiseSample: 1_000_000 });
    expect(s.promises.count).toBeGreaterThanOrEqual(2000);
    expect(s.promises.resourceStoreTags.max).toBe(0);
    expect(s.promises.propertyArrayBytes).toBeLessThan(2000 * 8);
  });

  it('adds up the self sizes by node kind: the 2,000 kept promises are a row, and the rows never exceed the total', () => {
    const t = readHeapSnapshot(snapshotOf({ enabled: 0, idle: 0, store: 'object' }));
    const s = summarizeHeapSnapshot(t, { top: 1000 });
    const promiseRow = s.byKind.find((r) => r.kind === 'object Promise');
    expect(promiseRow?.count).toBe(s.promises.count);
    expect(promiseRow?.bytes).toBe(s.promises.selfBytes);
    expect(s.byKind.reduce((a, r) => a + r.bytes, 0)).toBeLessThanOrEqual(s.totalBytes);
    expect(s.nodeCount).toBe(t.nodes.length / t.nodeFields.length);
    expect(s.byKind.map((r) => r.bytes)).toEqual([...s.byKind.map((r) => r.bytes)].sort((a, b) => b - a));
  });

  it('refuses a file that is not a V8 heap snapshot, and a truncated one', () => {
    const bad = join(dir, 'not-a-snapshot.json');
    writeFileSync(bad, JSON.stringify({ hello: 'world' }));
    expect(() => readHeapSnapshot(bad)).toThrow(/not a V8 heap snapshot/);
    const cut = join(dir, 'cut.heapsnapshot');
    const whole = snapshotOf({ enabled: 1, idle: 0, store: 'object' });
    const text = readFileSync(whole, 'utf8');
    writeFileSync(cut, text.slice(0, Math.floor(text.length / 3)));
    expect(() => readHeapSnapshot(cut)).toThrow(/truncated|entries/);
  });
});
