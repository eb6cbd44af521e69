/**
 * `countersign-approvals serve`: the approval service on its own port, hosted as every host does
 * (`host.ts`), over a data folder's `secrets.json`. Resolves once it listens; `stop()` stops
 * listening, lets in-flight callbacks land and closes the database.
 */
import { createLogger } from '@countersign/http/log';
import { closeServer, listen } from '@countersign/http/server-lifecycle';
import type { ApprovalsServeConfig } from './config.js';
import { approvalServiceOptions, hostApprovalService } from './host.js';
import { readApprovalsSecrets } from './secrets.js';

/** Serve the approval service per `config`. Throws when `secrets.json` is unusable, a setting is incomplete, or the port is taken. */
export async function serveApprovals(config: ApprovalsServeConfig): Promise<{ url: string; stop(): Promise<void> }> {
  const secrets = readApprovalsSecrets(config.COUNTERSIGN_DATA_DIR);
  const host = config.COUNTERSIGN_HOST;
  const url = config.COUNTERSIGN_APPROVALS_URL ?? `http://${host}:${config.COUNTERSIGN_APPROVALS_PORT}`;
  const logger = createLogger({ name: 'countersign-approvals', level: config.LOG_LEVEL ?? 'info' });
  const hosted = hostApprovalService(
    approvalServiceOptions(config, secrets, { dataDir: config.COUNTERSIGN_DATA_DIR, publicBaseUrl: url, logger }),
  );
  let server;
  try {
    ({ server } = await listen(
      host,
      config.COUNTERSIGN_APPROVALS_PORT,
      { current: (req, env) => hosted.service.app.fetch(req, env as object) },
      'COUNTERSIGN_APPROVALS_PORT',
    ));
  } catch (err) {
    await hosted.stop();
    throw err;
  }
  const listening = server;
  return {
    url,
    async stop() {
      await closeServer(listening);
      await hosted.stop();
    },
  };
}
