// Binds a lowered kernel's argument slots to device buffers once: the bind group, the uniform block, and
// the packed-input buffer (codegen's binding-limit fallback) with the copies that fill it.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { TargetCode } from "@poot/codegen";
import { pad4, type WgpuBuffer } from "./buffers.js";
import type { WgpuContext } from "./context.js";
import { WgpuError } from "./errors.js";
import type { CachedPipeline } from "./pipelines.js";

/** One kernel argument: a window of a device buffer. */
export interface KernelArg {
  /** The buffer. */
  readonly buffer: WgpuBuffer;
  /** Byte offset of the window (a multiple of the device's binding alignment; default 0). */
  readonly offset?: number;
  /** Bytes of the window (default: the rest of the buffer). */
  readonly size?: number;
  /**
   * Whether the contents change between steps (slots, transients, state). Only matters for packed
   * inputs: a changing member is re-copied into the packed buffer every step, a fixed one once.
   */
  readonly changes?: boolean;
}

/** A copy encoded before a dispatch (filling a packed-input buffer). */
export interface PackCopy {
  readonly from: GPUBuffer;
  readonly fromOffset: number;
  readonly to: GPUBuffer;
  readonly toOffset: number;
  readonly bytes: number;
}

/** A kernel with everything bound: what a step encodes, with no further allocation. */
export interface BoundKernel {
  /** Kernel name. */
  readonly kernel: string;
  /** The cached pipeline. */
  readonly pipeline: CachedPipeline;
  /** The bind group (group 0). */
  readonly bindGroup: GPUBindGroup;
  /** Workgroups along x, y, z. */
  readonly grid: readonly [number, number, number];
  /** Copies to encode before every dispatch (packed members that change between steps). */
  readonly copies: readonly PackCopy[];
  /** Frees the buffers made for this binding. */
  dispose(): void;
}

/**
 * What binding needs of a kernel: its name, buffers (access decides the layout) and uniform types. A kernel-dsl
 * `Kernel` is one; a lowered kernel gives one from its WGSL (see `kernelShapeOf`).
 */
export interface KernelShape {
  readonly name: string;
  readonly buffers: readonly { readonly name: string; readonly access: string; readonly atomic?: boolean }[];
  readonly uniforms: readonly { readonly name: string; readonly type: string }[];
}

/** What {@link bindKernel} takes. */
export interface BindRequest {
  /** The kernel (for buffer access and uniform types). */
  readonly kernel: KernelShape;
  /** Its WGSL lowering. */
  readonly code: TargetCode;
  /** Workgroups along x, y, z. */
  readonly grid: readonly [number, number, number];
  /** A device buffer for every kernel buffer, by name. */
  readonly args: Readonly<Record<string, KernelArg>>;
  /** Every uniform of the kernel, by name. */
  readonly uniforms?: Readonly<Record<string, number>>;
  /** Copies to encode before every dispatch besides the packed inputs' (e.g. snapshots of an in-place operand). */
  readonly before?: readonly PackCopy[];
}

/** Throws `bad-binding` unless every grid axis is an integer the device can dispatch. */
export function checkGrid(ctx: WgpuContext, kernel: string, grid: readonly [number, number, number]): void {
  const max = ctx.caps.maxWorkgroupsPerDimension;
  for (const g of grid) {
    if (!Number.isInteger(g) || g < 0 || g > max)
      throw new WgpuError(
        "bad-binding",
        `grid [${grid.join(", ")}] of ${kernel}: each axis must be an integer in [0, ${max}]`,
        { kernel, key: "grid", expected: max, actual: g },
      );
  }
}

function window(ctx: WgpuContext, kernel: string, name: string, a: KernelArg): { offset: number; size: number } {
  const offset = a.offset ?? 0;
  const size = a.size ?? a.buffer.bytes - offset;
  if (offset % ctx.caps.bindingAlignment !== 0)
    throw new WgpuError(
      "bad-binding",
      `${kernel}.${name}: offset ${offset} is not a multiple of ${ctx.caps.bindingAlignment}`,
      { kernel, key: name, expected: ctx.caps.bindingAlignment, actual: offset },
    );
  if (offset < 0 || size <= 0 || offset + size > a.buffer.bytes)
    throw new WgpuError(
      "bad-binding",
      `${kernel}.${name}: window [${offset}, +${size}) outside ${a.buffer.label} (${a.buffer.bytes} bytes)`,
      { kernel, key: name, expected: a.buffer.bytes, actual: offset + size },
    );
  if (size > ctx.caps.maxBindingBytes)
    throw new WgpuError(
      "bad-binding",
      `${kernel}.${name}: ${size} bytes exceed maxStorageBufferBindingSize ${ctx.caps.maxBindingBytes}`,
      { kernel, key: name, expected: ctx.caps.maxBindingBytes, actual: size },
    );
  return { offset, size };
}

