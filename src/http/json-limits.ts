/**
 * Bounded JSON parsing for every JSON body any role accepts (the MCP endpoint, the backend-callback
 * receiver, the ARAP API): the nesting depth is checked by a linear scan of the text *before*
 * `JSON.parse` runs, so no recursive code (zod, canonicalization, SQLite JSON, the inbox renderer)
 * ever sees a value deeper than {@link MAX_JSON_DEPTH}; and the object key `__proto__` is refused
 * wherever it occurs, with its path.
 *
 * Why `__proto__` must be refused rather than tolerated: `JSON.parse` keeps it as an own property,
 * but any later copy by assignment (`out[key] = value`, as zod's `z.record` does — the MCP SDK
 * parses `tools/call` `arguments` with one) sets the copy's prototype instead, so the key silently
 * disappears before a strict schema can refuse it. `constructor` and `prototype` are not refused
 * here: such a copy keeps them as own properties, so a strict schema sees and refuses them
 * (test/hostile/json-limits.test.ts proves both).
 *
 * Deliberately does not: limit the byte size (the route's `bodyLimit` does, before reading), or
 * answer HTTP itself (callers map a refusal to problem+json or a JSON-RPC error).
 */

/** Deepest accepted nesting of arrays and objects (the top-level value is depth 1). */
export const MAX_JSON_DEPTH = 64;

/** Object keys refused anywhere in a JSON input. */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set(['__proto__']);

/** Why a JSON text was refused; `detail` is server-authored and echoes no input value (only a path of keys). */
export type JsonRefusal =
  | { reason: 'invalid-json'; detail: string }
  | { reason: 'too-deep'; detail: string }
  | { reason: 'forbidden-key'; detail: string; path: string };

/** Result of {@link parseJsonWithLimits}. */
export type JsonParseResult = { ok: true; value: unknown } | ({ ok: false } & JsonRefusal);

/**
 * Deepest nesting of `[`/`{` in `text` outside string literals, stopping early once past `limit`.
 * Linear, no recursion; for text that is not JSON the number is meaningless (parsing fails anyway).
 */
export function jsonNestingDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // backslash: skip the escaped character
      else if (ch === 0x22) inString = false;
      continue;
    }
    if (ch === 0x22) inString = true;
    else if (ch === 0x7b || ch === 0x5b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return max;
}

/** The path of the first forbidden key in `value` (`$.a.b`, `$[3]`), or null. Recursion bounded by the depth check. */
export function findForbiddenKey(value: unknown, path = '$'): string | null {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findForbiddenKey(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      const at = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key.slice(0, 40))}]`;
      if (FORBIDDEN_JSON_KEYS.has(key)) return at;
      const found = findForbiddenKey((value as Record<string, unknown>)[key], at);
      if (found !== null) return found;
    }
  }
  return null;
}

/**
 * Parse `text` as JSON within the limits: refuses text nested deeper than `maxDepth` (default
 * {@link MAX_JSON_DEPTH}) before parsing, text that is not JSON, and any object key in
 * {@link FORBIDDEN_JSON_KEYS} (with its path, e.g. `$.params.arguments.__proto__`). Never throws.
 */
export function parseJsonWithLimits(text: string, maxDepth = MAX_JSON_DEPTH): JsonParseResult {
  if (jsonNestingDepth(text, maxDepth) > maxDepth) {
    return { ok: false, reason: 'too-deep', detail: `JSON nested deeper than ${maxDepth} levels` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'invalid-json', detail: 'the body is not valid JSON' };
  }
  const path = findForbiddenKey(value);
  if (path !== null) return { ok: false, reason: 'forbidden-key', path, detail: `forbidden object key at ${path}` };
  return { ok: true, value };
}
