#!/usr/bin/env node
// The `countersign` command (package.json `bin`): runs the compiled command line `dist/src/cli.js`
// (`npm run build`, which `npm ci` runs through `prepare`). In a checkout with
// `--conditions=countersign-source` (`npm run dev`, the tests: docs/TESTING.md §Sources and builds)
// the package's exports resolve to the TypeScript `src/cli.ts` instead, run through tsx.
const entry = import.meta.resolve('countersign/cli');
if (entry.endsWith('.ts')) (await import('tsx/esm/api')).register();
await import(entry);
