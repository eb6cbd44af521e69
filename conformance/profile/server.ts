/**
 * The conformance profile's server (`npm run conformance:server`): fixture tools for the official
 * MCP conformance runner (`scripts/official-conformance.mjs`), unauthenticated, for testing only;
 * prints `conformance endpoint <url>` once it answers. Not a command of the product: the profile
 * is a test harness over the gate's internals and ships in no package or image.
 *
 * Options: `--host <address>` (default 127.0.0.1), `--port <port>` (0: a free one, the default),
 * `--temporal-address <host:port>` (default `TEMPORAL_ADDRESS`; unset: an in-memory dev server).
 * Exit codes: 2 usage or configuration, 1 could not start.
 */
import { parseArgs } from 'node:util';
import { exitOnSignals } from '@countersign/http/server-lifecycle';
import { ConfigError, ConfigSchema } from '../../src/config.js';
import { ensureTemporalBinaries } from '../../src/temporal/binaries.js';
import { startConformanceProfile } from './profile.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    'temporal-address': { type: 'string' },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write('conformance server: --port must be 0-65535\n');
  process.exit(2);
}
const parsed = ConfigSchema.pick({ TEMPORAL_ADDRESS: true, LOG_LEVEL: true }).safeParse(process.env);
if (!parsed.success) {
  process.stderr.write(`${new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).message}\n`);
  process.exit(2);
}
const temporalAddress = values['temporal-address'] ?? parsed.data.TEMPORAL_ADDRESS;
let profile;
try {
  if (!temporalAddress) ensureTemporalBinaries();
  profile = await startConformanceProfile({
    host: values.host,
    port,
    ...(temporalAddress ? { temporalAddress } : {}),
    ...(parsed.data.LOG_LEVEL ? { logLevel: parsed.data.LOG_LEVEL } : {}),
  });
} catch (err) {
  process.stderr.write(`conformance server: could not start: ${(err as Error).message}\n`);
  process.exit(1);
}
process.stdout.write(`conformance endpoint ${profile.url}\n`);
const running = profile;
exitOnSignals(() => running.stop());
