// Scope: what the inbox's "Propose a narrower call" form makes of a typed amount (narrow-form.tsx proposalFromForm).
import { describe, expect, it } from 'vitest';
import type { AccessRequestBody } from '@countersign/arap';
import { proposalFromForm } from '../src/inbox/narrow-form.js';

const body = { context: { arguments: { to: 'acct-991', amount: 50_000 }, narrowable: { amount: 'max' } } } as unknown as AccessRequestBody;
const typed = (text: string) => proposalFromForm(body, { 'set:amount': text });

describe('the narrow form', () => {
  it('refuses "20.000", "1,5", "25.000,50" and "0x4E20" naming the field, never misreading them as another amount', () => {
    for (const text of ['20.000', '1,5', '25.000,50', '0x4E20', '2e4', '']) expect(typed(text)).toEqual({ refused: 'amount' });
  });

  it('reads plain decimals, with or without thousands commas', () => {
    expect(typed('20000')).toEqual({ proposed: { to: 'acct-991', amount: 20_000 } });
    expect(typed('20,000')).toEqual({ proposed: { to: 'acct-991', amount: 20_000 } });
    expect(typed('20000.50')).toEqual({ proposed: { to: 'acct-991', amount: 20_000.5 } });
  });
});
