/**
 * The fixture task workflow of the conformance profile: one Temporal workflow per task, exactly
 * like an approval task (Update-with-Start on create, a query behind `tasks/get`, updates behind
 * `tasks/cancel` and `tasks/update`, the closed run's result served after the end). It runs the
 * behaviour the official conformance runner's tasks scenarios expect of their fixture tools
 * (SEP-2663 lifecycle, cancellation, in-task `input_required` + `tasks/update`, tool error vs
 * protocol error).
 *
 * Workflow code: deterministic, no Node built-ins, activities imported as types only. Deliberately
 * knows nothing about approval: these tasks never carry SEP-2848 or SEP-2643 metadata.
 */
import { ActivityFailure, allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { FixtureActivities } from './fixture-activities.js';
import { fixtureCancelUpdate, fixtureCreatedUpdate, fixtureInputUpdate, fixtureTaskQuery } from './fixture-messages.js';
import type { FixtureInputRequest, FixtureTaskInput, FixtureTaskSnapshot, FixtureToolResult } from './fixture-types.js';

const activities = proxyActivities<FixtureActivities>({ startToCloseTimeout: '10 seconds', retry: { maximumAttempts: 1 } });

const iso = (ms: number): string => new Date(ms).toISOString();
const text = (t: string, isError = false): FixtureToolResult => ({ content: [{ type: 'text', text: t }], isError });

/** A form elicitation (`elicitation/create`) as an embedded input request. */
function elicit(message: string, properties: Record<string, unknown>, required: string[]): FixtureInputRequest {
  return { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: { type: 'object', properties, required } } };
}

/** Accepted form content of an elicitation response, or undefined (declined, cancelled, malformed). */
function accepted(response: unknown): Record<string, unknown> | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  const r = response as { action?: unknown; content?: unknown };
  if (r.action !== 'accept' || typeof r.content !== 'object' || r.content === null) return undefined;
  return r.content as Record<string, unknown>;
}

/** Run one fixture task to its terminal snapshot (which is also the workflow result). */
export async function fixtureTaskWorkflow(input: FixtureTaskInput): Promise<FixtureTaskSnapshot> {
  const createdAtMs = Date.now();
  const snap: FixtureTaskSnapshot = {
    ownerKey: input.ownerKey,
    tool: input.tool,
    status: 'working',
    statusMessage: 'The task is running.',
    createdAt: iso(createdAtMs),
    lastUpdatedAt: iso(createdAtMs),
    ttlMs: input.ttlMs,
    pollIntervalMs: input.pollIntervalMs,
  };
  const answers: Record<string, unknown> = {};
  const terminal = () => snap.status === 'completed' || snap.status === 'failed' || snap.status === 'cancelled';
  const touch = () => {
    snap.lastUpdatedAt = iso(Date.now());
  };
  const end = (
    patch: Pick<FixtureTaskSnapshot, 'status' | 'statusMessage'> & {
      result?: FixtureToolResult;
      error?: { code: number; message: string };
    },
  ) => {
    if (terminal()) return;
    Object.assign(snap, patch);
    delete snap.inputRequests;
    touch();
    // terminal: retrievable for at least retentionMs from now; ttlMs never shrinks
    snap.ttlMs = Math.max(snap.ttlMs, Date.now() - createdAtMs + input.retentionMs);
  };
  const askFor = (requests: Record<string, FixtureInputRequest>) => {
    snap.inputRequests = requests;
    snap.status = 'input_required';
    snap.statusMessage = 'The task is waiting for input; answer the input requests with tasks/update.';
    touch();
  };
  /** Wait until every outstanding request is answered (true) or the task was cancelled (false). */
  const inputsAnswered = async () => {
    await condition(() => terminal() || Object.keys(snap.inputRequests ?? {}).length === 0);
    if (terminal()) return false;
    delete snap.inputRequests;
    snap.status = 'working';
    snap.statusMessage = 'The task is running.';
    touch();
    return true;
  };

  setHandler(fixtureTaskQuery, () => snap);
  setHandler(fixtureCreatedUpdate, () => snap);
  setHandler(fixtureCancelUpdate, () => {
    if (terminal()) return 'already-terminal';
    end({ status: 'cancelled', statusMessage: 'The task was cancelled; it will not complete.' });
    return 'cancelled';
  });
  setHandler(
    fixtureInputUpdate,
    (responses) => {
      let taken = 0;
      const pending = snap.inputRequests;
      if (snap.status !== 'input_required' || !pending) return 0;
      for (const [key, value] of Object.entries(responses)) {
        if (!(key in pending)) continue; // not an outstanding request: ignored
        answers[key] = value;
        delete pending[key];
        taken++;
      }
      if (taken) touch();
      return taken;
    },
    {
      validator: (responses) => {
        if (typeof responses !== 'object' || responses === null || Array.isArray(responses))
          throw new Error('inputResponses must be an object');
      },
    },
  );

  // Sets the initial state synchronously (before the first await), so the create update already
  // sees an `input_required` task with its requests.
  const args = input.arguments;
  switch (input.tool) {
    case 'slow_compute': {
      const seconds = Math.min(3600, Math.max(0, Number(args.seconds) || 0));
      const label = typeof args.label === 'string' ? args.label : 'job';
      if (seconds > 0) await condition(terminal, seconds * 1000);
      end({ status: 'completed', statusMessage: 'The task completed.', result: text(`slow_compute ${label}: done after ${seconds} s`) });
      break;
    }
    case 'failing_job': {
      await condition(terminal, 1000);
      end({
        status: 'completed',
        statusMessage: 'The task completed; the tool reported an error.',
        result: text('failing_job ran and failed: the job reported an error.', true),
      });
      break;
    }
    case 'protocol_error_job': {
      try {
        await activities.crashFixtureJob();
        end({ status: 'completed', statusMessage: 'The task completed.', result: text('protocol_error_job did not crash') });
      } catch (err) {
        if (!(err instanceof ActivityFailure)) throw err;
        end({
          status: 'failed',
          statusMessage: 'The task failed.',
          error: { code: -32603, message: 'Internal error: protocol_error_job crashed' },
        });
      }
      break;
    }
    case 'confirm_delete': {
      const filename = typeof args.filename === 'string' ? args.filename : 'the file';
      askFor({ confirm: elicit(`Delete ${filename}?`, { confirm: { type: 'boolean', description: 'true to delete' } }, ['confirm']) });
      if (!(await inputsAnswered())) break;
      const yes = accepted(answers.confirm)?.confirm === true;
      end({
        status: 'completed',
        statusMessage: 'The task completed.',
        result: text(yes ? `Deleted ${filename}.` : `Kept ${filename}; nothing was deleted.`),
      });
      break;
    }
    case 'multi_input': {
      askFor({
        name: elicit('Your name?', { name: { type: 'string' } }, ['name']),
        confirm: elicit('Proceed?', { confirm: { type: 'boolean' } }, ['confirm']),
      });
      if (!(await inputsAnswered())) break;
      const name = accepted(answers.name)?.name;
      end({
        status: 'completed',
        statusMessage: 'The task completed.',
        result: text(`multi_input: got both answers (name ${typeof name === 'string' ? name : 'not given'}).`),
      });
      break;
    }
    case 'test_tool_with_task': {
      await condition(terminal, 200);
      const name = typeof args.user_name === 'string' ? args.user_name : 'stranger';
      end({ status: 'completed', statusMessage: 'The task completed.', result: text(`Hello, ${name}! (from a task)`) });
      break;
    }
  }
  await condition(allHandlersFinished);
  return snap;
}
