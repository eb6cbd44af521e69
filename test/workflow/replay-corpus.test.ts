// Scope: safe upgrades. Every recorded history in test/workflow/fixtures/ (each released workflow
// version running approve, deny, expiry, chained request, in-task input and cancel, recorded by
// fixtures/generate-replay-corpus.ts; plus older recordings; plus the submission limiter before and after
// its idle-timer patch, recorded by fixtures/generate-limiter-history.ts) replays with the current workflow code,
// as the worker bundles it (`bundleWorkflows`: workflows/index.ts and the OpenTelemetry workflow
// interceptors). A change that alters the commands of a recorded run
// without a `patched(...)` guard fails here before it reaches a worker (docs/OPERATIONS.md §Upgrades).
import { readdirSync, readFileSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleWorkflows } from '../../src/worker.js';

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

describe('recorded approval histories replay with the current workflow code', () => {
  it('the corpus covers approve, deny, expiry, chained request, in-task input and cancel', () => {
    for (const scenario of ['approve', 'deny', 'expiry', 'chained-request', 'in-task-input', 'cancel']) {
      expect(histories.some((f) => f.endsWith(`-${scenario}.history.json`))).toBe(true);
    }
  });

  it('the current version records its search-attribute upserts, so their replay is covered too', () => {
    const current = histories.filter((f) => f.startsWith('search-attributes-'));
    expect(current.length).toBeGreaterThanOrEqual(6);
    for (const f of current) expect(readFileSync(new URL(f, FIXTURES), 'utf8')).toContain('EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES');
  });

  it('the current version ran under the OpenTelemetry workflow interceptors, so their replay is covered too', () => {
    const current = histories.filter((f) => f.startsWith('otel-interceptors-'));
    expect(current.length).toBeGreaterThanOrEqual(6);
    // the SDK records the interceptors' flags (`langUsedFlags`) in the run's first workflow task
    for (const f of current) expect(readFileSync(new URL(f, FIXTURES), 'utf8')).toMatch(/"langUsedFlags": \[\s*\d/);
  });

  it('the current version runs the status fetch and the policy re-check as local activities, so their replay is covered too', () => {
    const current = histories.filter((f) => f.startsWith('local-reads-'));
    expect(current.length).toBeGreaterThanOrEqual(6);
    const approve = readFileSync(new URL('local-reads-approve.history.json', FIXTURES), 'utf8');
    expect(approve).toContain('core_local_activity');
    expect(approve).not.toMatch(/"name": "(fetchApprovalStatus|evaluatePolicy)"/);
  });

  it.each(histories)('%s replays without nondeterminism', async (file) => {
    const history = historyFromJSON(JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')));
    await expect(Worker.runReplayHistory({ workflowBundle: bundle }, history)).resolves.toBeUndefined();
  });
});
