/**
 * Activities of the fixture task workflow. Only one: `crashFixtureJob`, the "tool" of
 * `protocol_error_job`, which always throws a non-retryable failure so the workflow can show a
 * crash in the executing part becoming a `failed` task with an inlined JSON-RPC error (SEP-2663
 * §error semantics), as opposed to a tool-reported error (`completed` + `isError`).
 */
import { ApplicationFailure } from '@temporalio/activity';

/** The activity set, as the workflow sees it (imported there as a type only). */
export interface FixtureActivities {
  /** Always throws `ApplicationFailure` of type `FixtureCrash`, non-retryable. */
  crashFixtureJob(): Promise<void>;
}

/** Build the activities. */
export function createFixtureActivities(): FixtureActivities {
  return {
    async crashFixtureJob() {
      throw ApplicationFailure.nonRetryable('the fixture job crashed on purpose', 'FixtureCrash');
    },
  };
}
