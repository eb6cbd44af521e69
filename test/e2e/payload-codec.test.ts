// Scope: data at rest, end to end on a real Temporal dev server: with the stack's AES-256-GCM payload codec on client and worker, the raw workflow history of an approved-and-executed task holds no plaintext argument value, and only a holder of the key can open it.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from '../../src/stack.js';
import { ENCRYPTED_ENCODING, PayloadCodecError, generatePayloadKey, payloadCodecFromKeyList } from '../../src/temporal/payload-codec.js';
import { parseTaskId } from '../../workflows/task-id.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';
import { clientFor, decide, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';

let stack: Stack;
let raw: Connection;
beforeAll(async () => {
  stack = await startTestStack(testConfig());
  raw = await Connection.connect({ address: stack.urls.temporal });
});
afterAll(async () => {
  await raw?.close();
  await stack?.stop();
});

/** Every string form of a history: keys, scalars, and each byte field as base64, UTF-8 and Latin-1. */
function dumpAll(value: unknown, out: string[] = [], seen = new Set<unknown>()): string[] {
  if (value instanceof Uint8Array) {
    const b = Buffer.from(value);
    out.push(b.toString('base64'), b.toString('utf8'), b.toString('latin1'));
  } else if (Array.isArray(value)) {
    for (const v of value) dumpAll(v, out, seen);
  } else if (value !== null && typeof value === 'object') {
    if (seen.has(value)) return out;
    seen.add(value);
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      dumpAll(v, out, seen);
    }
  } else if (value !== undefined) {
    out.push(String(value));
  }
  return out;
}

/** Payload messages (objects with `data` bytes and a `metadata` map) anywhere in a history. */
function payloadsIn(
  value: unknown,
  found: Array<{ path: string; payload: Payload }> = [],
  path = '',
): Array<{ path: string; payload: Payload }> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return found;
  const o = value as Record<string, unknown>;
  if (o.data instanceof Uint8Array && o.metadata !== null && typeof o.metadata === 'object') {
    found.push({ path, payload: o as Payload });
    return found;
  }
  for (const [k, v] of Object.entries(o)) payloadsIn(v, found, `${path}.${k}`);
  return found;
}

