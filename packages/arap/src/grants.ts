/**
 * Grants (docs/APPROVERS.md §Grants, docs/DESIGN.md §10): the argument constraints of a
 * time-boxed, count-bounded permit an approver creates, and whether a call's arguments satisfy
 * them. Pure functions, written once for the approval service (which matches each new request
 * against its grants) and its clients (the approvals API, CLI and inbox).
 *
 * A constraint names a top-level argument and a bound in the direction vocabulary of the
 * counter-proposal (`narrowing.ts`), read from the bound instead of from a requested value:
 * - `eq`: the argument equals the value (any JSON; deep equality);
 * - `max`: a finite number at most the bound; `min`: at least it;
 * - `subpath`: a plain path (no `.`, `..` or empty segment, no NUL) equal to the bound or below it;
 * - `subset`: a non-empty list whose every element is one of the bound's (no element more often).
 * A field the grant does not constrain may hold anything; a constrained field missing from the
 * call never matches. A field hidden from approvers holds its `sha256:` digest in the service, so
 * only `eq` on that digest can match it.
 *
 * SEP-2848 forbids reusing an approval ("an approval is an input to a new decision, not a standing
 * grant"): a grant is policy, each
 * later call is evaluated fresh by the gate, and these constraints only decide whether a call the
 * gate found requestable is approved by it. Deliberately does not: evaluate Cedar, or compare
 * nested fields (a constraint is on a top-level argument).
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { NARROWABLE_FIELD, NARROWING_DIRECTIONS, segmentsOfPath } from './narrowing.js';

/** The directions of a grant constraint: equality, and those of {@link NARROWING_DIRECTIONS}. */
export const GRANT_DIRECTIONS = ['eq', ...NARROWING_DIRECTIONS] as const;
/** One of {@link GRANT_DIRECTIONS}. */
export type GrantDirection = (typeof GRANT_DIRECTIONS)[number];

/** One constraint on a top-level argument: exactly one direction and its bound. */
export const GrantConstraintSchema = z.union([
  z.object({ eq: z.unknown().refine((v) => v !== undefined, 'eq needs a value') }).strict(),
  z.object({ max: z.number().finite() }).strict(),
  z.object({ min: z.number().finite() }).strict(),
  z
    .object({ subpath: z.string().min(1).max(4096) })
    .strict()
    .refine(
      (c) => segmentsOfPath(c.subpath) !== null,
      'subpath must be a plain path: no ".", ".." (or a lookalike) or empty segments, no %, backslash or control character',
    ),
  z.object({ subset: z.array(z.unknown()).min(1).max(256) }).strict(),
]);
/** A validated constraint. */
export type GrantConstraint = z.infer<typeof GrantConstraintSchema>;

/** The most constraints a grant holds (the inbox's form has as many rows). */
export const MAX_GRANT_CONSTRAINTS = 64;

/** Constraints of a grant: argument name (`NARROWABLE_FIELD`) → constraint; at most {@link MAX_GRANT_CONSTRAINTS}. */
export const GrantConstraintsSchema = z
  .record(z.string().regex(NARROWABLE_FIELD, 'an argument name of 1-64 characters [A-Za-z0-9_-]'), GrantConstraintSchema)
  .refine((c) => Object.keys(c).length <= MAX_GRANT_CONSTRAINTS, `at most ${MAX_GRANT_CONSTRAINTS} constraints`);
/** Validated constraints. */
export type GrantConstraints = z.infer<typeof GrantConstraintsSchema>;

/** The direction of a constraint (its only key). */
export function directionOf(c: GrantConstraint): GrantDirection {
  return Object.keys(c)[0] as GrantDirection;
}

function fieldMatches(c: GrantConstraint, value: unknown): boolean {
  if ('eq' in c) return isDeepStrictEqual(value, c.eq);
  if ('max' in c) return typeof value === 'number' && Number.isFinite(value) && value <= c.max;
  if ('min' in c) return typeof value === 'number' && Number.isFinite(value) && value >= c.min;
  if ('subpath' in c) {
    if (typeof value !== 'string') return false;
    const want = segmentsOfPath(c.subpath);
    const got = segmentsOfPath(value);
    return want !== null && got !== null && got.length >= want.length && want.every((s, i) => got[i] === s);
  }
  if (!Array.isArray(value) || value.length === 0) return false;
  const left = [...c.subset];
  for (const item of value) {
    const at = left.findIndex((r) => isDeepStrictEqual(r, item));
    if (at < 0) return false;
    left.splice(at, 1);
  }
  return true;
}

/**
 * Whether a call's top-level `args` satisfy every constraint of `constraints`: returns null when
 * they do, else the first field (sorted) that does not (missing, or outside its bound).
 */
export function unmetConstraint(constraints: GrantConstraints, args: Record<string, unknown>): string | null {
  for (const field of Object.keys(constraints).sort()) {
    const c = constraints[field];
    if (c === undefined) continue;
    if (!Object.hasOwn(args, field) || !fieldMatches(c, args[field])) return field;
  }
  return null;
}

/**
 * One constraint in words, for approvers and the CLI: `amount at most 30000`, `to = "acct-991"`,
 * `path under /repo/docs`, `tags within ["a","b"]`.
 */
export function describeConstraint(field: string, c: GrantConstraint): string {
  if ('eq' in c) return `${field} = ${JSON.stringify(c.eq)}`;
  if ('max' in c) return `${field} at most ${c.max}`;
  if ('min' in c) return `${field} at least ${c.min}`;
  if ('subpath' in c) return `${field} under ${c.subpath}`;
  return `${field} within ${JSON.stringify(c.subset)}`;
}

/** Every constraint in words, sorted by field, joined by `; ` (`any arguments` when none). */
export function describeConstraints(constraints: GrantConstraints): string {
  const parts = Object.keys(constraints)
    .sort()
    .flatMap((f) => {
      const c = constraints[f];
      return c === undefined ? [] : [describeConstraint(f, c)];
    });
  return parts.length === 0 ? 'any arguments' : parts.join('; ');
}
