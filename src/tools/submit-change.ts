/**
 * `submit_change`: seed 004's change-management tool as a native, gated tool (docs/CHANGE-GATE.md).
 *
 * Arguments are seed 004's `ChangeRequest` (field rules in {@link ChangeRequestSchema}). Who must
 * agree to which change is policy, not code (`policies/submit_change.cedar`): low risk runs, medium
 * risk needs the requester's own in-band confirmation, high risk and production database migrations
 * go to the change-advisory group out of band.
 *
 * Idempotent by `change_id`, and fenced to one execution per `change_id` (docs/CHANGE-GATE.md
 * §Idempotency): the first caller and body whose call *proceeds* (its task is created, or it runs
 * inline; `own`) own the `change_id`; another body, or another caller, is then refused with -32602
 * at `change_id` (`admit`, asked by the gate before policy). The same body from the same caller
 * again is the same call: while its task is open it joins it (call binding); once an execution
 * was claimed (`begin`, before any step) it never runs again but is answered from the register —
 * the recorded result, or an `isError` result naming the failure or the unknown outcome; after its
 * task ended without running, an `isError` result saying so.
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
  type AdmissionContext,
  type ExecutionRecord,
  type Tool,
  type ToolExecutionContext,
  type ToolResult,
} from './tool.js';
import type { ChangeRun, ChangeStore } from './change-store.js';
import { META } from '../../workflows/types.js';

const DISPOSITION_META = META.disposition;

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
 *   absent field says the same and `null` is refused (-32602), so a change has one spelling (policy
 *   would read a `null` as absent anyway, `src/policy/cedar-values.ts`).
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
  /** The clock that tells an interrupted run from a running one (default: the system clock). */
  now?: () => Date;
}

function appliedResult(args: ChangeRequest, steps: number): ToolResult {
  return {
    content: [{ type: 'text', text: `Change ${args.change_id} (${args.kind}) applied: ${steps} of ${steps} steps done.` }],
    structuredContent: { change_id: args.change_id, kind: args.kind, steps },
  };
}

const OTHER_OWNER = {
  ok: false as const,
  path: 'change_id',
  message: 'this change_id was already submitted with a different body or by another caller; use a new change_id',
};

/**
 * The answer to a repeat of a change whose one execution was claimed (`run`): the recorded result
 * as it was returned; else an `isError` result saying the change was not run again and why: the
 * run failed (`outcome: "failed"`); or it has no recorded outcome — `outcome-unknown` when `ended`
 * (its task ended, or its time limit passed: it was interrupted, e.g. by a crash between claim and
 * outcome), else `running-or-unknown`.
 */
export function repeatAnswer(args: ChangeRequest, run: ChangeRun, ended = false): ToolResult {
  if (run.outcome === 'executed' && run.result) return run.result;
  const total = CHANGE_STEPS[args.kind].length;
  const recorded = `${run.stepsDone} of ${total} steps recorded`;
  const what =
    run.outcome === 'failed'
      ? `already ran under this change_id (started ${run.startedAt}) and failed after ${run.stepsDone} of ${total} steps; part of it may be applied`
      : ended
        ? `was started under this change_id at ${run.startedAt} and was interrupted before it recorded an outcome (${recorded}): its outcome is unknown`
        : `was started under this change_id at ${run.startedAt} and has no recorded outcome yet (${recorded}): it is still running, or it was interrupted and its outcome is unknown`;
  return {
    content: [
      {
        type: 'text',
        text: `Not run again: change ${args.change_id} ${what}. A change_id is executed at most once; to apply a change again, submit it under a new change_id.`,
      },
    ],
    structuredContent: {
      change_id: args.change_id,
      outcome: run.outcome === 'failed' ? 'failed' : ended ? 'outcome-unknown' : 'running-or-unknown',
      steps: run.stepsDone,
    },
    isError: true,
  };
}

/** True when a task's stored result says the tool never ran (a denial: SEP-2848 `denied-not-executed`). */
function notExecuted(result: { _meta?: Record<string, unknown> }): boolean {
  return result._meta?.[DISPOSITION_META] === 'denied-not-executed';
}

/** What an execution that found the change already applied under another execution returns: it applied nothing. */
function alreadyApplied(args: ChangeRequest, run: ChangeRun): ToolResult {
  return {
    content: [
      {
        type: 'text',
        text: `Not run again: change ${args.change_id} was already applied under this change_id (started ${run.startedAt}); this call applied nothing. A change_id is executed at most once.`,
      },
    ],
    structuredContent: { change_id: args.change_id, outcome: 'executed', steps: run.stepsDone },
    isError: true,
  };
}

/** The answer to a repeat of a change whose task ended without running it (denied, expired, cancelled, failed). */
function endedUnexecutedAnswer(args: ChangeRequest, status: string | undefined, disposition: unknown): ToolResult {
  const how = typeof disposition === 'string' ? `${status ?? 'ended'}, ${disposition}` : (status ?? 'no longer retained');
  return {
    content: [
      {
        type: 'text',
        text:
          `Not run: change ${args.change_id} was submitted under this change_id and its task ended without running it (${how}). ` +
          'Nothing is pending. A change_id names one submission; to try again, submit the change under a new change_id.',
      },
    ],
    structuredContent: { change_id: args.change_id, outcome: 'not-executed' },
    isError: true,
  };
}

