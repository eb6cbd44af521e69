// Scope: sealed inline task ids of the 2025-11-25 face (src/mcp/legacy-inline-task.ts): they open
// only for their owner, within their TTL, under the same server key, and unchanged.
import { describe, expect, it } from 'vitest';
import { createInlineTaskSealer, INLINE_TASK_DEFAULT_TTL_MS, INLINE_TASK_MAX_TTL_MS } from '../../src/mcp/legacy-inline-task.js';

const alice = { iss: 'https://issuer.test', sub: 'alice' };
const result = { content: [{ type: 'text', text: 'Transfer of $100.00 to acct-100 completed.' }], isError: false };

describe('sealed inline task ids (2025-11-25 task-augmented calls that need no approval)', () => {
  const sealer = createInlineTaskSealer('server-key-1');
  const now = new Date('2026-12-01T00:00:00Z');

  it('the owner opens the id and gets the sealed CallToolResult, creation time and TTL back', () => {
    const { taskId, task } = sealer.seal(result, alice, 60_000, now);
    expect(sealer.open(taskId, alice, now.getTime() + 1)).toEqual({ createdAt: now.toISOString(), ttlMs: 60_000, result });
    expect(task.ttlMs).toBe(60_000);
  });

  it('another caller, the same subject acting through an agent, and another issuer all get null (same as unknown)', () => {
    const { taskId } = sealer.seal(result, alice, 60_000, now);
    for (const other of [
      { ...alice, sub: 'mallory' },
      { ...alice, act: [{ sub: 'agent-7' }] },
      { ...alice, iss: 'https://other.test' },
    ]) {
      expect(sealer.open(taskId, other, now.getTime())).toBeNull();
    }
  });

  it('a changed character, an id sealed under another server key, and a workflow task id all get null', () => {
    const { taskId } = sealer.seal(result, alice, 60_000, now);
    const flipped = taskId.slice(0, 20) + (taskId[20] === 'A' ? 'B' : 'A') + taskId.slice(21);
    expect(sealer.open(flipped, alice, now.getTime())).toBeNull();
    expect(createInlineTaskSealer('server-key-2').open(taskId, alice, now.getTime())).toBeNull();
    expect(sealer.open('0123456789abcdef0123456789abcdef.01234567-89ab-cdef-0123-456789abcdef', alice, now.getTime())).toBeNull();
  });

  it('past createdAt + ttl the id is expired (null); the TTL defaults to 1 h and is capped at 24 h', () => {
    const { taskId } = sealer.seal(result, alice, 60_000, now);
    expect(sealer.open(taskId, alice, now.getTime() + 60_001)).toBeNull();
    expect(sealer.seal(result, alice, undefined, now).task.ttlMs).toBe(INLINE_TASK_DEFAULT_TTL_MS);
    expect(sealer.seal(result, alice, 10 * INLINE_TASK_MAX_TTL_MS, now).task.ttlMs).toBe(INLINE_TASK_MAX_TTL_MS);
  });
});
