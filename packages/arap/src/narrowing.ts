/**
 * Counter-proposals that narrow (issue 27 §4): which fields of a tool call an approver may narrow,
 * in which direction, and whether a proposed set of arguments is such a narrowing of the requested
 * ones. Pure functions, written once for both ends of the ARAP wire: the policy names the spec
 * (`@narrowable("amount:max,path:subpath")`), the approval service checks an approver's proposal
 * with {@link checkNarrowing} before it records anything.
 *
 * A proposal never changes the call it answers: SEP-2848 §The task handle is not authority makes
 * the call binding immutable, so the original task ends `denied-not-executed` and the proposal is
 * a new call the client may make, evaluated on its own.
 *
 * Directions:
 * - `max`: a finite number at most the requested one (and not below 0 when the request was ≥ 0);
 * - `min`: a finite number at least the requested one;
 * - `subpath`: a string path equal to the requested one or below it (`/a/b` → `/a/b/c`), with no
 *   `.` or `..` segment, no empty segment and no NUL;
 * - `subset`: an array whose every element is in the requested array (no element added, none
 *   repeated more often than requested), not empty.
 *
 * Deliberately does not: evaluate policy (the narrowed call is evaluated fresh when it is made),
 * resolve paths on a file system, or compare non-JSON values.
 */
import { isDeepStrictEqual } from 'node:util';

/** The directions a field may be narrowed in (see the module header). */
export const NARROWING_DIRECTIONS = ['max', 'min', 'subpath', 'subset'] as const;
/** One of {@link NARROWING_DIRECTIONS}. */
export type NarrowingDirection = (typeof NARROWING_DIRECTIONS)[number];
/** Narrowable fields of one tool call: top-level argument name → allowed direction. */
export type NarrowingSpec = Record<string, NarrowingDirection>;

/** A spec text that cannot be read (policy load time); `message` names the entry at fault. */
export class NarrowingSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NarrowingSpecError';
  }
}

/** A narrowable field name: a top-level argument name of 1–64 characters `[A-Za-z0-9_-]`, not starting with a digit or `-`. */
export const NARROWABLE_FIELD = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const FIELD = NARROWABLE_FIELD;

/**
 * Read a spec text, `"<field>:<direction>"` entries separated by commas (whitespace around them
 * ignored), e.g. `"amount:max,path:subpath"`. Throws {@link NarrowingSpecError} for an empty text,
 * a malformed entry, a field named twice, or an unknown direction.
 */
export function parseNarrowingSpec(text: string): NarrowingSpec {
  const spec: NarrowingSpec = {};
  const entries = text.split(',').map((e) => e.trim());
  if (text.trim() === '') throw new NarrowingSpecError('a narrowing spec names at least one field, e.g. "amount:max"');
  for (const entry of entries) {
    const [field, direction, extra] = entry.split(':').map((p) => p.trim());
    if (field === undefined || direction === undefined || extra !== undefined || !FIELD.test(field)) {
      throw new NarrowingSpecError(`"${entry.slice(0, 80)}" is not "<field>:<direction>"`);
    }
    if (!(NARROWING_DIRECTIONS as readonly string[]).includes(direction)) {
      throw new NarrowingSpecError(
        `field "${field}": direction must be one of ${NARROWING_DIRECTIONS.join(', ')}, got "${direction.slice(0, 40)}"`,
      );
    }
    if (Object.hasOwn(spec, field)) throw new NarrowingSpecError(`field "${field}" is named twice`);
    spec[field] = direction as NarrowingDirection;
  }
  return spec;
}

/**
 * Outcome of {@link checkNarrowing}: `ok` with the fields that differ (sorted), or a refusal
 * naming the field at fault (`null` when the proposal as a whole is at fault) and why, in words
 * an approver reads (no argument value is quoted).
 */
export type NarrowingCheck = { ok: true; changed: string[] } | { ok: false; field: string | null; message: string };

const refuse = (field: string | null, message: string): NarrowingCheck => ({
  ok: false,
  field: field === null ? null : quotedField(field).slice(1, -1),
  message,
});

/** Longest field name a refusal quotes, characters; a longer one is cut, saying how much was left out. */
export const MAX_QUOTED_FIELD_CHARS = 64;

/**
 * A field name of a proposal as a refusal quotes it, bounded: JSON-quoted (controls and newlines
 * escaped), format and separator characters (bidi controls, zero-width characters, U+2028) as
 * `\u` escapes, and past {@link MAX_QUOTED_FIELD_CHARS} characters cut with `…(N more
 * characters)`: `"amount"`, `"a\u202eb"`. The proposal is the approver's input, echoed back in a
 * 400 problem body and the inbox.
 */
