// The native CPU kernel library, generated (decision 2300): kernelgen's shape-generic GEMVs for every weight format
// and epilogue the CPU backend serves natively, lowered by codegen's x86 target and linked into one LLVM module.
// Shared by build.mjs (which compiles it with opt, llc and ld.lld) and the regeneration test.
import { createHash } from "node:crypto";
import { X86_LLC_ARGS, X86_LLD_ARGS, X86_OPT_ARGS, lowerX86, x86Library } from "@poot/codegen";
import { nativeGemvLibrary } from "@poot/kernelgen";
import { ggmlPackedFormat } from "@poot/models";

/** The packed formats the library serves (with f32, f16 and bf16): every format the CPU's decode GEMVs take. */
export const NATIVE_PACKED = ["Q8_0", "Q4_K", "Q6_K"];

/** The shared object of each platform the library is built for. */
export const NATIVE_LIBRARIES = { "linux-x64": "libpoot_cpu.so" };

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

/** The library's LLVM IR and the sha256 it embeds (of its kernels' IR and the opt/llc/ld.lld arguments). */
export function nativeLibraryIR() {
  const formats = NATIVE_PACKED.map((t) => ggmlPackedFormat(t));
  const codes = nativeGemvLibrary(formats, 8).map((k) => lowerX86(k, CAPS));
  const wide = nativeGemvLibrary(formats, 16).map((k) => lowerX86(k, WIDE_CAPS));
  const h = createHash("sha256");
  for (const c of [...codes, ...wide]) h.update(c.text).update("\0");
  h.update(JSON.stringify([X86_OPT_ARGS, X86_LLC_ARGS, X86_LLD_ARGS]));
  const hash = h.digest("hex");
  return { ir: x86Library(codes, hash, wide), hash };
}
