/**
 * Hosting the approval service: what every process that runs it does, whichever starts it — the
 * gate's embedded stack and `countersign serve --role approvals`, or this package's own
 * `countersign-approvals serve` (`cli.ts`).
 *
 * - {@link approvalServiceOptions}: the `createApprovalService` options from the parsed settings
 *   (`config.ts`), the installation's secrets and where the service lives (its data folder holds
 *   `approvals.db` and the operator's rules file);
 * - {@link hostApprovalService}: create it and run its sweeper (every 5 s: expiry, reminders, risk
 *   rules); `stop()` lets in-flight callbacks land, then closes the database;
 *
 * Deliberately does not: listen on a port (the caller serves `service.app.fetch`), or write
 * `secrets.json` (the gate's stack owns the file; its format is shared, see `secrets.ts`).
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { ApprovalsSettings } from './config.js';
import { channelOptionsFromConfig } from './notify/channel-wiring.js';
import { createApprovalService, type ApprovalService, type ApprovalServiceOptions } from './service.js';
import type { ApprovalsSecrets } from './secrets.js';
import { approvalServiceExtras } from './stack-wiring.js';

/** File name of the approval store in the data folder. */
export const APPROVALS_DB_FILE = 'approvals.db';

/**
 * `createApprovalService` options for a service with data folder `where.dataDir`
 * (`<dataDir>/approvals.db`, `<dataDir>/approval-rules.json`) reached at `where.publicBaseUrl`.
 * Throws `Error` naming every missing OIDC or channel setting.
 */
export function approvalServiceOptions(
  settings: ApprovalsSettings,
  secrets: ApprovalsSecrets,
  where: { dataDir: string; publicBaseUrl: string; logger: Logger },
): ApprovalServiceOptions {
  return {
    dbPath: join(where.dataDir, APPROVALS_DB_FILE),
    clientToken: secrets.approvalsClientToken,
    callbackSecret: secrets.callbackSecret,
    approvers: secrets.approvers,
    approvalValidityMs: settings.COUNTERSIGN_APPROVAL_VALIDITY_MS,
    permitTtlMs: settings.COUNTERSIGN_PERMIT_TTL_MS,
    callbackDelivery: {
      maxAttempts: settings.COUNTERSIGN_CALLBACK_ATTEMPTS,
      baseDelayMs: settings.COUNTERSIGN_CALLBACK_BASE_DELAY_MS,
      maxDelayMs: settings.COUNTERSIGN_CALLBACK_MAX_DELAY_MS,
      attemptTimeoutMs: settings.COUNTERSIGN_CALLBACK_TIMEOUT_MS,
      concurrency: settings.COUNTERSIGN_CALLBACK_CONCURRENCY,
      perReceiverConcurrency: settings.COUNTERSIGN_CALLBACK_RECEIVER_CONCURRENCY,
    },
    publicBaseUrl: where.publicBaseUrl,
    trustedProxies: settings.COUNTERSIGN_TRUSTED_PROXIES,
    logger: where.logger,
    ...approvalServiceExtras(where.dataDir, secrets, settings),
    ...channelOptionsFromConfig(settings, secrets),
  };
}

/** A hosted approval service: the service, and its graceful stop. */
export interface HostedApprovalService {
  service: ApprovalService;
  /** Stop the sweeper, let in-flight callbacks land, close the database. Never rejects. */
  stop(): Promise<void>;
}

/** Create the service from `options` and sweep it every `sweepEveryMs` (default 5000). */
export function hostApprovalService(options: ApprovalServiceOptions, sweepEveryMs = 5_000): HostedApprovalService {
  const service = createApprovalService(options);
  const sweeper = setInterval(() => void service.sweep().catch(() => undefined), sweepEveryMs);
  sweeper.unref();
  return {
    service,
    async stop() {
      clearInterval(sweeper);
      await service.drainCallbacks().catch(() => undefined);
      service.close();
    },
  };
}
