// The CUDA context a backend works in: one device, its memory pool, a stream, the PTX module cache, and
// kernel-dsl kernels compiled through codegen's PTX into launchable kernels bound by argument name.

import { lowerPtx, type DeviceCaps, type TargetCode } from "@poot/codegen";
import type { Kernel } from "@poot/kernel-dsl";
import { openCudaDevice, cudaCaps, type CudaDevice, type OpenCudaOptions } from "./device.js";
import { CudaError } from "./errors.js";
import { CudaGraph } from "./graph.js";
import { LaunchParams, launchKernel, type Dim3, type KernelArg } from "./launch.js";
import { MemoryPool, PinnedBuffer, type DeviceBuffer } from "./memory.js";
import { loadPtx, type CudaFunction, type CudaModule, type LoadedModule } from "./module.js";
import { CudaEvent, CudaStream } from "./stream.js";

/** Options of {@link createCudaContext}. */
export interface CudaContextOptions extends OpenCudaOptions {
  /** Folder for cached cubins (see {@link loadPtx}); none = JIT every module, write nothing. */
  readonly cacheDir?: string;
}

/** Buffers and uniforms of one launch, by the kernel's parameter names. */
export interface KernelBindings {
  /** Device buffers by buffer name. */
  readonly buffers: Readonly<Record<string, DeviceBuffer>>;
  /** Uniform values by uniform name. */
  readonly uniforms?: Readonly<Record<string, number>>;
}

/** What a launch needs of a kernel's IR: its name and its uniforms' types (a kernel-dsl Kernel has both). */
export type KernelSignature = Pick<Kernel, "name"> & {
  readonly uniforms: readonly { readonly name: string; readonly type: string }[];
};

/** A kernel-dsl kernel lowered to PTX, loaded and ready to launch. */
export interface CompiledKernel {
  /** The kernel's name and uniform types. */
  readonly kernel: KernelSignature;
  /** Codegen's output (PTX text, entry point, workgroup size, bindings). */
  readonly code: TargetCode;
  /** The loaded entry point. */
  readonly fn: CudaFunction;
  /** How the module was loaded (cache hit, milliseconds). */
  readonly load: LoadedModule;
  /** Launch parameters for these buffers and uniforms (reuse them across launches; dispose when done). */
  bind(bindings: KernelBindings): LaunchParams;
  /** Launches on the context's stream (or `stream`) with the kernel's workgroup size as the block. */
  launch(grid: Dim3, params: LaunchParams, stream?: CudaStream): void;
}

/** One device with its pool, stream and module cache. */
export interface CudaContext {
  /** The device. */
  readonly device: CudaDevice;
  /** Codegen caps of the device. */
  readonly caps: DeviceCaps;
  /** The device memory pool. */
  readonly pool: MemoryPool;
  /** The context's stream (non-blocking). */
  readonly stream: CudaStream;
  /** Lowers `kernel` to PTX (with `specs`), loads it through the cache and binds its entry point. */
  compile(kernel: Kernel, options?: { readonly specs?: Readonly<Record<string, number>> }): CompiledKernel;
  /** Loads PTX already lowered (by the shared lowering) through the cache and binds its entry point. */
  load(code: TargetCode, kernel: KernelSignature): CompiledKernel;
  /** Allocates a device buffer from the pool. */
  allocate(bytes: number): DeviceBuffer;
  /** Allocates a buffer and uploads `data` into it. */
  upload(data: ArrayBufferView): DeviceBuffer;
  /** Pinned host memory (for slot copies captured in graphs). */
  pinned(bytes: number): PinnedBuffer;
  /** A new stream. */
  createStream(): CudaStream;
  /** A new timing event. */
  createEvent(): CudaEvent;
  /** Captures what `record` enqueues on `stream` (default: the context's) into a replayable graph. */
  capture(record: () => void, stream?: CudaStream): CudaGraph;
  /** Waits for the context's stream. */
  synchronize(): void;
  /** Unloads modules, frees the pool's free blocks, destroys the stream and releases the device. */
  dispose(): void;
}

