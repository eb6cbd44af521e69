/**
 * Bounded JSON parsing for every JSON body any role accepts (the MCP endpoint, the backend-callback
 * receiver, the ARAP API): the nesting depth is checked by a linear scan of the text *before*
 * `JSON.parse` runs, so no recursive code (zod, canonicalization, SQLite JSON, the inbox renderer)
 * ever sees a value deeper than {@link MAX_JSON_DEPTH}; the same scan refuses an object with a
 * duplicate member name at any depth, with its path; and the object key `__proto__` is refused
 * wherever it occurs, with its path.
 *
 * Why duplicate member names are refused: RFC 8259 §4 says names within an object SHOULD be unique
 * and that receivers disagree on non-unique ones. `JSON.parse` keeps the last member, while a proxy,
 * log reader or audit tool may keep the first, so `{"amount":5,"amount":50000}` would be read as two
 * different requests by two readers (I-JSON, RFC 7493 §2.3, forbids them outright). Names are
 * compared after unescaping (`"a"` and `"\u0061"` are the same name).
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
  | { reason: 'duplicate-key'; detail: string; path: string }
  | { reason: 'ill-formed-unicode'; detail: string; path: string }
  | { reason: 'forbidden-key'; detail: string; path: string };

/** Result of {@link parseJsonWithLimits}. */
export type JsonParseResult = { ok: true; value: unknown } | ({ ok: false } & JsonRefusal);

/** What {@link scanJsonText} found in one pass over a JSON text. */
export interface JsonTextScan {
  /** Deepest nesting of `[`/`{` outside strings (stops counting once past the limit). */
  depth: number;
  /** Path of the first member whose name repeats an earlier one in the same object (`$.a[2].b`), or null. */
  duplicateKeyPath: string | null;
}

/**
 * One linear pass over `text` (no recursion, no parse): the deepest nesting of `[`/`{` outside
 * string literals, stopping early once past `limit`, and the path of the first duplicate member
 * name (names compared after unescaping, RFC 8259 §7). For text that is not JSON both results are
 * meaningless (parsing fails anyway, and callers report that first).
 */
export function scanJsonText(text: string, limit = Number.POSITIVE_INFINITY): JsonTextScan {
  // One entry per open container: the names seen so far (objects) or null (arrays), and the member
  // name or element index currently being read in it (for the path of a duplicate).
  const names: Array<Set<string> | null> = [];
  const at: Array<string | number> = [];
  let expectName = false; // inside an object, after `{` or `,`: the next string is a member name
  let duplicateKeyPath: string | null = null;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x5c) {
          escaped = true;
          i++; // backslash: skip the escaped character
        } else if (c === 0x22) break;
      }
      if (expectName) {
        expectName = false;
        const top = names.length - 1;
        const seen = names[top];
        if (duplicateKeyPath === null && seen) {
          const name = memberName(text, start, i, escaped);
          if (name !== null) {
            if (seen.has(name)) duplicateKeyPath = pathOf(at, top, name);
            else seen.add(name);
            at[top] = name;
          }
        }
      }
      continue;
    }
    if (ch === 0x7b || ch === 0x5b) {
      const object = ch === 0x7b;
      names.push(object ? new Set<string>() : null);
      at.push(object ? '' : 0);
      expectName = object;
      if (names.length > max) {
        max = names.length;
        if (max > limit) return { depth: max, duplicateKeyPath };
      }
    } else if (ch === 0x7d || ch === 0x5d) {
      names.pop();
      at.pop();
      expectName = false;
    } else if (ch === 0x2c) {
      const top = names.length - 1;
      if (top < 0) continue;
      if (names[top]) expectName = true;
      else at[top] = (at[top] as number) + 1;
    }
  }
  return { depth: max, duplicateKeyPath };
}

/** The member name of the string literal `text[start..end]` (quotes included), unescaped; null if it is not a valid literal. */
function memberName(text: string, start: number, end: number, escaped: boolean): string | null {
  if (!escaped) return text.slice(start + 1, end);
  try {
    const name: unknown = JSON.parse(text.slice(start, end + 1));
    return typeof name === 'string' ? name : null;
  } catch {
    return null;
  }
}

