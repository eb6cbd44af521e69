// Scope: the abort signal a long-running tool gets from the executeTool activity (activities/activities.ts):
// the activity's own cancellation, or the worker process stopping (ActivityDeps.stopping, aborted by
// RunningWorker.stop and never by a replacement; docs/OPERATIONS.md §A workflow task nobody answers).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../activities/activities.js';
import { createCallBinding } from '../../src/binding/call-binding.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import type { Tool } from '../../src/tools/tool.js';

/** A long-running tool that runs until its signal aborts, then throws; records whether it saw the abort. */
function waitingTool(seen: { aborted: boolean; started: () => void }): Tool {
  return {
    name: 'wait_for_stop',
    description: 'waits until told to stop',
    inputSchema: z.object({}),
    version: '1',
    longRunning: { timeoutMs: 600_000, heartbeatMs: 60_000 },
    async execute(_args, ctx) {
      seen.started();
      await new Promise<void>((resolve) => ctx.signal?.addEventListener('abort', () => resolve(), { once: true }));
      seen.aborted = ctx.signal?.aborted === true;
      throw new Error('stopped');
    },
  };
}

const binding = createCallBinding({
  tool: 'wait_for_stop',
  arguments: {},
  principal: { iss: 'https://issuer.test', sub: 'alice' },
  toolDescriptorDigest: 'sha256:test',
});

describe('the stop signal of a long-running tool', () => {
  it('a long-running tool sees its signal abort when the worker process stops, and the attempt fails as a tool error', async () => {
    const stopping = new AbortController();
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const seen = { aborted: false, started };
    const acts = createActivities({
      backend: undefined as never,
      pdp: undefined as never,
      tools: createToolRegistry([waitingTool(seen)]),
      stopping: stopping.signal,
    });
    const outcome = new MockActivityEnvironment().run(acts.executeTool, { binding, taskId: 't1', executionId: 'e1' });
    await running;
    stopping.abort();
    await expect(outcome).rejects.toMatchObject({ type: 'ToolExecutionError', nonRetryable: true });
    expect(seen.aborted).toBe(true);
  });

  it("without a stop, the activity's own cancellation still aborts the tool's signal", async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const seen = { aborted: false, started };
    const acts = createActivities({
      backend: undefined as never,
      pdp: undefined as never,
      tools: createToolRegistry([waitingTool(seen)]),
      stopping: new AbortController().signal,
    });
    const env = new MockActivityEnvironment();
    const outcome = env.run(acts.executeTool, { binding, taskId: 't2', executionId: 'e2' });
    await running;
    env.cancel();
    await expect(outcome).rejects.toBeDefined();
    expect(seen.aborted).toBe(true);
  });
});
