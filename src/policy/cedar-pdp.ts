/**
 * Embedded Cedar adapter of the PDP port (`pdp.ts`): AuthZEN-shaped request in, `Decision` out.
 *
 * Request mapping (AuthZEN Authorization API 1.0 → Cedar):
 * - principal `Countersign::Principal::"<iss>|<sub>"` with attributes `iss`, `sub`;
 * - action `Countersign::Action::"tools/call"`;
 * - resource `Countersign::Tool::"<tool name>"`, with the attributes `toolEntity` gives (the
 *   gateway's upstream tools: `upstream`, `upstreamTool` and the MCP annotation hints, converted
 *   like `arguments`) and, for an upstream tool, the parent `Countersign::Upstream::"<upstream>"`
 *   (so `resource in Countersign::Upstream::"fs"` selects every tool of that upstream);
 * - context `{ arguments, approval? }`: `arguments` are the tool arguments converted by
 *   `cedar-values.ts` (**every JSON number is a Cedar `decimal`**; a property whose value is `null`
 *   is left out, so `has` is false for it; a `null` in an array, reserved keys and numbers with
 *   more than 4 fractional digits fail closed); `approval` is the ARAP approval in snake_case:
 *   `{ id, approved_at, approved_until, state, approvers }` (timestamps as ISO 8601 strings,
 *   approvers as a set of strings).
 *
 * Decision rules (requestability comes from annotations in the policy files, see
 * `cedar-annotations.ts`; never from code):
 * 1. Any evaluation error — the context cannot be converted, Cedar reports a failure, or
 *    `diagnostics.errors` is non-empty (even when Cedar's own answer is Allow, since an erroring
 *    forbid is skipped by Cedar) — → `deny`, `nextAction: 'none'`, reasons
 *    `['policy evaluation error']`, not requestable (fail closed).
 * 2. Cedar Allow → `allow`, `policyIds` = the determining permits.
 * 3. Cedar Deny with no determining policy (no permit matched) → `deny`, `nextAction: 'none'`,
 *    reasons `[]`, not requestable.
 * 4. Cedar Deny where some determining forbid is not `@requestable("true")` → `deny`, not
 *    requestable; reasons = the `@reason`s of those non-requestable forbids; `nextAction` is
 *    `'retry'` (with the largest `@retry_after`) only when every one of them says
 *    `@on_deny("retry")`, else `'none'` (the most final wins).
 * 5. Cedar Deny where every determining forbid is requestable → `deny` with `accessRequest` from
 *    the first of them in policy order (file-name order, then position in the file) that is not
 *    `@approval_mode("in-band")` — in band only when all of them are —,
 *    `nextAction: 'request'`, reasons = their `@reason`s; `accessRequest.sensitive` joins the
 *    `@sensitive` pointers of all of them.
 * `policyIds` on a deny are all determining policies. Reasons are operator-authored annotation
 * text, or the fixed `policy evaluation error`; never user input or Cedar messages.
 *
 * Deliberately does not: validate policies against a Cedar schema, cache decisions, watch the
 * folder (call `reload()`), load entities from a store (principal and tool carry only the
 * attributes above), or log (pass `onEvaluationError` to observe fail-closed errors).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { Principal } from '../auth/principal.js';
import { readPolicyMeta, type PolicyMeta } from './cedar-annotations.js';
import { CedarValueError, toCedarValue } from './cedar-values.js';
import type { AccessEvaluationRequest, ApprovalMaterial, Decision, PolicyDecisionPoint } from './pdp.js';

/** Cedar entity type names this adapter uses (namespace `Countersign`). */
export const CEDAR_TYPES = {
  principal: 'Countersign::Principal',
  action: 'Countersign::Action',
  tool: 'Countersign::Tool',
  upstream: 'Countersign::Upstream',
} as const;

/** The fixed reason of a fail-closed deny (rule 1 of the module header). */
export const EVALUATION_ERROR_REASON = 'policy evaluation error';

