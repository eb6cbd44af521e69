/**
 * Narrowing for values the front did not type itself — parsed JSON, what a request context or a
 * thrown value carries — as checks, not type assertions: a value that is not what is looked for
 * reads as `undefined`, exactly as an optional property read on it would.
 */

/** Whether `v` is a non-null object, readable by key (JSON objects and arrays). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** Whether `v` is a JSON object: a non-null object that is not an array. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return isRecord(v) && !Array.isArray(v);
}

/** The value at `path` inside `v` (`memberAt(body, 'error', 'data')`), or undefined where the path leaves objects. */
export function memberAt(v: unknown, ...path: string[]): unknown {
  let at = v;
  for (const key of path) {
    if (!isRecord(at)) return undefined;
    at = at[key];
  }
  return at;
}

/** `JSON.parse(text)` as `unknown` (to be narrowed), or undefined when `text` is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
