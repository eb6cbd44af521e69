// Scope: src/tools/ — the SQLite ledger (one row per execution id), the wire_transfer tool and its input schema, and the tool registry's descriptors and digests.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LedgerError, openLedger, type Ledger } from '../../src/tools/ledger.js';
import { createToolRegistry, ToolRegistryError } from '../../src/tools/registry.js';
import type { Tool } from '../../src/tools/tool.js';
import { createWireTransferTool, WireTransferInputSchema } from '../../src/tools/wire-transfer.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function tmpLedger(): { ledger: Ledger; file: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'countersign-ledger-'));
  const file = path.join(dir, 'data', 'ledger.db');
  const ledger = openLedger(file, { now: () => new Date('2026-03-01T12:00:00.000Z') });
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => ledger.close());
  return { ledger, file };
}

describe('ledger', () => {
  it('stores amounts as integer cents and reads rows back', () => {
    const { ledger } = tmpLedger();
    expect(ledger.record({ executionId: 'e1', taskId: 't1', to: 'acct-1', amount: 1234567.89, memo: 'rent' })).toEqual({
      entryId: 1,
      duplicate: false,
    });
    expect(ledger.findByExecution('e1')).toEqual({
      entryId: 1,
      executionId: 'e1',
      taskId: 't1',
      to: 'acct-1',
      amountCents: 123456789,
      memo: 'rent',
      createdAt: '2026-03-01T12:00:00.000Z',
    });
    expect(ledger.findByExecution('nope')).toBeUndefined();
  });

  it('a repeated execution id writes no second row and returns the original entry', () => {
    const { ledger } = tmpLedger();
    ledger.record({ executionId: 'e1', taskId: 't1', to: 'acct-1', amount: 50 });
    expect(ledger.record({ executionId: 'e1', taskId: 't1', to: 'acct-1', amount: 50 })).toEqual({ entryId: 1, duplicate: true });
    expect(ledger.count()).toBe(1);
    expect(ledger.countByTask('t1')).toBe(1);
  });

  it('a repeated execution id for a different transfer throws a conflict and writes nothing', () => {
    const { ledger } = tmpLedger();
    ledger.record({ executionId: 'e1', to: 'acct-1', amount: 50 });
    let err: unknown;
    try {
      ledger.record({ executionId: 'e1', to: 'acct-2', amount: 50 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LedgerError);
    expect((err as LedgerError).code).toBe('conflict');
    expect((err as LedgerError).message).toBe('execution id e1 was already recorded for another transfer');
    expect(ledger.count()).toBe(1);
  });

  it('an amount that is not a whole number of cents is refused', () => {
    const { ledger } = tmpLedger();
    expect(() => ledger.record({ executionId: 'e1', to: 'acct-1', amount: 1.005 })).toThrow(LedgerError);
    expect(ledger.count()).toBe(0);
  });

  it('rows survive closing and reopening the database file', () => {
    const { ledger, file } = tmpLedger();
    ledger.record({ executionId: 'e1', to: 'acct-1', amount: 5 });
    ledger.close();
    const reopened = openLedger(file);
    cleanups.push(() => reopened.close());
    expect(reopened.list().map((e) => e.executionId)).toEqual(['e1']);
  });
});

describe('wire_transfer tool', () => {
  it('a wire transfer writes exactly one ledger row', async () => {
    const { ledger } = tmpLedger();
    const tool = createWireTransferTool(ledger);
    const result = await tool.execute({ to: 'acct-991', amount: 50_000 }, { executionId: 'x1', taskId: 'task-a' });
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Transfer of $50,000.00 to acct-991 completed (ledger entry 1).' }],
      structuredContent: { entryId: 1, to: 'acct-991', amount: 50_000 },
    });
    expect(ledger.count()).toBe(1);
    expect(ledger.countByTask('task-a')).toBe(1);
    expect(ledger.findByExecution('x1')).toMatchObject({ to: 'acct-991', amountCents: 5_000_000, taskId: 'task-a' });
  });

  it('a repeated execution id writes no second row and reports the same entry', async () => {
    const { ledger } = tmpLedger();
    const tool = createWireTransferTool(ledger);
    const first = await tool.execute({ to: 'acct-991', amount: 12.5, memo: 'x' }, { executionId: 'x1' });
    const second = await tool.execute({ to: 'acct-991', amount: 12.5, memo: 'x' }, { executionId: 'x1' });
    expect(second).toEqual(first);
    expect(first.content[0]?.text).toBe('Transfer of $12.50 to acct-991 completed (ledger entry 1).');
    expect(ledger.count()).toBe(1);
  });

  it('accepts valid arguments', () => {
    expect(WireTransferInputSchema.parse({ to: 'acct-sanctioned', amount: 10_000_000, memo: 'm'.repeat(140) })).toEqual({
      to: 'acct-sanctioned',
      amount: 10_000_000,
      memo: 'm'.repeat(140),
    });
    expect(WireTransferInputSchema.safeParse({ to: 'acct-1', amount: 0.29 }).success).toBe(true);
  });

  it.each([
    ['an unknown key', { to: 'acct-1', amount: 1, currency: 'EUR' }, 'unrecognized_keys'],
    ['a bad account id', { to: 'ACCT-1', amount: 1 }, 'invalid_format'],
    ['an account id too long', { to: `acct-${'a'.repeat(33)}`, amount: 1 }, 'invalid_format'],
    ['a zero amount', { to: 'acct-1', amount: 0 }, 'too_small'],
    ['an amount over 10,000,000', { to: 'acct-1', amount: 10_000_000.01 }, 'too_big'],
    ['three decimals', { to: 'acct-1', amount: 1.005 }, 'not_multiple_of'],
    ['a float artefact (0.1 + 0.2)', { to: 'acct-1', amount: 0.1 + 0.2 }, 'custom'],
    ['a string amount', { to: 'acct-1', amount: '5' }, 'invalid_type'],
    ['a memo over 140 characters', { to: 'acct-1', amount: 1, memo: 'm'.repeat(141) }, 'too_big'],
    ['a missing amount', { to: 'acct-1' }, 'invalid_type'],
  ])('bad arguments are rejected by the schema: %s', (_t, args, code) => {
    const r = WireTransferInputSchema.safeParse(args);
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.code)).toContain(code);
  });
});

