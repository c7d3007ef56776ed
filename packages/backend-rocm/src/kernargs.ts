// Kernel arguments for a HIP launch, packed into one kernarg segment by the code object's own metadata.
// codegen's AMDGPU kernels take one global pointer per buffer (binding order), then each uniform by value
// (declaration order); the compiler appends hidden arguments (block counts, group sizes, ...) whose kinds and
// offsets only the metadata knows. The executor's expected explicit layout is checked against the metadata
// before anything is written, so a kernel compiled with another signature fails loudly instead of reading garbage.

import type { TargetCode } from "@poot/codegen";
import type { UniformParam } from "@poot/kernel-dsl";
import { RocmError } from "./errors.js";
import type { KernelArgMeta, KernelMeta } from "./metadata.js";

/** The explicit parameters of a kernel as the executor binds them. */
export interface KernargSignature {
  /** Kernel name (for messages). */
  readonly name: string;
  /** Number of buffer parameters (each a 64-bit global pointer), in binding order. */
  readonly buffers: number;
  /** Uniforms passed by value, in declaration order. */
  readonly uniforms: readonly UniformParam[];
}

/** Where the executor writes one explicit argument. */
export interface ExpectedArg {
  /** `global_buffer` for a buffer pointer, `by_value` for a uniform. */
  readonly valueKind: "global_buffer" | "by_value";
  /** Byte offset in the kernarg segment. */
  readonly offset: number;
  /** Size in bytes. */
  readonly size: number;
}

/** The signature of a lowered AMDGPU kernel: its buffer bindings and the kernel's uniforms. */
export function signatureOf(code: TargetCode, uniforms: readonly UniformParam[]): KernargSignature {
  const buffers = code.bindings.filter((b) => b.kind === "buffer").length;
  return { name: code.entryPoint, buffers, uniforms };
}

/**
 * The explicit arguments' layout by the AMDGPU HSA calling convention: each argument at the next offset aligned
 * to its natural alignment (pointers 8 bytes, the 32-bit uniforms 4). Computed from the signature alone, so
 * comparing it with the metadata checks one against the other.
 */
export function expectedLayout(sig: KernargSignature): ExpectedArg[] {
  const out: ExpectedArg[] = [];
  let at = 0;
  const put = (valueKind: ExpectedArg["valueKind"], size: number): void => {
    at = Math.ceil(at / size) * size;
    out.push({ valueKind, offset: at, size });
    at += size;
  };
  for (let i = 0; i < sig.buffers; i++) put("global_buffer", 8);
  for (let i = 0; i < sig.uniforms.length; i++) put("by_value", 4);
  return out;
}

const mismatch = (meta: KernelMeta, what: string): RocmError =>
  new RocmError("kernarg_mismatch", `kernel ${meta.name}: ${what}`, { kernel: meta.name });

const describe = (a: { valueKind: string; offset: number; size: number }): string =>
  `${a.valueKind} at ${a.offset} (${a.size} bytes)`;

/**
 * Checks that the metadata's explicit (non-hidden) arguments are exactly `sig`'s expected layout, and that every
 * argument fits the kernarg segment; throws `kernarg_mismatch` naming the first argument that differs.
 */
export function checkLayout(meta: KernelMeta, sig: KernargSignature): void {
  const explicit = meta.args.filter((a) => !a.valueKind.startsWith("hidden_"));
  const want = expectedLayout(sig);
  if (explicit.length !== want.length) {
    throw mismatch(
      meta,
      `the code object has ${explicit.length} explicit arguments, the executor binds ${want.length} (${sig.buffers} buffers, ${sig.uniforms.length} uniforms)`,
    );
  }
  want.forEach((w, i) => {
    const m = explicit[i] as KernelArgMeta;
    if (m.valueKind !== w.valueKind || m.offset !== w.offset || m.size !== w.size) {
      throw mismatch(meta, `argument ${i}: the code object has ${describe(m)}, the executor expects ${describe(w)}`);
    }
  });
  for (const [i, a] of meta.args.entries()) {
    if (a.offset + a.size > meta.kernargSegmentSize)
      throw mismatch(
        meta,
        `argument ${i} (${describe(a)}) ends past the kernarg segment (${meta.kernargSegmentSize} bytes)`,
      );
  }
}