/** Compiles (or reuses) the kernel's pipeline and binds its arguments; the result is ready to encode. */
export async function bindKernel(ctx: WgpuContext, req: BindRequest): Promise<BoundKernel> {
  const { kernel, code } = req;
  checkGrid(ctx, kernel.name, req.grid);
  for (const name of Object.keys(req.args)) {
    if (!kernel.buffers.some((b) => b.name === name))
      throw new WgpuError("bad-binding", `kernel ${kernel.name} has no buffer ${name}`, {
        kernel: kernel.name,
        key: name,
      });
  }
  const arg = (name: string): KernelArg => {
    const a = req.args[name];
    if (a === undefined)
      throw new WgpuError("bad-binding", `kernel ${kernel.name} needs buffer ${name}, which was not given`, {
        kernel: kernel.name,
        key: name,
      });
    return a;
  };
  const pipeline = await ctx.pipelines.get(kernel, code);
  const uniformValues = new Map<string, number>(Object.entries(req.uniforms ?? {}));
  const entries: GPUBindGroupEntry[] = [];
  const copies: PackCopy[] = [...(req.before ?? [])];
  const once: PackCopy[] = [];
  const owned: WgpuBuffer[] = [];
  let uniformSlot: { order: readonly string[]; buffer: WgpuBuffer } | null = null;
  for (const slot of code.bindings) {
    if (slot.kind === "buffer") {
      const w = window(ctx, kernel.name, slot.buffer, arg(slot.buffer));
      entries.push({
        binding: slot.slot,
        resource: { buffer: arg(slot.buffer).buffer.gpu, offset: w.offset, size: pad4(w.size) },
      });
    } else if (slot.kind === "packed") {
      // Members sit at 4-byte word offsets in one buffer; their offsets travel as uniforms.
      let at = 0;
      const plan = slot.members.map((m) => {
        const a = arg(m.buffer);
        const w = window(ctx, kernel.name, m.buffer, a);
        uniformValues.set(m.offsetUniform, at / 4);
        const p = { a, w, at };
        at += pad4(w.size);
        return p;
      });
      const packed = await ctx.buffers.create("io", at, `${kernel.name} packed ${slot.slot}`);
      owned.push(packed);
      for (const { a, w, at: to } of plan)
        (a.changes === true ? copies : once).push({
          from: a.buffer.gpu,
          fromOffset: w.offset,
          to: packed.gpu,
          toOffset: to,
          bytes: pad4(w.size),
        });
      entries.push({ binding: slot.slot, resource: { buffer: packed.gpu } });
    } else if (slot.kind === "uniforms") {
      const buffer = await ctx.buffers.create(
        "uniform",
        Math.ceil((slot.order.length * 4) / 16) * 16,
        `${kernel.name} uniforms`,
      );
      owned.push(buffer);
      uniformSlot = { order: slot.order, buffer };
      entries.push({ binding: slot.slot, resource: { buffer: buffer.gpu } });
    } else {
      slot satisfies never;
    }
  }
  const types = new Map(kernel.uniforms.map((u) => [u.name, u.type]));
  if (uniformSlot !== null) {
    const words = new DataView(new ArrayBuffer(uniformSlot.buffer.bytes));
    uniformSlot.order.forEach((name, i) => {
      const v = uniformValues.get(name);
      if (v === undefined)
        throw new WgpuError("bad-binding", `kernel ${kernel.name} needs uniform ${name}, which was not given`, {
          kernel: kernel.name,
          key: name,
        });
      if (types.get(name) === "f32") words.setFloat32(4 * i, v, true);
      else if (types.get(name) === "i32") words.setInt32(4 * i, v, true);
      else words.setUint32(4 * i, v >>> 0, true);
    });
    uniformSlot.buffer.write(words);
  }
  const bindGroup = await ctx.device.scoped(
    `bind ${kernel.name}`,
    () => ctx.device.device.createBindGroup({ label: kernel.name, layout: pipeline.layout, entries }),
    { kernel: kernel.name, hash: pipeline.hash },
  );
  ctx.noteBindGroup();
  if (once.length > 0) {
    const enc = ctx.device.device.createCommandEncoder();
    for (const c of once) enc.copyBufferToBuffer(c.from, c.fromOffset, c.to, c.toOffset, c.bytes);
    ctx.device.device.queue.submit([enc.finish()]);
  }
  return {
    kernel: kernel.name,
    pipeline,
    bindGroup,
    grid: req.grid,
    copies,
    dispose() {
      for (const b of owned) b.destroy();
    },
  };
}
