/**
 * JSON tool arguments → Cedar JSON values (the `context` of a Cedar authorization request).
 *
 * Mapping (Cedar JSON value format, https://docs.cedarpolicy.com/auth/entities-syntax.html):
 * - string → String; boolean → Bool; array → Set; object → Record.
 * - **every JSON number → Cedar `decimal`** (so `50000` and `50000.5` have the same type and a
 *   policy compares them the same way, with `.greaterThan(decimal("25000.00"))` etc.). Cedar has
 *   only 64-bit integers and decimals with at most 4 fractional digits, range ±922337203685477.5807;
 *   a number outside that range or with more than 4 fractional digits is rejected, never rounded.
 *   Policies therefore never see a Cedar `Long` from tool arguments; `>`/`<` on them is a type
 *   error (which fails closed).
 * - **`null` (Cedar has no null):** an object property whose value is `null` is **omitted** from
 *   the record, at any depth, so `context.arguments has x` is false for `{"x": null}` exactly as for
 *   `{}`. Why: JSON Schema tools (Python servers especially, `Optional[str]` → `anyOf [string,
 *   null]`) send `null` for "not given", and every policy already has to handle an optional argument
 *   being absent; reading it is an evaluation error without `has`, so it still fails closed. What it
 *   costs: a policy cannot tell `null` from absent, so a tool for which `null` means something
 *   absence does not (e.g. "no limit") needs its policy to treat an absent argument as that least
 *   safe value (docs/GATEWAY.md §4). A `null` inside an array, or as the whole value, is rejected:
 *   an array is a Set, which has no "absent" member, and dropping the element would change what
 *   `isEmpty`, `contains` and `containsAll` answer.
 *   Only the policy input is shaped so: the call binding and the execution keep the raw arguments.
 * - an object with a key `__entity`, `__extn` or `__expr` is rejected: Cedar's JSON format would
 *   read it as an entity reference or an extension call, letting a caller forge typed values.
 *
 * Deliberately does not coerce, round or drop anything: a value it cannot represent exactly is a
 * `CedarValueError`, which the PDP turns into a fail-closed deny.
 */
import type { CedarValueJson } from '@cedar-policy/cedar-wasm/nodejs';

/** A tool-argument value that has no exact Cedar representation. `path` is a JSON pointer-ish path. */
export class CedarValueError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'CedarValueError';
  }
}

const RESERVED_KEYS = new Set(['__entity', '__extn', '__expr']);
const DECIMAL_MAX = 922_337_203_685_477;
const MAX_DEPTH = 32;

/** Cedar `decimal(...)` literal text for a JS number, or a `CedarValueError` (see module header). */
export function numberToCedarDecimal(n: number, path = '$'): CedarValueJson {
  if (!Number.isFinite(n)) throw new CedarValueError(path, 'number is not finite');
  if (Math.abs(n) > DECIMAL_MAX) throw new CedarValueError(path, 'number is outside the Cedar decimal range');
  // Within that range, String(n) uses exponent notation only below 1e-6, i.e. with > 4 decimals.
  const text = Object.is(n, -0) ? '0' : String(n);
  if (/e/i.test(text)) throw new CedarValueError(path, 'number has more than 4 fractional digits');
  const dot = text.indexOf('.');
  if (dot >= 0 && text.length - dot - 1 > 4) {
    throw new CedarValueError(path, 'number has more than 4 fractional digits');
  }
  return { __extn: { fn: 'decimal', arg: dot >= 0 ? text : `${text}.0` } };
}

/**
 * Convert one JSON value (as parsed by `JSON.parse`) to a Cedar JSON value; object properties
 * whose value is `null` are left out (module header).
 * Throws `CedarValueError` for a `null` that is not an object property's value (the whole value, an array element), reserved keys, unrepresentable numbers, non-JSON values
 * (undefined, functions, bigint, …) and nesting deeper than 32.
 */
export function toCedarValue(value: unknown, path = '$', depth = 0): CedarValueJson {
  if (depth > MAX_DEPTH) throw new CedarValueError(path, 'nesting is too deep');
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return numberToCedarDecimal(value, path);
  if (value === null) throw new CedarValueError(path, 'null has no Cedar representation');
  if (Array.isArray(value)) return value.map((v, i) => toCedarValue(v, `${path}[${i}]`, depth + 1));
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) throw new CedarValueError(path, 'not a plain JSON object');
    // Object.fromEntries defines own properties, so a `__proto__` key stays a plain key.
    return Object.fromEntries(
      Object.entries(value).flatMap(([k, v]) => {
        if (RESERVED_KEYS.has(k)) throw new CedarValueError(`${path}.${k}`, 'reserved Cedar JSON key');
        return v === null ? [] : [[k, toCedarValue(v, `${path}.${k}`, depth + 1)]];
      }),
    );
  }
  throw new CedarValueError(path, `${typeof value} is not a JSON value`);
}
