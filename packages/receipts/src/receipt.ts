/**
 * Evidence receipts: what one terminal approval task proves, as signed, hash-chained JSON.
 *
 * A receipt's payload is the JCS (RFC 8785) canonical JSON of a {@link ReceiptPayload}; it is
 * signed as a flattened JWS JSON object (RFC 7515 §7.2.2) with Ed25519 (`alg` EdDSA, RFC 8037),
 * `kid` = RFC 7638 thumbprint. Each receipt names the digest of the previous receipt of the
 * issuing log (`prev`), so a removed, reordered or inserted receipt breaks the chain. One receipt
 * is one line of a JSON Lines file; an exported line may also disclose the call's arguments
 * outside the signature (`arguments`), which the verifier accepts only if they hash to the signed
 * call binding digest (`callBindingDigest`, `jcs.ts`: the gate's `src/binding/call-binding.ts` computes it the same way).
 *
 * Deliberately does not: read files or the network (the verifier's command line does, `cli.ts`;
 * issuing is the gate's: `src/receipts/` there).
 */
import {
  calculateJwkThumbprint,
  createLocalJWKSet,
  errors as joseErrors,
  flattenedVerify,
  FlattenedSign,
  type FlattenedJWS,
  type JSONWebKeySet,
} from 'jose';
import { parseJsonWithLimits } from '@countersign/http/json-limits';
import { callBindingDigest, canonicalJson, jcsSha256, type ReceiptPrincipal } from './jcs.js';

/** JWS algorithm of every receipt (RFC 8037 §3.1; Ed25519 is the only curve used). */
export const RECEIPT_ALG = 'EdDSA';

/** What signing needs of a receipt signing key (the issuer's, e.g. the gate's `src/receipts/signing-key.ts`). */
export interface ReceiptSigner {
  /** The Ed25519 private key, for `jose` signing. */
  privateKey: CryptoKey;
  /** RFC 7638 thumbprint (SHA-256, base64url) of the public key: the JWS `kid`. */
  kid: string;
}

/** JWS `typ` of a receipt (RFC 7515 §4.1.9). */
export const RECEIPT_TYP = 'countersign-receipt+json';

/** Version of the payload shape below. */
export const RECEIPT_VERSION = 1;

/** One policy decision about the call, with the ids of the policies that determined it. */
export interface ReceiptPolicyDecision {
  /** `initial`: the gate's decision at `tools/call`; `re-evaluation`: the re-check with the approval before the claim (SEP-2848 §Completion). */
  stage: 'initial' | 're-evaluation';
  /** AuthZEN decision. */
  decision: 'allow' | 'deny';
  /** For a `deny`: true when it was a requestable denial (SEP-2848 §Denied-but-requestable). */
  requestable?: boolean;
  /** What the re-evaluation asked for next: `allow` (claim), `request` (a further approval), `retry`, `deny`. */
  outcome?: 'allow' | 'request' | 'retry' | 'deny';
  /** Ids of the determining policies (Cedar `@id`s); empty when the record does not name them. */
  policyIds: string[];
  /** ISO 8601; absent for the initial decision, which happened before the task existed (see `task.createdAt`). */
  at?: string;
}

/** One person's (or machine's) decision on an approval request. */
export interface ReceiptApproverDecision {
  /** Approver id, as the approval service authenticated them. */
  approver: string;
  decision: 'approve' | 'deny';
  /** Where they decided: `inbox`, `api`, `agent`, `risk-engine`, `itsm`, `system`; null when the backend does not say. */
  channel: string | null;
  /** ISO 8601. */
  at: string;
}

