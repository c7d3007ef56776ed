// The movement synthesizer: one generator for every movement op (reshape/copy, slice, broadcast, transpose,
// concat, gather, dynamic slice, dynamic update slice) as strided index math per output element; packed tensors
// move whole rows: as u32 words where a row is whole words, else as bytes assembled into u32 words.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import type { PackedFormat } from "@poot/graph-ir";
import { checkCaps, checkShape, grid2d, numelOf, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { byteOf } from "./decode.js";
import type { ExprType } from "./expr.js";
import { broadcastStrides, clampIndex, contiguousStrides, linearThread } from "./index-math.js";
import { rowGather } from "./row-gather.js";
import { checkDType, elemOf, valueTypeOf } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** A movement op (graph-ir semantics; runtime starts and indices are clamped into range). */
export type MovementOp =
  | { readonly op: "reshape"; readonly shape: readonly number[] }
  | {
      readonly op: "slice";
      readonly start: readonly number[];
      readonly end: readonly number[];
      readonly step?: readonly number[];
    }
  | { readonly op: "broadcast"; readonly shape: readonly number[] }
  | { readonly op: "transpose"; readonly perm: readonly number[] }
  /** Inputs x0..x{n-1} of shapes `shapes` (the request's `shape` is ignored) concatenated along `axis`. */
  | { readonly op: "concat"; readonly axis: number; readonly shapes: readonly (readonly number[])[] }
  /** Rows of x along `axis` at i32 `indices` of shape `indicesShape`. */
  | { readonly op: "gather"; readonly axis: number; readonly indicesShape: readonly number[] }
  /** Window of `sizes` at runtime i32 `starts` (one per axis). */
  | { readonly op: "dynamicSlice"; readonly sizes: readonly number[] }
  /** x with `update` (shape `updateShape`) written at runtime i32 `starts`. */
  | { readonly op: "dynamicUpdateSlice"; readonly updateShape: readonly number[] };

/** A movement request: the input `shape` and storage (a dtype, or a packed format moved as whole rows). */
export interface MovementRequest {
  readonly name: string;
  readonly dtype: StorageDType | { readonly packed: PackedFormat };
  readonly shape: readonly number[];
  readonly op: MovementOp;
}

const SYNTH = "movement";

interface Plan {
  readonly outShape: number[];
  /** Input buffers (names, logical shapes). */
  readonly inputs: { name: string; shape: number[] }[];
  /** Extra i32 buffers (indices / starts). */
  readonly indexBuffers: { name: string; length: number }[];
  /** Emits the value of the output element at `axes` through `read(input, index)`. */
  readonly gen: (
    b: Builder,
    axes: Val<"u32">[],
    read: (input: number, idx: Val<"u32">) => Val<ExprType>,
    idx: Map<string, Arr<"i32">>,
    type: ExprType,
  ) => Val<ExprType>;
}

const bad = (msg: string, value?: unknown): never => {
  throw new KernelgenError("bad_shape", msg, { synth: SYNTH, param: "op", value });
};

function dot(b: Builder, axes: Val<"u32">[], strides: readonly number[], base: Val<"u32"> | number = 0): Val<"u32"> {
  let acc: Val<"u32"> = typeof base === "number" ? b.u32(base) : base;
  strides.forEach((s, d) => {
    if (s !== 0) acc = acc.add(s === 1 ? (axes[d] as Val<"u32">) : (axes[d] as Val<"u32">).mul(s));
  });
  return acc;
}

function plan(shape: readonly number[], op: MovementOp): Plan {
  const r = shape.length;
  const st = contiguousStrides(shape);
  const single = (
    outShape: number[],
    src: (b: Builder, axes: Val<"u32">[], idx: Map<string, Arr<"i32">>) => Val<"u32">,
    indexBuffers: Plan["indexBuffers"] = [],
  ): Plan => ({
    outShape,
    inputs: [{ name: "x", shape: [...shape] }],
    indexBuffers,
    gen: (b, axes, read, idx) => read(0, b.let_(src(b, axes, idx), "src")),
  });
  switch (op.op) {
    case "reshape":
      if (numelOf(op.shape) !== numelOf(shape))
        bad(`reshape [${shape.join(",")}] -> [${op.shape.join(",")}] changes the element count`);
      return single([...op.shape], (b, axes) => dot(b, axes, contiguousStrides(op.shape)));
    case "slice": {
      const step = op.step ?? shape.map(() => 1);
      if (op.start.length !== r || op.end.length !== r || step.length !== r) bad("slice needs start/end/step per axis");
      const out = shape.map((d, a) => {
        const s = op.start[a] as number,
          e = op.end[a] as number,
          p = step[a] as number;
        if (!(s >= 0 && e <= d && s < e && p >= 1)) bad(`slice axis ${a}: ${s}:${e}:${p} of ${d}`);
        return Math.ceil((e - s) / p);
      });
      const base = op.start.reduce((acc, s, a) => acc + s * (st[a] as number), 0);
      return single(out, (b, axes) =>
        dot(
          b,
          axes,
          st.map((s, a) => s * (step[a] as number)),
          base,
        ),
      );
    }
    case "broadcast": {
      const strides = broadcastStrides(SYNTH, "x", shape, op.shape);
      return single([...op.shape], (b, axes) => dot(b, axes, strides));
    }
    case "transpose": {
      if (op.perm.length !== r || [...op.perm].sort((a, b) => a - b).some((p, i) => p !== i))
        bad(`bad permutation [${op.perm.join(",")}]`);
      return single(
        op.perm.map((p) => shape[p] as number),
        (b, axes) =>
          dot(
            b,
            axes,
            op.perm.map((p) => st[p] as number),
          ),
      );
    }
    case "concat": {
      const ax = op.axis < 0 ? op.axis + r : op.axis;
      const shapes = op.shapes.map((s) => [...s]);
      if (
        shapes.length < 1 ||
        shapes.some(
          (s) =>
            s.length !== (shapes[0] as number[]).length ||
            s.some((d, a) => a !== ax && d !== (shapes[0] as number[])[a]),
        )
      )
        bad("concat inputs must agree off the axis");
      const first = shapes[0] as number[];
      const outShape = first.map((d, a) => (a === ax ? shapes.reduce((acc, s) => acc + (s[a] as number), 0) : d));
      return {
        outShape,
        inputs: shapes.map((s, i) => ({ name: `x${i}`, shape: s })),
        indexBuffers: [],
        gen: (b, axes, read, _idx, type) => {
          const v = b.var_(zero(b, type), "v") as Var<ExprType>;
          // Pick the input whose range along the axis holds this element (an if chain, last input in the final else).
          const offsets = shapes.reduce<number[]>(
            (acc, sh) => [...acc, (acc[acc.length - 1] as number) + (sh[ax] as number)],
            [0],
          );
          const body = (i: number): void => {
            const local = axes.map((a, d) => (d === ax ? a.sub(offsets[i] as number) : a));
            v.set(read(i, b.let_(dot(b, local, contiguousStrides(shapes[i] as number[])), "src")) as Val<"f32">);
          };
          const chain = (i: number): void => {
            if (i === shapes.length - 1) return body(i);
            b.if_(
              (axes[ax] as Val<"u32">).lt(offsets[i + 1] as number),
              () => body(i),
              () => chain(i + 1),
            );
          };
          chain(0);
          return v;
        },
      };
    }
    case "gather": {
      const ax = op.axis < 0 ? op.axis + r : op.axis;
      if (ax < 0 || ax >= r) bad(`gather axis ${op.axis}`);
      const q = op.indicesShape.length;
      const outShape = [...shape.slice(0, ax), ...op.indicesShape, ...shape.slice(ax + 1)];
      const idxStrides = contiguousStrides(op.indicesShape);
      return single(
        outShape,
        (b, axes, idx) => {
          const which = dot(b, axes.slice(ax, ax + q), idxStrides);
          const id = clampIndex(b, (idx.get("indices") as Arr<"i32">).at(which), (shape[ax] as number) - 1, "st");
          const pre = dot(b, axes.slice(0, ax), st.slice(0, ax));
          const post = dot(b, axes.slice(ax + q), st.slice(ax + 1));
          return pre.add(post).add(id.mul(st[ax] as number));
        },
        [{ name: "indices", length: numelOf(op.indicesShape) }],
      );
    }
    case "dynamicSlice": {
      if (op.sizes.length !== r || op.sizes.some((s, a) => !(s >= 1 && s <= (shape[a] as number))))
        bad("dynamicSlice sizes must fit the input");
      return single(
        [...op.sizes],
        (b, axes, idx) => {
          const starts = idx.get("starts") as Arr<"i32">;
          const s = shape.map((d, a) => clampIndex(b, starts.at(a), d - (op.sizes[a] as number), "st"));
          return dot(
            b,
            axes.map((x, a) => x.add(s[a] as Val<"u32">)),
            st,
          );
        },
        [{ name: "starts", length: r }],
      );
    }
    case "dynamicUpdateSlice": {
      const u = op.updateShape;
      if (u.length !== r || u.some((s, a) => !(s >= 1 && s <= (shape[a] as number))))
        bad("dynamicUpdateSlice update must fit the input");
      return {
        outShape: [...shape],
        inputs: [
          { name: "x", shape: [...shape] },
          { name: "update", shape: [...u] },
        ],
        indexBuffers: [{ name: "starts", length: r }],
        gen: (b, axes, read, idx, type) => {
          const starts = idx.get("starts") as Arr<"i32">;
          const s = shape.map((d, a) => clampIndex(b, starts.at(a), d - (u[a] as number), "st"));
          let inside: Val<"bool"> = b.bool(true);
          axes.forEach((x, a) => {
            inside = inside.and(x.ge(s[a] as Val<"u32">)).and(x.lt((s[a] as Val<"u32">).add(u[a] as number)));
          });
          const v = b.var_(zero(b, type), "v") as Var<ExprType>;
          b.if_(
            b.let_(inside, "inside"),
            () =>
              v.set(
                read(
                  1,
                  b.let_(
                    dot(
                      b,
                      axes.map((x, a) => x.sub(s[a] as Val<"u32">)),
                      contiguousStrides(u),
                    ),
                    "src",
                  ),
                ) as Val<"f32">,
              ),
            () => v.set(read(0, b.let_(dot(b, axes, st), "src")) as Val<"f32">),
          );
          return v;
        },
      };
    }
    default:
      return op satisfies never;
  }
}

function zero(b: Builder, t: ExprType): Val<ExprType> {
  return t === "f32" ? b.f32(0) : t === "i32" ? b.i32(0) : t === "u32" ? b.u32(0) : b.bool(false);
}

/** Splits a linear index into axes of `shape` (size-1 axes are literal 0). */
function axesOf(b: Builder, e: Val<"u32">, shape: readonly number[]): Val<"u32">[] {
  const axes: Val<"u32">[] = new Array(shape.length);
  let rest = e;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d] as number;
    if (n === 1) axes[d] = b.u32(0);
    else if (d === 0) axes[d] = rest;
    else {
      axes[d] = b.let_(rest.rem(n), `a${d}`);
      rest = b.let_(rest.div(n), `r${d}`);
    }
  }
  return axes;
}

