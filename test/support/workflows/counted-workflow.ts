// A workflow that runs one activity and returns what it returned: used by
// test/e2e/workflow-task-watchdog.test.ts to count how many times a run held by a worker completes.
import { proxyActivities } from '@temporalio/workflow';

/** The activity the test process implements: counts calls per key and returns the count. */
export interface CountedActivities {
  countRun(key: string): Promise<number>;
}

const { countRun } = proxyActivities<CountedActivities>({ startToCloseTimeout: '30s' });

/** Runs `countRun(key)` once and returns its count. */
export async function countedWorkflow(key: string): Promise<number> {
  return countRun(key);
}
