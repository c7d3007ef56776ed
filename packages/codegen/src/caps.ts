// The device capabilities codegen needs, and the one-method lowering contract every target implements.
// `DeviceCaps` is owned conceptually by @poot/graph-plan; this is the minimal structural subset codegen reads.

import type { ElemType, Kernel } from "@poot/kernel-dsl";

/**
 * What a device can do, as data (CONVENTIONS 4). @poot/graph-plan owns the full caps record; codegen
 * may not import it (it depends only on kernel-dsl), so it declares the fields it reads and any richer
 * caps object with these fields satisfies this interface structurally.
 */
export interface DeviceCaps {
  /** Maximum invocations in one workgroup (product of the three sizes). */
  readonly maxWorkgroup: number;
  /** Subgroup (warp/wave) size when subgroup operations are available; `undefined` = none. */
  readonly subgroupSize: number | undefined;
  /** Workgroup (shared) memory available to one workgroup, in bytes. */
  readonly sharedBytes: number;
  /**
   * Storage element types the device loads and stores natively at their own width (e.g. `f16` with
   * 16-bit storage). Types not listed are accessed through 32-bit words.
   */
  readonly dtypes: readonly ElemType[];
  /** Storage buffers one kernel may bind. */
  readonly maxStorageBuffers: number;
  /** Whether f16 arithmetic/storage types exist in the shading language (WGSL `enable f16`). */
  readonly f16: boolean;
  /** Whether the target has native bf16 conversions (e.g. PTX `cvt.rn.bf16x2.f32` on sm_80+). */
  readonly bf16: boolean;
  /**
   * The widest vector (in lanes) the target's registers hold: absent = 4 (vec2/vec4 only). CPU targets with AVX2 report
   * 8 and with AVX-512 16; a kernel with a wider vector type is refused with `missing-capability` (decision 2310).
   */
  readonly vectorLanes?: number;
  /**
   * Warp-scope matrix-unit (tensor core) shapes the target can issue, as graph-plan's `MatrixShape`s
   * (`{ m: 16, n: 8, k: 16, input: "bf16" }` = PTX `mma.sync` m16n8k16; `{ m: 16, n: 16, k: 16, input, layout:
   * "mfma" | "wmma" }` = AMD matrix cores). Absent or empty = none: a kernel with an `mma` statement is then refused
   * with `missing-capability`.
   */
  readonly matrixShapes?: readonly {
    readonly m: number;
    readonly n: number;
    readonly k: number;
    readonly input: string;
    /**
     * Whose register layout the unit has: absent = PTX `mma.sync`; `"mfma"` = AMD CDNA MFMA (wave64), `"wmma"` = AMD
     * RDNA3 WMMA (wave32). Picks the kernel IR's `mma` shape (decision 2401).
     */
    readonly layout?: string;
  }[];
}

/** Targets codegen lowers to. */
export type TargetName = "wgsl" | "ptx" | "spirv" | "amdgpu" | "wasm" | "x86";

/** How the executor binds one kernel argument slot. */
export type BindingSlot =
  /** A kernel buffer bound on its own. */
  | { readonly kind: "buffer"; readonly slot: number; readonly buffer: string }
  /**
   * Several small read-only buffers packed into one (WGSL binding-limit fallback). The executor copies
   * each member into one buffer at a 4-byte-aligned word offset it chooses and writes that offset to
   * the uniform `offsetUniform`.
   */
  | {
      readonly kind: "packed";
      readonly slot: number;
      readonly members: readonly { readonly buffer: string; readonly offsetUniform: string }[];
    }
  /** All scalar uniforms (plus packing offsets) as consecutive 4-byte words, in `order`. */
  | { readonly kind: "uniforms"; readonly slot: number; readonly order: readonly string[] };

/** The product of lowering one kernel for one target. */
export interface TargetCode {
  /** Target that produced it. */
  readonly target: TargetName;
  /** Kernel name. */
  readonly kernel: string;
  /** Entry point / symbol name in the emitted code. */
  readonly entryPoint: string;
  /** File extension for `poot kernels` (`wgsl`, `ptx`, `spv`, `ll`, `wasm`). */
  readonly ext: string;
  /** Emitted text (WGSL, PTX, LLVM IR); absent for binary targets. */
  readonly text?: string;
  /** Emitted binary (SPIR-V, Wasm); absent for text targets. */
  readonly binary?: Uint8Array;
  /** Resolved workgroup size. */
  readonly workgroupSize: readonly [number, number, number];
  /** How arguments are bound, in slot order. */
  readonly bindings: readonly BindingSlot[];
  /** Target-specific calling-convention numbers (the Wasm frame and argument-block sizes). */
  readonly abi?: Readonly<Record<string, number>>;
}

/** Per-call options of a lowering (specialization values). */
export interface LowerOptions {
  /** Values of the kernel's specialization constants; missing ones use their defaults. */
  readonly specs?: Readonly<Record<string, number>>;
}

/** The one-method compile contract (CONVENTIONS 4). */
export interface Target {
  /** Target name. */
  readonly name: TargetName;
  /** Lowers `kernel` for a device with `caps`. Throws {@link CodegenError} for what the target cannot express. */
  lower(kernel: Kernel, caps: DeviceCaps, options?: LowerOptions): TargetCode;
}
