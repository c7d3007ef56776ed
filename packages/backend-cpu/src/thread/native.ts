// How a thread of the pool turns a native kernel reference into the function its phase loop calls (decision 0952):
// koffi loads the prebuilt object once per thread, and each kernel symbol once. Shared by the host and the workers.

import type { KernelFn } from "./core.js";

/** What the pool sends every thread for one native kernel (structured-cloneable). */
export interface NativeRef {
  /** Marks the load-message entry as native (a Wasm entry carries a WebAssembly.Module). */
  readonly native: true;
  /** Absolute path of the prebuilt shared object. */
  readonly library: string;
  /** Absolute path of koffi's CommonJS entry (a worker resolves nothing itself). */
  readonly koffi: string;
  /** The kernel's symbol in the library (codegen's x86 target names it after the kernel, decision 2300). */
  readonly symbol: string;
  /** Byte address of the shared memory (it never moves: its maximum is reserved up front). */
  readonly base: number;
}

/** Every native kernel's C signature (codegen's x86 ABI: memory base, argument block offset, workgroup id). */
export function nativeSignature(symbol: string): string {
  return `void ${symbol}(uint64_t base, uint32_t args, uint32_t group)`;
}

type Koffi = { load(path: string): { func(signature: string): (...a: number[]) => unknown } };

/**
 * A thread's `nativeKernel(ref)`: the phase loop's function for a native kernel (one call per workgroup; y and z are
 * 0, the thread range is the whole workgroup). `load` requires koffi by its absolute path.
 */
export function nativeKernels(load: (path: string) => unknown): (ref: NativeRef) => KernelFn {
  const libs = new Map<string, ReturnType<Koffi["load"]>>();
  const fns = new Map<string, (...a: number[]) => unknown>();
  return (ref) => {
    const key = `${ref.library}\0${ref.symbol}`;
    let f = fns.get(key);
    if (f === undefined) {
      let lib = libs.get(ref.library);
      if (lib === undefined) {
        lib = (load(ref.koffi) as Koffi).load(ref.library);
        libs.set(ref.library, lib);
      }
      f = lib.func(nativeSignature(ref.symbol));
      fns.set(key, f);
    }
    const base = ref.base;
    return (args, x) => void f(base, args, x);
  };
}
