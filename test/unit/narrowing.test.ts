// Scope: packages/arap/src/narrowing.ts and the Cedar @narrowable annotation (src/policy/cedar-annotations.ts) — reading a narrowable spec and checking an approver's counter-proposal against the requested arguments, every direction and every refusal.
import { describe, expect, it } from 'vitest';
import { readPolicyMeta } from '../../src/policy/cedar-annotations.js';
import { checkNarrowing, narrowableList, NarrowingSpecError, parseNarrowingSpec } from '@countersign/arap';

const transfer = { amount: 50_000, currency: 'USD', to_account: 'ACME-001' };

describe('parseNarrowingSpec', () => {
  it('reads "<field>:<direction>" entries separated by commas, whitespace ignored', () => {
    expect(parseNarrowingSpec(' amount:max , path:subpath,recipients:subset,confirmations:min')).toEqual({
      amount: 'max',
      path: 'subpath',
      recipients: 'subset',
      confirmations: 'min',
    });
  });

  it.each([
    ['', 'at least one field'],
    ['amount', 'is not "<field>:<direction>"'],
    ['amount:max:extra', 'is not "<field>:<direction>"'],
    ['amount:smaller', 'direction must be one of max, min, subpath, subset'],
    ['amount:max,amount:min', 'named twice'],
    ['a b:max', 'is not "<field>:<direction>"'],
  ])('refuses %j with a NarrowingSpecError saying why', (text, why) => {
    expect(() => parseNarrowingSpec(text)).toThrow(NarrowingSpecError);
    expect(() => parseNarrowingSpec(text)).toThrow(why);
  });
});