/** One approval request (a submission generation) and how it was resolved. */
export interface ReceiptApprovalRequest {
  /** 1-based submission generation within the task. */
  generation: number;
  /** The backend's request id. */
  requestId: string;
  /** The backend's final answer as the task read it; when the task ended before one (cancelled), the backend's status when the receipt was issued. */
  outcome: 'approved' | 'denied' | 'expired' | 'cancelled' | 'failed' | 'pending';
  /** Quorum: `required` distinct approvals (the m of an m-of-n rule; `decisions` lists who gave them); `rule` the quorum rule id or null. Null when the backend does not say. */
  quorum: { required: number; rule: string | null } | null;
  /** Each decision counted, in order. */
  decisions: ReceiptApproverDecision[];
  /**
   * Present only when the requester approved their own request under the break-glass role
   * (docs/APPROVERS.md §Break-glass): who (approver id), their reason, when (ISO 8601).
   */
  breakGlass?: { by: string; reason: string; at: string };
  /**
   * Present only when a grant approved the request (docs/APPROVERS.md §Grants): the grant's id, who
   * created it, which use this was (1-based) of at most `maxUses` (null: bounded by time only), and
   * until when it held (ISO 8601).
   */
  grant?: ReceiptGrantUse;
}

/** The grant use a receipt names ({@link ReceiptApprovalRequest.grant}). */
export interface ReceiptGrantUse {
  id: string;
  createdBy: string;
  use: number;
  maxUses: number | null;
  expiresAt: string;
}

/** The signed content of one receipt. Times are ISO 8601 UTC. */
export interface ReceiptPayload {
  version: typeof RECEIPT_VERSION;
  /** Position in the issuing log, 1-based, consecutive. */
  seq: number;
  /** {@link receiptDigest} of the receipt at `seq - 1`; null for `seq` 1. */
  prev: string | null;
  issuedAt: string;
  task: {
    /** The MCP task id (SEP-2663). */
    taskId: string;
    workflowId: string;
    runId: string;
    /** Terminal task status: `completed`, `cancelled` or `failed`. */
    status: string;
    createdAt: string;
    /** When the task reached its terminal state. */
    terminalAt: string;
  };
  /** The call binding without its arguments (SEP-2848 §The task handle is not authority): enough to recompute `digest` from disclosed arguments. */
  callBinding: {
    /** SHA-256 hex of JCS `{tool, arguments, principal, resource}`. */
    digest: string;
    tool: string;
    principal: ReceiptPrincipal;
    resource: { type: 'tool'; id: string };
  };
  policyDecisions: ReceiptPolicyDecision[];
  /** How the denial was lifted: `out-of-band` (approval requests) or `in-band` (the requester's own confirmation; docs/CHANGE-GATE.md). */
  approvalMode: 'out-of-band' | 'in-band';
  approvalRequests: ReceiptApprovalRequest[];
  /** For `in-band`: the requester's confirmation (docs/CHANGE-GATE.md §In-band confirmation), without their optional reason; else null. */
  inBandConfirmation: { confirmedBy: 'requester'; confirmedAt: string; policyId: string } | null;
  /** SEP-2848 §Completion: whether the execution claim was made, when, and the execution id. */
  executionClaim: { claimed: false } | { claimed: true; at: string | null; executionId: string };
  /** SEP-2848 §Execution disposition; null unless `task.status` is `completed`. */
  disposition: string | null;
}

/** What the issuer knows before the log gives the receipt its place: everything but `seq`, `prev`, `issuedAt`. */
export type ReceiptEvidence = Omit<ReceiptPayload, 'version' | 'seq' | 'prev' | 'issuedAt'>;

/** One line of an exported file: a flattened JWS, optionally with the disclosed call arguments. */
export interface ReceiptLine extends FlattenedJWS {
  /**
   * The call's arguments, outside the signature; present only when the operator asked
   * (`--include-arguments`). Complete, or with the fields named in {@link ReceiptLine.redacted}
   * in their digest form.
   */
  arguments?: Record<string, unknown>;
  /**
   * JSON Pointers (RFC 6901, sorted) of the fields of `arguments` that are hidden values: each
   * holds `sha256:<hex>`, the SHA-256 of the value's JCS form, as approvers saw it
   * (`@countersign/arap` redaction). Absent when `arguments` is complete (`--include-hidden`, or
   * nothing was hidden). Such arguments cannot be checked against the binding digest, which is
   * over the real values.
   */
  redacted?: string[];
}