/** Cedar entity id of a principal: `<iss>|<sub>` (the `iss`/`sub` attributes disambiguate a `|`). */
export function cedarPrincipalId(p: Principal): string {
  return `${p.iss}|${p.sub}`;
}

/**
 * The policy folder could not be loaded: unreadable folder or file, no `*.cedar` file, a Cedar
 * parse error, a template (not supported), an empty or duplicate `@id`, or an invalid Countersign
 * annotation (see `cedar-annotations.ts`).
 * `file` is the offending file name when one is to blame. The message names the file, the policy
 * and Cedar's error with line:column.
 */
export class PolicyLoadError extends Error {
  constructor(
    message: string,
    readonly file?: string,
  ) {
    super(message);
    this.name = 'PolicyLoadError';
  }
}

/** What `onEvaluationError` receives. `messages` are Cedar's and may quote argument values: redact before logging. */
export interface EvaluationErrorInfo {
  tool: string;
  policyIds: string[];
  messages: string[];
}

/** Options of `createCedarPdp`. */
export interface CedarPdpOptions {
  /** Folder holding the `*.cedar` files (not searched recursively). */
  policyDir: string;
  /** Called on every fail-closed deny (rule 1); must not throw. */
  onEvaluationError?: (info: EvaluationErrorInfo) => void;
  /**
   * The resource entity of a tool: its attributes and, for an upstream tool, the upstream it
   * belongs to (`src/gateway/`). Absent or `undefined`: no attributes, no parent (native tools).
   * An attribute Cedar cannot represent denies (rule 1).
   */
  toolEntity?: (tool: string) => { attributes: Record<string, unknown>; upstream?: string } | undefined;
}

/** The Cedar PDP: the port plus the loaded policy set's identity. */
export interface CedarPdp extends PolicyDecisionPoint {
  /**
   * SHA-256 (hex) of the `*.cedar` file contents concatenated in file-name order (code-unit
   * order). Recorded with decisions for audit and compared to detect a policy change while a task
   * is pending (SEP-2848 §Completion: re-evaluation runs against current policy).
   */
  readonly policySetDigest: string;
  /**
   * Re-read the folder. Atomic: on any load problem it throws `PolicyLoadError` and keeps the
   * current set (and digest) unchanged.
   */
  reload(): Promise<void>;
}

/** A policy folder as loaded: every policy's Cedar text and Countersign annotations by `@id`. */
export interface LoadedSet {
  /** `CedarPdp.policySetDigest` of the folder. */
  digest: string;
  /** Cedar text of each policy by `@id` (or `<file>#<index>`). */
  policies: Record<string, string>;
  /** Annotations and the file of each policy, same keys. */
  meta: Map<string, PolicyMeta>;
  /**
   * Id of the parsed set in cedar-wasm's cache (`preparsePolicySet`), so `evaluate` does not
   * re-parse every policy on every call (it did: about 1 ms per decision). Keyed by the content
   * (ids and texts), so reloading an unchanged folder reuses the entry.
   */
  preparsedId: string;
}

function lineCol(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const col = offset - before.lastIndexOf('\n');
  return `${line}:${col}`;
}

function describeCedarErrors(text: string, errors: cedar.DetailedError[]): string {
  return errors
    .map((e) => {
      const loc = e.sourceLocations?.[0];
      const where = loc ? ` at ${lineCol(text, loc.start)}` : '';
      const label = loc?.label ? ` (${loc.label})` : '';
      return `${e.message}${where}${label}`;
    })
    .join('; ');
}

/**
 * Read and parse every `*.cedar` file of `policyDir` (file-name order), as `createCedarPdp` does.
 * Throws {@link PolicyLoadError} naming the file, the policy and Cedar's message with line:column.
 */
