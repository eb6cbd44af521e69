// Scope: src/mcp/narrow.ts, the checks that replaced type assertions on parsed JSON in src/mcp:
// reading a member path of any JSON value answers what optional chaining on it answered before.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isJsonObject, isRecord, memberAt, parseJson } from '../../src/mcp/narrow.js';

const KEYS = ['id', 'error', 'data', 'params', '_meta', 'name', 'retryAfterSeconds'] as const;

/** The read the replaced code did: `(v as {...})?.[k1]?.[k2]…` on a parsed JSON value. */
function optionalChain(v: unknown, path: readonly string[]): unknown {
  let at: unknown = v;
  for (const key of path) {
    if (at === null || at === undefined) return undefined;
    at = (Object(at) as Record<string, unknown>)[key];
  }
  return at;
}

describe('narrowing parsed JSON', () => {
  it('memberAt answers what optional chaining answered, for any JSON value and path of member names', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.constantFrom(...KEYS), { maxLength: 4 }), (v, path) => {
        expect(memberAt(v, ...path)).toEqual(optionalChain(v, path));
      }),
      { numRuns: 300 },
    );
  });

  it('isRecord holds for objects and arrays, isJsonObject for objects only; parseJson answers undefined for text that is not JSON', () => {
    expect([isRecord({}), isRecord([]), isRecord(null), isRecord('x')]).toEqual([true, true, false, false]);
    expect([isJsonObject({}), isJsonObject([]), isJsonObject(null)]).toEqual([true, false, false]);
    expect(parseJson('{"a":1}')).toEqual({ a: 1 });
    expect(parseJson('{"a":')).toBeUndefined();
  });
});