/** Digest of a receipt, as `prev` names it: `sha-256:` + hex SHA-256 of its JCS payload bytes. */
export function receiptDigest(payload: ReceiptPayload): string {
  return `sha-256:${jcsSha256(payload)}`;
}

/** Sign `payload`: flattened JWS, header `{alg: EdDSA, kid, typ}`, payload = the JCS bytes. */
export async function signReceipt(payload: ReceiptPayload, key: ReceiptSigner): Promise<FlattenedJWS> {
  return new FlattenedSign(new TextEncoder().encode(canonicalJson(payload)))
    .setProtectedHeader({ alg: RECEIPT_ALG, kid: key.kid, typ: RECEIPT_TYP })
    .sign(key.privateKey);
}

/** One refused line: 1-based line number of the file and why. */
export interface ReceiptVerificationFailure {
  line: number;
  reason: string;
}

/** Result of {@link verifyReceiptLines}. */
export interface ReceiptVerificationReport {
  /** True when every line verified and the chain is unbroken. */
  ok: boolean;
  /** Receipts checked (non-empty lines). */
  count: number;
  /** `seq` and `prev` of the first receipt: a file exported from the middle of the log starts from an anchor it cannot check. */
  anchor: { seq: number; prev: string | null } | null;
  failures: ReceiptVerificationFailure[];
  /**
   * Lines whose disclosed arguments hide fields (`redacted`): their signature and place in the
   * chain are verified, their arguments are not (the binding digest is over the real values).
   */
  unchecked: Array<{ line: number; redacted: string[] }>;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** The members a receipt line may hold: the flattened JWS without an unprotected `header` (RFC 7515 §7.2.2), plus disclosed `arguments` and their `redacted` fields. */
const LINE_MEMBERS: ReadonlySet<string> = new Set(['protected', 'payload', 'signature', 'arguments', 'redacted']);

const HIDDEN_DIGEST = /^sha256:[0-9a-f]{64}$/;

// The value at JSON Pointer `pointer` (RFC 6901) in `doc`; undefined when it is not a pointer or names nothing.
function atPointer(doc: unknown, pointer: unknown): unknown {
  if (typeof pointer !== 'string' || !pointer.startsWith('/')) return undefined;
  let at: unknown = doc;
  for (const raw of pointer.slice(1).split('/')) {
    const t = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof at !== 'object' || at === null || !Object.prototype.hasOwnProperty.call(at, t)) return undefined;
    at = (at as Record<string, unknown>)[t];
  }
  return at;
}

/**
 * For each `kid` of `jwks` that is not the RFC 7638 SHA-256 thumbprint of its key: the kid mapped
 * to the thumbprint the key actually has (or to why none could be computed).
 */
async function mislabelledKids(jwks: JSONWebKeySet): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const jwk of jwks.keys) {
    if (typeof jwk.kid !== 'string') continue;
    try {
      const thumbprint = await calculateJwkThumbprint(jwk, 'sha256');
      if (thumbprint !== jwk.kid) out.set(jwk.kid, `its RFC 7638 thumbprint is ${JSON.stringify(thumbprint)}`);
    } catch (err) {
      out.set(jwk.kid, `no RFC 7638 thumbprint can be computed: ${(err as Error).message}`);
    }
  }
  return out;
}

function describeJoseError(err: unknown, kid: unknown): string {
  if (err instanceof joseErrors.JWKSNoMatchingKey) return `no key with kid ${JSON.stringify(kid)} in the JWKS`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'signature does not verify with the published key';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm is not EdDSA';
  if (err instanceof joseErrors.JWSInvalid) return `not a valid JWS: ${err.message}`;
  return `not verifiable: ${(err as Error).message}`;
}

