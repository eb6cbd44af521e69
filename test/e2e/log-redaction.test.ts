// Scope: logs, end to end: a whole stack logging at debug to a file runs every path (inline allow, approve → execute with a hidden reference, approver deny, final deny, invalid arguments, no-tasks client, cancel, bad bearer tokens, forged and replayed callbacks); the log file then holds no planted argument value, bearer token, approval-service client token, callback secret, approver secret or payload key.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, signCallback } from '@countersign/arap';
import { McpRpcError, WireClient } from '@countersign/client';
import { createLogger } from '@countersign/http/log';
import { parseTaskId } from '../../workflows/task-id.js';
import { TASKS_EXTENSION } from '../../workflows/wire.js';
import { basic, decide, pendingFor, startTestStack, testConfig, waitForTerminal, type WireTask } from '../support/stack-harness.js';

const DISPOSITION = 'io.modelcontextprotocol/tool-approval-disposition';
const TASKS = { extensions: { [TASKS_EXTENSION]: {} } };

async function rpcError(p: Promise<unknown>): Promise<McpRpcError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpRpcError);
  return err as McpRpcError;
}

describe('logs redact secrets', () => {
  it('a full run at debug level logs no planted argument, token, client token, callback secret, approver secret or payload key', async () => {
    const logFile = join(mkdtempSync(join(tmpdir(), 'countersign-log-')), 'stack.log');
    const logger = createLogger({ level: 'debug', destination: logFile });
    const stack = await startTestStack(testConfig(), logger);
    const secret = `SECRET-${randomUUID()}`;
    const plantedTo = `acct-secret-${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const badTokens = [`planted-bad-token-${randomUUID()}`];
    let token: string;
    const signatures: string[] = [];
    try {
      token = await stack.issuer.mintToken({ sub: 'alice' });
      const alice = new WireClient({ url: stack.urls.mcp, token, capabilities: TASKS });
      const transfer = (amount: number, memo: string, to = plantedTo) => ({ name: 'wire_transfer', arguments: { to, amount, memo } });

      // allowed: runs inline
      const inline = await alice.request<{ isError?: boolean }>('tools/call', transfer(1_000, `${secret}-inline`));
      expect(inline.isError).toBeFalsy();

      // requestable → approved → executed, with a hidden reference (writeOnly) the tool runs with
      const withReference = transfer(50_000, `${secret}-approve`);
      const approved = await alice.request<WireTask>('tools/call', {
        ...withReference,
        arguments: { ...withReference.arguments, reference: `${secret}-reference` },
      });
      expect(approved.resultType).toBe('task');
      expect(await decide(stack, `${secret}-approve`, 'approve', 'bob')).toBe(200);
      const done = await waitForTerminal(alice, approved.taskId);
      expect(done.result?._meta?.[DISPOSITION]).toBe('approved-executed');
      expect(stack.ledger.list().some((e) => e.reference === `${secret}-reference`)).toBe(true); // ran with the real value

      // requestable → denied by an approver
      const denied = await alice.request<WireTask>('tools/call', transfer(60_000, `${secret}-deny`));
      expect(await decide(stack, `${secret}-deny`, 'deny', 'carol')).toBe(200);
      expect((await waitForTerminal(alice, denied.taskId)).result?._meta?.[DISPOSITION]).toBe('denied-not-executed');

      // final (non-requestable) denial, invalid arguments, a client without tasks, a cancel
      const blocked = await alice.request<{ isError?: boolean }>('tools/call', transfer(10, `${secret}-blocked`, 'acct-666'));
      expect(blocked.isError).toBe(true);
      const invalid = await alice.request<{ isError?: boolean; content: Array<{ text: string }> }>('tools/call', {
        name: 'wire_transfer',
        arguments: { to: plantedTo, amount: -1, memo: `${secret}-invalid`, extra: secret },
      });
      expect(invalid.isError).toBe(true);
      expect(JSON.stringify(invalid)).not.toContain(secret); // the refusal names paths, never values
      const noTasks = new WireClient({ url: stack.urls.mcp, token, capabilities: {} });
      expect((await noTasks.request<{ isError?: boolean }>('tools/call', transfer(70_000, `${secret}-notasks`))).isError).toBe(true);
      const cancelled = await alice.request<WireTask>('tools/call', transfer(80_000, `${secret}-cancel`));
      await alice.request('tasks/cancel', { taskId: cancelled.taskId });
      expect((await alice.request<WireTask>('tasks/get', { taskId: cancelled.taskId })).status).toBe('cancelled');

      // bad bearer tokens: garbage, and alice's token with a forged signature
      const [head, body, sig] = token.split('.');
      badTokens.push(`${head}.${body}.${sig!.slice(0, -4)}AAAA`);
      for (const bad of badTokens) {
        const err = await rpcError(
          new WireClient({ url: stack.urls.mcp, token: bad, capabilities: TASKS }).request('tools/call', transfer(1, `${secret}-badtoken`)),
        );
        expect(err.httpStatus).toBe(401);
      }

      // forged callbacks: wrong signature; then a stale timestamp
      const { workflowId } = parseTaskId(approved.taskId)!;
      const origin = new URL(stack.urls.mcp).origin;
      const now = Math.floor(Date.now() / 1000);
      for (const ts of [now, now - 3_600]) {
        const res = await fetch(`${origin}/callbacks/arap/${workflowId}/1`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            [CALLBACK_TIMESTAMP_HEADER]: String(ts),
            [CALLBACK_SIGNATURE_HEADER]: `v2=${'ab'.repeat(32)}`,
          },
          body: JSON.stringify({ request_id: secret, status: 'approved', generation: 1 }),
        });
        expect(res.status).toBe(401);
      }

      // an authentic callback (signed with the real secret) that the workflow refuses: not for its current request
      const pending = await alice.request<WireTask>('tools/call', transfer(90_000, `${secret}-signed`));
      const raw = JSON.stringify({ request_id: `ar_${secret}`, status: 'approved', generation: 1 });
      const target = `/callbacks/arap/${parseTaskId(pending.taskId)!.workflowId}/1`;
      const signed = signCallback(stack.secrets.callbackSecret, target, raw, Date.now() / 1000);
      const res = await fetch(`${origin}${target}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [CALLBACK_TIMESTAMP_HEADER]: signed.timestamp,
          [CALLBACK_SIGNATURE_HEADER]: signed.signature,
        },
        body: raw,
      });
      expect(res.status).not.toBe(401);
      await alice.request('tasks/cancel', { taskId: pending.taskId });
      signatures.push(signed.signature.slice('v2='.length));

      // approver credentials: a wrong password and a right one over the API
      const bob = stack.secrets.approvers.find((a) => a.id === 'bob')!;
      expect(
        (await fetch(`${stack.urls.approvals}/access/v1/approvals/pending`, { headers: { authorization: basic('bob', `${bob.secret}x`) } }))
          .status,
      ).toBe(401);
      expect(await pendingFor(stack, 'bob')).toBeInstanceOf(Array);

      // the redaction paths themselves: a careless log call with the secrets, a config holding keys, arguments, headers
      stack.logger.child({ part: 'probe' }).warn(
        {
          secrets: stack.secrets,
          config: { ...stack.config, COUNTERSIGN_PAYLOAD_KEYS: stack.secrets.payloadKeys },
          arguments: { memo: secret },
          headers: { authorization: `Bearer ${token}` },
          token,
        },
        'redaction probe',
      );
      await stack.approvals.drainCallbacks(); // let in-flight callbacks land while the worker still runs
    } finally {
      await stack.stop();
      await new Promise<void>((resolve) => logger.flush(() => resolve()));
    }

    const log = readFileSync(logFile, 'utf8');
    // the run really logged (so an absence below means redaction, not silence)
    for (const line of [
      'tools/call allowed',
      'approval task created or joined',
      'access request submitted',
      'tools/call denied',
      'bearer token rejected',
      'backend callback rejected',
      'redaction probe',
    ]) {
      expect(log, line).toContain(line);
    }
    const [, , signature] = token.split('.');
    const forbidden: Record<string, string> = {
      'planted argument': secret,
      'hidden reference': `${secret}-reference`,
      'planted account': plantedTo,
      'bearer token': token,
      'bearer token signature': signature!,
      'approval service client token': stack.secrets.approvalsClientToken,
      'callback secret': stack.secrets.callbackSecret,
      'dedup key': stack.secrets.dedupKey,
      ...Object.fromEntries(stack.secrets.approvers.map((a) => [`approver secret of ${a.id}`, a.secret])),
      ...Object.fromEntries(
        stack.secrets.approvers.map((a) => [`basic credentials of ${a.id}`, basic(a.id, a.secret).slice('Basic '.length)]),
      ),
      ...Object.fromEntries(stack.secrets.payloadKeys.map((k) => [`payload key ${k.id}`, k.key])),
      ...Object.fromEntries(badTokens.map((t, i) => [`bad token ${i}`, t])),
      ...Object.fromEntries(signatures.map((t, i) => [`callback signature ${i}`, t])),
    };
    for (const [what, value] of Object.entries(forbidden)) {
      expect(value.length, what).toBeGreaterThan(8);
      expect(log.includes(value), `${what} found in the log`).toBe(false);
    }
  });
});
