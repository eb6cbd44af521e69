/**
 * The Temporal client the offline commands read histories with (`receipts export`, `policy
 * replay`): connected to `TEMPORAL_ADDRESS` (or the dev server's port) with the configured
 * connection options, payloads decoded by the installation's payload codec
 * (`COUNTERSIGN_PAYLOAD_KEYS`, else the data folder's `secrets.json`).
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { Config } from '../config.js';

/** An open reader; `close()` closes its connection. */
export interface TemporalReader {
  temporal: Client;
  codec: PayloadCodec;
  close(): Promise<void>;
}

/** Connect; throws `could not reach Temporal at <address>: <reason>` when the server cannot be reached. */
export async function openTemporalReader(config: Config): Promise<TemporalReader> {
  const [{ Client }, { loadOrCreateSecrets }, { connectClient }, { payloadCodecFromKeyList }, { temporalConnectionOf }] = await Promise.all(
    [
      import('@temporalio/client'),
      import('../secrets.js'),
      import('../temporal/connect.js'),
      import('../temporal/payload-codec.js'),
      import('../compose.js'),
    ],
  );
  const secrets = loadOrCreateSecrets(config.COUNTERSIGN_DATA_DIR);
  const codec = payloadCodecFromKeyList(config.COUNTERSIGN_PAYLOAD_KEYS ?? secrets.payloadKeys);
  const address = config.TEMPORAL_ADDRESS ?? `127.0.0.1:${config.TEMPORAL_PORT}`;
  let connection;
  try {
    connection = await connectClient(address, temporalConnectionOf(config));
  } catch (err) {
    throw new Error(`could not reach Temporal at ${address}: ${(err as Error).message}`, { cause: err });
  }
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: { payloadCodecs: [codec] } });
  return { temporal, codec, close: () => connection.close() };
}