export function quotedField(key: string): string {
  const cut = key.length > MAX_QUOTED_FIELD_CHARS ? key.slice(0, MAX_QUOTED_FIELD_CHARS) : key;
  const more = key.length - cut.length;
  const escaped = JSON.stringify(cut).replace(/[\p{Cf}\p{Zl}\p{Zp}]/gu, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return more > 0 ? `${escaped.slice(0, -1)}…(${more} more characters)"` : escaped;
}

/**
 * The segments of a plain path (`/a/b` → `['', 'a', 'b']`, `a/b` → `['a', 'b']`, a trailing `/`
 * ignored), or null when it is not plain: what `subpath` compares. Not plain: a control or format
 * character (NUL, bidi, zero-width), `%` or `\` (a tool that URL-decodes or runs on Windows would
 * read another path), an empty segment, or one that is `.` or `..` or holds `/` or `\` once
 * NFKC-normalised and trimmed (`‥`, fullwidth `．．`, ` ..`). Such a path never meets a limit and
 * cannot be narrowed.
 */
export function segmentsOfPath(path: string): string[] | null {
  if (/[\p{Cc}\p{Cf}%\\]/u.test(path)) return null;
  const rooted = path.startsWith('/');
  const parts = (rooted ? path.slice(1) : path).replace(/\/+$/, '').split('/');
  const dotted = (p: string) => {
    const n = p.normalize('NFKC').trim();
    return n === '' || n === '.' || n === '..' || /[/\\]/.test(n);
  };
  if (parts.some((p) => p === '' || dotted(p))) return null;
  return rooted ? ['', ...parts] : parts;
}

function checkField(direction: NarrowingDirection, requested: unknown, proposed: unknown): string | null {
  switch (direction) {
    case 'max':
    case 'min': {
      if (typeof requested !== 'number' || !Number.isFinite(requested))
        return 'the requested value is not a number, so it cannot be narrowed';
      if (typeof proposed !== 'number' || !Number.isFinite(proposed)) return 'must be a finite number';
      if (direction === 'max' && proposed > requested) return 'may only be lowered (at most the requested value)';
      if (direction === 'max' && requested >= 0 && proposed < 0) return 'may not go below 0';
      if (direction === 'min' && proposed < requested) return 'may only be raised (at least the requested value)';
      return null;
    }
    case 'subpath': {
      if (typeof requested !== 'string') return 'the requested value is not a path, so it cannot be narrowed';
      if (typeof proposed !== 'string') return 'must be a path (a string)';
      const want = segmentsOfPath(requested);
      const got = segmentsOfPath(proposed);
      if (want === null)
        return 'the requested path is not plain (".", ".." or a lookalike, an empty segment, %, a backslash or a control character), so it cannot be narrowed';
      if (got === null) return 'must be a plain path: no ".", ".." or lookalike, no empty segment, %, backslash or control character';
      if (got.length < want.length || want.some((s, i) => got[i] !== s)) return 'must be the requested path or a path below it';
      return null;
    }
    case 'subset': {
      if (!Array.isArray(requested)) return 'the requested value is not a list, so it cannot be narrowed';
      if (!Array.isArray(proposed)) return 'must be a list';
      if (proposed.length === 0) return 'must keep at least one element';
      const left = [...requested];
      for (const item of proposed) {
        const at = left.findIndex((r) => isDeepStrictEqual(r, item));
        if (at < 0) return 'may only keep elements of the requested list';
        left.splice(at, 1);
      }
      return null;
    }
  }
}

/**
 * Whether `proposed` narrows `requested` under `spec` (both the tool's complete top-level
 * arguments). Refused when the proposal adds or removes a field, changes a field the spec does not
 * name, changes a named field against its direction, or changes nothing at all (that would be an
 * approval, not a counter-proposal).
 */
export function checkNarrowing(requested: Record<string, unknown>, proposed: Record<string, unknown>, spec: NarrowingSpec): NarrowingCheck {
  const changed: string[] = [];
  const keys = [...new Set([...Object.keys(requested), ...Object.keys(proposed)])].sort();
  for (const key of keys) {
    const inRequest = Object.hasOwn(requested, key);
    const inProposal = Object.hasOwn(proposed, key);
    if (!inProposal)
      return refuse(key, `${quotedField(key)} is missing from the proposal; a narrower call keeps every field of the request`);
    if (!inRequest) return refuse(key, `${quotedField(key)} is not in the request; a narrower call adds no field`);
    if (isDeepStrictEqual(requested[key], proposed[key])) continue;
    const direction = Object.hasOwn(spec, key) ? spec[key] : undefined;
    if (direction === undefined) return refuse(key, `${quotedField(key)} is not narrowable; only ${narrowableList(spec)} may differ`);
    const why = checkField(direction, requested[key], proposed[key]);
    if (why !== null) return refuse(key, `${quotedField(key)} ${why}`);
    changed.push(key);
  }
  if (changed.length === 0) return refuse(null, 'the proposal is the requested call unchanged; approve it instead');
  return { ok: true, changed };
}

/** The spec's fields in words, for messages: `"amount" (lower) and "path" (a sub-path)`. */
export function narrowableList(spec: NarrowingSpec): string {
  const words: Record<NarrowingDirection, string> = { max: 'lower', min: 'higher', subpath: 'a sub-path', subset: 'fewer elements' };
  const parts = Object.entries(spec).map(([k, d]) => `"${k}" (${words[d]})`);
  if (parts.length === 0) return 'no field';
  return parts.length === 1 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1] ?? ''}`;
}