/**
 * Verify a JSON Lines file of receipts against `jwks`, offline: each line must be a flattened
 * JWS signed with EdDSA by a key of the JWKS (by `kid`), its payload exactly the JCS form of a
 * version-1 receipt; `seq` must increase by one per line and each `prev` must equal the
 * {@link receiptDigest} of the line before (the first line's `prev` is the anchor, reported, and
 * must be null at `seq` 1); disclosed `arguments` must hash, with the signed binding fields, to
 * the signed `callBinding.digest`, unless the line names hidden fields in `redacted` (each must hold
 * a `sha256:` digest in `arguments`): such a line is reported in `unchecked`, not as a failure.
 * Empty lines are skipped. Never throws; every problem is a
 * failure naming its line. A file with no receipt fails.
 *
 * A line that repeats a member name at any depth is refused naming the path (`duplicate object key
 * at $.payload`): `JSON.parse` keeps the last one, another reader may keep the first, so the line
 * would verify as one receipt and be read as another (`@countersign/http/json-limits`); so is a protected
 * header that repeats one.
 * A line holding any member besides `protected`, `payload`, `signature`, `arguments` and `redacted` is refused
 * (an unprotected JWS `header` in particular, RFC 7515 §7.2.1: nothing outside the signature may
 * name the key); so is a protected header without a `kid` (`missing kid`), and a line whose `kid`
 * labels a JWKS key whose RFC 7638 thumbprint is another value (a JWKS that relabels a key cannot
 * vouch for it).
 */
