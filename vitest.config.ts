import { defaultExternalConditions, defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// The workspace packages run from their TypeScript sources: the `countersign-source` export
// condition (package.json `exports`) resolves `@countersign/*` and `countersign/*` to `src/*.ts`,
// so no test needs a build (docs/TESTING.md §Sources and builds). NODE_OPTIONS carries it into the
// test processes and every Node process they spawn (the CLI, roles, fixtures under tsx).
const SOURCE_CONDITION = '--conditions=countersign-source';
if (!(process.env.NODE_OPTIONS ?? '').includes(SOURCE_CONDITION))
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${SOURCE_CONDITION}`.trim();

const SERVER_CONDITIONS = defaultServerConditions.filter((c) => c !== 'module');

// pool 'forks': the Temporal core bridge is native and segfaults under worker threads (docs/TESTING.md).
export default defineConfig({
  // vitest's own defaults (vite's server conditions without `module`), with the source condition first
  resolve: { conditions: ['countersign-source', ...SERVER_CONDITIONS] },
  ssr: {
    resolve: {
      conditions: ['countersign-source', ...SERVER_CONDITIONS],
      externalConditions: ['countersign-source', ...defaultExternalConditions],
    },
  },
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    // the real-server cluster tests run with npm run test:cluster (vitest.cluster.config.ts)
    exclude: ['**/node_modules/**', 'test/cluster/**'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
