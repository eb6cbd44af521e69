#!/usr/bin/env node
// The `countersign-receipts` command (package.json `bin`): runs the compiled verifier
// (`dist/cli.js`). In a checkout with `--conditions=countersign-source` the package's exports
// resolve to `src/cli.ts` instead, run through tsx (docs/TESTING.md §Sources and builds).
const entry = import.meta.resolve('@countersign/receipts/cli');
if (entry.endsWith('.ts')) (await import('tsx/esm/api')).register();
const { runReceiptsCli } = await import(entry);
process.exitCode = await runReceiptsCli(process.argv.slice(2));
