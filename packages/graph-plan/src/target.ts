// Targets: a backend kind paired with its device capabilities as plain data. Every planning decision
// reads these numbers; nothing branches on the backend's name. Executors measure caps at run time.

import { isPacked, stridesOf, type DType, type Params } from "@poot/graph-ir";
import { PlanError } from "./errors.js";
import type { KernelRequest } from "./plan/types.js";
import { swigluGate, type Region } from "./region.js";

/** Backend kinds poot compiles for. */
export type BackendKind = "cpu" | "wgpu" | "vulkan" | "cuda" | "rocm" | "aie";

/** All backend kinds, in a stable order. */
export const BACKEND_KINDS: readonly BackendKind[] = ["cpu", "wgpu", "vulkan", "cuda", "rocm", "aie"];

/** A matrix-unit (tensor core) shape: D[m,n] += A[m,k] x B[k,n] with inputs of `input` and an f32 accumulator. */
export interface MatrixShape {
  /** Rows of A and D. */
  readonly m: number;
  /** Columns of B and D. */
  readonly n: number;
  /** Contraction depth. */
  readonly k: number;
  /** Input element type. */
  readonly input: "f16" | "bf16";
  /**
   * Whose register layout the unit's fragments follow, for units kernels issue directly: absent = NVIDIA
   * `mma.sync` (or a unit no kernel issues yet, like Vulkan's cooperative matrices); `"mfma"` = AMD CDNA MFMA
   * (wave64: gfx90a, gfx942); `"wmma"` = AMD RDNA3 WMMA (wave32: gfx1100). Decision 2401.
   */
  readonly layout?: "mfma" | "wmma";
}

/** Storage dtypes a device can load and store natively (compute is always f32). */
export interface DTypeSupport {
  /** 16-bit IEEE half loads/stores. */
  readonly f16: boolean;
  /** bfloat16 loads/stores (when false, kernels unpack bf16 pairs from u32 words). */
  readonly bf16: boolean;
}

/** Capabilities of a GPU-like device (and of the CPU executor's host schedule). */
export interface DeviceCaps {
  /** Most threads in one workgroup (block). */
  readonly maxWorkgroupSize: number;
  /** Per-dimension workgroup size limits [x, y, z]. */
  readonly maxWorkgroupDims: readonly [number, number, number];
  /** Per-dimension grid limits in workgroups [x, y, z]. */
  readonly maxGrid: readonly [number, number, number];
  /** Workgroup-shared memory in bytes. */
  readonly sharedBytes: number;
  /** Subgroup (warp / wavefront / SIMD) width. */
  readonly subgroupSize: number;
  /** Most storage buffers one kernel may bind (inputs + outputs). */
  readonly maxStorageBuffers: number;
  /** Largest byte range one storage binding may cover. */
  readonly maxBindingBytes: number;
  /** Required alignment of a binding's byte offset. */
  readonly bindingAlignment: number;
  /** Native 16-bit storage support. */
  readonly dtypes: DTypeSupport;
  /** Matrix-unit shapes (empty when the device has none). */
  readonly matrixShapes: readonly MatrixShape[];
  /** Compute units (SMs, CUs, cores): how many workgroups run at once, used for split-K decisions. */
  readonly computeUnits: number;
  /**
   * Weight formats (a storage dtype or packed format name: `"f16"`, `"q8_0"`) whose `[N, K]ᵀ` contractions run on
   * kernels that take no epilogue but a residual add `acc + r` (r of the accumulator's shape), or two B operands
   * sharing A with an own-element epilogue that runs as a second dispatch over both accumulators (the CPU's prebuilt
   * native GEMVs, decision 2345). Fusion gives such a contraction nothing else. Absent: no such format.
   */
  readonly residualOnlyWeights?: readonly string[];
  /**
   * Those of {@link residualOnlyWeights} whose two-heads kernels apply SwiGLU themselves: a region that is exactly
   * `silu(acc0) · acc1` (graph-plan's `swigluGate`) runs in the GEMV's one dispatch, not a second (decision 2360).
   */
  readonly swigluWeights?: readonly string[];
  /**
   * Elementwise ops (graph-ir names: `"Cos"`, `"Sin"`) the device's fused kernels compute slowly, e.g. the CPU's Wasm
   * calls out of the module for each `sin`/`cos`. Fusion never recomputes a value such an op produces in every region
   * that reads it (the RoPE tables inside each layer's q and k regions, once per element of every head): the value
   * becomes its own region, computed once per step and read by the others (decision 2450). Absent: none.
   */
  readonly costlyOps?: readonly string[];
}