/** `$` followed by the steps `at[0..top-1]` and `last`, spelled as {@link pathStep}. */
function pathOf(at: ReadonlyArray<string | number>, top: number, last: string): string {
  let path = '$';
  for (let k = 0; k < top; k++) path += pathStep(at[k]!);
  return path + pathStep(last);
}

/** One step of a path: `.name` for an identifier-like name, `["we ird"]` (first 40 characters) otherwise, `[3]` for an index. */
function pathStep(step: string | number): string {
  if (typeof step === 'number') return `[${step}]`;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(step) ? `.${step}` : `[${JSON.stringify(step.slice(0, 40))}]`;
}

/**
 * Deepest nesting of `[`/`{` in `text` outside string literals, stopping early once past `limit`
 * ({@link scanJsonText}'s `depth`). Linear, no recursion; for text that is not JSON the number is
 * meaningless (parsing fails anyway).
 */
export function jsonNestingDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  return scanJsonText(text, limit).depth;
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
      const at = `${path}${pathStep(key)}`;
      if (FORBIDDEN_JSON_KEYS.has(key)) return at;
      const found = findForbiddenKey((value as Record<string, unknown>)[key], at);
      if (found !== null) return found;
    }
  }
  return null;
}

/**
 * The path of the first string in `value` — a member name or a string value — that is not
 * well-formed Unicode (`String.prototype.isWellFormed`: a lone surrogate such as `"\ud800"`, which
 * JSON text may spell but no UTF-8 encoder, Cedar or SQLite text column can carry), or null. Paths
 * as {@link findForbiddenKey} spells them, under `path`. Recursion bounded by the depth check.
 */
export function findIllFormedString(value: unknown, path = '$'): string | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findIllFormedString(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      // an ill-formed name is not an identifier, so its step is JSON.stringify'd: `["\ud800"]`, printable
      const at = `${path}${pathStep(key)}`;
      if (!key.isWellFormed()) return at;
      const found = findIllFormedString((value as Record<string, unknown>)[key], at);
      if (found !== null) return found;
    }
  }
  return null;
}

/**
 * Parse `text` as JSON within the limits: refuses text nested deeper than `maxDepth` (default
 * {@link MAX_JSON_DEPTH}) before parsing, text that is not JSON, an object with a duplicate member
 * name (`duplicate-key`, with the path of the repeated member, e.g. `$.params.arguments.amount`),
 * and any object key in {@link FORBIDDEN_JSON_KEYS} (`forbidden-key`, with its path, e.g.
 * `$.params.arguments.__proto__`). Never throws.
 */
export function parseJsonWithLimits(text: string, maxDepth = MAX_JSON_DEPTH): JsonParseResult {
  const scan = scanJsonText(text, maxDepth);
  if (scan.depth > maxDepth) {
    return { ok: false, reason: 'too-deep', detail: `JSON nested deeper than ${maxDepth} levels` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'invalid-json', detail: 'the body is not valid JSON' };
  }
  if (scan.duplicateKeyPath !== null) {
    const path = scan.duplicateKeyPath;
    return { ok: false, reason: 'duplicate-key', path, detail: `duplicate object key at ${path}` };
  }
  const path = findForbiddenKey(value);
  if (path !== null) return { ok: false, reason: 'forbidden-key', path, detail: `forbidden object key at ${path}` };
  const illFormed = findIllFormedString(value);
  if (illFormed !== null) {
    return {
      ok: false,
      reason: 'ill-formed-unicode',
      path: illFormed,
      detail: `string at ${illFormed} is not well-formed Unicode (lone surrogate)`,
    };
  }
  return { ok: true, value };
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * `bytes` decoded as UTF-8 (a leading byte order mark dropped, as `Request.text()` does), or null
 * when they are not valid UTF-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8). Unlike
 * `Request.text()`, which turns every bad sequence into U+FFFD, nothing is replaced: two bodies
 * that differ only in bad bytes must not become the same request.
 */
export function decodeUtf8(bytes: ArrayBuffer | Uint8Array): string | null {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** The body of `req` as UTF-8 text ({@link decodeUtf8}), or null when it is not valid UTF-8. Throws what reading the body throws. */
export async function readUtf8Body(req: Request | Response): Promise<string | null> {
  return decodeUtf8(await req.arrayBuffer());
}
