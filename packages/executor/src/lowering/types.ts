// The one lowering's data: a compiled program with every plan's kernel already in the target's language, the
// buffer plan (kinds, sizes, aliases, lifetimes) and the launch list per phase. Plain data, so it can be cached.

import type { DType, ValueId } from "@poot/graph-ir";
import type { BackendKind, CompileOptions, DeviceCaps as PlanCaps } from "@poot/graph-plan";
import type { DeviceCaps as CodegenCaps, TargetCode, TargetName } from "@poot/codegen";
import type { PlanKernel, RequestKernel, SynthCaps } from "@poot/kernelgen";
import type { KernelRequest } from "@poot/graph-plan";
import type { NativeKernels } from "./native.js";
import type { ByteRegion } from "../regions.js";
import type { ProgramSchema } from "../schema.js";

/**
 * What a program is lowered for: the backend kind and its planner caps, the synthesizer's caps, the codegen
 * language and caps. Everything but the hooks is data and goes into the cache key.
 */
export interface LoweringTarget {
  /** graph-plan's backend kind (the AIE plans with its own caps and is not lowered here). */
  readonly kind: Exclude<BackendKind, "aie">;
  /** The codegen language kernels are lowered to. */
  readonly language: TargetName;
  /** graph-plan caps the graph is planned for. */
  readonly plan: PlanCaps;
  /** kernelgen caps kernels are synthesized for. */
  readonly synth: SynthCaps;
  /** codegen caps kernels are lowered with. */
  readonly codegen: CodegenCaps;
  /** Options of the language's `lower` (PTX's `arch`, Wasm's `maxPages`). */
  readonly lowerOptions?: Readonly<Record<string, unknown>>;
  /** graph-plan options every program is compiled with (the device's fusion policy). */
  readonly compile?: CompileOptions;
  /**
   * Fusion policy by step size: graphs of at most `maxStepTokens` tokens a step (the elements of their Token slots)
   * compile with `small` added to `compile`, larger ones with `large` (CUDA: block-GEMV epilogues for decode only).
   */
  readonly bySize?:
    | { readonly maxStepTokens: number; readonly small: CompileOptions; readonly large: CompileOptions }
    | undefined;
  /**
   * Whether a kernel operand that is also its output is read from a copy taken before the launch (devices whose
   * blocks may read what another block already wrote: CUDA, WebGPU).
   */
  readonly snapshotInPlace: boolean;
  /** Names the hooks below (their behaviour is code, so their version goes into the cache key by this string). */
  readonly variant?: string;
  /** A kernel for a request kernelgen declines (bad_param/bad_shape), or null to let the error stand. */
  readonly fallback?: (request: KernelRequest, caps: SynthCaps, name: string) => RequestKernel | null;
  /** Rewrites lowered code (WebGPU's non-finite literal fix). */
  readonly fixup?: (code: TargetCode) => TargetCode;
  /**
   * Prebuilt kernels the device loads by symbol (the CPU's native GEMVs, decisions 0952 and 2345): plans they serve
   * run them instead of kernelgen's kernel (native.ts).
   */
  readonly native?: NativeKernels;
}

/** Where a native plan's launch's buffer comes from: a request input, the output, or the plan's scratch at a byte offset. */
export type RoutedSource =
  | { readonly kind: "input"; readonly index: number }
  | { readonly kind: "output" }
  | { readonly kind: "scratch"; readonly offset: number };

/** One launch of a routed plan: kernel-dsl code (lowered as usual) or code the device loads as it is. */
export interface RoutedLaunch {
  readonly kernel:
    | { readonly dsl: PlanKernel["kernel"] }
    | { readonly code: TargetCode; readonly uniforms: LoweredKernel["uniforms"] };
  readonly grid: readonly [number, number, number];
  readonly uniforms: Readonly<Record<string, number>>;
  /** Buffers by the kernel's buffer names. */
  readonly bindings: readonly { readonly buffer: string; readonly source: RoutedSource }[];
}

/** A plan served by the target's own code: its launches in order and the scratch bytes they share. */
export interface RoutedPlan {
  readonly launches: readonly RoutedLaunch[];
  readonly scratchBytes: number;
}

/** One distinct kernel in the target's code, with the uniform types a launch needs to encode its values. */
export interface LoweredKernel {
  /** The kernel's name (its entry point's stem). */
  readonly name: string;
  /** The lowered code. */
  readonly code: TargetCode;
  /** Uniforms of the kernel with their scalar types (arguments are encoded by these). */
  readonly uniforms: readonly { readonly name: string; readonly type: "f32" | "i32" | "u32" }[];
}

