/**
 * `submit_change`: seed 004's change-management tool as a native, gated tool (docs/CHANGE-GATE.md).
 *
 * Arguments are seed 004's `ChangeRequest` (field rules in {@link ChangeRequestSchema}). Who must
 * agree to which change is policy, not code (`policies/submit_change.cedar`): low risk runs, medium
 * risk needs the requester's own in-band confirmation, high risk and production database migrations
 * go to the change-advisory group out of band.
 *
 * Idempotent by `change_id` (`admit`, asked by the gate before policy): the first caller and body
 * seen under a `change_id` own it; the same body from the same caller again is the same call (the
 * call binding joins the same task, or asks the same confirmation again); another body, or another
 * caller, is refused with -32602 at `change_id`.
 *
 * Long-running (`longRunning`): an execution applies the change in steps (a database migration five),
 * one every `stepMs`, reporting each as progress; the register (`change-store.ts`) records each
 * step and the result, and answers the idempotency hook after a lost attempt.
 *
 * Deliberately does not touch any real system: the steps are paced waits, the effect is the register.
 */
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { z } from 'zod';
import {
  ToolOutcomeUnknownError,
  type Admission,
  type ExecutionRecord,
  type Tool,
  type ToolExecutionContext,
  type ToolResult,
} from './tool.js';
import type { ChangeStore } from './change-store.js';

const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (
  input: unknown,
) => string | undefined;

/** Tool name on the MCP wire and the Cedar resource id. */
export const SUBMIT_CHANGE_TOOL_NAME = 'submit_change';

/**
 * Seed 004's `ChangeRequest` (strict: unknown keys are refused):
 * - `change_id`: `chg_` + 8 or more of `[a-z0-9]` (at most 64 characters in all);
 * - `kind`: `finance_transfer` | `db_migration` | `infra_deploy`;
 * - `title`: 3–120 characters;
 * - `description`: default `""`, at most 2000 characters;
 * - `risk`: `low` | `medium` | `high`, default `medium`;
 * - `impact_scope`, `requested_by`: optional, 1–200 characters. The seed allows `null`; here an
 *   absent field says the same (a JSON null cannot reach Cedar, which would deny the call).
 */
export const ChangeRequestSchema = z.strictObject({
  change_id: z
    .string()
    .max(64)
    .regex(/^chg_[a-z0-9]{8,}$/)
    .describe('Change id: chg_ followed by at least 8 lowercase letters or digits. One body per id.'),
  kind: z.enum(['finance_transfer', 'db_migration', 'infra_deploy']).describe('What kind of change this is.'),
  title: z.string().min(3).max(120).describe('Short title, 3 to 120 characters.'),
  description: z.string().max(2000).default('').describe('What the change does and why.'),
  risk: z
    .enum(['low', 'medium', 'high'])
    .default('medium')
    .describe('Risk tier: low runs, medium needs your confirmation, high needs the change-advisory group.'),
  impact_scope: z.string().min(1).max(200).optional().describe('Where the change lands, e.g. production or staging.'),
  requested_by: z.string().min(1).max(200).optional().describe('Who asked for the change (informational).'),
});

/** Parsed `submit_change` arguments. */
export type ChangeRequest = z.infer<typeof ChangeRequestSchema>;

/** The steps an execution applies, per kind; labels are fixed text shown as progress. */
export const CHANGE_STEPS: Record<ChangeRequest['kind'], readonly string[]> = {
  db_migration: ['taking a backup', 'checking the schema', 'applying the migration', 'verifying the data', 'recording the change'],
  infra_deploy: ['building the release', 'deploying to canary', 'rolling out', 'checking health'],
  finance_transfer: ['booking the transfer', 'reconciling'],
};

/**
 * SHA-256 (hex) of the JCS form of `{caller, body}` (`callerKey` as the gate passes it, the parsed
 * arguments): "the same caller and body" for idempotency. The caller is part of it because the call
 * binding is per caller: the same body from another caller would be another task, and so a second
 * execution of one change.
 */
