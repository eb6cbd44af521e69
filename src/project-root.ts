/**
 * The repository root, for defaults that live in the checkout or the installed package (`.data`,
 * `policies`, `.tools`, `scripts/install-temporal.mjs`). Its own module so both `src/config.ts` and
 * `src/temporal/binaries.ts` use it without importing each other in a cycle. Sources run from
 * `src/` (one level below the root), compiled code from `dist/src/` (two levels).
 */
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** Absolute path of the repository (or installed package) root. */
export const PROJECT_ROOT = basename(dirname(here)) === 'dist' ? join(here, '..', '..') : join(here, '..');

/** `.ts` when this process runs the TypeScript sources, `.js` when it runs the compiled `dist/`. */
export const SOURCE_EXTENSION = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
