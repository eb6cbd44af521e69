// Scope: src/http/json-limits.ts — the depth scan before JSON.parse, the __proto__ refusal with its path, and why constructor / prototype are left to strict schemas.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonNestingDepth, MAX_JSON_DEPTH, parseJsonWithLimits } from '../../src/http/json-limits.js';

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