export async function loadPolicySet(policyDir: string): Promise<LoadedSet> {
  let names: string[];
  try {
    const entries = await readdir(policyDir, { withFileTypes: true });
    names = entries
      .filter((e) => e.isFile() && e.name.endsWith('.cedar'))
      .map((e) => e.name)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  } catch (err) {
    throw new PolicyLoadError(`cannot read policy folder ${policyDir}: ${(err as Error).message}`);
  }
  if (names.length === 0) throw new PolicyLoadError(`no *.cedar files in policy folder ${policyDir}`);

  const hash = createHash('sha256');
  const policies: Record<string, string> = {};
  const meta = new Map<string, PolicyMeta>();
  let order = 0;
  for (const file of names) {
    let text: string;
    try {
      text = await readFile(join(policyDir, file), 'utf8');
    } catch (err) {
      throw new PolicyLoadError(`cannot read policy file ${file}: ${(err as Error).message}`, file);
    }
    hash.update(text);
    const parts = cedar.policySetTextToParts(text);
    if (parts.type === 'failure') {
      throw new PolicyLoadError(`Cedar parse error in ${file}: ${describeCedarErrors(text, parts.errors)}`, file);
    }
    if (parts.policy_templates.length > 0) {
      throw new PolicyLoadError(`${file}: policy templates are not supported`, file);
    }
    for (const [index, policyText] of parts.policies.entries()) {
      const json = cedar.policyToJson(policyText);
      if (json.type === 'failure') {
        throw new PolicyLoadError(`Cedar parse error in ${file}: ${describeCedarErrors(policyText, json.errors)}`, file);
      }
      const annotations = json.json.annotations ?? {};
      const id = annotations.id ?? `${file}#${index}`;
      if (id.trim() === '') throw new PolicyLoadError(`${file}: policy #${index} has an empty @id`, file);
      if (meta.has(id)) {
        throw new PolicyLoadError(`${file}: duplicate policy id "${id}" (also in ${meta.get(id)?.file})`, file);
      }
      try {
        meta.set(id, readPolicyMeta({ id, file, effect: json.json.effect, order: order++ }, annotations));
      } catch (err) {
        throw new PolicyLoadError(`${file}: policy "${id}": ${(err as Error).message}`, file);
      }
      policies[id] = policyText;
    }
  }
  const preparsedId = `countersign-${createHash('sha256')
    .update(JSON.stringify(Object.entries(policies)))
    .digest('hex')}`;
  const pre = cedar.preparsePolicySet(preparsedId, { staticPolicies: policies });
  if (pre.type === 'failure')
    throw new PolicyLoadError(`Cedar could not prepare the policy set: ${pre.errors.map((e) => e.message).join('; ')}`);
  return { digest: hash.digest('hex'), policies, meta, preparsedId };
}

function cedarApproval(a: ApprovalMaterial): cedar.CedarValueJson {
  return toCedarValue(
    { id: a.id, approved_at: a.approvedAt, approved_until: a.approvedUntil, state: a.state, approvers: a.approvers },
    '$.approval',
  );
}

function uniq(xs: string[]): string[] {
  return [...new Set(xs)];
}

function denyFromForbids(set: LoadedSet, determining: string[]): Decision | null {
  if (determining.length === 0) return { decision: 'deny', nextAction: 'none', reasons: [], policyIds: [] };
  const metas: PolicyMeta[] = [];
  for (const id of determining) {
    const m = set.meta.get(id);
    if (!m) return null;
    metas.push(m);
  }
  metas.sort((a, b) => a.order - b.order);
  const policyIds = metas.map((m) => m.id);
  const hard = metas.filter((m) => !m.requestable);
  if (hard.length > 0) {
    const reasons = uniq(hard.flatMap((m) => (m.reason ? [m.reason] : [])));
    const retries = hard.map((m) => (m.onDeny?.nextAction === 'retry' ? m.onDeny.retryAfterMs : null));
    if (retries.every((r): r is number => r !== null)) {
      return { decision: 'deny', nextAction: 'retry', retryAfterMs: Math.max(...retries), reasons, policyIds };
    }
    return { decision: 'deny', nextAction: 'none', reasons, policyIds };
  }
  // In band only when every determining forbid is: the requester's own word never lifts an
  // out-of-band forbid; otherwise the first out-of-band one picks the approver group.
  const first = metas.find((m) => m.requestable?.approvalMode !== 'in-band') ?? metas[0];
  if (!first?.requestable) return null;
  // every determining forbid's @sensitive fields are masked, not only the first's
  const { sensitive: _own, ...hint } = first.requestable;
  const sensitive = [...new Set(metas.flatMap((m) => m.requestable?.sensitive ?? []))].sort();
  return {
    decision: 'deny',
    accessRequest: { ...hint, policyId: first.id, ...(sensitive.length > 0 ? { sensitive } : {}) },
    nextAction: 'request',
    reasons: uniq(metas.map((m) => m.requestable?.reason ?? '')),
    policyIds,
  };
}