export function changeBodyDigest(args: ChangeRequest, callerKey: string): string {
  return createHash('sha256')
    .update(canonicalize({ caller: callerKey, body: args }) ?? '', 'utf8')
    .digest('hex');
}

/** Options of {@link createSubmitChangeTool}. */
export interface SubmitChangeOptions {
  /** Pace of one step, ms (`COUNTERSIGN_CHANGE_STEP_MS`); 0 in unit tests. */
  stepMs: number;
  /** Waits `ms` (default: a timer); injectable so unit tests do not wait. */
  sleep?: (ms: number) => Promise<void>;
}

function appliedResult(args: ChangeRequest, steps: number): ToolResult {
  return {
    content: [{ type: 'text', text: `Change ${args.change_id} (${args.kind}) applied: ${steps} of ${steps} steps done.` }],
    structuredContent: { change_id: args.change_id, kind: args.kind, steps },
  };
}

/**
 * Create `submit_change` over `store`. `execute` applies the steps of the change's kind one every
 * `stepMs` (resuming after the last recorded step for a repeated execution id), reports each as
 * progress, and returns "Change chg_… (db_migration) applied: 5 of 5 steps done." with
 * `structuredContent` `{change_id, kind, steps}`. Throws `ChangeStoreError('fenced')` (an execution
 * error; nothing applied) for an execution id already settled as not executed, and
 * `ToolOutcomeUnknownError` when `ctx.signal` aborts between steps (some steps may be applied).
 */
export function createSubmitChangeTool(store: ChangeStore, opts: SubmitChangeOptions): Tool<typeof ChangeRequestSchema> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const maxSteps = Math.max(...Object.values(CHANGE_STEPS).map((s) => s.length));
  return {
    name: SUBMIT_CHANGE_TOOL_NAME,
    title: 'Submit a change',
    description:
      'Submit a change request (finance transfer, database migration or infrastructure deploy) and apply it. ' +
      'Medium-risk changes ask you to confirm; high-risk changes and production database migrations need the ' +
      'change-advisory group, and the call then returns a task to poll. A change_id names one body only.',
    inputSchema: ChangeRequestSchema,
    version: '1',
    longRunning: { timeoutMs: Math.max(300_000, 4 * maxSteps * opts.stepMs), heartbeatMs: 5_000 },
    async admit(args: ChangeRequest, ctx: { callerKey: string }): Promise<Admission> {
      if (store.admit(args.change_id, changeBodyDigest(args, ctx.callerKey)) !== 'conflict') return { ok: true };
      return {
        ok: false,
        path: 'change_id',
        message: 'this change_id was already submitted with a different body or by another caller; use a new change_id',
      };
    },
    async execute(args: ChangeRequest, ctx: ToolExecutionContext): Promise<ToolResult> {
      const steps = CHANGE_STEPS[args.kind];
      const done = store.begin(ctx.executionId, args.change_id, ctx.taskId);
      for (let i = done; i < steps.length; i++) {
        // the attempt was given up (e.g. its heartbeat timed out): apply no further step
        if (ctx.signal?.aborted) throw new ToolOutcomeUnknownError(`change ${args.change_id} stopped after ${i} of ${steps.length} steps`);
        ctx.progress?.({ step: i + 1, of: steps.length, label: steps[i] ?? '' });
        await sleep(opts.stepMs);
        store.stepApplied(ctx.executionId, i + 1);
      }
      const result = appliedResult(args, steps.length);
      store.complete(ctx.executionId, result);
      return result;
    },
    // The register is the effect's record: a completed run is the result; no run is fenced now;
    // a run begun but not completed may have applied steps, so it cannot tell (outcome-unknown).
    async resolveExecution(executionId: string): Promise<ExecutionRecord> {
      const settled = store.settle(executionId);
      if (settled.state === 'executed') return { executed: true, result: settled.result };
      if (settled.state === 'fenced') return { executed: false };
      throw new Error('the change was started and may be partly applied');
    },
  };
}
