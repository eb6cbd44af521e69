// Scope: bench only (`npm run bench:heap -- --preload-otel-api`, an experiment): a module the
// workflow bundle preloads into the shared V8 context (Temporal's `preloadModules`), so every run
// shares one instance of `@opentelemetry/api` instead of loading its own. Reading the namespace is
// the side effect that keeps webpack from dropping the import (the package is side-effect free).
import * as api from '@opentelemetry/api';

/** Names `@opentelemetry/api` exports (read once, when the shared context boots). */
export const preloadedOtelApiExports = Object.keys(api).length;
