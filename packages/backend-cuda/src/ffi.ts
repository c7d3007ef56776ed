// The CUDA driver API (libcuda.so.1) through koffi: the prototypes this backend calls, bound once, and
// `check()`, which turns a CUresult into a CudaError naming the call and the result (cuGetErrorName).

import koffi from "koffi";
import { CudaError } from "./errors.js";

/** A driver-side handle (CUcontext, CUmodule, CUfunction, CUstream, CUevent, CUgraph, ...): an opaque pointer. */
export type Handle = unknown;

// CUresult is an int; CUdeviceptr a 64-bit integer; every handle an opaque `void *`.
/** The C prototypes of the driver API functions the backend binds, by name (koffi syntax). */
export const PROTOTYPES = {
  cuInit: "int cuInit(unsigned int flags)",
  cuDriverGetVersion: "int cuDriverGetVersion(_Out_ int *version)",
  cuGetErrorName: "int cuGetErrorName(int error, _Out_ const char **name)",
  cuGetErrorString: "int cuGetErrorString(int error, _Out_ const char **text)",
  cuDeviceGetCount: "int cuDeviceGetCount(_Out_ int *count)",
  cuDeviceGet: "int cuDeviceGet(_Out_ int *device, int ordinal)",
  cuDeviceGetName: "int cuDeviceGetName(void *name, int len, int device)",
  cuDeviceGetAttribute: "int cuDeviceGetAttribute(_Out_ int *value, int attribute, int device)",
  cuDeviceTotalMem: "int cuDeviceTotalMem_v2(_Out_ size_t *bytes, int device)",
  cuDevicePrimaryCtxRetain: "int cuDevicePrimaryCtxRetain(_Out_ void **ctx, int device)",
  cuDevicePrimaryCtxRelease: "int cuDevicePrimaryCtxRelease_v2(int device)",
  cuCtxSetCurrent: "int cuCtxSetCurrent(void *ctx)",
  cuCtxSynchronize: "int cuCtxSynchronize()",
  cuMemGetInfo: "int cuMemGetInfo_v2(_Out_ size_t *free, _Out_ size_t *total)",
  cuMemAlloc: "int cuMemAlloc_v2(_Out_ uint64_t *dptr, size_t bytes)",
  cuMemFree: "int cuMemFree_v2(uint64_t dptr)",
  cuMemAllocHost: "int cuMemAllocHost_v2(_Out_ void **pp, size_t bytes)",
  cuMemFreeHost: "int cuMemFreeHost(void *p)",
  cuMemcpyHtoD: "int cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes)",
  cuMemcpyDtoH: "int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes)",
  cuMemcpyDtoD: "int cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t bytes)",
  cuMemcpyHtoDAsync: "int cuMemcpyHtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void *stream)",
  cuMemcpyDtoDAsync: "int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void *stream)",
  cuMemcpyDtoHAsync: "int cuMemcpyDtoHAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void *stream)",
  cuMemsetD8Async: "int cuMemsetD8Async(uint64_t dst, uint8_t value, size_t count, void *stream)",
  cuStreamCreate: "int cuStreamCreate(_Out_ void **stream, unsigned int flags)",
  cuStreamDestroy: "int cuStreamDestroy_v2(void *stream)",
  cuStreamSynchronize: "int cuStreamSynchronize(void *stream)",
  cuEventCreate: "int cuEventCreate(_Out_ void **event, unsigned int flags)",
  cuEventRecord: "int cuEventRecord(void *event, void *stream)",
  cuEventSynchronize: "int cuEventSynchronize(void *event)",
  cuEventElapsedTime: "int cuEventElapsedTime(_Out_ float *ms, void *start, void *end)",
  cuEventDestroy: "int cuEventDestroy_v2(void *event)",
  cuModuleLoadDataEx:
    "int cuModuleLoadDataEx(_Out_ void **module, const void *image, unsigned int n, void *options, void *values)",
  cuModuleLoadData: "int cuModuleLoadData(_Out_ void **module, const void *image)",
  cuModuleGetFunction: "int cuModuleGetFunction(_Out_ void **fn, void *module, const char *name)",
  cuModuleUnload: "int cuModuleUnload(void *module)",
  cuFuncGetAttribute: "int cuFuncGetAttribute(_Out_ int *value, int attribute, void *fn)",
  cuLinkCreate: "int cuLinkCreate_v2(unsigned int n, void *options, void *values, _Out_ void **state)",
  cuLinkAddData:
    "int cuLinkAddData_v2(void *state, int type, const void *data, size_t bytes, const char *name, unsigned int n, void *options, void *values)",
  cuLinkComplete: "int cuLinkComplete(void *state, _Out_ void **cubin, _Out_ size_t *bytes)",
  cuLinkDestroy: "int cuLinkDestroy(void *state)",
  cuLaunchKernel:
    "int cuLaunchKernel(void *fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, void *stream, void *params, void *extra)",
  cuStreamBeginCapture: "int cuStreamBeginCapture_v2(void *stream, int mode)",
  cuStreamEndCapture: "int cuStreamEndCapture(void *stream, _Out_ void **graph)",
  cuGraphInstantiateWithFlags: "int cuGraphInstantiateWithFlags(_Out_ void **exec, void *graph, uint64_t flags)",
  cuGraphGetNodes: "int cuGraphGetNodes(void *graph, void *nodes, _Inout_ size_t *count)",
  cuGraphLaunch: "int cuGraphLaunch(void *exec, void *stream)",
  cuGraphExecDestroy: "int cuGraphExecDestroy(void *exec)",
  cuGraphDestroy: "int cuGraphDestroy(void *graph)",
} as const;

