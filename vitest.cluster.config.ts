import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:cluster`: the tests against a real Temporal server built from source (mutual TLS;
// PostgreSQL), which scripts/install-temporal-server.mjs installs first. Same pool and timeouts as
// `npm test` (vitest.config.ts), only these files.
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['test/cluster/**/*.test.ts'], exclude: [] },
});
