import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run test:fast`: the tiers that need no dev server, browser or other SDK — unit tests (the
// gate's and each package's) and the workflow tests on the time-skipping test server (test/workflow,
// and test/testing for `countersign/testing`). Same pool and timeouts as `npm test`
// (vitest.config.ts); its global setup installs only the Temporal binaries.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/unit/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'test/workflow/**/*.test.ts', 'test/testing/**/*.test.ts'],
    exclude: ['**/node_modules/**'],
    globalSetup: ['test/support/temporal-setup.ts'],
  },
});
