// Builds the native kernel library generated from the kernel IR for linux-x64 (decisions 2300, 2310): `pnpm --filter
// @poot/backend-cpu build:native`. Generates its LLVM IR (library.mjs) and compiles it with opt, llc and ld.lld
// (LLVM 19); users never run it (the object is committed), and test/native-library.test.ts regenerates it.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assembleX86 } from "@poot/codegen";
import { NATIVE_LIBRARIES, nativeLibraryIR } from "./library.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { ir, hash } = nativeLibraryIR();
const r = await assembleX86(ir);
if (r.status !== "ok") {
  console.error(`build:native: ${r.tool}: ${r.status === "invalid" ? r.message : r.reason}`);
  process.exit(1);
}
const dir = join(here, "prebuilt", "linux-x64");
mkdirSync(dir, { recursive: true });
const out = join(dir, NATIVE_LIBRARIES["linux-x64"]);
writeFileSync(out, r.artifact, { mode: 0o755 });
console.log(`built ${out} (${r.artifact.length} bytes, kernels ${hash}) with ${r.tool}`);
