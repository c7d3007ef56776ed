// Builds the native kernel libraries generated from the kernel IR (decisions 2300, 2310) for linux-x64 and linux-arm64:
// `pnpm --filter @poot/backend-cpu build:native`. Generates their LLVM IR (library.mjs) and compiles it with opt, llc
// and ld.lld (LLVM 19); users never run it (the objects are committed), and test/native-library.test.ts regenerates
// them.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { NATIVE_ASSEMBLE, NATIVE_LIBRARIES, nativeLibraryIR } from "./library.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
for (const [platform, file] of Object.entries(NATIVE_LIBRARIES)) {
  const { ir, hash } = nativeLibraryIR(platform);
  const r = await NATIVE_ASSEMBLE[platform](ir);
  if (r.status !== "ok") {
    console.error(`build:native ${platform}: ${r.tool}: ${r.status === "invalid" ? r.message : r.reason}`);
    process.exit(1);
  }
  const dir = join(here, "prebuilt", platform);
  mkdirSync(dir, { recursive: true });
  const out = join(dir, file);
  writeFileSync(out, r.artifact, { mode: 0o755 });
  console.log(`built ${out} (${r.artifact.length} bytes, kernels ${hash}) with ${r.tool}`);
}
