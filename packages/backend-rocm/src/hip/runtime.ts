// The HIP runtime as this backend uses it: one device, code objects loaded with hipModuleLoadData, launches
// through hipModuleLaunchKernel with a kernarg buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER), device memory and
// copies, streams, and stream capture into HIP graphs. Nothing here has run on an AMD GPU yet (see README).

import koffi from "koffi";
import { RocmError } from "../errors.js";
import { baseArch, findGcnArchName } from "./arch.js";
import { bindHip, check, DEVICE_PROPS_FNS, type Handle, type HipApi } from "./ffi.js";
import { loadHipLibrary, type HipLibraryOptions } from "./library.js";

/** Options of {@link HipRuntime.open}. */
export interface HipRuntimeOptions extends HipLibraryOptions {
  /** Device ordinal (default 0). */
  readonly device?: number;
}

// The `extra` markers of hipModuleLaunchKernel (hip_runtime_api.h: HIP_LAUNCH_PARAM_*).
const PARAM_BUFFER_POINTER = 1n,
  PARAM_BUFFER_SIZE = 2n,
  PARAM_END = 3n;
// hipStreamCaptureModeGlobal.
const CAPTURE_GLOBAL = 0;

/** An opened HIP runtime bound to one device. */
export class HipRuntime {
  private constructor(
    /** The bound API. */
    readonly api: HipApi,
    /** The library path that loaded. */
    readonly libraryPath: string,
    /** Device ordinal. */
    readonly device: number,
    /** The device's `gcnArchName`, e.g. `gfx942:sramecc+:xnack-`. */
    readonly gcnArchName: string,
  ) {}

  /**
   * Loads libamdhip64, initializes HIP and selects the device. Throws `no_runtime` (no library), `no_device`
   * (hipInit failed or no GPU) or `hip_call`.
   */
  static open(options: HipRuntimeOptions = {}): HipRuntime {
    const { lib, path } = loadHipLibrary(options);
    const api = bindHip(lib);
    check(api, "hipInit", api.hipInit(0), "no_device");
    const count = [0];
    check(api, "hipGetDeviceCount", api.hipGetDeviceCount(count), "no_device");
    const device = options.device ?? 0;
    if ((count[0] ?? 0) <= device)
      throw new RocmError(
        "no_device",
        `no AMD GPU ${device}: the HIP runtime (${path}) reports ${count[0] ?? 0} devices`,
      );
    check(api, "hipSetDevice", api.hipSetDevice(device));
    return new HipRuntime(api, path, device, readArch(lib, api, device));
  }

  /** The device's architecture without feature suffixes, e.g. `gfx942`. */
  get arch(): string {
    return baseArch(this.gcnArchName);
  }

  /** Loads a code object; returns the module handle. */
  loadModule(codeObject: Uint8Array): Handle {
    const out: Handle[] = [null];
    check(this.api, "hipModuleLoadData", this.api.hipModuleLoadData(out, codeObject));
    return out[0];
  }

  /** Unloads a module. */
  unloadModule(module: Handle): void {
    check(this.api, "hipModuleUnload", this.api.hipModuleUnload(module));
  }

  /** The kernel `name` of `module`. */
  getFunction(module: Handle, name: string): Handle {
    const out: Handle[] = [null];
    check(this.api, `hipModuleGetFunction(${name})`, this.api.hipModuleGetFunction(out, module, name));
    return out[0];
  }

  /** Launches `fn` on `stream` (null: the default stream) with a packed kernarg segment. */
  launch(
    fn: Handle,
    grid: readonly number[],
    block: readonly number[],
    kernargs: Uint8Array,
    stream: Handle = null,
    sharedBytes = 0,
  ): void {
    // HIP copies the kernargs when it enqueues the launch, so the native block is freed right after the call.
    // One native block: the size_t that HIP_LAUNCH_PARAM_BUFFER_SIZE points at, then the segment (8-aligned).
    const buf = koffi.alloc("uint8_t", 8 + Math.max(8, kernargs.length));
    try {
      const block8 = new Uint8Array(koffi.view(buf, 8 + kernargs.length));
      new DataView(block8.buffer, block8.byteOffset).setBigUint64(0, BigInt(kernargs.length), true);
      block8.set(kernargs, 8);
      const at = koffi.address(buf);
      const extra = new BigUint64Array([PARAM_BUFFER_POINTER, at + 8n, PARAM_BUFFER_SIZE, at, PARAM_END]);
      const r = this.api.hipModuleLaunchKernel(
        fn,
        grid[0],
        grid[1],
        grid[2],
        block[0],
        block[1],
        block[2],
        sharedBytes,
        stream,
        null,
        extra,
      );
      check(this.api, "hipModuleLaunchKernel", r);
    } finally {
      koffi.free(buf);
    }
  }

  /** Allocates `bytes` of device memory; returns its address. */
  malloc(bytes: number): bigint {
    const out = [0n];
    check(this.api, "hipMalloc", this.api.hipMalloc(out, bytes));
    return BigInt(out[0] as bigint | number);
  }

  /** Frees device memory. */
  free(ptr: bigint): void {
    check(this.api, "hipFree", this.api.hipFree(ptr));
  }

