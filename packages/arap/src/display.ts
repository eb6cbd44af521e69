/**
 * Display hints: how a tool asks approvers to read its calls. A tool descriptor's
 * `_meta["io.countersign/display"]` says the title an approver reads, which arguments make the
 * headline (shown first, at most {@link MAX_HEADLINE}), and per argument a label and a currency
 * (ISO 4217 code) or unit; `facts` states what is true of every call though no argument says it
 * (a fixed source account). The gate reads them from the tool (`src/tools/tool-presentation.ts`,
 * with defaults for gateway tools from the upstream schema), sends them as the ARAP resource's
 * `properties.display`, and the approval service validates them on the wire with
 * {@link DisplayHintsSchema} and writes one headline from them for every view
 * (`packages/approvals/src/inbox/plain-language.ts`).
 *
 * Deliberately does not: take part in the call binding (hints describe the tool, they are not what
 * is approved), check that a named argument exists (a hint for an absent argument is skipped when
 * shown), or format anything (the service does).
 */
import { z } from 'zod';

/** Key of a tool descriptor's `_meta` holding its {@link DisplayHints}. */
export const DISPLAY_META_KEY = 'io.countersign/display';

/** Most arguments in a headline. */
export const MAX_HEADLINE = 4;
/** Most arguments with a field hint. */
export const MAX_DISPLAY_FIELDS = 32;
/** Most static facts. */
export const MAX_DISPLAY_FACTS = 4;

/** A top-level argument name: 1–128 characters. */
const ArgumentName = z.string().min(1, 'must be an argument name').max(128, 'must be at most 128 characters');

/** How one argument is shown: `label` (1–64 characters), and `currency` (ISO 4217, e.g. `USD`) or `unit` (1–16 characters, e.g. `GB`), not both. */
export const DisplayFieldSchema = z
  .strictObject({
    label: z.string().min(1).max(64).optional(),
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 currency code: 3 uppercase letters such as USD')
      .optional(),
    unit: z.string().min(1).max(16).optional(),
  })
  .refine((f) => f.currency === undefined || f.unit === undefined, { message: 'give currency or unit, not both', path: ['unit'] });
/** A validated field hint. */
export type DisplayField = z.infer<typeof DisplayFieldSchema>;

/** A statement true of every call of the tool, e.g. `{label: "From", value: "treasury operating account"}`. */
export const DisplayFactSchema = z.strictObject({
  label: z.string().min(1).max(64),
  value: z.string().min(1).max(200),
});
/** A validated fact. */
export type DisplayFact = z.infer<typeof DisplayFactSchema>;

/**
 * `_meta["io.countersign/display"]` of a tool descriptor, and `properties.display` of an ARAP
 * access request's resource: `title` (1–256 characters), `headline` (argument names, at most
 * {@link MAX_HEADLINE}, unique, shown first in this order), `fields` (argument name → {@link
 * DisplayFieldSchema}, at most {@link MAX_DISPLAY_FIELDS}), `facts` (at most {@link
 * MAX_DISPLAY_FACTS}). Strict: an unknown key is an error, so a misspelt hint is noticed.
 */
export const DisplayHintsSchema = z.strictObject({
  title: z.string().min(1).max(256).optional(),
  headline: z
    .array(ArgumentName)
    .max(MAX_HEADLINE, `must name at most ${MAX_HEADLINE} arguments`)
    .refine((names) => new Set(names).size === names.length, 'must not name an argument twice')
    .optional(),
  fields: z
    .record(ArgumentName, DisplayFieldSchema)
    .refine((f) => Object.keys(f).length <= MAX_DISPLAY_FIELDS, `must describe at most ${MAX_DISPLAY_FIELDS} arguments`)
    .optional(),
  facts: z.array(DisplayFactSchema).max(MAX_DISPLAY_FACTS, `must hold at most ${MAX_DISPLAY_FACTS} facts`).optional(),
});
/** Validated display hints. */
export type DisplayHints = z.infer<typeof DisplayHintsSchema>;

/** Display hints that are not valid: `issues` name each field (`display.fields.amount.currency: must be …`). */
export class DisplayHintsError extends Error {
  override readonly name = 'DisplayHintsError';
  constructor(readonly issues: string[]) {
    super(`invalid display hints: ${issues.join('; ')}`);
  }
}

/**
 * `value` validated as {@link DisplayHints}. Throws {@link DisplayHintsError} naming every bad
 * field as `<at>.<path>: <message>` (`at` defaults to `display`); messages never echo the value.
 */
export function parseDisplayHints(value: unknown, at = 'display'): DisplayHints {
  const parsed = DisplayHintsSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new DisplayHintsError(parsed.error.issues.map((i) => `${[at, ...i.path.map(String)].join('.')}: ${i.message}`));
}

/**
 * `base` with `override` laid over it: `title`, `headline` and `facts` replaced when the override
 * gives them, `fields` merged per argument (the override's hint of an argument replaces the base's).
 * Either may be undefined; the result is undefined when both are.
 */
export function mergeDisplayHints(base: DisplayHints | undefined, override: DisplayHints | undefined): DisplayHints | undefined {
  if (override === undefined) return base;
  if (base === undefined) return override;
  const fields = base.fields === undefined && override.fields === undefined ? undefined : { ...base.fields, ...override.fields };
  const out: DisplayHints = { ...base, ...override };
  if (fields !== undefined) out.fields = Object.fromEntries(Object.entries(fields).slice(0, MAX_DISPLAY_FIELDS));
  return out;
}
