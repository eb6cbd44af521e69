// Scope: safe upgrades (docs/OPERATIONS.md §Upgrades). Every recorded history in
// test/workflow/fixtures/ replays with the current workflow code as the worker bundles it
// (`bundleWorkflows`: workflows/index.ts and the OpenTelemetry workflow interceptors), and the
// versioning rule holds: the current version (`workflows/version.ts`) has its corpus (the six
// approval scenarios and the limiter, recorded by fixtures/generate-replay-corpus.ts and
// generate-limiter-history.ts), and every `patched()` id in workflows/ is listed in `PATCH_IDS`.
// A change that alters the commands of a recorded run without a patch fails here before it
// reaches a worker.
import { readdirSync, readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflows } from '../../src/worker.js';
import { PATCH_IDS, WORKFLOW_VERSION } from '../../workflows/version.js';

const FIXTURES = new URL('./fixtures/', import.meta.url);
const histories = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.history.json'))
  .sort();

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') }); // each replay logs its worker's state changes at INFO
  } catch {
    // already installed in this process
  }
  bundle = await bundleWorkflows(); // exactly the worker's bundle, OpenTelemetry workflow interceptors included
});

const SCENARIOS = ['approve', 'deny', 'expiry', 'chained-request', 'in-task-input', 'cancel'] as const;
const WORKFLOWS = new URL('../../workflows/', import.meta.url);

describe('recorded approval histories replay with the current workflow code', () => {
  it(`the current version (v${WORKFLOW_VERSION}) has its corpus: approve, deny, expiry, chained request, in-task input, cancel, and the limiter`, () => {
    for (const scenario of SCENARIOS) expect(histories).toContain(`v${WORKFLOW_VERSION}-${scenario}.history.json`);
    expect(histories).toContain(`v${WORKFLOW_VERSION}-limiter-idle.history.json`);
  });

  it('the current corpus records the current shape: search-attribute upserts, the task record in the memo, the fallback poll as one retried activity, the OpenTelemetry interceptors', () => {
    const approve = readFileSync(new URL(`v${WORKFLOW_VERSION}-approve.history.json`, FIXTURES), 'utf8');
    expect(approve).toContain('EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
    expect(approve).toContain('EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED');
    // the decision was found by the poll: one timer before it, no timer per poll
    expect(approve.match(/EVENT_TYPE_TIMER_STARTED/g)).toHaveLength(1);
    expect(approve).toMatch(/"name": "fetchApprovalStatus"/);
    // the SDK records the interceptors' flags (`langUsedFlags`) in the run's first workflow task
    expect(approve).toMatch(/"langUsedFlags": \[\s*\d/);
  });

  it('every patched() id in workflows/ is listed in workflows/version.ts PATCH_IDS, and every listed id is used', () => {
    const used = new Set<string>();
    for (const f of readdirSync(WORKFLOWS).filter((n) => n.endsWith('.ts'))) {
      // code only: comments may name the functions
      const text = readFileSync(new URL(f, WORKFLOWS), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      for (const m of text.matchAll(/\b(?:patched|deprecatePatch)\(\s*(['"`])([^'"`]+)\1/g)) used.add(m[2]!);
      // an id held in a constant: `patched(SOME_PATCH)` with `SOME_PATCH = '<id>'` in the same file
      for (const m of text.matchAll(/\b(?:patched|deprecatePatch)\(\s*([A-Z_]+)\s*\)/g)) {
        const def = new RegExp(`${m[1]}\\s*=\\s*['"]([^'"]+)['"]`).exec(text);
        used.add(def ? def[1]! : `<unresolved ${m[1]}>`);
      }
    }
    expect([...used].sort()).toEqual(Object.keys(PATCH_IDS).sort());
  });

  it.each(histories)('%s replays without nondeterminism', async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')));
    await expect(Worker.runReplayHistory({ workflowBundle: bundle }, history)).resolves.toBeUndefined();
  });
});
