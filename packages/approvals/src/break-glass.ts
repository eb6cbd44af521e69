/**
 * Break-glass (docs/APPROVERS.md §Break-glass, docs/DESIGN.md §Break-glass): a role that may
 * approve its own request, with compensating controls — a mandatory reason, a time-boxed session,
 * a daily limit, a notice to the approvers it skipped, a mark in the inbox, the audit trail, the
 * approval material and the receipt, and a mandatory review afterwards by someone else.
 *
 * The rules file's `breakGlass` option says who holds the role (`approvers` by id, `groups` by
 * approver group), who reviews (`reviewers`, `reviewerGroups`; absent: any member of the request's
 * approver group), how long a session lasts (`windowMs`), how many sessions one approver may open
 * in any 24 hours (`maxPerDay`), and by when a review is due (`reviewWithinMs`).
 *
 * A session is what a security team calls "breaking the glass": the approver states a reason, and
 * for `windowMs` from then they may approve their own requests (each approval also carrying its
 * own reason). The first break-glass approval opens a session when none is active; opening counts
 * towards `maxPerDay` (rolling 24 hours), using an active one does not. An ended or expired
 * session cannot be used; the next break-glass approval opens a new one, if the limit allows.
 *
 * A break-glass approval settles the request alone (it skips a quorum: the point is that the
 * other approvers are not there), but never a step-up rule (the passkey is still asked for) and
 * never the unfollowed confirmation. Deliberately does not: let a delegate or a supervising agent
 * break glass (only a person in their own right), or let the one who broke glass review it.
 */
import { z } from 'zod';

/** A day, for `maxPerDay`, ms. */
export const BREAK_GLASS_DAY_MS = 86_400_000;

/** The rules file's `breakGlass` option (all times ms). */
export const BreakGlassRuleSchema = z
  .object({
    /** Approver ids who hold the role. */
    approvers: z.array(z.string().min(1)).optional(),
    /** Approver groups whose members hold the role. */
    groups: z.array(z.string().min(1)).optional(),
    /** Approver ids who may review a break-glass approval (never the one who broke glass). */
    reviewers: z.array(z.string().min(1)).optional(),
    /** Approver groups whose members may review; with `reviewers` absent too: the request's approver group. */
    reviewerGroups: z.array(z.string().min(1)).optional(),
    /** How long a break-glass session lasts once opened, ms; default 15 min, 1 s to 24 h. */
    windowMs: z.int().min(1000).max(BREAK_GLASS_DAY_MS).default(900_000),
    /** Sessions one approver may open in any 24 hours; default 2, 1 to 100. */
    maxPerDay: z.int().min(1).max(100).default(2),
    /** A break-glass approval's review is overdue this long after it, ms; default 24 h, at least 1 min. */
    reviewWithinMs: z.int().min(60_000).default(BREAK_GLASS_DAY_MS),
  })
  .strict()
  .refine((r) => (r.approvers?.length ?? 0) + (r.groups?.length ?? 0) > 0, {
    message: 'breakGlass needs at least one entry in approvers or groups (who holds the role)',
  });
/** The validated option. */
export type BreakGlassRule = z.infer<typeof BreakGlassRuleSchema>;

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Characters that show nothing on a page: controls, format characters (zero-width spaces and
 * joiners, bidi marks, the soft hyphen, invisible separators), white space and line/paragraph
 * separators, the Hangul fillers and the braille blank (letters by category, blank to the eye).
 */
const SHOWS_NOTHING = /[\p{Cc}\p{Cf}\p{Z}\u115F\u1160\u3164\uFFA0\u2800]/gu;

/**
 * Whether `text` says something a reader can see: a letter or a digit is left once the characters
 * that show nothing are removed. The test of a mandatory break-glass reason and review comment
 * (a reason of zero-width spaces reads as no reason on the banner).
 */
export function saysSomething(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text.replace(SHOWS_NOTHING, ''));
}

/**
 * Whether `subject` is exactly the person `person` (an approver id, or one of its configured
 * `names`): the subject's own `sub`, compared as JWT compares it (case-sensitively), never an actor
 * of its `act` chain. Break-glass grants a right on "your own request", so its test is strict; the
 * four-eyes test (`principal-names.ts`) is loose because it only ever refuses.
 */
export function isOwnSubject(subject: { sub: string }, person: string, names: readonly string[] = []): boolean {
  return subject.sub === person || names.includes(subject.sub);
}

/**
 * Whether approver `id` with approver groups `groups` is named by a rules-file role (`approvers`
 * by id, case-insensitively, or `groups`); nobody without a rule. The break-glass role and the
 * grant right (`grants.ts`) are such roles.
 */
export function holdsRole(
  rule: { approvers?: string[] | undefined; groups?: string[] | undefined } | undefined,
  id: string,
  groups: readonly string[],
): boolean {
  if (rule === undefined) return false;
  return (rule.approvers ?? []).some((a) => same(a, id)) || (rule.groups ?? []).some((g) => groups.includes(g));
}

/** Whether approver `id` with approver groups `groups` holds the break-glass role under `rule` (none without a rule). */
export function holdsBreakGlassRole(rule: BreakGlassRule | undefined, id: string, groups: readonly string[]): boolean {
  return holdsRole(rule, id, groups);
}

/**
 * Whether approver `id` (groups `groups`) may review the break-glass approval by `by` of a request
 * of approver group `requestGroup`: never `by` itself; else listed in `reviewers` or a member of
 * `reviewerGroups`, or — when the rule names neither — a member of `requestGroup`.
 */
export function mayReviewBreakGlass(
  rule: BreakGlassRule | undefined,
  id: string,
  groups: readonly string[],
  by: string,
  requestGroup: string,
): boolean {
  if (same(id, by)) return false;
  if (rule?.reviewers === undefined && rule?.reviewerGroups === undefined) return groups.includes(requestGroup);
  return (rule.reviewers ?? []).some((r) => same(r, id)) || (rule.reviewerGroups ?? []).some((g) => groups.includes(g));
}

/** What the approver claims with a break-glass approval (`break_glass` of the decision body). */
export interface BreakGlassClaim {
  /** Why, in their words (trimmed, 1–500 characters; an empty one is refused). */
  reason: string;
}

/** Longest break-glass reason or review comment, in characters. */
export const MAX_BREAK_GLASS_TEXT = 500;
