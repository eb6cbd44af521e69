/**
 * Where a tool's JSON Schema input schema marks an argument `writeOnly: true`, as JSON Pointers
 * (RFC 6901) into one call's arguments. Every keyword by which JSON Schema (2020-12 and draft-07,
 * as MCP tools write them) places a subschema on an instance location is followed, so a
 * `writeOnly` reached through any of them marks that location:
 *
 * - the same location: `allOf`, `anyOf`, `oneOf` (a `writeOnly` branch marks the location whatever
 *   branch the value takes — pydantic writes `Optional[SecretStr]` as `anyOf`), `if`/`then`/`else`,
 *   `dependentSchemas` (draft-07 `dependencies`), and `$ref` / `$dynamicRef` / `$recursiveRef`
 *   resolved inside the schema (`#`, `#/json/pointer` into `$defs` or `definitions`, `#anchor`, an
 *   embedded `$id`);
 * - an object's members: `properties`, `patternProperties` (matched against the call's keys),
 *   `additionalProperties` (keys neither names), `unevaluatedProperties` (keys `properties` and
 *   `patternProperties` leave);
 * - an array's elements: `prefixItems` (draft-07 array `items`), `items`, `additionalItems`,
 *   `unevaluatedItems`, and `contains` (taken to apply to every element).
 *
 * Fails safe (docs/GATEWAY.md §1): a location whose schema cannot be read to the end is treated as
 * sensitive as a whole — a `$ref` that is remote or names nothing, a `$ref` cycle that returns to
 * the same location without reaching a schema, a `patternProperties` pattern that is not a valid
 * regular expression (taken to match every key), nesting past {@link MAX_SCHEMA_DEPTH} levels
 * where the rest of the schema could still mark something, and a schema taking more than
 * {@link MAX_SCHEMA_STEPS} steps. At the root (the whole arguments object) that is each top-level
 * argument of the call. `not` is not followed (its annotations never apply).
 *
 * Deliberately does not validate: it only names locations. Positions that depend on the call (a
 * key under `additionalProperties`, an element of `items`) are named for each one `args` holds;
 * without `args`, only fixed positions (`properties`, tuple positions) are named.
 */
import { pointerOf } from '@countersign/arap';

/** Deepest instance level read for `writeOnly` (nested objects and arrays together). */
export const MAX_SCHEMA_DEPTH = 16;

/** Most subschema visits for one call; past it each location still being read is treated as sensitive. */
export const MAX_SCHEMA_STEPS = 20_000;

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

interface Walk {
  root: Schema;
  hasArgs: boolean;
  steps: number;
  out: string[];
  patterns: Map<string, RegExp | null>;
  ids?: Map<string, Schema>;
}

// The location `at` (holding `value`) is sensitive as a whole.
function mark(w: Walk, at: readonly string[], value: unknown): void {
  if (at.length > 0) w.out.push(pointerOf(at));
  else if (isObject(value)) for (const k of Object.keys(value)) w.out.push(pointerOf([k]));
}

// Every schema object under `root` by its `$id`, `$anchor` (as `#name`) and `$dynamicAnchor`.
function idIndex(w: Walk): Map<string, Schema> {
  if (w.ids !== undefined) return w.ids;
  const ids = new Map<string, Schema>();
  const stack: unknown[] = [w.root];
  for (let n = 0; stack.length > 0 && n < MAX_SCHEMA_STEPS; n++) {
    const s = stack.pop();
    if (Array.isArray(s)) stack.push(...(s as unknown[]));
    if (!isObject(s)) continue;
    if (typeof s['$id'] === 'string' && !ids.has(s['$id'])) ids.set(s['$id'], s);
    for (const k of ['$anchor', '$dynamicAnchor']) if (typeof s[k] === 'string' && !ids.has(`#${s[k]}`)) ids.set(`#${s[k] as string}`, s);
    stack.push(...Object.values(s));
  }
  return (w.ids = ids);
}

// The schema `ref` names, read against the resource `base` (the nearest enclosing schema with an
// `$id`, else the root); `undefined` when it is remote or names nothing.
function resolveRef(w: Walk, base: Schema, ref: string): Schema | undefined {
  const hash = ref.indexOf('#');
  const uri = hash < 0 ? ref : ref.slice(0, hash);
  let resource: Schema | undefined = base;
  if (uri !== '') resource = uri === base['$id'] ? base : uri === w.root['$id'] ? w.root : idIndex(w).get(uri);
  if (resource === undefined) return undefined;
  let fragment: string;
  try {
    fragment = decodeURIComponent(hash < 0 ? '' : ref.slice(hash + 1));
  } catch {
    return undefined;
  }
  if (fragment === '') return resource;
  if (!fragment.startsWith('/')) return idIndex(w).get(`#${fragment}`);
  let at: unknown = resource;
  for (const raw of fragment.slice(1).split('/')) {
    const t = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(at) && /^(0|[1-9][0-9]*)$/.test(t)) at = (at as unknown[])[Number(t)];
    else if (isObject(at) && Object.hasOwn(at, t)) at = at[t];
    else return undefined;
  }
  if (typeof at === 'boolean') return {};
  return isObject(at) ? at : undefined;
}

