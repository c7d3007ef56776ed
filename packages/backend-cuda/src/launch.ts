// Kernel launches: a parameter block in native memory (one 8-byte cell per argument) with the array of
// pointers cuLaunchKernel reads, prepared once and updated in place, then launched with little host work.

import { CudaError } from "./errors.js";
import { check, native, type DriverApi, type Handle } from "./ffi.js";
import type { CudaFunction } from "./module.js";
import type { CudaStream } from "./stream.js";

/** One kernel argument: a device pointer (`.u64` param) or a 4-byte scalar. */
export type KernelArg =
  | { readonly kind: "ptr"; readonly value: bigint }
  | { readonly kind: "u32" | "i32" | "f32"; readonly value: number };

/** Grid or block dimensions. */
export type Dim3 = readonly [number, number, number];

/** Writes one argument into its 8-byte cell. */
function writeArg(cells: DataView, i: number, a: KernelArg): void {
  const at = i * 8;
  switch (a.kind) {
    case "ptr":
      cells.setBigUint64(at, a.value, true);
      return;
    case "u32":
      if (!Number.isInteger(a.value) || a.value < 0 || a.value > 0xffffffff)
        throw new CudaError("bad-argument", `argument ${i}: ${a.value} is not a u32`, { value: a.value });
      cells.setUint32(at, a.value, true);
      return;
    case "i32":
      if (!Number.isInteger(a.value) || a.value < -0x80000000 || a.value > 0x7fffffff)
        throw new CudaError("bad-argument", `argument ${i}: ${a.value} is not an i32`, { value: a.value });
      cells.setInt32(at, a.value, true);
      return;
    case "f32":
      cells.setFloat32(at, a.value, true);
      return;
    default:
      a satisfies never;
  }
}

/**
 * The kernelParams of one launch: argument i lives in an 8-byte cell of a native block; `pointers[i]` holds
 * the cell's address. The driver copies the values at launch (and at capture), so cells may change between
 * launches.
 */
export class LaunchParams {
  private readonly cellsHandle: Handle;
  private readonly pointersHandle: Handle;
  private readonly cells: DataView;
  private live = true;
  /** Number of arguments. */
  readonly count: number;

  constructor(args: readonly KernelArg[]) {
    this.count = args.length;
    this.cellsHandle = native.alloc(8 * args.length);
    this.pointersHandle = native.alloc(8 * args.length);
    this.cells = new DataView(native.view(this.cellsHandle, 8 * Math.max(1, args.length)).buffer);
    const ptrs = new DataView(native.view(this.pointersHandle, 8 * Math.max(1, args.length)).buffer);
    const base = native.address(this.cellsHandle);
    args.forEach((a, i) => {
      ptrs.setBigUint64(i * 8, base + BigInt(i * 8), true);
      writeArg(this.cells, i, a);
    });
  }

  /** Overwrites argument `i` (same launch, new value: e.g. another buffer or a new length). */
  set(i: number, a: KernelArg): void {
    if (!this.live) throw new CudaError("disposed", "launch parameters used after dispose()");
    if (!Number.isInteger(i) || i < 0 || i >= this.count)
      throw new CudaError("bad-argument", `argument index ${i} out of range (${this.count} arguments)`, { value: i });
    writeArg(this.cells, i, a);
  }

  /** @internal The `void **kernelParams` pointer. */
  get handle(): Handle {
    if (!this.live) throw new CudaError("disposed", "launch parameters used after dispose()");
    return this.pointersHandle;
  }

  /** Frees the native block. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    native.free(this.cellsHandle);
    native.free(this.pointersHandle);
  }
}

/** Launches `fn` on `stream` (or, inside a capture, records the launch into the graph). */
export function launchKernel(
  api: DriverApi,
  fn: CudaFunction,
  grid: Dim3,
  block: Dim3,
  params: LaunchParams,
  stream: CudaStream,
  sharedBytes = 0,
): void {
  const r = api.cuLaunchKernel(
    fn.handle,
    grid[0],
    grid[1],
    grid[2],
    block[0],
    block[1],
    block[2],
    sharedBytes,
    stream.handle,
    params.handle,
    null,
  );
  if (r !== 0) check(api, r, "cuLaunchKernel", fn.name);
}
