// Scope: the 2025-11-25 face (src/mcp/legacy-server.ts) under the two non-default
// COUNTERSIGN_NO_TASKS_RESPONSE modes, driven by `@modelcontextprotocol/sdk` 1.32.2 against a real
// stack per mode: a requestable denial without params.task opens no approval — degraded-result
// answers an isError result naming params.task, error the JSON-RPC error -32600 — the companion
// tools are not listed, and a task-augmented call still gets its approval (the default mode,
// approval-tools, is covered by sdk1.test.ts and sdk2-default.test.ts).
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { pendingFor, startTestStack, testConfig } from '../support/stack-harness.js';

for (const mode of ['degraded-result', 'error'] as const) {
  describe(`COUNTERSIGN_NO_TASKS_RESPONSE=${mode} on the 2025-11-25 face`, () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await startTestStack(testConfig({ COUNTERSIGN_NO_TASKS_RESPONSE: mode }));
    });
    afterAll(async () => {
      await stack?.stop();
    });

    async function sdk1Client(sub: string): Promise<Client> {
      const token = await stack.issuer.mintToken({ sub });
      const client = new Client({ name: 'sdk1-modes-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(stack.urls.mcp), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      return client;
    }

    it('tools/list does not offer the companion tools', async () => {
      const client = await sdk1Client('alice');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['wire_transfer']);
      await client.close();
    });

    it(
      mode === 'degraded-result'
        ? 'a requestable denial without params.task is an isError result naming params.task, and opens no approval'
        : 'a requestable denial without params.task is the JSON-RPC error -32600 (task augmentation required), and opens no approval',
      async () => {
        const client = await sdk1Client('alice');
        const memo = `modes ${randomUUID().slice(0, 12)}`;
        const res = (await client
          .callTool({ name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } })
          .catch((e: unknown) => e)) as McpError | { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: unknown };
        if (mode === 'degraded-result') {
          expect(res).not.toBeInstanceOf(McpError);
          const result = res as { isError?: boolean; content: Array<{ text?: string }>; structuredContent?: unknown };
          expect(result.isError).toBe(true);
          expect(result.structuredContent).toBeUndefined();
          expect(result.content[0]?.text).toMatch(/params\.task/);
          expect(result.content[0]?.text).toMatch(/no approval was requested/);
        } else {
          expect(res).toBeInstanceOf(McpError);
          expect((res as McpError).code).toBe(-32600);
          expect((res as McpError).message).toMatch(/task augmentation required/);
        }
        expect((await pendingFor(stack, 'bob')).some((r) => r.arguments.memo === memo)).toBe(false);
        await client.close();
      },
    );

    it('the same call with params.task opens the approval as a task', async () => {
      const client = await sdk1Client('alice');
      const memo = `modes ${randomUUID().slice(0, 12)}`;
      const stream = client.experimental.tasks.callToolStream(
        { name: 'wire_transfer', arguments: { to: 'acct-991', amount: 50_000, memo } },
        CallToolResultSchema,
        {
          task: { ttl: 3_600_000 },
        },
      );
      let taskId: string | undefined;
      for await (const message of stream) {
        if (message.type === 'taskCreated') taskId = message.task.taskId;
        break;
      }
      expect(taskId).toBeDefined();
      expect((await pendingFor(stack, 'bob')).filter((r) => r.arguments.memo === memo)).toHaveLength(1);
      expect((await client.experimental.tasks.cancelTask(taskId!)).status).toBe('cancelled');
      await client.close();
    });
  });
}