// `pattern` as a regular expression, or `null` when it is not one (then taken to match every key).
function regex(w: Walk, pattern: string): RegExp | null {
  if (!w.patterns.has(pattern)) w.patterns.set(pattern, compile(pattern, 'u') ?? compile(pattern, ''));
  return w.patterns.get(pattern) ?? null;
}

function compile(pattern: string, flags: string): RegExp | null {
  try {
    return new RegExp(pattern, flags);
  } catch {
    return null;
  }
}

const SAME_LOCATION_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const SAME_LOCATION_ONE = ['if', 'then', 'else'] as const;
const REFS = ['$ref', '$dynamicRef', '$recursiveRef'] as const;
const CHILD_KEYWORDS = [
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  'contains',
];
const MAY_MARK = /"(writeOnly|\$ref|\$dynamicRef|\$recursiveRef)"/;

// `schema` applies at `at`, where the call holds `value`; `refs` are the `$ref` targets already
// being read at this same location (a cycle), `base` the resource relative references resolve in.
function visit(w: Walk, schema: unknown, at: readonly string[], value: unknown, refs: ReadonlySet<Schema>, base: Schema): void {
  if (!isObject(schema)) return; // true / false mark nothing
  if (w.hasArgs && value === undefined) return; // nothing of the call is there
  if (++w.steps > MAX_SCHEMA_STEPS || schema['writeOnly'] === true) return mark(w, at, value);
  const here = schema !== w.root && typeof schema['$id'] === 'string' && !schema['$id'].startsWith('#') ? schema : base;

  for (const k of SAME_LOCATION_LISTS)
    if (Array.isArray(schema[k])) for (const s of schema[k] as unknown[]) visit(w, s, at, value, refs, here);
  for (const k of SAME_LOCATION_ONE) visit(w, schema[k], at, value, refs, here);
  for (const k of ['dependentSchemas', 'dependencies'])
    if (isObject(schema[k])) for (const s of Object.values(schema[k])) visit(w, s, at, value, refs, here);
  for (const k of REFS) {
    const ref = schema[k];
    if (ref === undefined) continue;
    const target = typeof ref === 'string' ? resolveRef(w, here, ref) : undefined;
    if (target === undefined || refs.has(target)) return mark(w, at, value);
    visit(w, target, at, value, new Set([...refs, target]), here);
  }

  if (at.length >= MAX_SCHEMA_DEPTH) {
    if (CHILD_KEYWORDS.some((k) => schema[k] !== undefined) && MAY_MARK.test(JSON.stringify({ schema, root: w.root }))) mark(w, at, value);
    return;
  }
  const none = new Set<Schema>();
  const child = (s: unknown, token: string, v: unknown) => visit(w, s, [...at, token], v, none, here);

  const props = isObject(schema['properties']) ? schema['properties'] : {};
  const member = (k: string) => (isObject(value) ? value[k] : undefined);
  for (const [k, s] of Object.entries(props)) child(s, k, member(k));
  const patterns = isObject(schema['patternProperties']) ? Object.entries(schema['patternProperties']) : [];
  if (isObject(value))
    for (const [k, v] of Object.entries(value)) {
      let matched = false;
      for (const [p, s] of patterns) {
        const re = regex(w, p);
        if (re === null || re.test(k)) {
          matched = true;
          child(s, k, v);
        }
      }
      if (Object.hasOwn(props, k)) continue;
      child(schema['unevaluatedProperties'], k, v);
      if (!matched) child(schema['additionalProperties'], k, v);
    }

  const items = schema['items'];
  const tuple: unknown[] = Array.isArray(schema['prefixItems']) ? schema['prefixItems'] : Array.isArray(items) ? items : [];
  tuple.forEach((s, i) => child(s, String(i), Array.isArray(value) ? (value as unknown[])[i] : undefined));
  if (Array.isArray(value)) {
    const rest = Array.isArray(items) ? schema['additionalItems'] : items;
    (value as unknown[]).forEach((v, i) => {
      if (i >= tuple.length) {
        child(rest, String(i), v);
        child(schema['unevaluatedItems'], String(i), v);
      }
      child(schema['contains'], String(i), v);
    });
  }
}

/**
 * JSON Pointers (unsorted, possibly repeated) of the locations of `args` that `schema` (a JSON
 * Schema, 2020-12 or draft-07) marks `writeOnly`, by the rules of this module; fixed positions
 * only when `args` is `undefined`. Never throws; anything but an object schema marks nothing.
 */
export function writeOnlyPointers(schema: unknown, args?: Record<string, unknown>): string[] {
  if (!isObject(schema)) return [];
  const w: Walk = { root: schema, hasArgs: args !== undefined, steps: 0, out: [], patterns: new Map() };
  visit(w, schema, [], args, new Set([schema]), schema);
  return w.out;
}
