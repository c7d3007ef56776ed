// The native kernels as the executor sees them, platform-neutral: what a platform offers (node: the prebuilt object
// through koffi; browsers: nothing) and the description `caps.device` and `poot bench` print (decision 0952).

import type { KernelFn } from "../thread/core.js";
import type { NativeRef } from "../thread/native.js";

/** A loaded native kernel library. */
export interface NativeLibrary {
  /** Absolute path of the shared object. */
  readonly path: string;
  /** Absolute path of koffi's CommonJS entry, for the worker threads. */
  readonly koffi: string;
  /** The kernel set this CPU runs: "avx512" or "avx2" (x86-64), "neon" (arm64). */
  readonly isa: string;
  /** The sha256 of the kernels' LLVM IR and build arguments the object was built from (decision 2300). */
  readonly sourceHash: string;
  /**
   * Whether the library has the 8-bit integer dot-product kernels of `fast` numerics (decision 2320), which run on
   * every CPU that runs the library: AVX-512 VNNI code where the CPU has it, else their AVX2 fallback (decision 2335).
   */
  readonly fast: boolean;
  /** Whether this CPU has AVX-512 VNNI, so the `fast` kernels run as `vpdpbusd` (decision 2320). */
  readonly vnni: boolean;
  /** The kernels the object defines, by symbol: what the CPU lowering may route to it. */
  readonly kernels: ReadonlySet<string>;
  /** Byte address of a view's first byte (the shared memory's base). */
  address(view: Uint8Array): number;
  /**
   * Tests: runs the "avx2" or "avx512" kernel set from now on, process-wide; false when this CPU cannot.
   */
  force(isa: "avx2" | "avx512"): boolean;
  /** The host thread's function for a kernel (workers build theirs with the same `nativeKernels`). */
  hostKernel(ref: NativeRef): KernelFn;
}

/**
 * How a platform loads its native kernels (the GEMVs kernelgen synthesizes from the kernel IR and codegen's x86 target
 * compiles, decisions 2300 and 2310): null where none ship or the CPU cannot run them.
 */
export type NativeLoader = () => NativeLibrary | null;

/**
 * The CPU's numerics (decision 2320): `exact`, f32 products of decoded weights (matching the float64 references to
 * 1e-5); `fast`, packed Q8_0 / Q4_K / Q6_K GEMVs (kernelgen's `FAST_FORMATS`, decisions 2320 and 2335) that quantize each
 * activation row to 8-bit blocks (llama.cpp's Q8_0 / Q8_K) and take integer dot products, the block scales applied in
 * f32: llama.cpp's CPU arithmetic.
 */
export type CpuNumerics = "exact" | "fast";