/** The kernelParams of `code` for `bindings`: buffer pointers in binding order, then uniforms in `order`. */
export function kernelArgs(kernel: KernelSignature, code: TargetCode, bindings: KernelBindings): KernelArg[] {
  const args: KernelArg[] = [];
  for (const slot of code.bindings) {
    switch (slot.kind) {
      case "buffer": {
        const b = bindings.buffers[slot.buffer];
        if (b === undefined)
          throw new CudaError("bad-argument", `kernel ${kernel.name} needs buffer "${slot.buffer}"`, {
            kernel: kernel.name,
            value: slot.buffer,
          });
        args.push({ kind: "ptr", value: b.ptr });
        break;
      }
      case "uniforms":
        for (const name of slot.order) {
          const u = kernel.uniforms.find((x) => x.name === name);
          const v = bindings.uniforms?.[name];
          if (u === undefined || v === undefined)
            throw new CudaError("bad-argument", `kernel ${kernel.name} needs uniform "${name}"`, {
              kernel: kernel.name,
              value: name,
            });
          args.push({ kind: u.type as "f32" | "i32" | "u32", value: v });
        }
        break;
      case "packed":
        throw new CudaError(
          "bad-argument",
          `kernel ${kernel.name}: packed buffer bindings are not a PTX calling convention`,
          { kernel: kernel.name },
        );
      default:
        slot satisfies never;
    }
  }
  return args;
}

/** The PTX ISA target codegen lowers for on a device (sm_90 on Hopper, else sm_80). */
export function ptxArch(info: {
  readonly computeCapability: readonly [number, number] | readonly number[];
}): "sm_90" | "sm_80" {
  return info.computeCapability[0]! >= 9 ? "sm_90" : "sm_80";
}

/** Opens the device and creates its pool and stream. Throws CudaError("no-driver") without a CUDA driver. */
export function createCudaContext(options: CudaContextOptions = {}): CudaContext {
  const device = openCudaDevice(options);
  const api = device.api;
  const caps = cudaCaps(device.info);
  const pool = new MemoryPool(api);
  const stream = CudaStream.create(api);
  const modules: CudaModule[] = [];
  const ctx: CudaContext = {
    device,
    caps,
    pool,
    stream,
    compile(kernel, opts = {}) {
      return ctx.load(
        lowerPtx(kernel, caps, { arch: ptxArch(device.info), ...(opts.specs ? { specs: opts.specs } : {}) }),
        kernel,
      );
    },
    load(code, kernel) {
      const load = loadPtx(api, code.text!, {
        arch: device.info.arch,
        driverVersion: device.info.driverVersion,
        name: kernel.name,
        ...(options.cacheDir !== undefined ? { cacheDir: options.cacheDir } : {}),
      });
      modules.push(load.module);
      const fn = load.module.getFunction(code.entryPoint);
      return {
        kernel,
        code,
        fn,
        load,
        bind: (b) => new LaunchParams(kernelArgs(kernel, code, b)),
        launch: (grid, params, s = stream) => launchKernel(api, fn, grid, code.workgroupSize, params, s),
      };
    },
    allocate: (bytes) => pool.allocate(bytes),
    upload(data) {
      const b = pool.allocate(data.byteLength);
      b.upload(data);
      return b;
    },
    pinned: (bytes) => PinnedBuffer.allocate(api, bytes),
    createStream: () => CudaStream.create(api),
    createEvent: () => CudaEvent.create(api),
    capture: (record, s = stream) => CudaGraph.capture(api, s, record),
    synchronize: () => stream.synchronize(),
    dispose() {
      stream.synchronize();
      for (const m of modules) m.dispose();
      pool.trim();
      stream.dispose();
      device.dispose();
    },
  };
  return ctx;
}