/**
 * Generates the movement kernel. Buffers: the inputs (x, or x0.. for concat; x and update for DUS), then i32
 * `indices`/`starts` when the op has them, then `out`. Packed storage: every tensor is u32 words of whole rows
 * (the op must keep the last axis whole), one thread per output word.
 */
export function synthesizeMovement(req: MovementRequest, caps: SynthCaps): SynthKernel {
  checkCaps(SYNTH, caps);
  checkShape(SYNTH, "shape", req.shape);
  let packed = typeof req.dtype === "object" ? req.dtype.packed : undefined;
  const dense = packed === undefined ? (req.dtype as string) : "u32";
  let shape = [...req.shape];
  let op = req.op;
  if (packed !== undefined) {
    // Re-express the op on bytes: the last axis becomes the row's bytes and must move whole. Rows of whole u32
    // words (Q8_0, Q4_K, ... rows of any length) move as words instead: one load per output word, not four byte
    // loads each through the index math (the bind-time Q/K row gather of a GGUF llama, decision 1660).
    const last = shape[shape.length - 1] as number;
    if (last % packed.blockSize !== 0)
      bad(`packed last axis ${last} is not a multiple of the block size ${packed.blockSize}`);
    const rowBytes = (last / packed.blockSize) * packed.bytesPerBlock;
    const rowUnits = rowBytes % 4 === 0 ? rowBytes / 4 : rowBytes;
    const toBytes = (s: readonly number[]): number[] => {
      if (s[s.length - 1] !== last) bad(`packed ${req.op.op} must keep whole rows of ${last} elements`);
      return [...s.slice(0, -1), rowUnits];
    };
    const rr = shape.length;
    shape = toBytes(shape);
    switch (op.op) {
      case "reshape":
        op = { ...op, shape: toBytes(op.shape) };
        break;
      case "broadcast":
        op = { ...op, shape: toBytes(op.shape) };
        break;
      case "slice":
        if (op.start[rr - 1] !== 0 || op.end[rr - 1] !== last || (op.step?.[rr - 1] ?? 1) !== 1)
          bad("packed slices keep whole rows");
        op = { ...op, end: [...op.end.slice(0, -1), rowUnits] };
        break;
      case "transpose":
        if (op.perm[rr - 1] !== rr - 1) bad("packed transposes keep the last axis last");
        break;
      case "concat":
        if ((op.axis < 0 ? op.axis + rr : op.axis) === rr - 1) bad("packed concat along rows only");
        op = { ...op, shapes: op.shapes.map(toBytes) };
        break;
      case "gather":
        if ((op.axis < 0 ? op.axis + rr : op.axis) === rr - 1) bad("packed gather along rows only");
        break;
      case "dynamicSlice":
        op = { ...op, sizes: toBytes(op.sizes) };
        break;
      case "dynamicUpdateSlice":
        op = { ...op, updateShape: toBytes(op.updateShape) };
        break;
      default:
        op satisfies never;
    }
    if (rowUnits !== rowBytes) {
      packed = undefined;
      if (op.op === "gather" && caps.serialThreads === true) return rowGather(req.name, shape, op, caps);
    }
  }
  const p = plan(shape, op);
  const dtype = packed === undefined ? checkDType(SYNTH, "dtype", dense) : undefined;
  const total = numelOf(p.outShape);
  const units = packed === undefined ? total : Math.ceil(total / 4);
  const wg = pow2Workgroup(units, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const ins = p.inputs.map((i) =>
      b.buffer(i.name, packed === undefined ? elemOf(dtype as StorageDType) : "u32", "read"),
    );
    const idx = new Map(p.indexBuffers.map((ib) => [ib.name, b.buffer(ib.name, "i32", "read")]));
    const out = b.buffer("out", packed === undefined ? elemOf(dtype as StorageDType) : "u32", "write");
    const e = linearThread(b, wg);
    b.if_(e.lt(units), () => {
      if (packed === undefined) {
        const t = valueTypeOf(dtype as StorageDType) === "bool" ? "u32" : valueTypeOf(dtype as StorageDType);
        const v = p.gen(b, axesOf(b, e, p.outShape), (i, at) => (ins[i] as Arr).at(at) as Val<ExprType>, idx, t);
        (out as Arr<"f32">).set(e, v as Val<"f32">);
      } else {
        // Four output bytes per thread, each through the same index math over the byte-level shapes.
        const word = b.var_(b.u32(0), "word");
        for (let j = 0; j < 4; j++) {
          const ob = b.let_(e.mul(4).add(j), "ob");
          b.if_(ob.lt(total), () => {
            const v = p.gen(
              b,
              axesOf(b, ob, p.outShape),
              (i, at) => byteOf(ins[i] as Arr<"u32">, at),
              idx,
              "u32",
            ) as Val<"u32">;
            word.set(word.or(v.shl(8 * j)));
          });
        }
        (out as Arr<"u32">).set(e, word);
      }
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(units / wg), caps) };
}
