#!/usr/bin/env node
// The `countersign-conformance` command (package.json `bin`): runs the compiled command line
// (`dist/cli.js`). In a checkout with `--conditions=countersign-source` (docs/TESTING.md §Sources
// and builds) the package's exports resolve to `src/cli.ts` instead, run through tsx.
const entry = import.meta.resolve('@countersign/conformance/cli');
if (entry.endsWith('.ts')) (await import('tsx/esm/api')).register();
const { conformanceMain } = await import(entry);
process.exitCode = await conformanceMain(process.argv.slice(2));
