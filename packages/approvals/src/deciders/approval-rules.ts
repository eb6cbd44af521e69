/**
 * The operator's approval rules file for the reference Access Request Service
 * (`<data dir>/approval-rules.json`, see docs/APPROVERS.md): quorum rules (M of N distinct
 * approvers), risk-engine rules (decide automatically), and the ITSM webhook target.
 *
 * Rules read only what the ARAP request already carries — tool, requester, approver group,
 * arguments, generation — plus how long the request has been pending, so the MCP side and the
 * Cedar policies need no change to drive them: the policy picks the group (`@approver_group`),
 * this file says how many of that group must agree and which requests a machine may settle.
 * The file is validated with zod; every problem is reported with its JSON path.
 * Deliberately does not: evaluate Cedar, call out to other systems, or hold secrets (the ITSM
 * shared secret and agent credentials live in `secrets.json`).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { AnalyticsRuleSchema } from '../analytics.js';
import { BreakGlassRuleSchema } from '../break-glass.js';
import { GrantRuleSchema } from '../grants.js';
import { exactNumber } from '../inbox/format.js';
import { DEFAULT_UNFOLLOWED_RULE, UnfollowedRuleSchema, type UnfollowedRule } from '../followers.js';

const Scalar = z.union([z.string(), z.number(), z.boolean()]);

/**
 * One condition on a request fact. `field` is a dotted path into {@link RequestFacts}
 * (`tool`, `requester`, `group`, `generation`, `pendingMs`, `arguments.<name>[.<name>…]`);
 * exactly one operator: `eq`, `in`, `notIn` (scalars) or `gt`, `gte`, `lt`, `lte` (numbers).
 * A missing field never matches (not even `notIn`).
 */
export const ConditionSchema = z
  .object({
    field: z.string().regex(/^(tool|requester|group|generation|pendingMs|arguments(\.[^.\s]+)+)$/, {
      message: 'field must be tool, requester, group, generation, pendingMs or arguments.<name>',
    }),
    eq: Scalar.optional(),
    in: z.array(Scalar).min(1).optional(),
    notIn: z.array(Scalar).min(1).optional(),
    gt: z.number().optional(),
    gte: z.number().optional(),
    lt: z.number().optional(),
    lte: z.number().optional(),
  })
  .strict()
  .refine((c) => ['eq', 'in', 'notIn', 'gt', 'gte', 'lt', 'lte'].filter((k) => k in c).length === 1, {
    message: 'a condition needs exactly one operator of eq, in, notIn, gt, gte, lt, lte',
  });
/** A validated condition. */
export type Condition = z.infer<typeof ConditionSchema>;

/** A quorum rule: matching requests resolve only when `approvals` distinct approvers approved. */
export const QuorumRuleSchema = z
  .object({
    id: z.string().min(1).max(100),
    /** Approver group the rule applies to (the Cedar `@approver_group`). */
    group: z.string().min(1),
    /** Tool name; absent: every tool. */
    tool: z.string().min(1).optional(),
    /** All must hold (AND); empty or absent: always. */
    when: z.array(ConditionSchema).default([]),
    /** Distinct approvers needed, 2–10. */
    approvals: z.int().min(2).max(10),
    /**
     * Why matching requests need this many approvers, in the approver's words (≤ 500 characters),
     * shown as the request's reason instead of the policy's; absent: {@link quorumReason} words one.
     */
    reason: z.string().trim().min(1).max(500).optional(),
  })
  .strict();
/** A validated quorum rule. */
export type QuorumRule = z.infer<typeof QuorumRuleSchema>;

/** A risk-engine rule: the first matching rule (file order) decides the request. */
export const RiskRuleSchema = z
  .object({
    id: z.string().min(1).max(100),
    tool: z.string().min(1).optional(),
    when: z.array(ConditionSchema).min(1),
    decision: z.enum(['approve', 'deny']),
    /** Recorded in the audit trail beside the rule id; default: none. */
    comment: z.string().max(1000).optional(),
  })
  .strict();
/** A validated risk rule. */
export type RiskRule = z.infer<typeof RiskRuleSchema>;

