// The native CPU kernel library, generated (decisions 2300, 2310, 2320): kernelgen's shape-generic GEMVs for every
// weight format and epilogue the CPU backend serves natively, lowered by codegen's x86 target and linked into one LLVM
// module per platform (linux-x64: AVX2 and AVX-512 sets plus the AVX-512 VNNI `fast` kernels and their AVX2 fallbacks;
// linux-arm64: NEON). Shared by build.mjs (which compiles them with
// opt, llc and ld.lld) and the regeneration test.
import { createHash } from "node:crypto";
import {
  ARM64_LLC_ARGS,
  ARM64_OPT_ARGS,
  X86_LLC_ARGS,
  X86_LLD_ARGS,
  X86_OPT_ARGS,
  arm64Library,
  assembleArm64,
  assembleX86,
  lowerX86,
  x86Library,
} from "@poot/codegen";
import { nativeFastLibrary, nativeGemvLibrary } from "@poot/kernelgen";
import { ggmlPackedFormat } from "@poot/models";

/** The packed formats the library serves (with f32, f16 and bf16): every format the CPU's decode GEMVs take. */
export const NATIVE_PACKED = ["Q8_0", "Q4_K", "Q6_K"];

/** The shared object of each platform the library is built for. */
export const NATIVE_LIBRARIES = { "linux-x64": "libpoot_cpu.so", "linux-arm64": "libpoot_cpu.so" };

/** How each platform's library is compiled and linked (its IR from {@link nativeLibraryIR}). */
export const NATIVE_ASSEMBLE = { "linux-x64": assembleX86, "linux-arm64": assembleArm64 };

/**
 * Caps of the native target: one invocation per workgroup, 16-bit and byte storage loaded at their own width, vectors
 * of 8 lanes (AVX2's 256-bit registers); the AVX-512 set is lowered with 16 (decision 2310).
 */
const CAPS = {
  maxWorkgroup: 256,
  subgroupSize: 1,
  sharedBytes: 0,
  dtypes: ["f32", "f16", "bf16", "u8", "i8", "u32", "i32"],
  maxStorageBuffers: 16,
  f16: false,
  bf16: false,
  vectorLanes: 8,
};
const WIDE_CAPS = { ...CAPS, vectorLanes: 16 };
/** arm64: NEON's 128-bit vectors, 4 lanes. */
const NEON_CAPS = { ...CAPS, vectorLanes: 4 };

/** The library's LLVM IR for `platform` ("linux-x64" or "linux-arm64") and the sha256 it embeds (of its kernels' IR and
 * the opt/llc/ld.lld arguments). */
export function nativeLibraryIR(platform = "linux-x64") {
  const formats = NATIVE_PACKED.map((t) => ggmlPackedFormat(t));
  const lower = (lanes, caps) => nativeGemvLibrary(formats, lanes).map((k) => lowerX86(k, caps));
  const arm = platform === "linux-arm64";
  // x86 also links the `fast` GEMVs and activation quantizers once (AVX-512 VNNI, decision 2320) and, for the kernels
  // with `dot4U8I8`, an AVX2 fallback with it widened (decision 2335); arm64 has none.
  const fastKernels = arm ? [] : nativeFastLibrary(formats);
  const fast = fastKernels.map((k) => lowerX86(k, WIDE_CAPS));
  const fallback = fastKernels
    .map((k) => lowerX86(k, WIDE_CAPS, {}, "widen"))
    .filter((c, i) => c.text !== fast[i].text);
  const sets = arm ? [lower(4, NEON_CAPS)] : [lower(8, CAPS), lower(16, WIDE_CAPS), fast, fallback];
  const h = createHash("sha256");
  for (const c of sets.flat()) h.update(c.text).update("\0");
  h.update(
    JSON.stringify(arm ? [ARM64_OPT_ARGS, ARM64_LLC_ARGS, X86_LLD_ARGS] : [X86_OPT_ARGS, X86_LLC_ARGS, X86_LLD_ARGS]),
  );
  const hash = h.digest("hex");
  return { ir: arm ? arm64Library(sets[0], hash) : x86Library(sets[0], hash, sets[1], sets[2], sets[3]), hash };
}
