/**
 * What the embedded stack adds to the approval service for resolvers that are not people, kept
 * here so the approvals role (`src/stack-roles.ts`, and any other process that hosts the service) wires them in one line:
 * the generated machine secrets in `secrets.json` (a supervising agent credential scoped to
 * `wire_transfer`, the ITSM shared secret, the inbox session key) and the operator's rules file
 * in the data folder. The inbox session key is its own random value, passed only to the process
 * that serves the approval service (never derived from the callback secret the MCP role holds).
 * It reads no environment: the inbox's OIDC settings come from the parsed configuration (`src/config.ts`).
 * Deliberately does not: write files (the stack owns `secrets.json`).
 */
import { join } from 'node:path';
import type { AgentCredential } from './deciders/decider.js';
import type { ApprovalMachineSecrets } from './secrets.js';
import { oidcOptionsFromEnv, type OidcSettings, type OidcSignInOptions } from './inbox/oidc-sessions.js';

/** File name of the operator's approval rules in the data folder. */
export const APPROVAL_RULES_FILE = 'approval-rules.json';

/**
 * Extra `createApprovalService` options for a stack with data folder `dataDir`:
 * `{rulesFile: <dataDir>/approval-rules.json, agents, itsmSecret, sessionKey, oidc?}` (missing secrets: none;
 * `oidc` when `config.OIDC_ISSUER` is set; `config`: the parsed configuration or any record of its
 * `OIDC_*` strings). Throws `Error` naming every missing OIDC variable.
 */
export function approvalServiceExtras(
  dataDir: string,
  secrets: Partial<ApprovalMachineSecrets>,
  config: OidcSettings,
): { rulesFile: string; agents: AgentCredential[]; itsmSecret?: string; sessionKey?: string; oidc?: OidcSignInOptions } {
  const oidc = oidcOptionsFromEnv(config);
  return {
    rulesFile: join(dataDir, APPROVAL_RULES_FILE),
    agents: secrets.agents ?? [],
    ...(secrets.itsmSecret !== undefined ? { itsmSecret: secrets.itsmSecret } : {}),
    ...(secrets.inboxSessionKey !== undefined ? { sessionKey: secrets.inboxSessionKey } : {}),
    ...(oidc !== undefined ? { oidc } : {}),
  };
}