/** Outgoing ITSM notifications (signed with `secrets.json` `itsmSecret`). */
export const ItsmConfigSchema = z
  .object({
    /** Where new requests are POSTed (absolute http(s) URL). */
    webhookUrl: z.url({ protocol: /^https?$/ }),
    /** Groups whose requests are sent, and for which the ITSM system may decide. */
    groups: z.array(z.string().min(1)).min(1),
    /** Include the full tool arguments in the notification; default true (the ticket needs them). */
    includeArguments: z.boolean().default(true),
  })
  .strict();
/** A validated ITSM config. */
export type ItsmConfig = z.infer<typeof ItsmConfigSchema>;

/**
 * Reminders and escalation for one approver group: a request of `group` still pending
 * `remindAfterMs` after submission reminds the group once (audit `reminded`, notifier kind
 * `reminded`); one still pending `escalateAfterMs` after submission is escalated once to
 * `escalateTo` (a fallback group and/or one approver, who may then decide it under the same rules;
 * audit `escalated`, notifier kind `escalated`). Times in ms since submission; at least one step.
 */
export const EscalationRuleSchema = z
  .object({
    group: z.string().min(1),
    remindAfterMs: z.int().min(1000).optional(),
    escalateAfterMs: z.int().min(1000).optional(),
    escalateTo: z
      .object({ group: z.string().min(1).optional(), approver: z.string().min(1).optional() })
      .strict()
      .refine((t) => t.group !== undefined || t.approver !== undefined, { message: 'escalateTo needs a group or an approver' })
      .optional(),
  })
  .strict()
  .refine((r) => r.remindAfterMs !== undefined || r.escalateAfterMs !== undefined, {
    message: 'an escalation rule needs remindAfterMs, escalateAfterMs, or both',
  })
  .refine((r) => (r.escalateAfterMs === undefined) === (r.escalateTo === undefined), {
    message: 'escalateAfterMs and escalateTo go together',
  })
  .refine((r) => r.remindAfterMs === undefined || r.escalateAfterMs === undefined || r.escalateAfterMs > r.remindAfterMs, {
    message: 'escalateAfterMs must be later than remindAfterMs',
  })
  .refine((r) => r.escalateTo?.group !== r.group, { message: 'escalateTo.group must differ from group' });
/** A validated escalation rule. */
export type EscalationRule = z.infer<typeof EscalationRuleSchema>;

/**
 * A step-up rule: approving a matching request needs a user-verified WebAuthn assertion (passkey)
 * over the request's binding digest, given in the inbox (`packages/approvals/src/inbox/passkeys.ts`).
 * Fixed at submission, like a quorum. Denying never needs it.
 */
export const StepUpRuleSchema = z
  .object({
    id: z.string().min(1).max(100),
    /** Approver group; absent: every group. */
    group: z.string().min(1).optional(),
    tool: z.string().min(1).optional(),
    when: z.array(ConditionSchema).default([]),
    /** Why approving needs a passkey, in the approver's words (≤ 500 characters); absent: a built-in sentence. */
    reason: z.string().trim().min(1).max(500).optional(),
  })
  .strict();
/** A validated step-up rule. */
export type StepUpRule = z.infer<typeof StepUpRuleSchema>;

/** The whole rules file. Every key is optional. */
export const ApprovalRulesSchema = z
  .object({
    $schema: z.string().optional(),
    quorum: z.array(QuorumRuleSchema).default([]),
    risk: z.array(RiskRuleSchema).default([]),
    /** How often the risk engine re-evaluates pending requests (and re-reads this file), ms; default 30 s. */
    riskIntervalMs: z.int().min(1000).max(86_400_000).default(30_000),
    itsm: ItsmConfigSchema.optional(),
    /** Reminders and escalation per approver group (at most one rule per group); default none. */
    escalation: z.array(EscalationRuleSchema).optional(),
    /** Requests whose approval needs a passkey (user-verified WebAuthn); default none. */
    stepUp: z.array(StepUpRuleSchema).optional(),
    /** What a request nobody follows means (`../followers.ts`); default: confirm approvals after 10 minutes. */
    unfollowed: UnfollowedRuleSchema.optional(),
    /** Who may approve their own request in an emergency, and its controls (`../break-glass.ts`); default: nobody. */
    breakGlass: BreakGlassRuleSchema.optional(),
    /** Who may see the approval analytics page, and its thresholds (`../analytics.ts`); default: nobody, 10 s. */
    analytics: AnalyticsRuleSchema.optional(),
    /** Who may create grants, and their bounds (`../grants.ts`); default: nobody. */
    grants: GrantRuleSchema.optional(),
  })
  .strict();
