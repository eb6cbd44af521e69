/**
 * The workflow version and its patch ids: the versioning rule of docs/OPERATIONS.md §Upgrades,
 * enforced by `test/workflow/replay-corpus.test.ts`. Constants only (workflow-safe).
 *
 * - `WORKFLOW_VERSION` names the released shape of the approval and limiter workflows whose
 *   recorded histories (`test/workflow/fixtures/v<version>-*.history.json`) every later version must
 *   replay.
 * - `PATCH_IDS` lists every `patched()` id the workflows use, each with the version that added it.
 *   v0.1 is the baseline: nothing was released before it, so it has none.
 */

/** The current workflow version (a new one is recorded whenever a patch id is added). */
export const WORKFLOW_VERSION = '0.1';

/** Every patch id of `workflows/` (`patched(id)`), with the version that added it; empty at the v0.1 baseline. */
export const PATCH_IDS: Readonly<Record<string, string>> = {};
