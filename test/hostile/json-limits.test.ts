// Scope: packages/http/src/json-limits.ts — the depth scan before JSON.parse, the duplicate-member refusal with its path, the ill-formed Unicode finder, the __proto__ refusal with its path, and why constructor / prototype are left to strict schemas.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findIllFormedString, jsonNestingDepth, MAX_JSON_DEPTH, parseJsonWithLimits, scanJsonText } from '@countersign/http/json-limits';

describe('bounded JSON parsing', () => {
  it('nesting depth counts arrays and objects and ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonNestingDepth('1')).toBe(0);
    expect(jsonNestingDepth('{"a":[{"b":[]}]}')).toBe(4);
    expect(jsonNestingDepth('{"a":"[[[[\\"{{{{"}')).toBe(1);
  });

  it(`text nested deeper than ${MAX_JSON_DEPTH} levels is refused before parsing; exactly ${MAX_JSON_DEPTH} is accepted`, () => {
    const at = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(parseJsonWithLimits(at(MAX_JSON_DEPTH))).toMatchObject({ ok: true });
    expect(parseJsonWithLimits(at(MAX_JSON_DEPTH + 1))).toMatchObject({ ok: false, reason: 'too-deep' });
    expect(parseJsonWithLimits(at(100_000))).toMatchObject({ ok: false, reason: 'too-deep' });
  });

  it('a __proto__ key anywhere is refused with its path', () => {
    expect(parseJsonWithLimits('{"a":[{"b":1},{"__proto__":{"x":1}}]}')).toEqual({
      ok: false,
      reason: 'forbidden-key',
      path: '$.a[1].__proto__',
      detail: 'forbidden object key at $.a[1].__proto__',
    });
    expect(parseJsonWithLimits('{"we ird":{"__proto__":null}}')).toMatchObject({ path: '$["we ird"].__proto__' });
  });

  it('an object with a duplicate member name is refused with the path of the repeated member, however deep', () => {
    expect(parseJsonWithLimits('{"to":"acct-991","amount":5,"amount":50000}')).toEqual({
      ok: false,
      reason: 'duplicate-key',
      path: '$.amount',
      detail: 'duplicate object key at $.amount',
    });
    expect(parseJsonWithLimits('{"a":[{"b":1},{"c":{"d":1,"we ird":2,"we ird":3}}]}')).toMatchObject({
      reason: 'duplicate-key',
      path: '$.a[1].c["we ird"]',
    });
    expect(parseJsonWithLimits('[[1,2],{"x":{},"x":[]}]')).toMatchObject({ reason: 'duplicate-key', path: '$[1].x' });
  });

  it('member names are compared after unescaping, so "a" and "\\u0061" are the same name', () => {
    expect(parseJsonWithLimits('{"a":1,"\\u0061":2}')).toMatchObject({ reason: 'duplicate-key', path: '$.a' });
    expect(parseJsonWithLimits('{"\\"":1,"\\u0022":2}')).toMatchObject({ reason: 'duplicate-key', path: '$["\\""]' });
  });

  it('the same name in sibling or nested objects, and names or commas inside string values, are not duplicates', () => {
    for (const text of [
      '{"a":{"a":1},"b":{"a":2}}',
      '[{"a":1},{"a":2}]',
      '{"a":"b\\",\\"a\\":1","b":"{\\"a\\":1,\\"a\\":2}"}',
      '{"a":[1,{"b":2}],"b":[{"a":3}]}',
    ]) {
      expect(JSON.parse(text)).toBeTruthy();
      expect(parseJsonWithLimits(text), text).toMatchObject({ ok: true });
    }
  });

  it('the scan reports depth and the first duplicate in one pass, and a too-deep text is refused before any duplicate', () => {
    expect(scanJsonText('{"a":[{"b":[]}],"a":1}')).toEqual({ depth: 4, duplicateKeyPath: '$.a' });
    const deepWithDuplicate = `{"a":1,"a":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`;
    expect(parseJsonWithLimits(deepWithDuplicate)).toMatchObject({ ok: false, reason: 'too-deep' });
  });

  it('text that is not JSON is refused as invalid-json even when it repeats a name', () => {
    expect(parseJsonWithLimits('{"a":1,"a":}')).toMatchObject({ ok: false, reason: 'invalid-json' });
  });

  it('the first string or member name that is not well-formed Unicode is found with its path; surrogate pairs are well formed', () => {
    expect(findIllFormedString(JSON.parse('{"a":["ok","x\\ud800y"]}'), '$.p')).toBe('$.p.a[1]');
    expect(findIllFormedString(JSON.parse('{"a":{"\\udfff":1}}'))).toBe('$.a["\\udfff"]');
    expect(findIllFormedString(JSON.parse('{"a":"\\ud83d\\ude00","b":["\\u00e9"]}'))).toBeNull();
    expect(findIllFormedString(JSON.parse('"\\ude00\\ud83d"'))).toBe('$');
  });

  it('text that is not JSON is refused as invalid-json', () => {
    expect(parseJsonWithLimits('{"a":')).toMatchObject({ ok: false, reason: 'invalid-json' });
  });

  it('a copy by z.record drops __proto__ silently but keeps constructor and prototype, which a strict schema then refuses', () => {
    const parsed = JSON.parse('{"to":"a","__proto__":{"x":1},"constructor":1,"prototype":2}') as Record<string, unknown>;
    const copied = z.record(z.string(), z.unknown()).parse(parsed);
    expect(Object.keys(copied)).toEqual(['to', 'constructor', 'prototype']);
    const strict = z.strictObject({ to: z.string() }).safeParse(copied);
    expect(strict.success).toBe(false);
    expect(parseJsonWithLimits('{"constructor":1,"prototype":2}')).toMatchObject({ ok: true });
  });
});
