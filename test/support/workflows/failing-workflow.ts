// A workflow whose every workflow task fails (as a nondeterminism error or a bug would): used by
// test/e2e/workflow-task-watchdog.test.ts to show the watchdog leaves failing tasks alone.
export async function alwaysFailingWorkflow(): Promise<void> {
  throw new TypeError('this workflow task fails on every worker');
}