/**
 * Load every `*.cedar` file in `policyDir` and return the Cedar PDP (decision rules in the module
 * header). Throws `PolicyLoadError` when the folder cannot be loaded. `evaluate` never throws for a
 * policy outcome or a Cedar error; it denies instead (fail closed).
 */
export async function createCedarPdp(options: CedarPdpOptions): Promise<CedarPdp> {
  const { policyDir, onEvaluationError, toolEntity } = options;
  let current = await loadPolicySet(policyDir);

  const failClosed = (tool: string, policyIds: string[], messages: string[]): Decision => {
    try {
      onEvaluationError?.({ tool, policyIds, messages });
    } catch {
      // An observer must not turn a deny into a throw.
    }
    return { decision: 'deny', nextAction: 'none', reasons: [EVALUATION_ERROR_REASON], policyIds };
  };

  return {
    get policySetDigest() {
      return current.digest;
    },
    async reload() {
      current = await loadPolicySet(policyDir);
    },
    async evaluate(request: AccessEvaluationRequest): Promise<Decision> {
      const set = current;
      const tool = request.resource.id;
      let context: Record<string, cedar.CedarValueJson>;
      const entity = toolEntity?.(tool);
      let resourceAttrs: cedar.CedarValueJson = {};
      try {
        context = { arguments: toCedarValue(request.context.arguments, '$.arguments') };
        if (request.context.approval) context.approval = cedarApproval(request.context.approval);
        if (entity) resourceAttrs = toCedarValue(entity.attributes, '$.resource');
      } catch (err) {
        const message = err instanceof CedarValueError ? err.message : String(err);
        return failClosed(tool, [], [`context conversion: ${message}`]);
      }
      const principal = { type: CEDAR_TYPES.principal, id: cedarPrincipalId(request.subject) };
      const resource = { type: CEDAR_TYPES.tool, id: tool };
      const upstream = entity?.upstream === undefined ? undefined : { type: CEDAR_TYPES.upstream, id: entity.upstream };
      let answer: cedar.AuthorizationAnswer;
      try {
        answer = cedar.statefulIsAuthorized({
          principal,
          action: { type: CEDAR_TYPES.action, id: request.action.name },
          resource,
          context,
          preparsedPolicySetId: set.preparsedId,
          entities: [
            { uid: principal, attrs: { iss: request.subject.iss, sub: request.subject.sub }, parents: [] },
            { uid: resource, attrs: resourceAttrs as Record<string, cedar.CedarValueJson>, parents: upstream ? [upstream] : [] },
            ...(upstream ? [{ uid: upstream, attrs: {}, parents: [] }] : []),
          ],
        });
      } catch (err) {
        return failClosed(tool, [], [String(err)]);
      }
      if (answer.type === 'failure')
        return failClosed(
          tool,
          [],
          answer.errors.map((e) => e.message),
        );
      const { decision, diagnostics } = answer.response;
      if (diagnostics.errors.length > 0) {
        return failClosed(
          tool,
          uniq(diagnostics.errors.map((e) => e.policyId)),
          diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`),
        );
      }
      if (decision === 'allow') return { decision: 'allow', policyIds: [...diagnostics.reason] };
      return denyFromForbids(set, diagnostics.reason) ?? failClosed(tool, diagnostics.reason, ['determining policy not in the loaded set']);
    },
  };
}
