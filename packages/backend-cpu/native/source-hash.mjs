// The native kernels' build description and source hash, shared by build.mjs and the stale-object test: the hash
// covers every file of native/src and the compiler flags, so a changed kernel or flag makes the committed object stale.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

/** Per platform: the library file, the flags of every unit, and the link line. */
export const NATIVE_TARGETS = {
  "linux-x64": {
    library: "libpoot_cpu.so",
    // No FMA contraction and no fast-math: each product and sum is rounded as written (decision 0951).
    common: [
      "-O3",
      "-fPIC",
      "-std=c11",
      "-Wall",
      "-Wextra",
      "-Werror",
      "-ffp-contract=off",
      "-fno-fast-math",
      "-fno-plt",
      "-ffile-prefix-map=/=/",
      "-g0",
    ],
    units: [
      { name: "entry", source: "entry.c", flags: ["-march=x86-64"] },
      { name: "gemv_avx2", source: "gemv.c", flags: ["-march=x86-64", "-mavx2", "-mf16c", "-mno-fma"] },
      {
        name: "gemv_avx512",
        source: "gemv.c",
        flags: ["-march=x86-64", "-mavx2", "-mf16c", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mno-fma"],
      },
    ],
    link: ["-shared", "-s", "-static-libgcc", "-Wl,--build-id=none", "-Wl,-z,noexecstack"],
  },
};

/** sha256 (hex) of native/src's files (sorted by name) and the build description. */
export function sourceHash(nativeDir) {
  const h = createHash("sha256");
  const src = join(nativeDir, "src");
  for (const f of readdirSync(src).sort())
    h.update(`${f}\0`)
      .update(readFileSync(join(src, f)))
      .update("\0");
  h.update(JSON.stringify(NATIVE_TARGETS));
  return h.digest("hex");
}