/** Values of one launch's explicit arguments. */
export interface KernargValues {
  /** Device addresses of the buffers, in binding order. */
  readonly buffers: readonly bigint[];
  /** Values of the uniforms, in declaration order (written as the uniform's type). */
  readonly uniforms: readonly number[];
}

/** A launch's dimensions: work-groups per axis and work-items per group. */
export interface LaunchDims {
  /** Work-groups along x, y, z. */
  readonly grid: readonly [number, number, number];
  /** Work-items per work-group along x, y, z. */
  readonly block: readonly [number, number, number];
}

/** A packed kernarg segment. */
export interface PackedKernargs {
  /** The segment (`kernargSegmentSize` bytes); pass it with HIP_LAUNCH_PARAM_BUFFER_POINTER. */
  readonly bytes: Uint8Array;
  /** Offset at which each explicit argument was written, buffers then uniforms. */
  readonly offsets: readonly number[];
  /** Hidden arguments given a value (by kind); every other hidden argument is zero. */
  readonly filled: readonly string[];
}

/**
 * Packs one launch's arguments into the kernel's kernarg segment: buffer addresses and uniforms at the metadata's
 * offsets (after {@link checkLayout}), hidden arguments this packer knows filled from `dims` (block counts, group
 * sizes, zero remainders for whole groups, zero global offsets, grid dimensions), all others left zero.
 */
export function packKernargs(
  meta: KernelMeta,
  sig: KernargSignature,
  values: KernargValues,
  dims: LaunchDims,
): PackedKernargs {
  checkLayout(meta, sig);
  if (values.buffers.length !== sig.buffers || values.uniforms.length !== sig.uniforms.length) {
    throw mismatch(
      meta,
      `given ${values.buffers.length} buffers and ${values.uniforms.length} uniforms, the kernel takes ${sig.buffers} and ${sig.uniforms.length}`,
    );
  }
  const bytes = new Uint8Array(meta.kernargSegmentSize);
  const v = new DataView(bytes.buffer);
  const offsets: number[] = [];
  const filled: string[] = [];
  let buf = 0,
    uni = 0;
  const axis = (k: string): number => "xyz".indexOf(k[k.length - 1] as string);
  for (const a of meta.args) {
    const k = a.valueKind;
    if (k === "global_buffer") {
      v.setBigUint64(a.offset, values.buffers[buf++] as bigint, true);
      offsets.push(a.offset);
    } else if (k === "by_value") {
      const u = sig.uniforms[uni] as UniformParam,
        x = values.uniforms[uni++] as number;
      if (u.type === "f32") v.setFloat32(a.offset, x, true);
      else if (u.type === "i32") v.setInt32(a.offset, x, true);
      else v.setUint32(a.offset, x, true);
      offsets.push(a.offset);
    } else if (/^hidden_block_count_[xyz]$/.test(k) && a.size === 4) {
      v.setUint32(a.offset, dims.grid[axis(k)] as number, true);
      filled.push(k);
    } else if (/^hidden_group_size_[xyz]$/.test(k) && a.size === 2) {
      v.setUint16(a.offset, dims.block[axis(k)] as number, true);
      filled.push(k);
    } else if (k === "hidden_grid_dims" && a.size === 2) {
      v.setUint16(
        a.offset,
        dims.grid[2] > 1 || dims.block[2] > 1 ? 3 : dims.grid[1] > 1 || dims.block[1] > 1 ? 2 : 1,
        true,
      );
      filled.push(k);
    } else if (!k.startsWith("hidden_")) {
      throw mismatch(meta, `argument at ${a.offset} has value kind ${k}, which this executor does not pass`);
    }
    // hidden_remainder_* and hidden_global_offset_* are zero for whole work-groups at offset 0; the rest
    // (hostcall, heap, queue pointers, ...) are the runtime's to fill and are left zero here.
  }
  return { bytes, offsets, filled };
}