export async function verifyReceiptLines(text: string, jwks: JSONWebKeySet): Promise<ReceiptVerificationReport> {
  const keys = createLocalJWKSet(jwks);
  const mislabelled = await mislabelledKids(jwks);
  const failures: ReceiptVerificationFailure[] = [];
  const unchecked: ReceiptVerificationReport['unchecked'] = [];
  let count = 0;
  let anchor: ReceiptVerificationReport['anchor'] = null;
  let previous: { seq: number; digest: string } | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    if (raw === '') continue;
    count++;
    const lineNo = i + 1;
    const fail = (reason: string) => failures.push({ line: lineNo, reason });
    const parsedLine = parseJsonWithLimits(raw);
    if (!parsedLine.ok) {
      fail(
        parsedLine.reason === 'invalid-json'
          ? 'not JSON'
          : parsedLine.reason === 'duplicate-key'
            ? `${parsedLine.detail}: a receipt line must not repeat a member name (JSON readers disagree on which one counts)`
            : parsedLine.detail,
      );
      previous = null;
      continue;
    }
    const line = parsedLine.value as ReceiptLine;
    if (
      typeof line !== 'object' ||
      line === null ||
      typeof line.payload !== 'string' ||
      typeof line.signature !== 'string' ||
      typeof line.protected !== 'string' ||
      !B64URL.test(line.payload)
    ) {
      fail('not a flattened JWS (protected, payload, signature)');
      previous = null;
      continue;
    }
    const extra = Object.keys(line).filter((k) => !LINE_MEMBERS.has(k));
    if (extra.includes('header')) {
      fail('unprotected JWS header is not allowed: every header parameter must be in "protected"');
      previous = null;
      continue;
    }
    if (extra.length > 0) {
      fail(
        `unexpected member ${extra.map((k) => JSON.stringify(k)).join(', ')}: a receipt line holds only protected, payload, signature, arguments and redacted`,
      );
      previous = null;
      continue;
    }
    const header = parseJsonWithLimits(Buffer.from(line.protected, 'base64url').toString('utf8'));
    if (!header.ok || header.value === null) {
      fail(
        header.ok === false && header.reason === 'duplicate-key'
          ? `the protected header repeats a member name: ${header.detail}`
          : 'not a valid JWS: the protected header is not base64url JSON',
      );
      previous = null;
      continue;
    }
    const kid = typeof header.value === 'object' ? (header.value as { kid?: unknown }).kid : undefined;
    if (kid === undefined || kid === null || kid === '') {
      fail('missing kid: the protected header names no key');
      previous = null;
      continue;
    }
    if (typeof kid !== 'string') {
      fail(`kid is not a string: ${JSON.stringify(kid)}`);
      previous = null;
      continue;
    }
    const mislabel = mislabelled.get(kid);
    if (mislabel !== undefined) {
      fail(`the JWKS key labelled kid ${JSON.stringify(kid)} is refused: ${mislabel}`);
      previous = null;
      continue;
    }
    let payloadBytes: Uint8Array;
    try {
      const verified = await flattenedVerify({ protected: line.protected, payload: line.payload, signature: line.signature }, keys, {
        algorithms: [RECEIPT_ALG, 'Ed25519'],
      });
      if (verified.protectedHeader?.typ !== RECEIPT_TYP) {
        fail(`not a receipt: JWS typ is ${JSON.stringify(verified.protectedHeader?.typ)}, not ${RECEIPT_TYP}`);
        previous = null;
        continue;
      }
      payloadBytes = verified.payload;
    } catch (err) {
      fail(describeJoseError(err, kid));
      previous = null;
      continue;
    }
    const payloadText = new TextDecoder().decode(payloadBytes);
    let payload: ReceiptPayload;
    try {
      payload = JSON.parse(payloadText) as ReceiptPayload;
    } catch {
      fail('signed payload is not JSON');
      previous = null;
      continue;
    }
    if (canonicalJson(payload) !== payloadText) fail('signed payload is not in JCS canonical form (RFC 8785)');
    if (
      payload.version !== RECEIPT_VERSION ||
      !Number.isSafeInteger(payload.seq) ||
      payload.seq < 1 ||
      typeof payload.callBinding?.digest !== 'string'
    ) {
      fail(`not a version-${RECEIPT_VERSION} receipt`);
      previous = null;
      continue;
    }
    if (previous === null && count === 1) {
      anchor = { seq: payload.seq, prev: payload.prev };
      if (payload.seq === 1 && payload.prev !== null) fail('chain broken: the first receipt of the log (seq 1) names a previous one');
    } else if (previous !== null) {
      if (payload.seq !== previous.seq + 1)
        fail(`chain broken: seq ${payload.seq} follows seq ${previous.seq} (a receipt is missing or out of order)`);
      else if (payload.prev !== previous.digest)
        fail(`chain broken: prev ${String(payload.prev)} is not the digest of the receipt before (${previous.digest})`);
    }
    if (line.redacted !== undefined) {
      const r: unknown = line.redacted;
      if (line.arguments === undefined) fail('redacted without disclosed arguments');
      else if (!Array.isArray(r) || r.length === 0) fail('redacted is not a non-empty list of JSON Pointers');
      else {
        const bad = r.filter(
          (p) => typeof atPointer(line.arguments, p) !== 'string' || !HIDDEN_DIGEST.test(atPointer(line.arguments, p) as string),
        );
        if (bad.length > 0)
          fail(
            `redacted names ${bad.map((p) => JSON.stringify(p)).join(', ')}, which the disclosed arguments do not hold as a sha256: digest`,
          );
        else unchecked.push({ line: lineNo, redacted: r as string[] });
      }
    } else if (line.arguments !== undefined) {
      const { tool, principal, resource, digest } = payload.callBinding;
      let recomputed: string | undefined;
      try {
        recomputed = callBindingDigest({ tool, arguments: line.arguments, principal, resource });
      } catch {
        recomputed = undefined;
      }
      if (recomputed !== digest) fail('disclosed arguments do not match the signed call binding digest');
    }
    previous = { seq: payload.seq, digest: receiptDigest(payload) };
  }
  if (count === 0) failures.push({ line: 0, reason: 'the file holds no receipt' });
  return { ok: failures.length === 0, count, anchor, failures, unchecked };
}