describe('payload codec: arguments are not stored in plain text', () => {
  it('the raw history of an approved-and-executed task holds no planted argument value, and the task still completes through MCP', async () => {
    const planted = `PLANTED-${randomUUID()}`;
    const plantedTo = `acct-planted-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const alice = await clientFor(stack, 'alice');
    const created = await alice.request<WireTask>('tools/call', {
      name: 'wire_transfer',
      arguments: { to: plantedTo, amount: 50_000, memo: planted },
    });
    expect(created.resultType).toBe('task');
    expect(await decide(stack, planted, 'approve')).toBe(200);
    // the codec round-trips: query, update, result and memo all decode for the MCP front
    const done = await waitForTerminal(alice, created.taskId);
    expect(done.status).toBe('completed');
    expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
    expect(JSON.stringify(done.result)).toContain(plantedTo); // the tool ran with the decoded arguments
    expect(stack.ledger.countByTask(created.taskId)).toBe(1);

    // Read the history as someone with server access but no key would: a client without the codec.
    const ids = parseTaskId(created.taskId)!;
    const keyless = new Client({ connection: raw, namespace: stack.config.TEMPORAL_NAMESPACE });
    const run = keyless.workflow.getHandle(ids.workflowId, ids.runId);
    // tasks/get answers completed from the task record, written when the task ends; the run itself
    // closes a workflow task or two later (the limiter release): read its history once it has
    const closed = (h: Awaited<ReturnType<typeof run.fetchHistory>>) =>
      (h.events ?? []).some((e) => e.workflowExecutionCompletedEventAttributes);
    let history = await run.fetchHistory();
    for (let i = 0; i < 100 && !closed(history); i++) {
      await new Promise((r) => setTimeout(r, 100));
      history = await run.fetchHistory();
    }
    const events = history.events ?? [];
    expect(events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool')).toBe(true);
    expect(events.some((e) => e.workflowExecutionCompletedEventAttributes)).toBe(true);

    const forms = [JSON.stringify(history), dumpAll(history).join('\n')];
    for (const text of forms) {
      for (const secret of [planted, plantedTo, Buffer.from(planted).toString('base64'), 'acct-planted-'])
        expect(text).not.toContain(secret);
    }

    // Every payload in the history is sealed: the started event's input, memo, activity inputs and results, updates, the result.
    const payloads = payloadsIn(history);
    expect(payloads.length).toBeGreaterThan(5);
    const notSealed = payloads.filter(({ payload }) => Buffer.from(payload.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING);
    // Not ours to seal: search attributes, the SDK's patch markers (they hold only the patch id), and
    // the OpenTelemetry interceptors' headers (workflows/tracing-interceptors.ts), which the SDK does
    // not pass through the codec: they must hold W3C trace context and nothing else.
    const tracerData = /header\.fields\._tracer-data$/;
    expect(
      notSealed
        .map((p) => p.path)
        .filter((p) => !/searchAttributes|markerRecordedEventAttributes\.details\.patch-data/.test(p) && !tracerData.test(p)),
    ).toEqual([]);
    for (const { payload } of notSealed.filter((p) => tracerData.test(p.path))) {
      const carrier = JSON.parse(Buffer.from(payload.data ?? []).toString()) as Record<string, unknown>;
      expect(Object.keys(carrier).filter((k) => k !== 'traceparent' && k !== 'tracestate')).toEqual([]);
    }
    const started = events[0]!.workflowExecutionStartedEventAttributes!;
    const input = started.input!.payloads![0]!;
    expect(Buffer.from(input.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);
    expect(Buffer.from(started.memo!.fields!.owner!.metadata!.encoding!).toString()).toBe(ENCRYPTED_ENCODING);

    // Positive control: the stack's key ring opens the same bytes and finds the planted value.
    const ring = payloadCodecFromKeyList(stack.secrets.payloadKeys);
    const [opened] = await ring.decode([input]);
    expect(JSON.stringify(defaultPayloadConverter.fromPayload(opened!))).toContain(planted);

    // A codec that lacks the key id refuses, with a clear error, and returns no plaintext.
    const stranger = payloadCodecFromKeyList([generatePayloadKey()]);
    const err = await stranger.decode([input]).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PayloadCodecError);
    expect((err as PayloadCodecError).code).toBe('unknown-key');
    expect((err as Error).message).toMatch(/unknown key id/);
  });

  it('a workflow started on the server with unsealed (forged) input never runs: the worker refuses to decode it', async () => {
    const plainClient = new Client({ connection: raw, namespace: stack.config.TEMPORAL_NAMESPACE });
    const forgedId = `${APPROVAL_WORKFLOW_ID_PREFIX}${'f'.repeat(32)}`;
    const before = stack.ledger.count();
    const handle = await plainClient.workflow.start('approvalWorkflow', {
      taskQueue: stack.config.COUNTERSIGN_TASK_QUEUE,
      workflowId: forgedId,
      args: [
        {
          binding: { tool: 'wire_transfer', arguments: { to: 'acct-777', amount: 90000 }, principal: { iss: 'x', sub: 'alice' } },
          ownerKey: 'x',
          config: {},
        },
      ],
    });
    try {
      let failed = false;
      for (let i = 0; i < 100 && !failed; i++) {
        const events = (await handle.fetchHistory()).events ?? [];
        failed = events.some((e) => e.workflowTaskFailedEventAttributes);
        if (!failed) await new Promise((r) => setTimeout(r, 100));
      }
      expect(failed).toBe(true);
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
      expect(stack.ledger.count()).toBe(before);
    } finally {
      await handle.terminate('test cleanup');
    }
  });
});