/** Whether op `op` is one of target `t`'s {@link DeviceCaps.costlyOps}: fusion does not recompute it per region. */
export function costlyOp(t: Target, op: string): boolean {
  return t.kind !== "aie" && (t.caps.costlyOps?.includes(op) ?? false);
}

/**
 * Whether a contraction with weight `b` and `params` takes only a residual add or two heads on target `t` (caps
 * `residualOnlyWeights`): a listed format, transposed, whole packed blocks along K.
 */
export function residualOnly(
  t: Target,
  b: { readonly dtype: DType; readonly shape: readonly number[] },
  params: Params,
): boolean {
  const formats = t.kind === "aie" ? undefined : t.caps.residualOnlyWeights;
  if (formats === undefined || params.transposeB !== true) return false;
  const d = b.dtype;
  return isPacked(d)
    ? formats.includes(d.packed.name) && b.shape.at(-1)! % d.packed.blockSize === 0
    : formats.includes(d as string);
}

/**
 * The gate head (0 or 1) when `req` is the two-heads SwiGLU contraction a `swiglu` GEMV computes in one dispatch,
 * else null: two heads over a transposed B accumulated in f32, no group, no inputs beyond A and the two weights, an
 * epilogue that is exactly SwiGLU ({@link swigluGate}) and a dense row-major f32 output. The planner's dispatch count
 * ({@link swigluHeads}) and the CPU lowering's kernel choice both ask this one predicate, so they agree (decision 2360).
 */
export function swigluRequest(req: KernelRequest): 0 | 1 | null {
  const p = req.params;
  const out = req.output;
  if (p.heads !== 2 || p.transposeB !== true || (p.accDtype ?? "f32") !== "f32" || req.group !== undefined) return null;
  if (req.inputs.length !== 3 || out.dtype !== "f32" || out.offset !== 0) return null;
  const dense = stridesOf(out.shape);
  if (out.strides.some((s, d) => s !== dense[d] && out.shape[d] !== 1)) return null;
  const epi = (p.epilogue ?? null) as Region | null;
  return epi === null ? null : swigluGate(epi);
}

/**
 * Whether a two-heads request `req` over weight `b` runs as one dispatch on target `t`: a format of caps
 * `swigluWeights` (and of `residualOnlyWeights`) and a request that {@link swigluRequest} accepts (decision 2360).
 */
export function swigluHeads(
  t: Target,
  b: { readonly dtype: DType; readonly shape: readonly number[] },
  req: KernelRequest,
): boolean {
  const formats = t.kind === "aie" ? undefined : t.caps.swigluWeights;
  if (formats === undefined || !residualOnly(t, b, req.params) || swigluRequest(req) === null) return false;
  return formats.includes(isPacked(b.dtype) ? b.dtype.packed.name : (b.dtype as string));
}

/** Capabilities of an AMD AI Engine array: a grid of VLIW vector tiles with local memories and DMA. */
export interface AieCaps {
  /** Compute tile columns. */
  readonly columns: number;
  /** Compute tile rows per column. */
  readonly rows: number;
  /** Data memory of one compute tile in bytes. */
  readonly tileLocalBytes: number;
  /** Memory-tile (L2) bytes per column. */
  readonly memTileBytes: number;
  /** Vector register width in bits. */
  readonly vectorBits: number;
  /** Most DMA input channels a tile's kernel may stream from (its "bindings"). */
  readonly dmaChannels: number;
  /** Largest host buffer one DMA descriptor may cover. */
  readonly maxBindingBytes: number;
  /** Native 16-bit support. */
  readonly dtypes: DTypeSupport;
  /** Matrix (MAC) shapes of the vector unit. */
  readonly matrixShapes: readonly MatrixShape[];
}

/** A compile target: a GPU-like backend with DeviceCaps, or an AIE array with AieCaps. */
export type Target =
  | { readonly kind: Exclude<BackendKind, "aie">; readonly caps: DeviceCaps }
  | { readonly kind: "aie"; readonly caps: AieCaps };

const TC_16: readonly MatrixShape[] = [
  { m: 16, n: 8, k: 16, input: "f16" },
  { m: 16, n: 8, k: 16, input: "bf16" },
];

