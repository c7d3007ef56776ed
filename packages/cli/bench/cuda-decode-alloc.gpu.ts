// GPU entry point: test/cuda-decode-alloc.test.ts with vitest replaced by backend-cuda's shim (bundled by
// packages/backend-cuda/tools/gpu-bundle.sh); prints one line per test, exits 1 on a failure.
// Dynamic, so the bundler keeps the test module (the package declares "sideEffects": false).
await import("../test/cuda-decode-alloc.test.js");
import { runRegistered } from "../../backend-cuda/tools/vitest-shim.js";

const results = runRegistered();
for (const r of results) console.log(`${r.status.padEnd(4)} ${r.name}${r.error === undefined ? "" : `\n${r.error}`}`);
process.exit(results.some((r) => r.status === "fail") ? 1 : 0);