/** Validated approval rules. */
export type ApprovalRules = z.infer<typeof ApprovalRulesSchema>;

/**
 * Rules in force when no file exists: the four-eyes example, transfers over 100,000 need two
 * distinct treasury approvers; production database migrations (`submit_change`,
 * docs/CHANGE-GATE.md) need two distinct change-advisory approvers; no risk rules; no ITSM.
 */
export const DEFAULT_APPROVAL_RULES: ApprovalRules = ApprovalRulesSchema.parse({
  quorum: [
    {
      id: 'four-eyes-large-transfers',
      group: 'treasury',
      tool: 'wire_transfer',
      when: [{ field: 'arguments.amount', gt: 100_000 }],
      approvals: 2,
      reason: 'Four-eyes rule: transfers over $100,000 need two treasury approvers.',
    },
    {
      id: 'two-people-production-migrations',
      group: 'change-advisory',
      tool: 'submit_change',
      when: [
        { field: 'arguments.kind', eq: 'db_migration' },
        { field: 'arguments.impact_scope', eq: 'production' },
      ],
      approvals: 2,
      reason: 'Four-eyes rule: production database migrations need two change-advisory approvers.',
    },
  ],
});

/** Error for an unreadable or invalid rules file; `message` lists every problem with its path. */
export class ApprovalRulesError extends Error {
  override readonly name = 'ApprovalRulesError';
}

