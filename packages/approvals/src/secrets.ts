/**
 * The approval service's secrets as the data folder's `secrets.json` holds them beside the gate's
 * (the gate's stack creates and upgrades that file, `src/secrets.ts` of the gate): their shape, how
 * fresh machine secrets are drawn, and how a process that does not own the file reads them.
 * Only `node:crypto` and `node:fs`: the gate imports it without loading the service.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentCredential } from './deciders/decider.js';

/** Machine secrets of the approval service, stored in `secrets.json` beside the approvers. */
export interface ApprovalMachineSecrets {
  /** Supervising agents (Bearer secrets). Default: `supervisor`, `wire_transfer`, approve and deny. */
  agents: AgentCredential[];
  /** HS256 secret shared with the ITSM system (see `deciders/itsm-webhook.ts`). */
  itsmSecret: string;
  /** Key of the approver inbox's session CSRF tokens (see `inbox/session.ts`); only the approvals role uses it. */
  inboxSessionKey: string;
  /** HS256 key of emailed decision links (see `notify/email-links.ts`); only the approvals role uses it. */
  emailLinkKey: string;
}

/** Fresh machine secrets (256-bit random values, base64url). */
export function generateApprovalMachineSecrets(): ApprovalMachineSecrets {
  const rnd = () => randomBytes(32).toString('base64url');
  return {
    agents: [{ id: 'supervisor', secret: rnd(), tools: ['wire_transfer'], decisions: ['approve', 'deny'] }],
    itsmSecret: rnd(),
    inboxSessionKey: rnd(),
    emailLinkKey: rnd(),
  };
}

/**
 * The secrets the approval service needs, as `secrets.json` holds them: the client token the gate
 * presents on the ARAP API, the callback HMAC key both ends share, the approvers, and the service's
 * machine secrets (supervising agents, the ITSM secret, the inbox session key, the email link key).
 */
export interface ApprovalsSecrets extends Partial<ApprovalMachineSecrets> {
  approvalsClientToken: string;
  callbackSecret: string;
  approvers: Array<{ id: string; secret: string; groups: string[] }>;
}

/**
 * The approval service's secrets from `<dataDir>/secrets.json`. Throws `Error` naming the file when
 * it is missing, not JSON, or lacks the client token, the callback secret or the approvers.
 */
export function readApprovalsSecrets(dataDir: string): ApprovalsSecrets {
  const file = join(dataDir, 'secrets.json');
  let value: Partial<ApprovalsSecrets>;
  try {
    value = JSON.parse(readFileSync(file, 'utf8')) as Partial<ApprovalsSecrets>;
  } catch (err) {
    throw new Error(
      `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): start the gate's stack on this data folder once (countersign dev, or countersign serve --role …), or write it`,
      { cause: err },
    );
  }
  const missing = (['approvalsClientToken', 'callbackSecret', 'approvers'] as const).filter((k) => !value[k]);
  if (missing.length > 0) throw new Error(`${file} has no ${missing.join(', ')}`);
  return value as ApprovalsSecrets;
}