/**
 * Create `submit_change` over `store`. `execute` applies the steps of the change's kind one every
 * `stepMs` (resuming after the last recorded step for a repeated execution id), reports each as
 * progress, and returns "Change chg_… (db_migration) applied: 5 of 5 steps done." with
 * `structuredContent` `{change_id, kind, steps}`. When another execution already holds the
 * change's claim it runs nothing and returns {@link repeatAnswer}. Throws `ChangeStoreError('fenced')` (an execution
 * error; nothing applied) for an execution id already settled as not executed, and
 * `ToolOutcomeUnknownError` when `ctx.signal` aborts between steps (some steps may be applied).
 */
export function createSubmitChangeTool(store: ChangeStore, opts: SubmitChangeOptions): Tool<typeof ChangeRequestSchema> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const maxSteps = Math.max(...Object.values(CHANGE_STEPS).map((s) => s.length));
  const timeoutMs = Math.max(300_000, 4 * maxSteps * opts.stepMs);
  const now = opts.now ?? (() => new Date());
  // A run with no outcome past the tool's own time limit was interrupted: a task's attempt is stopped
  // there (start-to-close), and an inline run's paced steps take at most a quarter of it.
  const overdue = (run: ChangeRun) => now().getTime() - Date.parse(run.startedAt) > timeoutMs;
  return {
    name: SUBMIT_CHANGE_TOOL_NAME,
    title: 'Submit a change',
    description:
      'Submit a change request (finance transfer, database migration or infrastructure deploy) and apply it. ' +
      'Medium-risk changes ask you to confirm; high-risk changes and production database migrations need the ' +
      'change-advisory group, and the call then returns a task to poll. A change_id names one change and runs at most ' +
      'once: sending the same call again returns its recorded outcome; a different body under a used change_id is refused.',
    inputSchema: ChangeRequestSchema,
    version: '2',
    longRunning: { timeoutMs, heartbeatMs: 5_000 },
    // Read-only: a call that is then denied or refused must not own the change_id (`own` does that).
    async admit(args: ChangeRequest, ctx: AdmissionContext): Promise<Admission> {
      const look = store.lookup(args.change_id, changeBodyDigest(args, ctx.callerKey));
      if (look.state === 'conflict') return OTHER_OWNER;
      if (look.state === 'free') return { ok: true };
      const { run, taskId } = look;
      // a run with an outcome that is not its task's (it ran inline, e.g. confirmed from a client without tasks)
      if (run && run.outcome !== 'none' && run.taskId !== taskId) return { ok: 'answered', result: repeatAnswer(args, run) };
      if (taskId) {
        const task = await ctx.taskOf(taskId);
        if (task.open) return { ok: true }; // the call binding joins it
        // the task ended: its own stored answer while retained, the same CallToolResult (a lost run: outcome-unknown)
        if (task.result && (run || !notExecuted(task.result))) return { ok: 'answered', result: task.result };
        if (run) return { ok: 'answered', result: repeatAnswer(args, run, true) };
        return { ok: 'answered', result: endedUnexecutedAnswer(args, task.status, task.result?._meta?.[DISPOSITION_META]) };
      }
      // an inline run holds the claim: its recorded result, or failed, or still running / interrupted (never re-run)
      if (run) return { ok: 'answered', result: repeatAnswer(args, run, overdue(run)) };
      return { ok: true }; // owned, nothing claimed (e.g. stopped between own and begin): nothing ran
    },
    async own(args: ChangeRequest, ctx: { callerKey: string; taskId?: string }) {
      const owned = store.own(args.change_id, changeBodyDigest(args, ctx.callerKey), ctx.taskId);
      return owned === 'conflict' ? OTHER_OWNER : { ok: true as const, created: owned === 'new' };
    },
    async disown(args: ChangeRequest, ctx: { callerKey: string }) {
      store.disown(args.change_id, changeBodyDigest(args, ctx.callerKey));
    },
    async execute(args: ChangeRequest, ctx: ToolExecutionContext): Promise<ToolResult> {
      const steps = CHANGE_STEPS[args.kind];
      // the claim, before any step: one execution per change_id, whichever path (inline or task) comes first
      const claim = store.begin(ctx.executionId, args.change_id, ctx.taskId);
      if (!claim.claimed) {
        return claim.run.outcome === 'executed' ? alreadyApplied(args, claim.run) : repeatAnswer(args, claim.run, overdue(claim.run));
      }
      try {
        for (let i = claim.stepsDone; i < steps.length; i++) {
          // the attempt was given up (e.g. its heartbeat timed out): apply no further step
          if (ctx.signal?.aborted)
            throw new ToolOutcomeUnknownError(`change ${args.change_id} stopped after ${i} of ${steps.length} steps`);
          ctx.progress?.({ step: i + 1, of: steps.length, label: steps[i] ?? '' });
          await sleep(opts.stepMs);
          store.stepApplied(ctx.executionId, i + 1);
        }
      } catch (err) {
        if (!(err instanceof ToolOutcomeUnknownError)) store.fail(ctx.executionId);
        throw err;
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
      throw new ToolOutcomeUnknownError('the change was started and may be partly applied');
    },
  };
}
