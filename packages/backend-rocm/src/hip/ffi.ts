// The HIP runtime API functions this backend calls, bound through koffi, and `check()`, which turns a
// hipError_t into a RocmError naming the call and hipGetErrorString's text.

import type koffi from "koffi";
import { RocmError } from "../errors.js";

/** A runtime-side handle (hipModule_t, hipFunction_t, hipStream_t, hipGraph_t, hipGraphExec_t): an opaque pointer. */
export type Handle = unknown;

// hipError_t is an int; device pointers are `void *` (koffi: external pointers), passed back as given.
/** The C prototypes of the HIP functions bound, by name (koffi syntax; `_Out_` arguments are 1-element arrays). */
export const HIP_PROTOTYPES = {
  hipInit: "int hipInit(unsigned int flags)",
  hipGetErrorString: "const char *hipGetErrorString(int error)",
  hipGetDeviceCount: "int hipGetDeviceCount(_Out_ int *count)",
  hipSetDevice: "int hipSetDevice(int device)",
  hipDeviceSynchronize: "int hipDeviceSynchronize()",
  hipModuleLoadData: "int hipModuleLoadData(_Out_ void **module, const void *image)",
  hipModuleUnload: "int hipModuleUnload(void *module)",
  hipModuleGetFunction: "int hipModuleGetFunction(_Out_ void **fn, void *module, const char *name)",
  hipModuleLaunchKernel:
    "int hipModuleLaunchKernel(void *fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, void *stream, void *params, uint64_t *extra)",
  hipMalloc: "int hipMalloc(_Out_ uint64_t *ptr, size_t bytes)",
  hipFree: "int hipFree(uint64_t ptr)",
  hipMemcpyHtoD: "int hipMemcpyHtoD(uint64_t dst, const void *src, size_t bytes)",
  hipMemcpyDtoH: "int hipMemcpyDtoH(void *dst, uint64_t src, size_t bytes)",
  hipMemcpyHtoDAsync: "int hipMemcpyHtoDAsync(uint64_t dst, void *src, size_t bytes, void *stream)",
  hipMemcpyDtoDAsync: "int hipMemcpyDtoDAsync(uint64_t dst, uint64_t src, size_t bytes, void *stream)",
  hipMemsetD8Async: "int hipMemsetD8Async(uint64_t dst, uint8_t value, size_t count, void *stream)",
  hipMemGetInfo: "int hipMemGetInfo(_Out_ size_t *free, _Out_ size_t *total)",
  hipHostMalloc: "int hipHostMalloc(_Out_ void **ptr, size_t bytes, unsigned int flags)",
  hipHostFree: "int hipHostFree(void *ptr)",
  hipStreamCreate: "int hipStreamCreate(_Out_ void **stream)",
  hipStreamDestroy: "int hipStreamDestroy(void *stream)",
  hipStreamSynchronize: "int hipStreamSynchronize(void *stream)",
  hipStreamBeginCapture: "int hipStreamBeginCapture(void *stream, int mode)",
  hipStreamEndCapture: "int hipStreamEndCapture(void *stream, _Out_ void **graph)",
  hipGraphInstantiate:
    "int hipGraphInstantiate(_Out_ void **exec, void *graph, void *errorNode, void *log, size_t logSize)",
  hipGraphLaunch: "int hipGraphLaunch(void *exec, void *stream)",
  hipGraphExecDestroy: "int hipGraphExecDestroy(void *exec)",
  hipGraphDestroy: "int hipGraphDestroy(void *graph)",
} as const;

/** HIP function names this backend binds. */
export type HipFn = keyof typeof HIP_PROTOTYPES;

/** The bound runtime: one callable per prototype. */
export type HipApi = { readonly [K in Exclude<HipFn, "hipGetErrorString">]: (...args: unknown[]) => number } & {
  readonly hipGetErrorString: (error: number) => string;
};

/**
 * Device-properties entry points, newest first: ROCm 6 renamed the struct's ABI (`hipGetDevicePropertiesR0600`)
 * and kept the old name for the ROCm 5 layout. Only `gcnArchName` is read (see runtime.ts).
 */
export const DEVICE_PROPS_FNS = ["hipGetDevicePropertiesR0600", "hipGetDeviceProperties"] as const;

/** Binds every prototype of {@link HIP_PROTOTYPES} in `lib`. */
export function bindHip(lib: ReturnType<typeof koffi.load>): HipApi {
  const api: Record<string, unknown> = {};
  for (const [name, proto] of Object.entries(HIP_PROTOTYPES)) api[name] = lib.func(proto);
  return api as HipApi;
}

/** Throws `hip_call` (or `code` when given) when `result` is not hipSuccess (0). */
export function check(api: HipApi, call: string, result: number, code: "hip_call" | "no_device" = "hip_call"): void {
  if (result === 0) return;
  let text = "";
  try {
    text = api.hipGetErrorString(result);
  } catch {
    // The error text is a courtesy; the number is enough.
  }
  throw new RocmError(code, `${call} failed: hipError ${result}${text ? ` (${text})` : ""}`, { call, result });
}
