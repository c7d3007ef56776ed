// How a thread of the pool turns a native kernel reference into the function its phase loop calls (decision 0952):
// koffi loads the prebuilt object once per thread. Shared by the host thread and the node workers.

import type { KernelFn } from "./core.js";

/** What the pool sends every thread for one native kernel (structured-cloneable). */
export interface NativeRef {
  /** Marks the load-message entry as native (a Wasm entry carries a WebAssembly.Module). */
  readonly native: true;
  /** Absolute path of the prebuilt shared object. */
  readonly library: string;
  /** Absolute path of koffi's CommonJS entry (a worker resolves nothing itself). */
  readonly koffi: string;
  /** Byte address of the shared memory (it never moves: its maximum is reserved up front). */
  readonly base: number;
  /** Buffer words at the head of the kernel's argument block. */
  readonly nbuf: number;
}

/** The C entry every native GEMV phase calls, as koffi declares it. */
export const NATIVE_GEMV_SIGNATURE =
  "void poot_native_gemv(uint64_t base, uint32_t args, uint32_t group, uint32_t nbuf)";

type Koffi = { load(path: string): { func(signature: string): (...a: number[]) => unknown } };

/**
 * A thread's `nativeKernel(ref)`: the phase loop's function for a native kernel (one call per workgroup of rows; y
 * and z are 0, the thread range is the whole row block). `load` requires koffi by its absolute path.
 */
export function nativeKernels(load: (path: string) => unknown): (ref: NativeRef) => KernelFn {
  const gemv = new Map<string, (...a: number[]) => unknown>();
  return (ref) => {
    let f = gemv.get(ref.library);
    if (f === undefined) {
      f = (load(ref.koffi) as Koffi).load(ref.library).func(NATIVE_GEMV_SIGNATURE);
      gemv.set(ref.library, f);
    }
    const base = ref.base,
      nbuf = ref.nbuf;
    return (args, x) => void f(base, args, x, nbuf);
  };
}
