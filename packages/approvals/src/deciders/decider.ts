/**
 * Who decides an access request, as the lifecycle sees it: a person (inbox, API, CLI), a
 * supervising agent (machine credential scoped to tools and decisions), the risk engine, or an
 * ITSM system speaking for a named person. Every decision records the decider's `id` and
 * channel in the audit trail, and every decider is subject to the same four-eyes rule.
 * Deliberately does not: authenticate (people and supervising agents: `packages/approvals/src/api/http-auth.ts`;
 * ITSM decisions: `itsm-webhook.ts`).
 */
import type { Approver } from '../api/http-auth.js';
import type { DecisionChannel } from '../store/store.js';

/** A decision value. */
export type Decision = 'approve' | 'deny';

/**
 * A decider. Absent scopes mean "any".
 *
 * Quorum: votes are keyed by `person`, so one person counts once whatever the channel (inbox,
 * API, an ITSM decision naming them). Only a member of the request's group (`groups` lists it)
 * counts towards a quorum above 1; a decider without `groups` (a supervising agent) may approve
 * alone only where one approval suffices, and the risk engine's approval is `final`.
 * Four-eyes: `person`, `id` and every entry of `names` are compared, case-insensitively, with
 * the requester's `subject.sub` and every actor in its `act` chain.
 */
export interface Decider {
  /** Audit identity: `bob`, `agent:supervisor`, `risk-engine`, `itsm:bob`. */
  id: string;
  via: DecisionChannel;
  /** Quorum identity: the configured approver id (`bob`, also for `itsm:bob`), else the audit id. */
  person: string;
  /** Further names of the same identity, for four-eyes (an agent's bare id, ITSM's `decided_by` as sent). */
  names?: readonly string[];
  /** Approver groups it is a member of; absent: may act on any group but is a member of none. */
  groups?: readonly string[];
  /** Tools it may decide for; absent: any tool. */
  tools?: readonly string[];
  /** Decisions it may make; absent: both. */
  decisions?: readonly Decision[];
  /** Its approval resolves the request whatever the quorum (the operator's risk engine only). */
  final?: boolean;
  /**
   * A delegate deciding for `person` (see `packages/approvals/src/delegation.ts`): then `id` is the
   * delegate (audit actor), `person` the delegator (quorum identity, audit `on_behalf_of`),
   * `groups` the delegator's, and `names` holds the delegate so four-eyes checks both.
   */
  castBy?: string;
}

/** A supervising agent's credential (from `secrets.json` `agents`). */
export interface AgentCredential {
  /** Agent name; its audit identity is `agent:<id>`. */
  id: string;
  /** Bearer secret it presents (`Authorization: Bearer <secret>`). */
  secret: string;
  /** Tools whose requests it may decide (at least one). */
  tools: string[];
  /** Decisions it may make; default both. */
  decisions?: Decision[];
}

/** A configured person deciding through `via`: `inbox`, `api`, or a notification channel (`slack`, `email`). */
export function personDecider(a: Approver, via: 'inbox' | 'api' | 'slack' | 'email'): Decider {
  return { id: a.id, person: a.id, via, groups: a.groups };
}

/**
 * A supervising agent: any group but a member of none (it never counts towards a quorum above 1),
 * only its tools and decisions; four-eyes compares both `agent:<id>` and `<id>`.
 */
export function agentDecider(a: AgentCredential): Decider {
  const id = `agent:${a.id}`;
  return { id, person: id, names: [a.id], via: 'agent', tools: a.tools, decisions: a.decisions ?? ['approve', 'deny'] };
}

/** The operator's risk engine: any request, final. */
export const RISK_ENGINE_DECIDER: Decider = { id: 'risk-engine', person: 'risk-engine', via: 'risk-engine', final: true };

/** Every name of `d` that four-eyes compares, lower-cased. */
export function deciderNames(d: Decider): string[] {
  return [d.id, d.person, ...(d.names ?? [])].map((n) => n.toLowerCase());
}