describe('tool registry', () => {
  it('lists tools and derives the MCP descriptor from the zod schema', () => {
    const { ledger } = tmpLedger();
    const registry = createToolRegistry([createWireTransferTool(ledger)]);
    expect(registry.list().map((t) => t.name)).toEqual(['wire_transfer']);
    expect(registry.get('wire_transfer')?.version).toBe('1');
    expect(registry.get('nope')).toBeUndefined();
    const d = registry.descriptor('wire_transfer');
    expect(d).toMatchObject({ name: 'wire_transfer', title: 'Wire transfer' });
    expect(d.inputSchema).toMatchObject({
      type: 'object',
      required: ['to', 'amount'],
      additionalProperties: false,
      properties: {
        to: { type: 'string', pattern: '^acct-[a-z0-9-]{1,32}$' },
        amount: { type: 'number', exclusiveMinimum: 0, maximum: 10_000_000, multipleOf: 0.01 },
        memo: { type: 'string', maxLength: 140 },
      },
    });
  });

  it('descriptorDigest is the SHA-256 of JCS {name, version, inputSchema} and changes with the version or schema', () => {
    const base: Tool = {
      name: 'echo',
      description: 'd',
      version: '1',
      inputSchema: z.strictObject({ b: z.string(), a: z.number() }),
      execute: async () => ({ content: [] }),
    };
    const schema = z.toJSONSchema(base.inputSchema, { io: 'input' }) as Record<string, unknown>;
    const jcs = (o: Record<string, unknown>): string =>
      JSON.stringify(o, (_k, v: unknown) =>
        v && typeof v === 'object' && !Array.isArray(v)
          ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([x], [y]) => (x < y ? -1 : 1)))
          : v,
      );
    const expected = createHash('sha256')
      .update(jcs({ inputSchema: schema, name: 'echo', version: '1' }))
      .digest('hex');
    const digest = createToolRegistry([base]).descriptorDigest('echo');
    expect(digest).toBe(expected);
    expect(createToolRegistry([{ ...base, description: 'other words' }]).descriptorDigest('echo')).toBe(digest);
    expect(createToolRegistry([{ ...base, version: '2' }]).descriptorDigest('echo')).not.toBe(digest);
    const widened = { ...base, inputSchema: z.strictObject({ b: z.string(), a: z.number(), c: z.string().optional() }) };
    expect(createToolRegistry([widened]).descriptorDigest('echo')).not.toBe(digest);
  });

  it('an unknown tool name or a duplicate name is a ToolRegistryError', () => {
    const { ledger } = tmpLedger();
    const tool = createWireTransferTool(ledger);
    const registry = createToolRegistry([tool]);
    expect(() => registry.descriptor('nope')).toThrow(new ToolRegistryError('unknown-tool', 'no tool named nope'));
    let err: unknown;
    try {
      createToolRegistry([tool, tool]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ToolRegistryError);
    expect((err as ToolRegistryError).code).toBe('duplicate-tool');
    expect((err as ToolRegistryError).message).toBe('two tools are named wire_transfer');
  });
});