/** Parse rules from JSON text; throws {@link ApprovalRulesError} naming the source and every issue. */
export function parseApprovalRules(text: string, source = 'approval rules'): ApprovalRules {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ApprovalRulesError(`${source}: not valid JSON (${(err as Error).message})`);
  }
  const parsed = ApprovalRulesSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.length === 0 ? '(file)' : i.path.join('.')}: ${i.message}`);
    throw new ApprovalRulesError(`${source} is invalid:\n${lines.join('\n')}`);
  }
  const ids = [...parsed.data.quorum.map((r) => r.id), ...parsed.data.risk.map((r) => r.id)];
  const dup = ids.find((id, i) => ids.indexOf(id) !== i);
  if (dup !== undefined) throw new ApprovalRulesError(`${source} is invalid:\n  rule id "${dup}" is used twice`);
  const groups = (parsed.data.escalation ?? []).map((r) => r.group);
  const dupGroup = groups.find((g, i) => groups.indexOf(g) !== i);
  if (dupGroup !== undefined) throw new ApprovalRulesError(`${source} is invalid:\n  escalation: group "${dupGroup}" has two rules`);
  return parsed.data;
}

/** Load `file`; a missing file gives {@link DEFAULT_APPROVAL_RULES}. Throws {@link ApprovalRulesError}. */
export function loadApprovalRules(file: string): ApprovalRules {
  if (!existsSync(file)) return DEFAULT_APPROVAL_RULES;
  return parseApprovalRules(readFileSync(file, 'utf8'), file);
}

/**
 * Write {@link DEFAULT_APPROVAL_RULES} to `file` (pretty JSON, creating its folder) unless it
 * exists; the service does this on first start so the operator has a file to edit.
 */
export function writeDefaultApprovalRules(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  try {
    writeFileSync(file, `${JSON.stringify(DEFAULT_APPROVAL_RULES, null, 2)}\n`, { flag: 'wx', mode: 0o644 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Whether some value satisfies every condition in `conds` (all on one field). */
function satisfiable(conds: readonly Condition[]): boolean {
  let allowed: Array<string | number | boolean> | null = null;
  const excluded = new Set<string | number | boolean>();
  let lo = Number.NEGATIVE_INFINITY;
  let loStrict = false;
  let hi = Number.POSITIVE_INFINITY;
  let hiStrict = false;
  let numeric = false;
  const restrict = (values: Array<string | number | boolean>) => {
    allowed = allowed === null ? [...values] : allowed.filter((v) => values.includes(v));
  };
  for (const c of conds) {
    if (c.eq !== undefined) restrict([c.eq]);
    if (c.in !== undefined) restrict(c.in);
    if (c.notIn !== undefined) for (const v of c.notIn) excluded.add(v);
    if (c.gt !== undefined || c.gte !== undefined) {
      numeric = true;
      const v = (c.gt ?? c.gte) as number;
      if (v > lo || (v === lo && c.gt !== undefined)) {
        lo = v;
        loStrict = c.gt !== undefined;
      }
    }
    if (c.lt !== undefined || c.lte !== undefined) {
      numeric = true;
      const v = (c.lt ?? c.lte) as number;
      if (v < hi || (v === hi && c.lt !== undefined)) {
        hi = v;
        hiStrict = c.lt !== undefined;
      }
    }
  }
  const inRange = (v: unknown) => typeof v === 'number' && (loStrict ? v > lo : v >= lo) && (hiStrict ? v < hi : v <= hi);
  const chosen = allowed as Array<string | number | boolean> | null;
  if (chosen !== null) return chosen.some((v) => !excluded.has(v) && (!numeric || inRange(v)));
  if (!numeric) return true;
  if (lo < hi) return true;
  return lo === hi && !loStrict && !hiStrict && !excluded.has(lo);
}

/**
 * Pairs of an approving risk rule and a quorum rule that can match the same request: the risk
 * engine's approval is final, so such a risk rule settles alone what the quorum rule says needs
 * several approvers. Conservative: a pair is reported unless some field's conditions (tool and
 * group included) cannot hold together, e.g. `amount lt 30000` against `amount gt 100000`.
 */
export function riskQuorumOverlaps(rules: ApprovalRules): Array<{ risk: string; quorum: string }> {
  const out: Array<{ risk: string; quorum: string }> = [];
  const conditionsOf = (r: { tool?: string | undefined; when: Condition[] }, group?: string): Condition[] => [
    ...r.when,
    ...(r.tool !== undefined ? [{ field: 'tool', eq: r.tool }] : []),
    ...(group !== undefined ? [{ field: 'group', eq: group }] : []),
  ];
  for (const risk of rules.risk) {
    if (risk.decision !== 'approve') continue;
    for (const quorum of rules.quorum) {
      const all = [...conditionsOf(risk), ...conditionsOf(quorum, quorum.group)];
      const fields = new Set(all.map((c) => c.field));
      const disjoint = [...fields].some((f) => !satisfiable(all.filter((c) => c.field === f)));
      if (!disjoint) out.push({ risk: risk.id, quorum: quorum.id });
    }
  }
  return out;
}

/** What a rule can see of one request. `pendingMs` is now − created, in ms. */
export interface RequestFacts {
  tool: string;
  requester: string;
  group: string;
  generation: number;
  pendingMs: number;
  arguments: Record<string, unknown>;
}

function lookup(facts: RequestFacts, path: string): unknown {
  let v: unknown = facts;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Whether one condition holds for `facts` (a missing or mistyped field never matches). */
export function conditionHolds(c: Condition, facts: RequestFacts): boolean {
  const v = lookup(facts, c.field);
  if (v === undefined || v === null || typeof v === 'object') return false;
  if (c.eq !== undefined) return v === c.eq;
  if (c.in !== undefined) return c.in.includes(v as string | number | boolean);
  if (c.notIn !== undefined) return !c.notIn.includes(v as string | number | boolean);
  if (typeof v !== 'number') return false;
  if (c.gt !== undefined) return v > c.gt;
  if (c.gte !== undefined) return v >= c.gte;
  if (c.lt !== undefined) return v < c.lt;
  if (c.lte !== undefined) return v <= c.lte;
  return false;
}

function ruleMatches(rule: { tool?: string | undefined; when: Condition[] }, facts: RequestFacts): boolean {
  if (rule.tool !== undefined && rule.tool !== facts.tool) return false;
  return rule.when.every((c) => conditionHolds(c, facts));
}

const OPERATOR_WORDS: Record<'eq' | 'in' | 'notIn' | 'gt' | 'gte' | 'lt' | 'lte', string> = {
  eq: 'is',
  in: 'is one of',
  notIn: 'is not one of',
  gt: 'over',
  gte: 'at least',
  lt: 'under',
  lte: 'at most',
};

/** One condition in words: `amount over 100,000`, `kind is db_migration`, `pending at least 3,600,000 ms`. */
function conditionWords(c: Condition): string {
  const op = (Object.keys(OPERATOR_WORDS) as Array<keyof typeof OPERATOR_WORDS>).find((k) => c[k] !== undefined) ?? 'eq';
  const word = (v: string | number | boolean) => (typeof v === 'number' ? exactNumber(v) : String(v));
  const value = c[op] as string | number | boolean | Array<string | number | boolean>;
  const field = c.field.startsWith('arguments.') ? c.field.slice('arguments.'.length) : c.field === 'pendingMs' ? 'pending (ms)' : c.field;
  return `${field} ${OPERATOR_WORDS[op]} ${Array.isArray(value) ? value.map(word).join(', ') : word(value)}`;
}

/**
 * The reason a request matched by `rule` needs several approvers, for approvers: the rule's own
 * `reason`, else a built-in four-eyes sentence from its count, group, tool and conditions, e.g.
 * `Four-eyes rule four-eyes-large-transfers: wire_transfer requests with amount over 100,000 need
 * 2 distinct treasury approvers.`
 */
export function quorumReason(rule: QuorumRule): string {
  if (rule.reason !== undefined) return rule.reason;
  const subject = `${rule.tool ?? 'all'} requests`;
  const conditions = rule.when.length === 0 ? '' : ` with ${rule.when.map(conditionWords).join(' and ')}`;
  return `Four-eyes rule ${rule.id}: ${subject}${conditions} need ${rule.approvals} distinct ${rule.group} approvers.`;
}

/** Why approving a request matched by step-up rule `rule` needs a passkey: its `reason`, else a built-in sentence. */
export function stepUpReason(rule: StepUpRule): string {
  return rule.reason ?? `Approving needs your passkey (rule ${rule.id}).`;
}

/**
 * Distinct approvals a request needs: the largest `approvals` of the matching quorum rules for its
 * group, or 1 with no rule, with that rule's id and {@link quorumReason} (null with no rule).
 * Fixed at submission (a later file edit does not change open requests).
 */
export function requiredApprovals(
  rules: ApprovalRules,
  facts: RequestFacts,
): { approvals: number; ruleId: string | null; reason: string | null } {
  let best: QuorumRule | null = null;
  for (const r of rules.quorum) {
    if (r.group === facts.group && ruleMatches(r, facts) && r.approvals > (best?.approvals ?? 1)) best = r;
  }
  return best === null
    ? { approvals: 1, ruleId: null, reason: null }
    : { approvals: best.approvals, ruleId: best.id, reason: quorumReason(best) };
}

/** The first step-up rule (file order) matching `facts`, or null: no passkey needed. */
export function matchingStepUpRule(rules: ApprovalRules, facts: RequestFacts): StepUpRule | null {
  return (rules.stepUp ?? []).find((r) => (r.group === undefined || r.group === facts.group) && ruleMatches(r, facts)) ?? null;
}

/** The first risk rule (file order) matching `facts`, or null. */
export function firstMatchingRiskRule(rules: ApprovalRules, facts: RequestFacts): RiskRule | null {
  return rules.risk.find((r) => ruleMatches(r, facts)) ?? null;
}

/** The `unfollowed` option in force: the file's, else {@link DEFAULT_UNFOLLOWED_RULE} (confirm after 10 minutes). */
export function unfollowedRuleOf(rules: ApprovalRules): UnfollowedRule {
  return rules.unfollowed ?? DEFAULT_UNFOLLOWED_RULE;
}
