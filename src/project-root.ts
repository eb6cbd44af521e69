/**
 * The repository root, for defaults that live in the checkout (`.data`, `policies`, `.tools`).
 * Its own module so both `src/config.ts` and `src/temporal/binaries.ts` use it without importing
 * each other in a cycle.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Absolute path of the repository root (one level above `src/`). */
export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
