// Scope: the shared set-up of the approval workflow's time-skipping tests: one test server and one
// workflow bundle per test file, and the base workflow configuration each file adjusts.
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll } from 'vitest';
import { temporalTestServerPath } from '../../src/temporal/binaries.js';
import type { ApprovalWorkflowConfig, ReEvaluation } from '../../workflows/types.js';

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

/** What {@link approvalWorkflowEnv} provides once its `beforeAll` has run. */
export interface ApprovalWorkflowEnv {
  env: TestWorkflowEnvironment;
  bundle: WorkflowBundleWithSourceMap;
}

/**
 * Registers `beforeAll` (a time-skipping test server from `.tools`, the bundle of
 * `workflows/approval.ts`) and `afterAll` (teardown) in the calling test file. Read the fields only
 * inside tests or hooks.
 */
export function approvalWorkflowEnv(): ApprovalWorkflowEnv {
  const holder = {} as ApprovalWorkflowEnv;
  beforeAll(async () => {
    holder.env = await TestWorkflowEnvironment.createTimeSkipping({
      server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
    });
    holder.bundle = await bundleWorkflowCode({ workflowsPath: new URL('../../workflows/approval.ts', import.meta.url).pathname });
  });
  afterAll(async () => {
    await holder.env?.teardown();
  });
  return holder;
}

/** The workflow configuration of these tests: day-long retention, hour-long status polls, 3 generations; `overrides` win. */
export function workflowTestConfig(overrides: Partial<ApprovalWorkflowConfig> = {}): ApprovalWorkflowConfig {
  return {
    resultRetentionMs: DAY,
    clientPollIntervalMs: 5000,
    statusPollInitialMs: HOUR,
    statusPollMaxMs: HOUR,
    maxGenerations: 3,
    retryBaseMs: 60_000,
    retryMaxMs: 10 * 60_000,
    executionTimeoutMs: 60_000,
    maxRequestWindowMs: 30 * DAY,
    ...overrides,
  };
}

/** A re-evaluation answering `request` for a further approval that needs a justification (in-task input, generation 2). */
export const JUSTIFIED_REQUEST: ReEvaluation = {
  outcome: 'request',
  accessRequest: {
    approverGroup: 'risk',
    requestTtlMs: DAY,
    reason: 'A risk approval is required.',
    policyId: 'p2',
    requiresJustification: true,
  },
};
