// Scope: the argument constraints of a grant (`packages/arap/src/grants.ts`, docs/APPROVERS.md
// §Grants): which calls each direction admits, what the wire refuses, and how a grant reads in words.
import { describe, expect, it } from 'vitest';
import { describeConstraints, GrantConstraintsSchema, GrantCreateBodySchema, unmetConstraint } from '@countersign/arap';

describe('grant constraints', () => {
  it('max admits a number at most the bound and nothing else; min at least it', () => {
    const c = { amount: { max: 30_000 } };
    expect(unmetConstraint(c, { amount: 30_000 })).toBeNull();
    expect(unmetConstraint(c, { amount: 0 })).toBeNull();
    expect(unmetConstraint(c, { amount: 30_000.01 })).toBe('amount');
    expect(unmetConstraint(c, { amount: '100' })).toBe('amount');
    expect(unmetConstraint({ n: { min: 3 } }, { n: 3 })).toBeNull();
    expect(unmetConstraint({ n: { min: 3 } }, { n: 2 })).toBe('n');
  });

  it('eq admits only a deeply equal value', () => {
    expect(unmetConstraint({ to: { eq: 'acct-991' } }, { to: 'acct-991' })).toBeNull();
    expect(unmetConstraint({ to: { eq: 'acct-991' } }, { to: 'acct-9910' })).toBe('to');
    expect(unmetConstraint({ o: { eq: { a: [1, 2] } } }, { o: { a: [1, 2] } })).toBeNull();
    expect(unmetConstraint({ o: { eq: { a: [1, 2] } } }, { o: { a: [2, 1] } })).toBe('o');
  });

  it('subpath admits the path or one below it, never a sibling with the same prefix or a path with ..', () => {
    const c = { path: { subpath: '/repo/docs' } };
    expect(unmetConstraint(c, { path: '/repo/docs' })).toBeNull();
    expect(unmetConstraint(c, { path: '/repo/docs/a/b.md' })).toBeNull();
    expect(unmetConstraint(c, { path: '/repo/docs-private/x' })).toBe('path');
    expect(unmetConstraint(c, { path: '/repo/docs/../secrets' })).toBe('path');
    expect(unmetConstraint(c, { path: 'repo/docs/a' })).toBe('path');
  });

  it('subpath never admits a path that another reading turns into one outside it: percent-encoding, backslashes, dot lookalikes, padded dots, controls', () => {
    const c = { path: { subpath: '/repo/docs' } };
    for (const path of [
      '/repo/docs/%2e%2e/secret',
      '/repo/docs/..\\..\\etc',
      '/repo/docs/\u2025/x',
      '/repo/docs/\uff0e\uff0e/x',
      '/repo/docs/ ../x',
      '/repo/docs/a\uff0fb',
      '/repo/docs/\u202e/x',
    ])
      expect(unmetConstraint(c, { path }), path).toBe('path');
    expect(unmetConstraint(c, { path: '/repo/docs/My File.md' })).toBeNull();
  });

  it('subset admits a non-empty list of allowed elements, none more often than allowed', () => {
    const c = { tags: { subset: ['a', 'b'] } };
    expect(unmetConstraint(c, { tags: ['b'] })).toBeNull();
    expect(unmetConstraint(c, { tags: ['a', 'b'] })).toBeNull();
    expect(unmetConstraint(c, { tags: ['a', 'a'] })).toBe('tags');
    expect(unmetConstraint(c, { tags: ['c'] })).toBe('tags');
    expect(unmetConstraint(c, { tags: [] })).toBe('tags');
  });

  it('a constrained field missing from the call never matches; an unconstrained one may hold anything', () => {
    const c = { amount: { max: 10 }, to: { eq: 'x' } };
    expect(unmetConstraint(c, { amount: 5 })).toBe('to');
    expect(unmetConstraint(c, { amount: 5, to: 'x', memo: { any: 'thing' } })).toBeNull();
    expect(unmetConstraint({}, { anything: 1 })).toBeNull();
  });

  it('the wire refuses a constraint with two directions, an unknown one, a non-plain subpath and a bad field name', () => {
    expect(GrantConstraintsSchema.safeParse({ amount: { max: 1, min: 0 } }).success).toBe(false);
    expect(GrantConstraintsSchema.safeParse({ amount: { below: 1 } }).success).toBe(false);
    expect(GrantConstraintsSchema.safeParse({ path: { subpath: '/a/../b' } }).success).toBe(false);
    expect(GrantConstraintsSchema.safeParse({ 'a.b': { eq: 1 } }).success).toBe(false);
    expect(GrantConstraintsSchema.safeParse({ amount: { max: 1 }, to: { eq: 'x' } }).success).toBe(true);
  });

  it('a grant body needs a bound (a count or a duration), a reason, and a principal and tool unless made from a request', () => {
    const base = { principal: 'dave', tool: 'wire_transfer', reason: 'run' };
    expect(GrantCreateBodySchema.safeParse(base).success).toBe(false);
    expect(GrantCreateBodySchema.safeParse({ ...base, max_uses: 3 }).success).toBe(true);
    expect(GrantCreateBodySchema.safeParse({ ...base, duration_ms: 60_000 }).success).toBe(true);
    expect(GrantCreateBodySchema.safeParse({ ...base, max_uses: 3, reason: ' ' }).success).toBe(false);
    expect(GrantCreateBodySchema.safeParse({ reason: 'run', max_uses: 1 }).success).toBe(false);
    expect(GrantCreateBodySchema.safeParse({ reason: 'run', max_uses: 1, from_request: 'ar_1' }).success).toBe(true);
  });

  it('reads in words, sorted by field', () => {
    expect(describeConstraints({ to: { eq: 'acct-991' }, amount: { max: 30_000 } })).toBe('amount at most 30000; to = "acct-991"');
    expect(describeConstraints({})).toBe('any arguments');
  });
});
