/**
 * Credential checks for the reference Access Request Service: the MCP server's bearer token
 * (ARAP client) and approvers' HTTP Basic credentials (RFC 7617).
 *
 * All secret comparisons are constant-time over SHA-256 digests (equal length regardless of the
 * input), and approver lookup scans every configured approver so timing does not reveal which
 * ids exist. Supervising agents present `Authorization: Bearer <agent secret>`.
 * Deliberately does not: rate-limit or log failures (the routes do, with
 * `packages/approvals/src/inbox/sign-in-throttle.ts`), lock out, or issue sessions/cookies (see
 * `packages/approvals/src/inbox/session.ts`).
 */
import { bearerMatches, safeEqual } from '@countersign/http/bearer';
import { agentDecider, personDecider, type AgentCredential, type Decider } from '../deciders/decider.js';

/** `@countersign/http/bearer`'s constant-time checks, where the approval service's routes import them. */
export { bearerMatches, safeEqual };

/** A configured approver: `id` is the Basic-auth user name, `groups` the approver groups they decide for. */
export interface Approver {
  id: string;
  secret: string;
  groups: string[];
}

/** Parse `Basic base64(user:pass)`; returns null when absent or malformed. */
export function parseBasic(authorization: string | undefined): { id: string; secret: string } | null {
  if (authorization === undefined) return null;
  const m = /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (m === null || m[1] === undefined) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/**
 * Authenticate an approver from an `Authorization` header value.
 * @returns the matching approver, or null (absent, malformed, unknown id, or wrong secret).
 */
export function authenticateApprover(authorization: string | undefined, approvers: readonly Approver[]): Approver | null {
  const creds = parseBasic(authorization);
  if (creds === null) return null;
  let found: Approver | null = null;
  for (const a of approvers) {
    const idOk = safeEqual(a.id, creds.id);
    const secretOk = safeEqual(a.secret, creds.secret);
    if (idOk && secretOk && found === null) found = a;
  }
  return found;
}

/**
 * Authenticate a decider on the API: HTTP Basic → a configured person (channel `api`);
 * `Bearer <secret>` → a supervising agent (channel `agent`, scoped to its tools and decisions).
 * @returns the decider, or null (absent, malformed or unknown credentials).
 */
export function authenticateDecider(
  authorization: string | undefined,
  approvers: readonly Approver[],
  agents: readonly AgentCredential[],
): Decider | null {
  if (authorization !== undefined && /^Bearer /i.test(authorization)) {
    let found: AgentCredential | null = null;
    for (const a of agents) if (bearerMatches(authorization, a.secret) && found === null) found = a;
    return found === null ? null : agentDecider(found);
  }
  const approver = authenticateApprover(authorization, approvers);
  return approver === null ? null : personDecider(approver, 'api');
}
