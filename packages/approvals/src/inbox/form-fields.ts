/**
 * Reading an HTML form post (`application/x-www-form-urlencoded` or `multipart/form-data`) for the
 * approver inbox and the e-mail link page, refusing a single-valued field sent more than once.
 *
 * Why: hono's `parseBody()` keeps the last of repeated keys, so `decision=deny&decision=approve`
 * would approve and `comment=first&comment=second` would record "second"; a form that says two
 * things is hostile or broken, and deciding on either value is a guess. Fields a route lists as
 * multi-valued (the batch's `ids`) are returned as arrays.
 */
import type { Context } from 'hono';

/** A form field's value: one string or uploaded file. */
export type FormValue = string | File;

/**
 * The outcome of {@link readFormFields}:
 * - `fields`: single-valued fields map to one {@link FormValue}; fields named in `multiValued`
 *   map to a `FormValue[]` (empty when absent, one element when sent once).
 * - `unreadable`: the body is not the form its content type names (a truncated or mistyped body).
 * - `repeated`: `field` (a single-valued field) was sent more than once; nothing should change.
 */
export type FormRead<M extends string> =
  | { kind: 'fields'; fields: Record<string, FormValue | undefined>; multi: Record<M, FormValue[]> }
  | { kind: 'unreadable' }
  | { kind: 'repeated'; field: string };

/**
 * Read the request's form body with every value kept (`parseBody({ all: true })`).
 *
 * @param c the hono context of a POST.
 * @param multiValued names of fields that may legitimately repeat; every other field must appear at most once.
 * @returns a {@link FormRead}; never throws for a bad body.
 */
export async function readFormFields<M extends string = never>(c: Context, multiValued: readonly M[] = []): Promise<FormRead<M>> {
  let parsed: Record<string, FormValue | FormValue[]>;
  try {
    parsed = await c.req.parseBody({ all: true });
  } catch {
    return { kind: 'unreadable' };
  }
  const multiNames = new Set<string>(multiValued);
  const fields: Record<string, FormValue | undefined> = {};
  const multi = Object.fromEntries(multiValued.map((name) => [name, [] as FormValue[]])) as Record<M, FormValue[]>;
  for (const [name, value] of Object.entries(parsed)) {
    if (multiNames.has(name)) {
      multi[name as M] = Array.isArray(value) ? value : [value];
    } else if (!Array.isArray(value)) {
      fields[name] = value;
    } else if (value.length === 1) {
      fields[name] = value[0]; // a `name[]` key sent once
    } else {
      return { kind: 'repeated', field: name };
    }
  }
  return { kind: 'fields', fields, multi };
}

/** The message of a 400 page for a repeated field (the name is cut to 100 characters; pages escape it). */
export function repeatedFieldMessage(field: string): string {
  return `The form sent the field "${field.slice(0, 100)}" more than once; nothing was changed. Go back and try again.`;
}
