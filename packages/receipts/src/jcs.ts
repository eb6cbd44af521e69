/**
 * JCS (RFC 8785) canonical JSON and its SHA-256, with the `canonicalize` library: what a receipt's
 * signed bytes, its chain digest and the call binding digest are computed over. The gate's call
 * binding (`src/binding/call-binding.ts`) uses these same functions, so the digest a verifier
 * recomputes from disclosed arguments is the one the gate bound ({@link callBindingDigest}).
 */
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

// `canonicalize` is CommonJS whose typings claim an ES default export; take whichever shape loads.
const canonicalize = ((canonicalizeModule as unknown as { default?: unknown }).default ?? canonicalizeModule) as (
  value: unknown,
) => string | undefined;

/** JCS (RFC 8785) canonical JSON. Throws `TypeError` for values JSON cannot represent. */
export function canonicalJson(value: unknown): string {
  const out = canonicalize(value);
  if (out === undefined) throw new TypeError('value has no canonical JSON form');
  return out;
}

/** SHA-256 hex digest of the JCS form of `value`. */
export function jcsSha256(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

/** A principal as a receipt and the call binding carry it: issuer, subject, RFC 8693 delegation chain. */
export interface ReceiptPrincipal {
  iss: string;
  sub: string;
  act?: Array<{ iss?: string; sub: string }>;
}

/**
 * The call binding digest (SEP-2848 §The task handle is not authority): SHA-256 hex over the JCS
 * form of `{tool, arguments, principal, resource}`.
 */
export function callBindingDigest(fields: {
  tool: string;
  arguments: Record<string, unknown>;
  principal: ReceiptPrincipal;
  resource: { type: 'tool'; id: string };
}): string {
  return jcsSha256({ tool: fields.tool, arguments: fields.arguments, principal: fields.principal, resource: fields.resource });
}
