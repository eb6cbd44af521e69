// Scope: packages/client/src/task-id-store.ts — the file a client keeps its task ids in (SEP-2848 §Security
// Implications: clients store task ids durably): atomic writes, serialized updates, refusal of a
// file that is not a store.
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileTaskIdStore, type TaskRecord } from '@countersign/client';

const dir = () => mkdtempSync(join(tmpdir(), 'countersign-store-'));
const rec = (taskId: string): TaskRecord => ({ taskId, tool: 'wire_transfer', recordedAt: '2026-06-02T10:30:00.000Z' });

describe('file task id store', () => {
  it('a missing file is an empty store; the folder is created on the first write', async () => {
    const path = join(dir(), 'nested', 'tasks.json');
    const store = new FileTaskIdStore(path);
    expect(await store.get('k')).toBeUndefined();
    expect(await store.list()).toEqual({});
    await store.put('k', rec('t-1'));
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ version: 1, calls: { k: rec('t-1') } });
  });

  it('concurrent puts from one store are serialized: every record survives, and no temporary file is left', async () => {
    const d = dir();
    const store = new FileTaskIdStore(join(d, 'tasks.json'));
    await Promise.all(Array.from({ length: 25 }, (_, i) => store.put(`call ${i}`, rec(`t-${i}`))));
    const fresh = new FileTaskIdStore(join(d, 'tasks.json'));
    expect(Object.keys(await fresh.list())).toHaveLength(25);
    expect((await fresh.get('call 7'))?.taskId).toBe('t-7');
    expect(readdirSync(d)).toEqual(['tasks.json']);
  });

  it('delete removes one record and keeps the others', async () => {
    const store = new FileTaskIdStore(join(dir(), 'tasks.json'));
    await store.put('a', rec('t-a'));
    await store.put('b', rec('t-b'));
    await store.delete('a');
    expect(await store.list()).toEqual({ b: rec('t-b') });
  });

  it('a file that is not a version 1 store is refused, not overwritten', async () => {
    const path = join(dir(), 'tasks.json');
    writeFileSync(path, JSON.stringify({ something: 'else' }));
    const store = new FileTaskIdStore(path);
    await expect(store.get('k')).rejects.toThrow(/not a task id store/);
    await expect(store.put('k', rec('t-1'))).rejects.toThrow(/not a task id store/);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ something: 'else' });
  });
});