describe('checkNarrowing', () => {
  const spec = parseNarrowingSpec('amount:max');

  it('a refusal quotes a proposed field name bounded and escaped: a 3,000-character key with U+202E and a newline comes back as 64 characters and how many were left out', () => {
    const key = `x\u202e\n${'k'.repeat(2997)}`;
    const check = checkNarrowing({ to: 'acct-991', amount: 50_000 }, { to: 'acct-991', amount: 50_000, [key]: 1 }, spec);
    expect(check.ok).toBe(false);
    if (check.ok) return;
    expect(check.message).toContain('"x\\u202e\\n' + 'k'.repeat(61) + '…(2936 more characters)" is not in the request');
    expect(check.message.length).toBeLessThan(200);
    expect(check.message).not.toMatch(/[\u202e\n]/);
    expect(check.field).not.toMatch(/[\u202e\n]/);
  });

  it('accepts a lower amount and names the changed field', () => {
    expect(checkNarrowing(transfer, { ...transfer, amount: 20_000 }, spec)).toEqual({ ok: true, changed: ['amount'] });
  });

  it('max: refuses a higher amount, a negative one, and a non-number, naming the field', () => {
    expect(checkNarrowing(transfer, { ...transfer, amount: 50_001 }, spec)).toEqual({
      ok: false,
      field: 'amount',
      message: '"amount" may only be lowered (at most the requested value)',
    });
    expect(checkNarrowing(transfer, { ...transfer, amount: -1 }, spec)).toMatchObject({
      ok: false,
      field: 'amount',
      message: '"amount" may not go below 0',
    });
    expect(checkNarrowing(transfer, { ...transfer, amount: '20000' }, spec)).toMatchObject({
      ok: false,
      field: 'amount',
      message: '"amount" must be a finite number',
    });
    expect(checkNarrowing({ amount: 'x' }, { amount: 1 }, spec)).toMatchObject({ ok: false, field: 'amount' });
  });

  it('min: accepts a higher value and refuses a lower one', () => {
    const s = parseNarrowingSpec('confirmations:min');
    expect(checkNarrowing({ confirmations: 1 }, { confirmations: 3 }, s)).toEqual({ ok: true, changed: ['confirmations'] });
    expect(checkNarrowing({ confirmations: 2 }, { confirmations: 1 }, s)).toMatchObject({
      ok: false,
      field: 'confirmations',
      message: '"confirmations" may only be raised (at least the requested value)',
    });
  });

  it('subpath: accepts the path below the requested one, refuses a sibling, a parent, a prefix that is not a segment, and dot segments', () => {
    const s = parseNarrowingSpec('path:subpath');
    expect(checkNarrowing({ path: '/data/reports' }, { path: '/data/reports/2026/q1.csv' }, s)).toEqual({ ok: true, changed: ['path'] });
    expect(checkNarrowing({ path: 'data/' }, { path: 'data/x' }, s)).toEqual({ ok: true, changed: ['path'] });
    for (const bad of ['/data/other', '/data', '/data/reports-old', 'data/reports/x']) {
      expect(checkNarrowing({ path: '/data/reports' }, { path: bad }, s)).toMatchObject({
        ok: false,
        field: 'path',
        message: '"path" must be the requested path or a path below it',
      });
    }
    for (const bad of [
      '/data/reports/../secrets',
      '/data/reports/./x',
      '/data/reports//x',
      '/data/reports/\0x',
      '/data/reports/%2e%2e/x',
    ]) {
      expect(checkNarrowing({ path: '/data/reports' }, { path: bad }, s)).toMatchObject({
        ok: false,
        field: 'path',
        message: '"path" must be a plain path: no ".", ".." or lookalike, no empty segment, %, backslash or control character',
      });
    }
  });

  it('subset: accepts fewer elements of the requested list, refuses a new element, a repeated one and an empty list', () => {
    const s = parseNarrowingSpec('recipients:subset');
    const req = { recipients: ['a', 'b', 'c'] };
    expect(checkNarrowing(req, { recipients: ['c', 'a'] }, s)).toEqual({ ok: true, changed: ['recipients'] });
    expect(checkNarrowing(req, { recipients: ['a', 'd'] }, s)).toMatchObject({
      ok: false,
      field: 'recipients',
      message: '"recipients" may only keep elements of the requested list',
    });
    expect(checkNarrowing(req, { recipients: ['a', 'a'] }, s)).toMatchObject({ ok: false, field: 'recipients' });
    expect(checkNarrowing(req, { recipients: [] }, s)).toMatchObject({
      ok: false,
      field: 'recipients',
      message: '"recipients" must keep at least one element',
    });
  });

  it('refuses a change to a field the spec does not name, naming the field and what may differ', () => {
    expect(checkNarrowing(transfer, { ...transfer, amount: 20_000, to_account: 'EVIL-9' }, spec)).toEqual({
      ok: false,
      field: 'to_account',
      message: '"to_account" is not narrowable; only "amount" (lower) may differ',
    });
  });

  it('refuses a proposal that adds or drops a field', () => {
    const { currency: _dropped, ...without } = transfer;
    expect(checkNarrowing(transfer, { ...without, amount: 1 }, spec)).toMatchObject({ ok: false, field: 'currency' });
    expect(checkNarrowing(transfer, { ...transfer, amount: 1, memo: 'x' }, spec)).toMatchObject({ ok: false, field: 'memo' });
  });

  it('refuses a proposal that changes nothing: that is an approval', () => {
    expect(checkNarrowing(transfer, { ...transfer }, spec)).toEqual({
      ok: false,
      field: null,
      message: 'the proposal is the requested call unchanged; approve it instead',
    });
  });

  it('lists narrowable fields in words', () => {
    expect(narrowableList(parseNarrowingSpec('amount:max,path:subpath,r:subset'))).toBe(
      '"amount" (lower), "path" (a sub-path) and "r" (fewer elements)',
    );
    expect(narrowableList({})).toBe('no field');
  });
});

describe('the Cedar @narrowable annotation', () => {
  const base = { id: 'big-transfer', file: 'p.cedar', effect: 'forbid' as const, order: 0 };
  const requestable = { requestable: 'true', approver_group: 'treasury', request_ttl: 'P1D', reason: 'r' };

  it('a requestable forbid carries its narrowable fields and directions', () => {
    const meta = readPolicyMeta(base, { ...requestable, narrowable: 'amount:max, path:subpath' });
    expect(meta.requestable?.narrowable).toEqual({ amount: 'max', path: 'subpath' });
  });

  it.each([
    ['an unknown direction', { ...requestable, narrowable: 'amount:less' }, base, /@narrowable: field "amount": direction must be one of/],
    ['a forbid that is not requestable', { reason: 'r', narrowable: 'amount:max' }, base, /@narrowable needs @requestable/],
    [
      'an in-band forbid',
      { requestable: 'true', approval_mode: 'in-band', reason: 'r', narrowable: 'amount:max' },
      base,
      /@narrowable do not apply to an in-band forbid/,
    ],
    ['a permit', { narrowable: 'amount:max' }, { ...base, effect: 'permit' as const }, /@narrowable only applies to forbid/],
  ])('refuses @narrowable on %s, naming the annotation', (_title, annotations, b, message) => {
    expect(() => readPolicyMeta(b, annotations)).toThrow(message);
  });
});
