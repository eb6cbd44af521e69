/**
 * Keys derived from a `Principal` (`principal.ts`), each for one purpose. They differ in what of
 * the principal they cover (issuer and subject only, or the whole delegation chain) and in whether
 * they are keyed with a server secret, so keep each to its purpose:
 *
 * - {@link principalKey}: plain `iss` + NUL + `sub`, the input of the others and of the MRTR
 *   `requestState` binding (`src/mcp/submission-input.ts`);
 * - {@link ownerKeyOf}: SHA-256 of that, the owner of a conformance-profile fixture task;
 * - {@link taskOwnerKeyOf}: who may see and cancel an approval task (delegation included);
 * - {@link quotaKeyOf}: whose submission quota a call counts against (keyed, delegation left out);
 *
 * Values of `ownerKeyOf`, `taskOwnerKeyOf` and `quotaKeyOf` are stored in workflow memos, snapshots
 * and workflow ids: changing how any of them is computed orphans running tasks and limits.
 * Deliberately does not authenticate anything: the principal must come from a verified token.
 */
import { createHash, createHmac } from 'node:crypto';
import { jcsSha256 } from '../binding/call-binding.js';
import type { Principal } from './principal.js';

/** Stable string key of a principal (`iss` + NUL + `sub`, no delegation); the input of the hashed and keyed keys below. */
export function principalKey(p: Principal): string {
  return `${p.iss}\u0000${p.sub}`;
}

/** SHA-256 hex of the principal key (issuer + subject, no delegation). */
export function ownerKeyOf(p: Principal): string {
  return createHash('sha256').update(principalKey(p)).digest('hex');
}

/**
 * Who may see and cancel a task: SHA-256 over the JCS form of the whole originating context,
 * issuer, subject and RFC 8693 delegation chain (SEP-2848 §Security, task access control: "the
 * task's originating context"). Another agent acting for the same user is another owner.
 */
export function taskOwnerKeyOf(p: Principal): string {
  return jcsSha256({ iss: p.iss, sub: p.sub, act: p.act ?? null });
}

/**
 * Key of the caller's submission quota: HMAC(server key, issuer + subject). Delegation is left out
 * on purpose, so agents acting for one user share that user's limits; keyed, so the limiter's
 * workflow id does not reveal who it counts for.
 */
export function quotaKeyOf(serverKey: string, p: Principal): string {
  return createHmac('sha256', serverKey)
    .update(`countersign/quota\u0000${principalKey(p)}`)
    .digest('hex');
}
