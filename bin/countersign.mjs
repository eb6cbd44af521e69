#!/usr/bin/env node
// The `countersign` command (package.json `bin`): registers tsx's loader in this process and runs
// the TypeScript command line `src/cli.ts` with the same arguments, so `npx countersign …` works
// from a checkout without a build step.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli.ts', import.meta.url).href);
