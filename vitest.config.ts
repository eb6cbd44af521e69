import { defineConfig } from 'vitest/config';

// pool 'forks': the Temporal core bridge is native and segfaults under worker threads (docs/TESTING.md).
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // the real-server cluster tests run with npm run test:cluster (vitest.cluster.config.ts)
    exclude: ['**/node_modules/**', 'test/cluster/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