/** Driver function names this backend binds. */
export type DriverFn = keyof typeof PROTOTYPES;

/** The bound driver: one callable per prototype (koffi converts arguments; `_Out_` arguments are 1-element arrays). */
export type DriverApi = { readonly [K in DriverFn]: (...args: unknown[]) => number };

/** The default library name (the driver installs `libcuda.so.1` on Linux). */
export const DEFAULT_CUDA_LIBRARY = "libcuda.so.1";

const loaded = new Map<string, DriverApi>();

/**
 * Loads libcuda and binds every prototype (once per path). Throws `CudaError("no-driver")` when the library
 * cannot be loaded, which is how callers (and tests) learn that this machine has no NVIDIA driver.
 */
export function loadDriver(libraryPath: string = DEFAULT_CUDA_LIBRARY): DriverApi {
  const hit = loaded.get(libraryPath);
  if (hit !== undefined) return hit;
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(libraryPath);
  } catch (e) {
    throw new CudaError(
      "no-driver",
      `no CUDA driver on this machine: cannot load ${libraryPath} (${(e as Error).message})`,
      { value: libraryPath },
    );
  }
  const api: Record<string, unknown> = {};
  for (const [name, proto] of Object.entries(PROTOTYPES)) api[name] = lib.func(proto);
  const bound = api as DriverApi;
  loaded.set(libraryPath, bound);
  return bound;
}

/** The CUresult name (`CUDA_ERROR_INVALID_VALUE`), or `CUresult <n>` when the driver does not know it. */
export function resultName(api: DriverApi, result: number): string {
  const out: (string | null)[] = [null];
  return api.cuGetErrorName(result, out) === 0 && out[0] ? out[0] : `CUresult ${result}`;
}

/** Throws a CudaError("driver-call") naming `call` and the CUresult unless `result` is CUDA_SUCCESS. */
export function check(api: DriverApi, result: number, call: DriverFn | string, kernel?: string): void {
  if (result === 0) return;
  const name = resultName(api, result);
  const text: (string | null)[] = [null];
  const detail = api.cuGetErrorString(result, text) === 0 && text[0] ? `: ${text[0]}` : "";
  throw new CudaError("driver-call", `${call} failed with ${name}${detail}${kernel ? ` (kernel ${kernel})` : ""}`, {
    call,
    result,
    resultName: name,
    ...(kernel !== undefined ? { kernel } : {}),
  });
}

/** A device pointer as a bigint (koffi returns 64-bit integers as number or bigint depending on size). */
export function devicePointer(v: unknown): bigint {
  if (typeof v === "bigint") return v;
  if (typeof v === "number") return BigInt(v);
  throw new Error(`backend-cuda invariant violated: device pointer of type ${typeof v}`);
}

/** Native (malloc'ed, stable-address) memory: parameter arrays, JIT option tables, log buffers. */
export const native = {
  /** `bytes` bytes of native memory (freed with {@link native.free}). */
  alloc: (bytes: number): Handle => koffi.alloc("uint8_t", Math.max(8, bytes)),
  /** Frees native memory from {@link native.alloc}. */
  free: (p: Handle): void => koffi.free(p),
  /** The address of native memory or of a driver pointer. */
  address: (p: Handle): bigint => koffi.address(p),
  /** A byte view over `bytes` bytes at `p` (no copy). */
  view: (p: Handle, bytes: number): Uint8Array => new Uint8Array(koffi.view(p, bytes)),
};
