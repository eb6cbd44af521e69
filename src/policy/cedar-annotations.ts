/**
 * The Countersign annotation scheme on Cedar policies: how a policy file, not code, says whether a
 * denial can be approved out of band (SEP-2848 §Denied-but-requestable) and what a re-evaluation
 * should do next (AuthZEN ARAP `next_action`).
 *
 * | annotation | on | value |
 * |---|---|---|
 * | `@id("...")` | any | policy id for audit and decisions; unique across the policy folder |
 * | `@requestable("true"\|"false")` | forbid | `"true"`: a denial by this policy can be approved |
 * | `@approver_group("...")` | requestable forbid (required) | who decides, e.g. `treasury` |
 * | `@request_ttl("P7D")` | requestable forbid (required) | ISO 8601 duration the request stays open |
 * | `@reason("...")` | forbid (required when requestable) | operator-authored text shown to callers |
 * | `@on_deny("none"\|"retry")` | non-requestable forbid | next action of a re-evaluation (default `none`) |
 * | `@submission_input("justification")` | requestable forbid | the caller must give a justification before submission (MRTR `input_required`) |
 * | `@retry_after("PT30S")` | with `@on_deny("retry")` (required) | wait before re-evaluating |
 * | `@approval_mode("in-band"\|"out-of-band")` | requestable forbid | `in-band`: the requester's own confirmation over MRTR lifts the denial (docs/CHANGE-GATE.md §In-band confirmation); `@approver_group` and `@request_ttl` are then optional and `@submission_input` does not apply. Default `out-of-band` |
 * | `@sensitive("/card_number,/auth/token")` | requestable forbid | comma-separated JSON Pointers of arguments masked for display in the request it opens (docs/APPROVERS.md §Hidden values) |
 * | `@narrowable("amount:max,path:subpath")` | requestable forbid | the top-level arguments an approver may narrow in a counter-proposal, each with its direction (`max`, `min`, `subpath`, `subset`: `packages/arap/src/narrowing.ts`) |
 *
 * Other annotations are kept but ignored. This module only validates and reads annotations; it
 * deliberately does not evaluate policies (see `cedar-pdp.ts`).
 */
import { JsonPointerSchema, NarrowingSpecError, parseNarrowingSpec, type NarrowingSpec } from '@countersign/arap';
import { parseIsoDurationMs } from './iso-duration.js';

/** How long an in-band confirmation may take when the policy names no `@request_ttl`: 15 minutes. */
export const IN_BAND_DEFAULT_TTL_MS = 15 * 60_000;

/** What the PDP needs to know about one loaded policy. */
export interface PolicyMeta {
  /** `@id` value, or `<file>#<index>` (0-based within the file) when the policy has no `@id`. */
  id: string;
  /** File name (no folder) the policy came from. */
  file: string;
  effect: 'permit' | 'forbid';
  /** Position across the whole set (file-name order, then order in the file). */
  order: number;
  /** `@reason`, when present. */
  reason?: string;
  /** Present on `@requestable("true")` forbids. */
  requestable?: {
    approverGroup: string;
    requestTtlMs: number;
    reason: string;
    requiresJustification?: boolean;
    approvalMode?: 'in-band';
    /** `@sensitive`: JSON Pointers of arguments masked for display. */
    sensitive?: string[];
    /** `@narrowable`: the fields an approver may narrow in a counter-proposal, and how. */
    narrowable?: NarrowingSpec;
  };
  /** `@on_deny`; absent means `none`. */
  onDeny?: { nextAction: 'none' } | { nextAction: 'retry'; retryAfterMs: number };
}

/**
 * Read and validate the Countersign annotations of one policy.
 * Throws `Error` with a message naming the annotation and the rule it breaks; the loader prefixes
 * it with the file and policy id.
 */
