/**
 * The immutable call binding (SEP-2848 §The task handle is not authority).
 *
 * Captured on the first `tools/call`, never changed: tool name, complete arguments, the
 * originating principal, the resource acted on, and a digest over the JCS (RFC 8785) canonical
 * JSON of that tuple with SHA-256. Also derives the approval workflow id from a keyed hash of the
 * binding (HMAC-SHA-256 with a server secret), so identical calls from the same principal join
 * one in-flight task (SEP-2848 §At-most-once and deduplication) while outsiders cannot compute it.
 *
 * Deliberately does not validate arguments (the tool's schema does that first) and holds no
 * secrets itself: the caller passes the dedup key in.
 */
import { createHmac } from 'node:crypto';
import { callBindingDigest, canonicalJson, jcsSha256 } from '@countersign/receipts';
import type { Principal } from '../auth/principal.js';
import { APPROVAL_WORKFLOW_ID_PREFIX } from '../../workflows/wire.js';

// JCS and the digest formula are `@countersign/receipts`' (`jcs.ts`), so the digest an auditor's
// verifier recomputes from disclosed arguments is exactly the one bound here.
export { canonicalJson, jcsSha256 };

/** The immutable call binding. Plain JSON; stored in workflow state. */
export interface CallBinding {
  /** Tool name, e.g. `wire_transfer`. */
  tool: string;
  /** Complete tool arguments, as validated by the tool's input schema. */
  arguments: Record<string, unknown>;
  /** Originating principal (issuer, subject, delegation chain). */
  principal: Principal;
  /** The resource acted on, AuthZEN shape. */
  resource: { type: 'tool'; id: string };
  /** SHA-256 hex over the JCS canonical JSON of `{tool, arguments, principal, resource}`. */
  digest: string;
  /** Digest of the tool descriptor (name, version, input schema) at binding time; drift check. */
  toolDescriptorDigest: string;
}

/**
 * Build the binding for one call. `arguments` must already be schema-validated.
 * The digest covers tool, arguments, principal (incl. `act`) and resource, so a change in any of
 * them is a different binding and a new approval (SEP-2848 §Reference Implementation).
 */
export function createCallBinding(input: {
  tool: string;
  arguments: Record<string, unknown>;
  principal: Principal;
  toolDescriptorDigest: string;
}): CallBinding {
  const resource = { type: 'tool' as const, id: input.tool };
  const digest = callBindingDigest({ tool: input.tool, arguments: input.arguments, principal: input.principal, resource });
  return {
    tool: input.tool,
    arguments: input.arguments,
    principal: input.principal,
    resource,
    digest,
    toolDescriptorDigest: input.toolDescriptorDigest,
  };
}

/** Recompute the digest of a stored binding; false if anything in it was altered. */
export function verifyCallBinding(b: CallBinding): boolean {
  return callBindingDigest({ tool: b.tool, arguments: b.arguments, principal: b.principal, resource: b.resource }) === b.digest;
}

/**
 * Workflow id for a binding: `approval-` + the first 32 hex chars of HMAC-SHA-256(dedupKey, digest).
 * 128 bits; not computable without the server's dedup key. Same binding → same id (dedup scope =
 * principal + tool + arguments + resource).
 */
export function approvalWorkflowId(dedupKey: string, digest: string): string {
  return `${APPROVAL_WORKFLOW_ID_PREFIX}${createHmac('sha256', dedupKey).update(digest).digest('hex').slice(0, 32)}`;
}