  /** Copies host bytes to device memory. */
  copyToDevice(dst: bigint, src: Uint8Array): void {
    check(this.api, "hipMemcpyHtoD", this.api.hipMemcpyHtoD(dst, src, src.byteLength));
  }

  /** Copies device memory into host bytes. */
  copyToHost(dst: Uint8Array, src: bigint): void {
    check(this.api, "hipMemcpyDtoH", this.api.hipMemcpyDtoH(dst, src, dst.byteLength));
  }

  /** Queues a device-to-device copy of `bytes` on `stream`. */
  copyOnDevice(dst: bigint, src: bigint, bytes: number, stream: Handle = null): void {
    check(this.api, "hipMemcpyDtoDAsync", this.api.hipMemcpyDtoDAsync(dst, src, bytes, stream));
  }

  /** Queues a copy from pinned host memory (see {@link hostAlloc}) to the device on `stream` (captured into graphs). */
  copyFromHostAsync(dst: bigint, src: Handle, bytes: number, stream: Handle = null): void {
    check(this.api, "hipMemcpyHtoDAsync", this.api.hipMemcpyHtoDAsync(dst, src, bytes, stream));
  }

  /** Queues filling `bytes` of device memory with `value` on `stream`. */
  fill(dst: bigint, value: number, bytes: number, stream: Handle = null): void {
    check(this.api, "hipMemsetD8Async", this.api.hipMemsetD8Async(dst, value, bytes, stream));
  }

  /** Device memory free and total, in bytes (hipMemGetInfo). */
  memoryInfo(): { readonly free: number; readonly total: number } {
    const free = [0],
      total = [0];
    check(this.api, "hipMemGetInfo", this.api.hipMemGetInfo(free, total));
    return { free: Number(free[0]), total: Number(total[0]) };
  }

  /** Pinned host memory of `bytes` (hipHostMalloc), with a byte view of it; free with {@link hostFree}. */
  hostAlloc(bytes: number): { readonly ptr: Handle; readonly view: Uint8Array } {
    const out: Handle[] = [null];
    check(this.api, "hipHostMalloc", this.api.hipHostMalloc(out, bytes, 0));
    return { ptr: out[0], view: new Uint8Array(koffi.view(out[0], bytes)) };
  }

  /** Frees pinned host memory. */
  hostFree(ptr: Handle): void {
    check(this.api, "hipHostFree", this.api.hipHostFree(ptr));
  }

  /** A new stream. */
  createStream(): Handle {
    const out: Handle[] = [null];
    check(this.api, "hipStreamCreate", this.api.hipStreamCreate(out));
    return out[0];
  }

  /** Destroys a stream. */
  destroyStream(stream: Handle): void {
    check(this.api, "hipStreamDestroy", this.api.hipStreamDestroy(stream));
  }

  /** Waits for a stream's work. */
  synchronize(stream: Handle = null): void {
    check(this.api, "hipStreamSynchronize", this.api.hipStreamSynchronize(stream));
  }

  /**
   * Records what `record` enqueues on `stream` into a HIP graph (stream capture) and instantiates it; replay it
   * with {@link replay}, free it with {@link destroyGraph}.
   */
  capture(stream: Handle, record: () => void): { graph: Handle; exec: Handle } {
    check(this.api, "hipStreamBeginCapture", this.api.hipStreamBeginCapture(stream, CAPTURE_GLOBAL));
    let failure: unknown;
    try {
      record();
    } catch (err) {
      failure = err;
    }
    const g: Handle[] = [null];
    const end = this.api.hipStreamEndCapture(stream, g);
    if (failure !== undefined) throw failure;
    check(this.api, "hipStreamEndCapture", end);
    const e: Handle[] = [null];
    check(this.api, "hipGraphInstantiate", this.api.hipGraphInstantiate(e, g[0], null, null, 0));
    return { graph: g[0], exec: e[0] };
  }

  /** Launches an instantiated graph on `stream`. */
  replay(graph: { exec: Handle }, stream: Handle = null): void {
    check(this.api, "hipGraphLaunch", this.api.hipGraphLaunch(graph.exec, stream));
  }

  /** Frees a captured graph. */
  destroyGraph(graph: { graph: Handle; exec: Handle }): void {
    check(this.api, "hipGraphExecDestroy", this.api.hipGraphExecDestroy(graph.exec));
    check(this.api, "hipGraphDestroy", this.api.hipGraphDestroy(graph.graph));
  }
}

/** Reads the device's gcnArchName from hipDeviceProp_t through whichever entry point the library exports. */
function readArch(lib: ReturnType<typeof koffi.load>, api: HipApi, device: number): string {
  // Larger than any hipDeviceProp_t layout so far (ROCm 6's is about 1.5 KB).
  const props = new Uint8Array(8192);
  for (const name of DEVICE_PROPS_FNS) {
    let fn: ((p: Uint8Array, d: number) => number) | undefined;
    try {
      fn = lib.func(`int ${name}(_Inout_ uint8_t *props, int device)`) as (p: Uint8Array, d: number) => number;
    } catch {
      continue;
    }
    check(api, name, fn(props, device));
    const arch = findGcnArchName(props);
    if (arch !== undefined) return arch;
  }
  throw new RocmError("no_device", `device ${device}: hipGetDeviceProperties gave no gcnArchName`);
}
