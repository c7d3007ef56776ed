// Plan data: what each equation of the optimized graph becomes on the device. A KernelRequest is the
// data a synthesizer turns into a kernel; imported kernels are named with their u32 launch metadata.

import type { DType, Params, Shape, SlotKind, ValueId } from "@poot/graph-ir";
import type { Region } from "../region.js";

/** Kernel kinds a synthesizer must produce. */
export type KernelKind =
  | "elementwise"
  | "reduction-row"
  | "gemv"
  | "gemm"
  | "attention"
  | "dequant-gemv"
  | "dequant-gemm"
  | "movement"
  | "rope"
  | "indexed-matmul";

/** How a kernel reads or writes one bound tensor: a strided window of a buffer. */
export interface Access {
  /** The value bound (its buffer is the root value's). */
  readonly value: ValueId;
  /** The value owning the memory (a view's source, a state for in-place writes). */
  readonly root: ValueId;
  /** Element type. */
  readonly dtype: DType;
  /** Logical shape as the kernel sees it. */
  readonly shape: Shape;
  /** Element strides into the root buffer (0 for broadcast axes). */
  readonly strides: readonly number[];
  /** Element offset into the root buffer. */
  readonly offset: number;
}

/** A data description of the kernel a synthesizer must produce. */
export interface KernelRequest {
  /** Kernel kind. */
  readonly kind: KernelKind;
  /** The op it implements (a composite or primitive name). */
  readonly op: string;
  /** Inputs in op order (literals are inlined in `params`/`region`). */
  readonly inputs: readonly Access[];
  /** The output. */
  readonly output: Access;
  /** The op's params (contraction flags, attention mask, schedule, ...). */
  readonly params: Params;
  /** The fused expression DAG (Fused/FusedRow region, or a contraction's epilogue), or null. */
  readonly region: Region | null;
  /** True when 16-bit storage must be unpacked from u32 words (the device lacks native 16-bit storage). */
  readonly emulated16: boolean;
  /**
   * A horizontal group served by this one dispatch (decision 0402): the member contractions' own requests, this
   * plan's first. `inputs` then lists every member's inputs and the other members' outputs (each value once), so a
   * kernel buffer binds a request input or `output` as usual; the other members' plans have no kernel.
   */
  readonly group?: readonly KernelRequest[];
}

/** Where a plan's kernel comes from. */
export type KernelSource =
  /** Generated from the request by a kernelgen synthesizer. */
  | { readonly provenance: "synthesized"; readonly request: KernelRequest }
  /** A library kernel by name, launched with a u32 metadata buffer. */
  | {
      readonly provenance: "imported";
      readonly name: string;
      readonly metadata: readonly number[];
      readonly request: KernelRequest;
    }
  /** No kernel: a view/alias of another buffer, or a member written by its horizontal group's dispatch. */
  | { readonly provenance: "none"; readonly reason: "view" | "alias" | "grouped" };

/** One launch. */
export interface Dispatch {
  /** Workgroups per grid dimension. */
  readonly grid: readonly [number, number, number];
  /** Threads per workgroup. */
  readonly workgroup: number;
  /** For chunked launches: this chunk's first output element (or row) and its count. */
  readonly chunk?: { readonly start: number; readonly count: number };
}

/** The plan of one equation. */
export interface Plan {
  /** Equation index in the optimized graph. */
  readonly eqn: number;
  /** Op name. */
  readonly op: string;
  /** The value it defines. */
  readonly out: ValueId;
  /** Layer index from the value's name (`layers.N.`), or null outside layers. */
  readonly layer: number | null;
  /**
   * When it runs: every step, or once when weights are bound (its inputs are all weights and compiler
   * constants, e.g. stacking expert weights); bind-time launches are not counted per step.
   */
  readonly phase: "step" | "bind";
  /** The kernel. */
  readonly kernel: KernelSource;
  /** Launches (empty for views and aliases; several when chunked past a grid or binding limit). */
  readonly dispatches: readonly Dispatch[];
}

/** A device buffer of the transient arena. */
export interface BufferAssignment {
  /** The value stored there. */
  readonly value: ValueId;
  /** Byte offset in the arena. */
  readonly offset: number;
  /** Bytes. */
  readonly bytes: number;
  /** First and last plan index the buffer is live. */
  readonly live: readonly [number, number];
}

/** Memory plan: a transient arena reused by liveness, plus persistent buffers. */
export interface BufferPlan {
  /** Transient assignments. */
  readonly transients: readonly BufferAssignment[];
  /** Arena size in bytes (after reuse). */
  readonly arenaBytes: number;
  /** Sum of every transient's bytes without reuse. */
  readonly unsharedBytes: number;
  /** Values served by another buffer (views, in-place state writes) -> the root value. */
  readonly aliases: ReadonlyMap<ValueId, ValueId>;
  /** Bytes of weights (consts and computed tables). */
  readonly constBytes: number;
  /** Bytes of values prepared once at bind time from weights (persistent, outside the arena). */
  readonly preparedBytes: number;
  /** Bytes of persistent state (donated: state_out reuses state_in). */
  readonly stateBytes: number;
}

/** One per-step input slot. */
export interface SlotSpec {
  /** Slot key. */
  readonly key: string;
  /** Slot kind (Token, Pos, ...). */
  readonly slot: SlotKind;
  /** Element type. */
  readonly dtype: DType;
  /** Shape. */
  readonly shape: Shape;
  /** Bytes. */
  readonly bytes: number;
  /** Byte offset in the slot block (stable across steps). */
  readonly offset: number;
}