export function readPolicyMeta(
  base: { id: string; file: string; effect: 'permit' | 'forbid'; order: number },
  annotations: Record<string, string>,
): PolicyMeta {
  const meta: PolicyMeta = { ...base };
  const a = annotations;
  const forbidOnly = [
    'requestable',
    'approver_group',
    'request_ttl',
    'on_deny',
    'retry_after',
    'submission_input',
    'approval_mode',
    'sensitive',
    'narrowable',
  ];
  if (base.effect === 'permit') {
    const misplaced = forbidOnly.filter((k) => k in a);
    if (misplaced.length > 0) {
      throw new Error(`@${misplaced.join(', @')} only applies to forbid policies`);
    }
  }
  if (a.reason !== undefined) {
    if (a.reason.trim() === '') throw new Error('@reason must not be empty');
    meta.reason = a.reason;
  }
  const requestable = a.requestable;
  if (requestable !== undefined && requestable !== 'true' && requestable !== 'false') {
    throw new Error(`@requestable must be "true" or "false", got "${requestable}"`);
  }
  if (a.approval_mode !== undefined && a.approval_mode !== 'in-band' && a.approval_mode !== 'out-of-band') {
    throw new Error(`@approval_mode must be "in-band" or "out-of-band", got "${a.approval_mode}"`);
  }
  if (requestable === 'true' && a.approval_mode === 'in-band') {
    if (a.reason === undefined) throw new Error('a requestable forbid needs @reason');
    if (
      a.on_deny !== undefined ||
      a.retry_after !== undefined ||
      a.submission_input !== undefined ||
      a.sensitive !== undefined ||
      a.narrowable !== undefined
    ) {
      throw new Error(
        '@on_deny / @retry_after / @submission_input / @sensitive / @narrowable do not apply to an in-band forbid (the requester confirms)',
      );
    }
    const requestTtlMs = a.request_ttl === undefined ? IN_BAND_DEFAULT_TTL_MS : parseIsoDurationMs(a.request_ttl);
    if (requestTtlMs === null) throw new Error(`@request_ttl must be an ISO 8601 duration like "PT15M", got "${a.request_ttl}"`);
    meta.requestable = { approverGroup: a.approver_group ?? 'requester', requestTtlMs, reason: a.reason, approvalMode: 'in-band' };
    return meta;
  }
  if (requestable === 'true') {
    const missing = ['approver_group', 'request_ttl', 'reason'].filter((k) => a[k] === undefined);
    if (missing.length > 0) throw new Error(`a requestable forbid needs @${missing.join(', @')}`);
    if (a.on_deny !== undefined || a.retry_after !== undefined) {
      throw new Error('@on_deny / @retry_after do not apply to a requestable forbid (its next action is "request")');
    }
    const approverGroup = a.approver_group ?? '';
    if (approverGroup.trim() === '') throw new Error('@approver_group must not be empty');
    const requestTtlMs = parseIsoDurationMs(a.request_ttl ?? '');
    if (requestTtlMs === null) {
      throw new Error(`@request_ttl must be an ISO 8601 duration like "P7D" or "PT12H", got "${a.request_ttl}"`);
    }
    if (a.submission_input !== undefined && a.submission_input !== 'justification') {
      throw new Error(`@submission_input must be "justification", got "${a.submission_input}"`);
    }
    meta.requestable = {
      approverGroup,
      requestTtlMs,
      reason: a.reason ?? '',
      ...(a.submission_input === 'justification' ? { requiresJustification: true } : {}),
      ...(a.sensitive !== undefined ? { sensitive: sensitiveList(a.sensitive) } : {}),
      ...(a.narrowable !== undefined ? { narrowable: narrowableSpec(a.narrowable) } : {}),
    };
  } else {
    for (const k of ['approver_group', 'request_ttl', 'submission_input', 'approval_mode', 'sensitive', 'narrowable']) {
      if (a[k] !== undefined) throw new Error(`@${k} needs @requestable("true")`);
    }
  }
  if (a.on_deny !== undefined) {
    if (a.on_deny === 'none') {
      if (a.retry_after !== undefined) throw new Error('@retry_after needs @on_deny("retry")');
      meta.onDeny = { nextAction: 'none' };
    } else if (a.on_deny === 'retry') {
      const retryAfterMs = parseIsoDurationMs(a.retry_after ?? '');
      if (retryAfterMs === null) {
        throw new Error(`@on_deny("retry") needs @retry_after with an ISO 8601 duration like "PT30S"`);
      }
      meta.onDeny = { nextAction: 'retry', retryAfterMs };
    } else {
      throw new Error(`@on_deny must be "none" or "retry", got "${a.on_deny}"`);
    }
  } else if (a.retry_after !== undefined) {
    throw new Error('@retry_after needs @on_deny("retry")');
  }
  return meta;
}

/** `@sensitive`'s value: comma-separated JSON Pointers (spaces around them allowed). Throws `Error` naming a bad entry. */
function sensitiveList(value: string): string[] {
  const list = value
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (list.length === 0) throw new Error('@sensitive must list JSON Pointers such as "/card_number"');
  const bad = list.find((p) => !JsonPointerSchema.safeParse(p).success);
  if (bad !== undefined) throw new Error(`@sensitive: ${JSON.stringify(bad.slice(0, 80))} is not a JSON Pointer such as "/card_number"`);
  return [...new Set(list)].sort();
}

/** `@narrowable`'s value (`parseNarrowingSpec`). Throws `Error` prefixed `@narrowable:` naming the bad entry. */
function narrowableSpec(value: string): NarrowingSpec {
  try {
    return parseNarrowingSpec(value);
  } catch (err) {
    if (err instanceof NarrowingSpecError) throw new Error(`@narrowable: ${err.message}`, { cause: err });
    throw err;
  }
}
