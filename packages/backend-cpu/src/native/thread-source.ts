// How a thread of the pool turns a native kernel reference into the function its phase loop calls, as source text
// shared by the host thread and the node workers (decision 0952): koffi loads the prebuilt object once per thread.

/** What the pool sends every thread for one native kernel (structured-cloneable). */
export interface NativeRef {
  /** Marks the load-message entry as native (a Wasm entry carries a WebAssembly.Module). */
  readonly native: true;
  /** Absolute path of the prebuilt shared object. */
  readonly library: string;
  /** Absolute path of koffi's CommonJS entry (workers start from source text and resolve nothing themselves). */
  readonly koffi: string;
  /** Byte address of the shared memory (it never moves: its maximum is reserved up front). */
  readonly base: number;
  /** Buffer words at the head of the kernel's argument block. */
  readonly nbuf: number;
}

/** The C entry every native GEMV phase calls, as koffi declares it. */
export const NATIVE_GEMV_SIGNATURE =
  "void poot_native_gemv(uint64_t base, uint32_t args, uint32_t group, uint32_t nbuf)";

/**
 * Defines `nativeKernel(ref)`: the phase loop's `fn(args, x, y, z, t0, t1)` for a native kernel (one call per
 * workgroup of rows; y and z are 0, the thread range is the whole row block). Needs `require` in scope.
 */
export const NATIVE_THREAD_SOURCE = String.raw`
const nativeGemv = new Map();
function nativeKernel(ref) {
  let f = nativeGemv.get(ref.library);
  if (f === undefined) {
    f = require(ref.koffi).load(ref.library).func(${JSON.stringify(NATIVE_GEMV_SIGNATURE)});
    nativeGemv.set(ref.library, f);
  }
  const base = ref.base, nbuf = ref.nbuf;
  return (args, x) => f(base, args, x, nbuf);
}
`;
