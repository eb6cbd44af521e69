// Scope: every task shape Countersign puts on the wire (src/mcp/task-projection.ts), checked
// against the official 2026-07-28 tasks schemas of the pinned `@modelcontextprotocol/ext-tasks`
// package — the same schemas its client validates with. One case per terminal result kind, so a
// new kind that misses `resultType` fails here and not in a user's client.
import { describe, expect, it } from 'vitest';
import { CallToolResultV2Schema, CreateTaskResultV2Schema, GetTaskResultV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { createTaskResult, getTaskResult } from '../../src/mcp/task-projection.js';
import { CreateTaskResultSchema, GetTaskResultSchema } from '../../src/mcp/wire-results.js';
import type { Disposition, StoredCallToolResult, TaskSnapshot } from '../../workflows/types.js';
import { TERMINAL_RESULTS, workingSnapshot } from '../support/snapshot-fixture.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const TASK_ID = '0123456789abcdef0123456789abcdef.786512e2-9e0d-44bd-8f29-789f320fe840';

function completed(result: StoredCallToolResult): TaskSnapshot {
  return workingSnapshot({
    status: 'completed',
    phase: 'terminal',
    result,
    disposition: result._meta[DISPOSITION] as Disposition,
    claimed: true,
  });
}

describe('task results validate against the official 2026-07-28 tasks schemas (ext-tasks 0.2.2)', () => {
  it.each(TERMINAL_RESULTS)(
    'a completed task whose result is $name is a valid tasks/get result, and its result a complete CallToolResult',
    ({ result }) => {
      const out = getTaskResult(TASK_ID, completed(result));
      expect(GetTaskResultV2Schema.safeParse(out).success).toBe(true);
      const embedded = out.result as Record<string, unknown>;
      expect(embedded.resultType).toBe('complete');
      const parsed = CallToolResultV2Schema.safeParse(embedded);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
      // nothing else of the stored result changed
      const { resultType: _, ...rest } = embedded;
      expect(rest).toEqual(result);
    },
  );

  it('working, input_required, failed and cancelled tasks are valid tasks/get results, and a new task a valid CreateTaskResult', () => {
    const working = workingSnapshot();
    expect(CreateTaskResultV2Schema.safeParse(createTaskResult(TASK_ID, working)).success).toBe(true);
    const inputRequired = workingSnapshot({
      status: 'input_required',
      inputRequests: {
        justification: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: 'Why?',
            requestedSchema: {
              type: 'object',
              properties: { justification: { type: 'string', minLength: 10, maxLength: 1000, description: 'Why' } },
              required: ['justification'],
            },
          },
        },
      },
    });
    const failed = workingSnapshot({ status: 'failed', phase: 'terminal', error: { code: -32603, message: 'Internal error' } });
    const cancelled = workingSnapshot({ status: 'cancelled', phase: 'terminal' });
    for (const s of [working, inputRequired, failed, cancelled]) {
      const parsed = GetTaskResultV2Schema.safeParse(getTaskResult(TASK_ID, s));
      expect(parsed.success, `${s.status}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});

// The front types these shapes with its own schemas (the SDK has none for the 2026-07-28 tasks
// extension): they must accept every shape the official schemas accept above.
describe("the front's own task schemas (src/mcp/wire-results.ts) accept every shape it puts on the wire", () => {
  it.each(TERMINAL_RESULTS)('a completed task whose result is $name', ({ result }) => {
    const s = completed(result);
    const got = GetTaskResultSchema.safeParse(getTaskResult(TASK_ID, s));
    expect(got.success, JSON.stringify(got.error?.issues)).toBe(true);
    expect(CreateTaskResultSchema.safeParse(createTaskResult(TASK_ID, s)).success).toBe(true);
  });

  it('working, input_required (with its form), failed and cancelled tasks', () => {
    const snapshots = [
      workingSnapshot(),
      workingSnapshot({
        status: 'input_required',
        inputRequests: {
          justification: {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message: 'Why?',
              requestedSchema: {
                type: 'object',
                properties: { justification: { type: 'string', minLength: 10, maxLength: 1000, description: 'Why' } },
                required: ['justification'],
              },
            },
          },
        },
      }),
      workingSnapshot({ status: 'failed', phase: 'terminal', error: { code: -32603, message: 'Internal error' } }),
      workingSnapshot({ status: 'cancelled', phase: 'terminal' }),
    ];
    for (const s of snapshots) {
      const got = GetTaskResultSchema.safeParse(getTaskResult(TASK_ID, s));
      expect(got.success, `${s.status}: ${JSON.stringify(got.error?.issues)}`).toBe(true);
      const created = CreateTaskResultSchema.safeParse(createTaskResult(TASK_ID, s));
      expect(created.success, `${s.status}: ${JSON.stringify(created.error?.issues)}`).toBe(true);
    }
  });
});
