// Device limits the synthesizers size kernels from (a subset of graph-plan's DeviceCaps), the result type every
// synthesizer returns, and the small sizing helpers they share.

import type { Kernel } from "@poot/kernel-dsl";
import { KernelgenError } from "./errors.js";

/** What a synthesizer needs to know about the device. */
export interface SynthCaps {
  /** Most threads in one workgroup (product of the three axes). */
  readonly maxWorkgroup: number;
  /** Subgroup width when the device has subgroup operations (a power of two), else undefined. */
  readonly subgroupSize?: number;
  /** Workgroup (shared) memory per workgroup, in bytes. */
  readonly sharedBytes: number;
  /** Most workgroups along one grid axis (default 65535). */
  readonly maxGridDim?: number;
  /**
   * Buffers are raw device memory that a kernel may read through a wider element type than the tensor's (16-byte
   * vec4<u32> loads over bf16/f16 weights). Default false; the CUDA backend sets it.
   */
  readonly vectorLoads?: boolean;
  /**
   * The threads of one workgroup run one after another on one core (the Wasm target's work-item loops), and the
   * core has 128-bit SIMD: synthesizers then give each output block to one thread using vector types, with no
   * workgroup memory or barriers (docs/decisions/0451).
   */
  readonly serialThreads?: boolean;
  /**
   * The target lowers kernel-dsl's `load4` (four consecutive buffer elements, widened, as one vec4: a SIMD load;
   * codegen's Wasm target). CPU synthesizers then decode and multiply four weights at once (decision 0951).
   */
  readonly simdLoads?: boolean;
  /**
   * Matrix-unit (tensor core) shapes, as graph-plan's `MatrixShape` (`{ m: 16, n: 8, k: 16, input: "bf16" }` =
   * PTX mma.sync m16n8k16). Absent or empty = none; the tensor-core GEMM is synthesized only when listed.
   */
  readonly matrixShapes?: readonly {
    readonly m: number;
    readonly n: number;
    readonly k: number;
    readonly input: string;
    /** Register layout family: absent = PTX mma.sync, `"mfma"` / `"wmma"` = AMD (see graph-plan's MatrixShape). */
    readonly layout?: string;
  }[];
  /** Streaming multiprocessors / compute units (sizes flash-decode's split). */
  readonly computeUnits?: number;
  /**
   * The backend runs a request kernel's `then` dispatch with its `transient` buffer (adapter/request.ts), so
   * attention may split over the KV length (flash-decode). Default false; the CUDA backend sets it.
   */
  readonly splitAttention?: boolean;
  /**
   * With `then` / `transient` support as for splitAttention: a block GEMV (RoPE / KV-write epilogue) whose blocks
   * would occupy fewer workgroups than `computeUnits` runs as a GEMV over every output into the transient, then the
   * epilogue per block (decision 0807). Default false; the CUDA backend sets it.
   */
  readonly splitBlockGemv?: boolean;
}

/** The caps kernelgen sizes kernels from for the CPU (Wasm SIMD128) target. */
export function cpuSynthCaps(): SynthCaps {
  return { maxWorkgroup: 256, sharedBytes: 1 << 16, maxGridDim: 2 ** 31 - 1, serialThreads: true, simdLoads: true };
}

/** A generated kernel and how to launch it. */
export interface SynthKernel {
  /** The kernel (valid IR; sizes are literals, no specialization constants). */
  readonly kernel: Kernel;
  /** Workgroups along x, y, z. */
  readonly grid: readonly [number, number, number];
  /** Subgroup size the kernel was generated for (launch with it), when it uses subgroups. */
  readonly subgroupSize?: number;
}

/** Largest power of two ≤ min(limit, max(1, nextPow2(want))). */
export function pow2Workgroup(want: number, limit: number): number {
  let wg = 1;
  while (wg * 2 <= limit && wg < want) wg *= 2;
  return wg;
}

/** Most workgroups along grid y and z: the caps' per-axis limit, and never above 65535 (CUDA's y/z limit, WebGPU's default). */
const MAX_GRID_YZ = 65535;

/** Per-axis workgroup limits [x, y, z] of `caps`: x ≤ maxGridDim (default 65535), y and z ≤ min(maxGridDim, 65535). */
export function gridLimits(caps: Pick<SynthCaps, "maxGridDim">): [number, number, number] {
  const x = caps.maxGridDim ?? 65535;
  const yz = Math.min(x, MAX_GRID_YZ);
  return [x, yz, yz];
}

/**
 * Splits `workgroups` over grid x (≤ maxGridDim) and y, for kernels that linearize (wid.y · nwg.x + wid.x); the
 * grid may hold up to x·y − workgroups extra workgroups, which such kernels must bounds-check.
 * Throws `exceeds_caps` when even the split needs more than the y limit.
 */
export function grid2d(workgroups: number, caps: Pick<SynthCaps, "maxGridDim">): [number, number, number] {
  const [maxX, maxY] = gridLimits(caps);
  const n = Math.max(1, workgroups);
  if (n <= maxX) return [n, 1, 1];
  const y = Math.ceil(n / maxX);
  if (y > maxY)
    throw new KernelgenError("exceeds_caps", `${n} workgroups exceed the grid limit ${maxX}·${maxY}`, {
      synth: "grid2d",
      param: "workgroups",
      value: n,
    });
  return [Math.ceil(n / y), y, 1];
}

/** Throws `exceeds_caps` naming `synth` unless every axis of `grid` is an integer within the caps' per-axis limits. */
export function checkGrid(
  synth: string,
  grid: readonly [number, number, number],
  caps: Pick<SynthCaps, "maxGridDim">,
): void {
  const lim = gridLimits(caps);
  grid.forEach((g, i) => {
    if (!Number.isInteger(g) || g < 0 || g > lim[i]!) {
      throw new KernelgenError(
        "exceeds_caps",
        `grid [${grid.join(", ")}]: axis ${"xyz"[i]} must be an integer in [0, ${lim[i]}]`,
        { synth, param: "grid", value: grid },
      );
    }
  });
}

/** Throws `bad_shape` unless every dim is a positive integer. */
export function checkShape(synth: string, param: string, shape: readonly number[]): void {
  if (!shape.every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", `shape [${shape.join(", ")}] must have positive integer dims`, {
      synth,
      param,
      value: shape,
    });
}

/** Throws `bad_param` unless caps are sane. */
export function checkCaps(synth: string, caps: SynthCaps): void {
  if (!Number.isInteger(caps.maxWorkgroup) || caps.maxWorkgroup < 1)
    throw new KernelgenError("bad_param", `maxWorkgroup ${caps.maxWorkgroup}`, {
      synth,
      param: "caps.maxWorkgroup",
      value: caps.maxWorkgroup,
    });
  const sg = caps.subgroupSize;
  if (sg !== undefined && (!Number.isInteger(sg) || sg < 1 || (sg & (sg - 1)) !== 0))
    throw new KernelgenError("bad_param", `subgroupSize ${sg} is not a power of two`, {
      synth,
      param: "caps.subgroupSize",
      value: sg,
    });
}

/** Product of dims. */
export function numelOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
