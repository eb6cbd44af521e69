/**
 * Hidden values, as the approval service shows them (docs/APPROVERS.md §Hidden values): a request's
 * sensitive arguments arrive already masked — `sha256:<hex>` of the value's JCS form, named in
 * `context.redacted` (`packages/arap/src/redaction.ts`) — and every view (inbox, CLI, Slack,
 * e-mail page, ITSM summary) reads them through {@link shownArguments} as `hidden · sha256:<12
 * hex>…`. An approver given the value out of band compares it: in the browser (the inbox script,
 * `assets.ts`) or with `countersign approvals compare` ({@link compareHidden}).
 * Deliberately does not: ever hold a raw value (the gate never sends one), or unmask anything.
 */
import { hiddenLabel, REDACTED_VALUE, valueAt, pointerTokens } from '@countersign/arap';
import { canonicalHash } from '../request-lifecycle.js';

/** The part of a request body these functions read: `context.arguments` and `context.redacted`. */
export interface RedactedContext {
  arguments: Record<string, unknown>;
  redacted?: string[] | undefined;
}

/** One hidden field: its JSON Pointer, the full hex digest (64 digits) and the label an approver reads. */
export interface HiddenField {
  pointer: string;
  digest: string;
  label: string;
}

/** The hidden fields of a request, in pointer order; empty when nothing is masked. */
export function hiddenFields(ctx: RedactedContext): HiddenField[] {
  return (ctx.redacted ?? []).flatMap((pointer) => {
    const masked = valueAt(ctx.arguments, pointer);
    if (typeof masked !== 'string' || !REDACTED_VALUE.test(masked)) return [];
    return [{ pointer, digest: masked.slice('sha256:'.length), label: hiddenLabel(masked) }];
  });
}

/**
 * The arguments as every view shows them: a copy with each hidden field's `sha256:<hex>` replaced
 * by its label `hidden · sha256:<12 hex>…`; the arguments themselves when nothing is hidden.
 */
export function shownArguments(ctx: RedactedContext): Record<string, unknown> {
  const fields = hiddenFields(ctx);
  if (fields.length === 0) return ctx.arguments;
  const copy = structuredClone(ctx.arguments);
  for (const f of fields) {
    const tokens = pointerTokens(f.pointer);
    const last = tokens.pop() as string;
    let parent: unknown = copy;
    for (const t of tokens) parent = (parent as Record<string, unknown>)[t];
    (parent as Record<string, unknown>)[last] = f.label;
  }
  return copy;
}

/**
 * The top-level arguments `ctx` hides (a hidden `/reference`, not a hidden `/card/number`): in the
 * line an approver reads first they read as their label, unquoted (`plain-language.ts`).
 */
export function hiddenTopLevel(ctx: RedactedContext): Set<string> {
  return new Set(hiddenFields(ctx).flatMap((f) => (f.pointer.lastIndexOf('/') === 0 ? pointerTokens(f.pointer) : [])));
}

/**
 * The hex digests `text` may stand for: the JCS SHA-256 of `text` as a string, and, when `text`
 * is JSON (`4111`, `{"a":1}`), of that JSON value — so a number, an object or a string can be
 * compared as the approver was given it. The browser's compare box computes the same two.
 */
export function valueDigests(text: string): string[] {
  const out = [canonicalHash(text)];
  try {
    const parsed: unknown = JSON.parse(text);
    const d = canonicalHash(parsed);
    if (!out.includes(d)) out.push(d);
  } catch {
    // not JSON: compared as a string only
  }
  return out;
}

/** Whether `text` is the value hidden at `pointer`: `match`, `no-match`, or `not-hidden` (the request hides nothing there). */
export function compareHidden(ctx: RedactedContext, pointer: string, text: string): 'match' | 'no-match' | 'not-hidden' {
  const field = hiddenFields(ctx).find((f) => f.pointer === pointer);
  if (field === undefined) return 'not-hidden';
  return valueDigests(text).includes(field.digest) ? 'match' : 'no-match';
}
