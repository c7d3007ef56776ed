// The elementwise region synthesizer: an expression DAG over inputs broadcast (numpy rules, or explicit strides)
// to one output shape becomes a one-thread-per-element kernel with every output of the region stored at once.

import { kernel } from "@poot/kernel-dsl";
import type { Val } from "@poot/kernel-dsl";
import { checkCaps, checkShape, grid2d, numelOf, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { emitNodes, typeNodes } from "./expr.js";
import type { ExprNode, ExprType } from "./expr.js";
import { checkDType, elemOf, loadAs, storeAs, valueTypeOf } from "./storage.js";
import type { StorageDType } from "./storage.js";
import { broadcastStrides, emitIndex, linearThread } from "./index-math.js";

/** An input of an elementwise region: a leaf of the DAG named `name`. */
export interface ElementwiseInput {
  readonly name: string;
  readonly dtype: StorageDType;
  /** The input's shape, broadcast to the region's shape by numpy rules. */
  readonly shape: readonly number[];
  /** Explicit element strides per output axis (overrides `shape`; 0 = broadcast), e.g. a transposed view. */
  readonly strides?: readonly number[];
  /** Element offset of the view (default 0). */
  readonly offset?: number;
}

/** An output of an elementwise region: node `node` stored as `dtype` (row-major over the region's shape). */
export interface ElementwiseOutput {
  readonly name: string;
  readonly dtype: StorageDType;
  readonly node: number;
}

/**
 * An elementwise region. Leaves are input names, plus `#d` = the output index along axis d (i32, for
 * iota-like values).
 */
export interface ElementwiseRequest {
  readonly name: string;
  readonly shape: readonly number[];
  readonly inputs: readonly ElementwiseInput[];
  readonly nodes: readonly ExprNode[];
  readonly outputs: readonly ElementwiseOutput[];
}

const SYNTH = "elementwise";

/** Generates the region's kernel: one thread per output element; buffers are inputs then outputs, in order. */
export function synthesizeElementwise(req: ElementwiseRequest, caps: SynthCaps): SynthKernel {
  checkCaps(SYNTH, caps);
  checkShape(SYNTH, "shape", req.shape);
  if (req.outputs.length === 0)
    throw new KernelgenError("bad_param", "a region needs at least one output", { synth: SYNTH, param: "outputs" });
  const inputs = new Map(req.inputs.map((inp) => [inp.name, inp]));
  const strides = new Map(
    req.inputs.map((inp) => [inp.name, inp.strides ?? broadcastStrides(SYNTH, inp.name, inp.shape, req.shape)]),
  );
  for (const inp of req.inputs) {
    checkDType(SYNTH, inp.name, inp.dtype);
    if ((strides.get(inp.name) as number[]).length !== req.shape.length)
      throw new KernelgenError("bad_shape", `strides of ${inp.name} must have one entry per output axis`, {
        synth: SYNTH,
        param: inp.name,
      });
  }
  const leafType = (name: string): ExprType | undefined => {
    if (/^#\d+$/.test(name)) return Number(name.slice(1)) < req.shape.length ? "i32" : undefined;
    const inp = inputs.get(name);
    return inp === undefined ? undefined : valueTypeOf(inp.dtype);
  };
  const types = typeNodes(SYNTH, req.nodes, leafType);
  for (const o of req.outputs) {
    checkDType(SYNTH, o.name, o.dtype);
    const t = types[o.node];
    if (t === undefined)
      throw new KernelgenError("bad_param", `output ${o.name} refers to missing node ${o.node}`, {
        synth: SYNTH,
        param: o.name,
      });
    if (t !== valueTypeOf(o.dtype))
      throw new KernelgenError("bad_dtype", `output ${o.name} is ${o.dtype} but node ${o.node} is ${t}`, {
        synth: SYNTH,
        param: o.name,
      });
  }
  const total = numelOf(req.shape);
  const wg = pow2Workgroup(total, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const bufs = new Map(req.inputs.map((inp) => [inp.name, b.buffer(inp.name, elemOf(inp.dtype), "read")]));
    const outs = req.outputs.map((o) => ({ o, buf: b.buffer(o.name, elemOf(o.dtype), "write") }));
    const e = linearThread(b, wg);
    b.if_(e.lt(total), () => {
      const idx = emitIndex(
        b,
        e,
        req.shape,
        [...req.inputs.map((i) => strides.get(i.name) as number[])],
        req.nodes.some((n) => n.op === "leaf" && n.name.startsWith("#")),
      );
      const loaded = new Map<string, Val<ExprType>>();
      const leaf = (name: string): Val<ExprType> => {
        if (name.startsWith("#")) return (idx.axes[Number(name.slice(1))] as Val<"u32">).i32();
        let v = loaded.get(name);
        if (v === undefined) {
          const inp = inputs.get(name) as ElementwiseInput;
          const at = idx.offset(req.inputs.indexOf(inp), inp.offset ?? 0);
          v = loadAs(bufs.get(name)!, inp.dtype, at);
          loaded.set(name, v);
        }
        return v;
      };
      // Load every input up front, in declaration order, so the body's reads are in a fixed order.
      for (const inp of req.inputs) leaf(inp.name);
      const vals = emitNodes(b, req.nodes, types, leaf);
      for (const { o, buf } of outs) storeAs(b, buf, o.dtype, e, vals[o.node] as Val<ExprType>);
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(total / wg), caps) };
}
