// A CUDA device opened through the driver: cuInit, the device's primary context made current, its
// attributes as data (name, compute capability, SMs, memory) and the codegen caps derived from them.

import type { DeviceCaps } from "@poot/codegen";
import { CudaError } from "./errors.js";
import { check, DEFAULT_CUDA_LIBRARY, loadDriver, type DriverApi, type Handle } from "./ffi.js";

// CUdevice_attribute values (cuda.h).
const ATTR = {
  maxThreadsPerBlock: 1,
  sharedBytesPerBlock: 8,
  warpSize: 10,
  clockKHz: 13,
  multiprocessors: 16,
  memoryClockKHz: 36,
  memoryBusWidth: 37,
  ccMajor: 75,
  ccMinor: 76,
  sharedBytesOptin: 97,
} as const;

/** Options of {@link openCudaDevice}. */
export interface OpenCudaOptions {
  /** Device ordinal (default 0). */
  readonly ordinal?: number;
  /** Path or name of the driver library (default `libcuda.so.1`). */
  readonly libraryPath?: string;
}

/** What the device is, as data. */
export interface CudaDeviceInfo {
  /** Marketing name, e.g. `NVIDIA H200`. */
  readonly name: string;
  /** Device ordinal. */
  readonly ordinal: number;
  /** Compute capability as `[major, minor]`. */
  readonly computeCapability: readonly [number, number];
  /** `sm_XY` for PTX `.target` and cache keys. */
  readonly arch: string;
  /** Driver version as cuDriverGetVersion reports it (e.g. 13000). */
  readonly driverVersion: number;
  /** Streaming multiprocessors. */
  readonly multiprocessors: number;
  /** Global memory in bytes. */
  readonly totalMemoryBytes: number;
  /** Threads per block. */
  readonly maxThreadsPerBlock: number;
  /** Static shared memory per block (bytes). */
  readonly sharedBytesPerBlock: number;
  /** Shared memory per block with opt-in (bytes). */
  readonly sharedBytesOptin: number;
  /** Warp size. */
  readonly warpSize: number;
  /** Memory bus width (bits) and clock (kHz), for the theoretical bandwidth. */
  readonly memoryBusWidthBits: number;
  /** Memory clock in kHz. */
  readonly memoryClockKHz: number;
}

/** An opened device with its primary context current on the calling thread. */
export interface CudaDevice {
  /** The bound driver API. */
  readonly api: DriverApi;
  /** The CUdevice handle (an int). */
  readonly device: number;
  /** The primary context. */
  readonly context: Handle;
  /** Attributes. */
  readonly info: CudaDeviceInfo;
  /** Makes the primary context current again (after another library changed it). */
  makeCurrent(): void;
  /** Waits for all work on the context. */
  synchronize(): void;
  /** Free and total device memory in bytes (cuMemGetInfo). */
  memoryInfo(): { readonly free: number; readonly total: number };
  /** Releases the primary context. */
  dispose(): void;
}

/**
 * Opens a CUDA device: loads the driver, cuInit, retains the primary context and makes it current.
 * Throws `CudaError("no-driver")` without libcuda or without a device.
 */
export function openCudaDevice(options: OpenCudaOptions = {}): CudaDevice {
  const api = loadDriver(options.libraryPath ?? DEFAULT_CUDA_LIBRARY);
  const ordinal = options.ordinal ?? 0;
  const init = api.cuInit(0);
  // CUDA_ERROR_NO_DEVICE (100) and CUDA_ERROR_INSUFFICIENT_DRIVER (35) mean there is nothing to run on.
  if (init === 100 || init === 35)
    throw new CudaError("no-driver", `no CUDA device: cuInit returned ${init}`, { call: "cuInit", result: init });
  check(api, init, "cuInit");
  const count = [0];
  check(api, api.cuDeviceGetCount(count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count[0]!)
    throw new CudaError("no-driver", `no CUDA device ${ordinal} (the driver sees ${count[0]})`, { value: ordinal });
  const dev = [0];
  check(api, api.cuDeviceGet(dev, ordinal), "cuDeviceGet");
  const device = dev[0]!;
  const attr = (a: number): number => {
    const v = [0];
    check(api, api.cuDeviceGetAttribute(v, a, device), "cuDeviceGetAttribute");
    return v[0]!;
  };
  const nameBuf = Buffer.alloc(256);
  check(api, api.cuDeviceGetName(nameBuf, 256, device), "cuDeviceGetName");
  const version = [0];
  check(api, api.cuDriverGetVersion(version), "cuDriverGetVersion");
  const total = [0];
  check(api, api.cuDeviceTotalMem(total, device), "cuDeviceTotalMem_v2");
  const ctx: Handle[] = [null];
  check(api, api.cuDevicePrimaryCtxRetain(ctx, device), "cuDevicePrimaryCtxRetain");
  const context = ctx[0];
  check(api, api.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  const major = attr(ATTR.ccMajor);
  const minor = attr(ATTR.ccMinor);
  const info: CudaDeviceInfo = {
    name: nameBuf.toString("utf8", 0, nameBuf.indexOf(0)),
    ordinal,
    computeCapability: [major, minor],
    arch: `sm_${major}${minor}`,
    driverVersion: version[0]!,
    multiprocessors: attr(ATTR.multiprocessors),
    totalMemoryBytes: Number(total[0]),
    maxThreadsPerBlock: attr(ATTR.maxThreadsPerBlock),
    sharedBytesPerBlock: attr(ATTR.sharedBytesPerBlock),
    sharedBytesOptin: attr(ATTR.sharedBytesOptin),
    warpSize: attr(ATTR.warpSize),
    memoryBusWidthBits: attr(ATTR.memoryBusWidth),
    memoryClockKHz: attr(ATTR.memoryClockKHz),
  };
  let released = false;
  return {
    api,
    device,
    context,
    info,
    makeCurrent: () => check(api, api.cuCtxSetCurrent(context), "cuCtxSetCurrent"),
    synchronize: () => check(api, api.cuCtxSynchronize(), "cuCtxSynchronize"),
    memoryInfo: () => {
      const f = [0];
      const t = [0];
      check(api, api.cuMemGetInfo(f, t), "cuMemGetInfo_v2");
      return { free: Number(f[0]), total: Number(t[0]) };
    },
    dispose: () => {
      if (released) return;
      released = true;
      check(api, api.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease_v2");
    },
  };
}

/** The tensor-core shapes kernels may issue: mma.sync m16n8k16 with bf16/f16 inputs from sm_80 (decision 0805). */
export function cudaMatrixShapes(
  info: Pick<CudaDeviceInfo, "computeCapability">,
): { m: number; n: number; k: number; input: "bf16" | "f16" }[] {
  return info.computeCapability[0] >= 8
    ? [
        { m: 16, n: 8, k: 16, input: "bf16" },
        { m: 16, n: 8, k: 16, input: "f16" },
      ]
    : [];
}

/**
 * The codegen caps of a device (CONVENTIONS 4: capabilities as data). Shared memory is the static
 * 48 KiB per block that PTX `.shared` declarations may use without the opt-in attribute.
 */
export function cudaCaps(info: CudaDeviceInfo): DeviceCaps {
  const bf16 = info.computeCapability[0] >= 8;
  return {
    maxWorkgroup: info.maxThreadsPerBlock,
    subgroupSize: info.warpSize,
    sharedBytes: info.sharedBytesPerBlock,
    maxStorageBuffers: 1024,
    dtypes: ["f32", "i32", "u32", "f16", "bf16", "u8", "i8"],
    f16: true,
    bf16,
    matrixShapes: cudaMatrixShapes(info),
  };
}
