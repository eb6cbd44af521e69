// Scope: the test-build half of packages/http/src/fault-point.ts. Preloaded only by the fault harness with
// `node --import tsx --import ./test/faults/install-fault-hook.mjs …`; never imported by product
// code. Plain JavaScript because Temporal's workflow threads inherit the preload flags without
// the TypeScript loader.
//
// COUNTERSIGN_FAULT=<point>[@<n>] makes the n-th (default first) hit of that point SIGKILL this
// process: no exit handlers, no flushing, exactly like a crash. The hit is first announced on
// stderr as `countersign-fault-hit <point> <n>` so the harness can tell a planned kill from a bug.
// The point names are FAULT_POINTS in packages/http/src/fault-point.ts; the key is its FAULT_HOOK_KEY.
import { writeSync } from 'node:fs';

const spec = process.env.COUNTERSIGN_FAULT;
if (spec) {
  const [name, nth] = spec.split('@');
  const target = nth ? Number(nth) : 1;
  let hits = 0;
  globalThis[Symbol.for('countersign.fault-hook')] = (point) => {
    if (point !== name) return;
    hits++;
    if (hits !== target) return;
    writeSync(2, `countersign-fault-hit ${point} ${hits}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
