// Scope: src/mcp/gate.ts — the audit line of an allowed call (written without a child logger, and
// only when info lines are written) over the shipped Cedar policies, the real wire_transfer tool and
// the process logger with its redaction (packages/http/src/log.ts). An allowed call touches no workflow, so the
// task service here offers only the keyed reference (as test/hostile/apps.ts does).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { approvalWorkflowId, createCallBinding, type CallBinding } from '../../src/binding/call-binding.js';
import { createLogger } from '@countersign/http/log';
import { gateToolCall, type GateCall, type GateDeps } from '../../src/mcp/gate.js';
import type { TaskService } from '../../src/mcp/task-service.js';
import { createCedarPdp } from '../../src/policy/cedar-pdp.js';
import { openLedger } from '../../src/tools/ledger.js';
import { createToolRegistry } from '../../src/tools/registry.js';
import { createWireTransferTool, WireTransferInputSchema } from '../../src/tools/wire-transfer.js';

const POLICY_DIR = fileURLToPath(new URL('../../policies', import.meta.url));
const DEDUP_KEY = 'gate-audit-line-test-dedup-key';
const ALICE: Principal = { iss: 'https://issuer.test', sub: 'alice' };

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

async function gateAt(level: string) {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-gate-audit-'));
  const logFile = join(dir, 'log.ndjson');
  const ledger = openLedger(':memory:');
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => ledger.close());
  const logger = createLogger({ level, destination: logFile });
  const references: string[] = [];
  const tasks = new Proxy({} as TaskService, {
    get: (_t, name) =>
      name === 'referenceOf'
        ? (b: CallBinding) => {
            const ref = approvalWorkflowId(DEDUP_KEY, b.digest);
            references.push(ref);
            return ref;
          }
        : () => {
            throw new Error(`an allowed call must not use the task service (${String(name)})`);
          },
  });
  const tools = createToolRegistry([createWireTransferTool(ledger)]);
  const deps: GateDeps = { tools, pdp: await createCedarPdp({ policyDir: POLICY_DIR }), tasks, logger, noTasksResponse: 'approval-tools' };
  // the destination writes asynchronously: read until the expected number of lines is there
  const read = (): Array<Record<string, unknown>> => {
    let text = '';
    try {
      text = readFileSync(logFile, 'utf8');
    } catch {
      // not created yet
    }
    return text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  const lines = async (expected: number): Promise<Array<Record<string, unknown>>> => {
    logger.flush();
    await vi.waitFor(() => expect(read().length).toBeGreaterThanOrEqual(expected), { timeout: 10_000 });
    return read();
  };
  return { deps, tools, ledger, references, lines, logFile, logger };
}

function call(args: Record<string, unknown>): GateCall {
  return {
    principal: ALICE,
    name: 'wire_transfer',
    arguments: args,
    clientSupportsTasks: true,
    mrtr: {
      state: undefined,
      inputResponses: undefined,
      mint: () => Promise.reject(new Error('an allowed call mints no requestState')),
    },
  };
}

describe('the audit line of an allowed call', () => {
  it("names the tool, the keyed reference of the call's binding, the decision and the permitting policy, and quotes no argument", async () => {
    const g = await gateAt('info');
    const args = { to: 'acct-4711', amount: 1234, memo: 'audit-line-memo-text' };
    const result = await gateToolCall(g.deps, call(args));
    expect(result.isError).toBe(false);
    expect(g.ledger.count()).toBe(1);
    // the reference the task of this very call would have: the binding computed here, independently
    const binding = createCallBinding({
      tool: 'wire_transfer',
      arguments: WireTransferInputSchema.parse(args),
      principal: ALICE,
      toolDescriptorDigest: g.tools.descriptorDigest('wire_transfer'),
    });
    const allowed = (await g.lines(1)).filter((l) => l.msg === 'tools/call allowed; running inline');
    expect(allowed).toHaveLength(1);
    expect(allowed[0]).toMatchObject({
      level: 30,
      tool: 'wire_transfer',
      callRef: approvalWorkflowId(DEDUP_KEY, binding.digest),
      decision: 'allow',
      policyIds: ['wire-transfer-permit'],
    });
    const text = readFileSync(g.logFile, 'utf8');
    for (const v of ['acct-4711', 'audit-line-memo-text', '1234']) expect(text).not.toContain(v);
  });

  it('two calls with different arguments are logged under different references', async () => {
    const g = await gateAt('info');
    await gateToolCall(g.deps, call({ to: 'acct-1', amount: 10 }));
    await gateToolCall(g.deps, call({ to: 'acct-1', amount: 11 }));
    const refs = (await g.lines(2)).filter((l) => l.decision === 'allow').map((l) => l.callRef);
    expect(refs).toHaveLength(2);
    expect(refs[0]).not.toBe(refs[1]);
  });

  it('when info lines are not written, the call still runs and its keyed reference is not computed', async () => {
    const g = await gateAt('warn');
    const result = await gateToolCall(g.deps, call({ to: 'acct-4711', amount: 1234 }));
    expect(result.isError).toBe(false);
    expect(g.ledger.count()).toBe(1);
    expect(g.references).toEqual([]);
    // a line of the level that is written, after the call: once it is in the file, so is anything the call wrote
    g.logger.warn('marker');
    expect((await g.lines(1)).map((l) => l.msg)).toEqual(['marker']);
  });
});
