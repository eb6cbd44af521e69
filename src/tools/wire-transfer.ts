/**
 * The demo gated tool `wire_transfer`: writes one row to the ledger per execution.
 *
 * Over-limit and blocked-account rules live in `policies/wire_transfer.cedar`, not here: this
 * module validates the shape of the arguments only. It deliberately does not check balances,
 * authorize anything, or retry; a repeated `executionId` writes nothing and reports the original
 * entry (see `ledger.ts`).
 */
import { z } from 'zod';
import type { ExecutionRecord, Tool, ToolExecutionContext, ToolResult } from './tool.js';
import { dollarsToCents, type Ledger } from './ledger.js';
import { faultPoint } from '@countersign/http/fault-point';
import type { DisplayHints } from '@countersign/arap';

/** Tool name on the MCP wire and the Cedar resource id. */
export const WIRE_TRANSFER_TOOL_NAME = 'wire_transfer';

/**
 * Input of `wire_transfer` (strict: unknown keys are rejected):
 * - `to`: account id `acct-` + 1–32 of `[a-z0-9-]`;
 * - `amount`: US dollars, > 0, ≤ 10,000,000, at most 2 decimals (exactly representable in cents);
 * - `memo`: optional, ≤ 140 characters;
 * - `reference`: optional payee reference, 1–64 printable characters, JSON Schema `writeOnly`: hidden
 *   from approvers, who compare it with the one they were given (docs/APPROVERS.md §Hidden values).
 */
export const WireTransferInputSchema = z.strictObject({
  to: z
    .string()
    .regex(/^acct-[a-z0-9-]{1,32}$/)
    .describe('Destination account id, e.g. acct-991.'),
  amount: z
    .number()
    .positive()
    .max(10_000_000)
    .multipleOf(0.01)
    .refine((n) => Math.round(n * 100) / 100 === n, { message: 'amount must have at most 2 decimals' })
    .describe('Amount in US dollars, at most 2 decimals.'),
  memo: z.string().max(140).optional().describe('Free-text memo shown on the ledger.'),
  reference: z
    .string()
    .regex(/^[\x21-\x7e]{1,64}$/)
    .optional()
    .meta({ writeOnly: true })
    .describe('Payee reference (e.g. an invoice or beneficiary reference); hidden from approvers, recorded on the ledger.'),
});

/** Parsed `wire_transfer` arguments. */
export type WireTransferInput = z.infer<typeof WireTransferInputSchema>;

/**
 * How approvers read a transfer (`packages/arap/src/display.ts`): "Wire transfer · $50,000.00 USD
 * to acct-991". The source is fixed — every transfer leaves the treasury operating account, which
 * no argument names — so it is stated as a fact rather than offered as an argument an agent could
 * set (docs/APPROVERS.md §What you see).
 */
export const WIRE_TRANSFER_DISPLAY: DisplayHints = {
  title: 'Wire transfer',
  headline: ['amount', 'to'],
  fields: {
    amount: { label: 'Amount', currency: 'USD' },
    to: { label: 'To' },
    memo: { label: 'Memo' },
    reference: { label: 'Payee reference' },
  },
  facts: [{ label: 'From', value: 'Treasury operating account (fixed for every transfer)' }],
};

const usd = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** The result of a transfer recorded as ledger entry `entryId` (amount in cents). */
function transferResult(entryId: number, to: string, amountCents: number): ToolResult {
  const amount = amountCents / 100;
  return {
    content: [{ type: 'text', text: `Transfer of ${usd.format(amount)} to ${to} completed (ledger entry ${entryId}).` }],
    structuredContent: { entryId, to, amount },
  };
}

/**
 * Create the `wire_transfer` tool over `ledger`. `execute` writes exactly one ledger row keyed by
 * `ctx.executionId` and returns "Transfer of $50,000.00 to acct-991 completed (ledger entry 7)."
 * with `structuredContent` `{entryId, to, amount}` (amount in dollars). A repeated execution id
 * returns the same result without writing; a reused id for a different transfer throws
 * `LedgerError('conflict')` (an execution error). Every call to `execute` first appends a row to
 * the ledger's invocation audit trail (`Ledger.recordInvocation`). `resolveExecution` settles an execution id on
 * the ledger (`Ledger.settle`): the recorded transfer, or fenced and not executed (`Tool.resolveExecution`).
 */
export function createWireTransferTool(ledger: Ledger): Tool<typeof WireTransferInputSchema> {
  return {
    name: WIRE_TRANSFER_TOOL_NAME,
    title: 'Wire transfer',
    description:
      'Send a wire transfer from the treasury account. Large transfers may need out-of-band approval; ' +
      'the call then returns a task to poll.',
    inputSchema: WireTransferInputSchema,
    display: WIRE_TRANSFER_DISPLAY,
    version: '1',
    async execute(args: WireTransferInput, ctx: ToolExecutionContext): Promise<ToolResult> {
      // audit first, committed on its own: every entry counts, even one the ledger then dedups or refuses
      ledger.recordInvocation({ executionId: ctx.executionId, ...(ctx.taskId === undefined ? {} : { taskId: ctx.taskId }) });
      faultPoint('tool.effect.before');
      const { entryId } = ledger.record({
        executionId: ctx.executionId,
        ...(ctx.taskId === undefined ? {} : { taskId: ctx.taskId }),
        to: args.to,
        amount: args.amount,
        ...(args.memo === undefined ? {} : { memo: args.memo }),
        ...(args.reference === undefined ? {} : { reference: args.reference }),
      });
      faultPoint('tool.effect.after'); // the row is committed; the result is about to be lost
      return transferResult(entryId, args.to, dollarsToCents(args.amount));
    },
    // The ledger is the effect and its own record: a row under the execution id is the transfer;
    // no row is fenced in the same transaction, so a late invocation can never write one.
    async resolveExecution(executionId: string): Promise<ExecutionRecord> {
      const settled = ledger.settle(executionId);
      if ('fenced' in settled) return { executed: false };
      return { executed: true, result: transferResult(settled.entry.entryId, settled.entry.to, settled.entry.amountCents) };
    },
  };
}
