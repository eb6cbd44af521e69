/**
 * Every query and update of the fixture task workflow, defined once and imported by the workflow
 * and the conformance profile's MCP front (same pattern as `workflows/messages.ts`).
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { FixtureCancelOutcome, FixtureTaskSnapshot } from './fixture-types.js';

/**
 * Update used with Update-with-Start: resolves once the workflow has set its initial state, so
 * `CreateTaskResult` is only returned for a task that `tasks/get` can already see (SEP-2663
 * durable create).
 */
export const fixtureCreatedUpdate = defineUpdate<FixtureTaskSnapshot>('fixtureCreated');

/** Query behind `tasks/get` while the workflow is open. */
export const fixtureTaskQuery = defineQuery<FixtureTaskSnapshot>('fixtureTask');

/** Update behind `tasks/cancel`: a non-terminal task becomes `cancelled` before the update returns. */
export const fixtureCancelUpdate = defineUpdate<FixtureCancelOutcome>('fixtureCancel');

/**
 * Update behind `tasks/update`: responses for outstanding input request keys are recorded and
 * those keys removed before the update returns; unknown keys are ignored (SEP-2322: ignore what
 * you do not recognize). Returns how many keys were accepted.
 */
export const fixtureInputUpdate = defineUpdate<number, [Record<string, unknown>]>('fixtureInput');
