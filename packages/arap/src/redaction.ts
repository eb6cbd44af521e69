/**
 * Redaction for display: how a sensitive argument travels to an approval service. The gate
 * replaces the value at each sensitive JSON Pointer (RFC 6901) of a request's `context.arguments`
 * with `sha256:<hex>` — SHA-256 of the value's JCS (RFC 8785) canonical JSON — and names the masked
 * fields in `context.redacted` (at most {@link MAX_REDACTED} pointers, sorted). The raw value stays
 * with the gate and the workflow, which execute with it; the call binding digest is over the real
 * arguments, unchanged (SEP-2848 §The task handle is not authority). An approver who was given
 * the value out of band compares digests, never sees it (docs/APPROVERS.md §Hidden values).
 *
 * Written once for both ends: the gate masks (`src/backends/arap-http-backend.ts`, with the JCS
 * digest of `@countersign/receipts`), the approval service validates and shows
 * (`packages/approvals`). Deliberately does not: compute digests itself (the caller passes its JCS
 * SHA-256, so this package needs no JCS library), or decide which fields are sensitive
 * (`src/tools/tool-presentation.ts` collects the declarations).
 */
import { z } from 'zod';

/** Most masked fields one request may name (`context.redacted`). */
export const MAX_REDACTED = 64;

/** Key of a tool descriptor's `_meta` listing the JSON Pointers of its sensitive arguments. */
export const SENSITIVE_META_KEY = 'io.countersign/sensitive';

/** A masked value: `sha256:` and 64 lowercase hex digits. */
export const REDACTED_VALUE = /^sha256:[0-9a-f]{64}$/;

/**
 * A JSON Pointer (RFC 6901) into the arguments naming one field: starts with `/` (the whole
 * document is never one field), at most 512 characters, `~` only as `~0` or `~1`.
 */
export const JsonPointerSchema = z
  .string()
  .min(2)
  .max(512)
  .regex(/^(\/([^~/]|~[01])*)+$/, 'must be a JSON Pointer such as /reference (RFC 6901; "~" only as ~0 or ~1)');

/** The reference tokens of `pointer` (`/a~1b/0` → `['a/b', '0']`). Throws `Error` for a string that is not a pointer. */
export function pointerTokens(pointer: string): string[] {
  if (!JsonPointerSchema.safeParse(pointer).success) throw new Error(`not a JSON Pointer: ${JSON.stringify(pointer.slice(0, 80))}`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The pointer of `tokens` (`['a/b', '0']` → `/a~1b/0`). */
export function pointerOf(tokens: readonly string[]): string {
  return tokens.map((t) => `/${t.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

function own(container: unknown, token: string): boolean {
  if (Array.isArray(container)) return /^(0|[1-9][0-9]*)$/.test(token) && Number(token) < container.length;
  return typeof container === 'object' && container !== null && Object.prototype.hasOwnProperty.call(container, token);
}

/** The value at `pointer` in `doc`, or `undefined` when it names nothing there. */
export function valueAt(doc: unknown, pointer: string): unknown {
  let at: unknown = doc;
  for (const t of pointerTokens(pointer)) {
    if (!own(at, t)) return undefined;
    at = (at as Record<string, unknown>)[t];
  }
  return at;
}

/** What {@link redactArguments} returns: the masked copy and the pointers it masked (sorted, unique). */
export interface RedactedArguments {
  arguments: Record<string, unknown>;
  redacted: string[];
}

/**
 * A copy of `args` with the value at each of `pointers` that names a field replaced by
 * `sha256:<digest(value)>`; pointers naming nothing are skipped, as is one under a field already
 * masked. More than {@link MAX_REDACTED} masked fields are widened to their top-level arguments
 * (still masked, never shown); more top-level arguments than that throws `Error` (a request is
 * then not sent rather than sent with a secret). `digest` is the hex SHA-256 of the JCS form.
 */
export function redactArguments(
  args: Record<string, unknown>,
  pointers: readonly string[],
  digest: (value: unknown) => string,
): RedactedArguments {
  const present = [...new Set(pointers)].filter((p) => valueAt(args, p) !== undefined).sort();
  // a field inside one already masked is masked with it
  let masked = present.filter((p) => !present.some((q) => q !== p && p.startsWith(`${q}/`)));
  if (masked.length > MAX_REDACTED) masked = [...new Set(masked.map((p) => pointerOf(pointerTokens(p).slice(0, 1))))].sort();
  if (masked.length > MAX_REDACTED) throw new Error(`more than ${MAX_REDACTED} sensitive arguments; the request is not sent`);
  if (masked.length === 0) return { arguments: args, redacted: [] };
  const copy = structuredClone(args);
  for (const p of masked) {
    const tokens = pointerTokens(p);
    const last = tokens.pop() as string;
    let parent: unknown = copy;
    for (const t of tokens) parent = (parent as Record<string, unknown>)[t];
    const container = parent as Record<string, unknown>;
    container[last] = `sha256:${digest(container[last])}`;
  }
  return { arguments: copy, redacted: masked };
}

/** What an approver reads in place of a masked value: `hidden · sha256:3f2a9c01b7de…` (the first 12 hex digits). */
export function hiddenLabel(masked: string): string {
  return `hidden · ${masked.slice(0, 'sha256:'.length + 12)}…`;
}