const MFMA_16: readonly MatrixShape[] = [
  { m: 16, n: 16, k: 16, input: "f16", layout: "mfma" },
  { m: 16, n: 16, k: 16, input: "bf16", layout: "mfma" },
];

// Offline defaults: what a typical device of each kind reports (or grants when asked) before anything is measured.
const GPU_DEFAULTS: { readonly [K in Exclude<BackendKind, "aie">]: DeviceCaps } = {
  // The CPU executor runs "workgroups" as host tasks over SIMD lanes; L2-sized scratch stands in for shared memory.
  cpu: {
    maxWorkgroupSize: 1024,
    maxWorkgroupDims: [1024, 1024, 64],
    maxGrid: [2 ** 31 - 1, 65535, 65535],
    sharedBytes: 1 << 20,
    subgroupSize: 8,
    maxStorageBuffers: 4096,
    maxBindingBytes: 2 ** 48,
    bindingAlignment: 64,
    dtypes: { f16: true, bf16: true },
    matrixShapes: [],
    computeUnits: 2,
  },
  // WebGPU spec defaults, except what a desktop Dawn adapter grants when the executor requests its limits: the binding
  // size, and 16 storage buffers per stage (lavapipe, CI's device; decision 0402: a q/k/v group binds 11).
  wgpu: {
    maxWorkgroupSize: 256,
    maxWorkgroupDims: [256, 256, 64],
    maxGrid: [65535, 65535, 65535],
    sharedBytes: 16384,
    subgroupSize: 32,
    maxStorageBuffers: 16,
    maxBindingBytes: 2 ** 30,
    bindingAlignment: 256,
    dtypes: { f16: true, bf16: false },
    matrixShapes: [],
    computeUnits: 32,
  },
  vulkan: {
    maxWorkgroupSize: 1024,
    maxWorkgroupDims: [1024, 1024, 64],
    maxGrid: [2 ** 31 - 1, 65535, 65535],
    sharedBytes: 49152,
    subgroupSize: 32,
    maxStorageBuffers: 1024,
    maxBindingBytes: 2 ** 32 - 1,
    bindingAlignment: 64,
    dtypes: { f16: true, bf16: false },
    matrixShapes: [{ m: 16, n: 16, k: 16, input: "f16" }],
    computeUnits: 64,
  },
  // An H100/H200-class part: 227 KiB opt-in shared memory, 132 SMs, mma.sync m16n8k16.
  cuda: {
    maxWorkgroupSize: 1024,
    maxWorkgroupDims: [1024, 1024, 64],
    maxGrid: [2 ** 31 - 1, 65535, 65535],
    sharedBytes: 232448,
    subgroupSize: 32,
    maxStorageBuffers: 512,
    maxBindingBytes: 2 ** 48,
    bindingAlignment: 16,
    dtypes: { f16: true, bf16: true },
    matrixShapes: TC_16,
    computeUnits: 132,
  },
  // An MI300-class part (gfx942): wave64, 64 KiB LDS, MFMA 16x16x16.
  rocm: {
    maxWorkgroupSize: 1024,
    maxWorkgroupDims: [1024, 1024, 1024],
    maxGrid: [2 ** 31 - 1, 65535, 65535],
    sharedBytes: 65536,
    subgroupSize: 64,
    maxStorageBuffers: 512,
    maxBindingBytes: 2 ** 48,
    bindingAlignment: 16,
    dtypes: { f16: true, bf16: true },
    matrixShapes: MFMA_16,
    computeUnits: 304,
  },
};

/**
 * The caps of the AMD GPUs the ROCm backend builds code objects for, by base `gcnArchName` (decision 2401): what
 * differs from the rocm defaults (an MI300X, gfx942). CDNA parts (gfx90a: MI200; gfx942: MI300) run wave64 with MFMA;
 * RDNA3 (gfx1100: Radeon RX 7900) runs wave32 with WMMA. A device measures its own caps at run time; these are what
 * the code objects are planned for before one is opened.
 */
export const ROCM_ARCHS: { readonly [arch: string]: Partial<DeviceCaps> } = {
  gfx90a: { subgroupSize: 64, sharedBytes: 65536, matrixShapes: MFMA_16, computeUnits: 110 },
  gfx942: { subgroupSize: 64, sharedBytes: 65536, matrixShapes: MFMA_16, computeUnits: 304 },
  gfx1100: {
    subgroupSize: 32,
    sharedBytes: 65536,
    matrixShapes: [
      { m: 16, n: 16, k: 16, input: "f16", layout: "wmma" },
      { m: 16, n: 16, k: 16, input: "bf16", layout: "wmma" },
    ],
    computeUnits: 96,
  },
};