/**
 * What a buffer of the plan holds: a weight (bound from the weight source by key), a slot (written by the host
 * every step), a state (lives in a StateSet), a computed constant (data known at compile time), a prepared value
 * (written once per weight binding by a bind-phase launch), a transient (written and read within a step), or a
 * scratch area a kernel pair shares (flash-decode partials).
 */
export type LoweredBufferKind = "weight" | "slot" | "state" | "computed" | "prepared" | "transient" | "scratch";

/** One buffer of the plan: a root value (or a scratch area, with a negative id). */
export interface LoweredBuffer {
  /** The root value id, or a negative id for a scratch area. */
  readonly id: number;
  readonly kind: LoweredBufferKind;
  /** Storage bytes. */
  readonly bytes: number;
  /** Storage dtype and shape (scratch: f32, [elements]). */
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** Weight, slot or state key. */
  readonly key?: string;
  /** A computed constant's storage bytes. */
  readonly data?: Uint8Array;
  /** Plans that write it first and read it last (transients), for arenas and relocation. */
  readonly live?: readonly [number, number];
  /** A transient's byte offset in the program's arena (graph-plan's lifetime packing; see `arenaBytes`). */
  readonly offset?: number;
}

/** One argument of a launch: a buffer, read from a snapshot copy taken before the launch when `snapshot`. */
export interface LoweredArg {
  readonly buffer: number;
  readonly snapshot?: true;
  /** Bytes into the buffer (a routed plan's scratch; only devices with `Device.slice` run such programs). */
  readonly offset?: number;
}

/** One kernel launch. */
export interface LoweredLaunch {
  /** Index into {@link LoweredProgram.kernels}. */
  readonly kernel: number;
  /** Index of the plan it serves. */
  readonly plan: number;
  /** The plan's op and equation, for messages and profiles. */
  readonly op: string;
  /** The kind of the plan's kernel request (`gemv`, `elementwise`, ...). */
  readonly request: string;
  readonly eqn: number;
  /** `"step"`: every step; `"bind"`: once per weight binding. */
  readonly phase: "step" | "bind";
  readonly grid: readonly [number, number, number];
  readonly uniforms: Readonly<Record<string, number>>;
  /** Buffers by the kernel's buffer names. */
  readonly args: Readonly<Record<string, LoweredArg>>;
}

/** A byte-region copy between two buffers of the plan (a state_out into its State, in row-major order). */
export interface LoweredCopy {
  /** The state key (for state copies). */
  readonly key: string;
  readonly from: number;
  readonly to: number;
  readonly regions: readonly ByteRegion[];
}

/** Where an output lives: its root buffer and the regions that hold it densely. */
export interface LoweredOutput {
  readonly name: string;
  readonly buffer: number;
  readonly regions: readonly ByteRegion[];
}

/** A program lowered for one target: what any {@link Device} needs to run it, and nothing else. */
export interface LoweredProgram {
  /** The content hash of (graph, target, options): the cache key. */
  readonly key: string;
  /** The program's name. */
  readonly name: string;
  /** The target's backend kind and language. */
  readonly kind: BackendKind;
  readonly language: TargetName;
  /** Slots, states, outputs and weights of the source graph. */
  readonly schema: ProgramSchema;
  readonly kernels: readonly LoweredKernel[];
  /** Every buffer the launches, copies and outputs name, by id. */
  readonly buffers: readonly LoweredBuffer[];
  /** Bytes of the arena the transients' offsets address (devices with `Device.slice` place them in one buffer). */
  readonly arenaBytes: number;
  /** Value id -> root value id of views and in-place writes (graph-plan's aliases). */
  readonly aliases: ReadonlyMap<ValueId, ValueId>;
  /** Launches in order (bind-phase ones run once per weight binding, before the first step). */
  readonly launches: readonly LoweredLaunch[];
  /** Copies after the launches of a step: state_outs computed outside their State buffer. */
  readonly stateCopies: readonly LoweredCopy[];
  readonly outputs: readonly LoweredOutput[];
  /** Plans served by a fallback kernel, with kernelgen's reason. */
  readonly fallbacks: readonly string[];
  /** What graph-plan predicted: dispatches per step and per binding (plans' dispatch lists). */
  readonly predicted: { readonly step: number; readonly bind: number };
  /** Milliseconds spent compiling (graph-plan) and lowering (kernelgen + codegen) when it was built. */
  readonly timings: { readonly compileMs: number; readonly lowerMs: number };
}

/** Launches of a phase. */
export function launchesOf(p: LoweredProgram, phase: "step" | "bind"): LoweredLaunch[] {
  return p.launches.filter((l) => l.phase === phase);
}

/** Re-exported for devices. */
export type { ByteRegion };