// An XDNA2-class array: 8 columns x 4 compute rows, 64 KiB per tile, 512 KiB memory tile per column.
const AIE_DEFAULT: AieCaps = {
  columns: 8,
  rows: 4,
  tileLocalBytes: 65536,
  memTileBytes: 524288,
  vectorBits: 512,
  dmaChannels: 2,
  maxBindingBytes: 2 ** 32 - 1,
  dtypes: { f16: false, bf16: true },
  matrixShapes: [{ m: 4, n: 8, k: 8, input: "bf16" }],
};

/** The offline default target of a backend kind (overridable field by field). */
export function defaultTarget(kind: BackendKind, overrides: Partial<DeviceCaps> & Partial<AieCaps> = {}): Target {
  if (kind === "aie") return makeTarget({ kind, caps: { ...AIE_DEFAULT, ...pick(overrides, AIE_DEFAULT) } });
  if (!Object.hasOwn(GPU_DEFAULTS, kind))
    throw new PlanError("bad-target", `unknown backend kind ${JSON.stringify(kind)}`, { key: "kind" });
  const base = GPU_DEFAULTS[kind];
  return makeTarget({ kind, caps: { ...base, ...pick(overrides, base) } });
}

function pick<T extends object>(o: object, like: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (Object.hasOwn(like, k)) out[k] = v;
  return out as Partial<T>;
}

/** Validates a target: every limit a positive integer, the kind known. Returns it unchanged. */
export function makeTarget(t: Target): Target {
  if (!BACKEND_KINDS.includes(t.kind))
    throw new PlanError("bad-target", `unknown backend kind ${JSON.stringify(t.kind)}`, { key: "kind" });
  const ints: [string, unknown][] = Object.entries(t.caps).filter(([, v]) => typeof v === "number");
  for (const [k, v] of ints) {
    if (!Number.isSafeInteger(v) || (v as number) <= 0)
      throw new PlanError("bad-target", `caps.${k} must be a positive integer, got ${String(v)}`, { key: k });
  }
  if (t.kind !== "aie") {
    const c = t.caps;
    for (const [name, arr] of [
      ["maxWorkgroupDims", c.maxWorkgroupDims],
      ["maxGrid", c.maxGrid],
    ] as const) {
      if (arr.length !== 3 || arr.some((x) => !Number.isSafeInteger(x) || x <= 0))
        throw new PlanError("bad-target", `caps.${name} must be three positive integers`, { key: name });
    }
    if ((c.subgroupSize & (c.subgroupSize - 1)) !== 0)
      throw new PlanError("bad-target", `caps.subgroupSize ${c.subgroupSize} must be a power of two`, {
        key: "subgroupSize",
      });
  }
  return t;
}

/** The limits the planner reads, in GPU terms; an AIE array maps one compute tile to one workgroup. */
export interface PlanLimits {
  /** Threads (or vector lanes) per workgroup. */
  readonly maxWorkgroupSize: number;
  /** Grid limits. */
  readonly maxGrid: readonly [number, number, number];
  /** Fast local memory per workgroup. */
  readonly sharedBytes: number;
  /** Lanes that reduce together without shared memory. */
  readonly subgroupSize: number;
  /** Bindings per kernel. */
  readonly maxStorageBuffers: number;
  /** Largest binding. */
  readonly maxBindingBytes: number;
  /** Workgroups resident at once. */
  readonly computeUnits: number;
}

/** Planner-facing limits of a target. */
export function planLimits(t: Target): PlanLimits {
  if (t.kind !== "aie") return t.caps;
  const c = t.caps;
  const lanes = c.vectorBits / 32;
  // One AIE tile runs one "workgroup" of f32 vector lanes; its data memory is the shared memory.
  return {
    maxWorkgroupSize: lanes,
    maxGrid: [c.columns * c.rows * 65536, 1, 1],
    sharedBytes: c.tileLocalBytes,
    subgroupSize: lanes,
    maxStorageBuffers: c.dmaChannels * 2 + 1,
    maxBindingBytes: c.maxBindingBytes,
    computeUnits: c.columns * c.rows,
  };
}
