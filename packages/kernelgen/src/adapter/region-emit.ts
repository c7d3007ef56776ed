// Emits graph-plan regions (fused expression DAGs of primitive nodes, views and Rope) as kernel IR, evaluating a
// node at symbolic output coordinates: pointwise ops broadcast, views remap coordinates, reductions are cached rows.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { roundToBf16, roundToF16 } from "@poot/graph-ir";
import type { ScalarDType } from "@poot/graph-ir";
import type { Access, Region, RegionArg, RegionNode } from "@poot/graph-plan";
import { KernelgenError } from "../errors.js";
import { emitNodes, exprTypeOf, typeNodes } from "../synth/expr.js";
import { emitInlineReduce } from "./region-reduce.js";
import type { ExprNode, ExprType } from "../synth/expr.js";
import { clampIndex, contiguousStrides } from "../synth/index-math.js";
import { storeAccess } from "./access.js";

/** Symbolic coordinates (u32 per axis). */
export type Coords = readonly Val<"u32">[];
type AnyVal = Val<ExprType>;

const BINARY: Record<string, string> = {
  Add: "add",
  Sub: "sub",
  Mul: "mul",
  Div: "div",
  Max: "max",
  Min: "min",
  Pow: "pow",
  And: "and",
  Or: "or",
  Xor: "xor",
  Shl: "shl",
  Shr: "shr",
};
const CMP: Record<string, string> = { Eq: "eq", Ne: "ne", Lt: "lt", Le: "le", Gt: "gt", Ge: "ge" };
const UNARY: Record<string, string> = {
  Neg: "neg",
  Exp: "exp",
  Log: "log",
  Sqrt: "sqrt",
  Recip: "recip",
  Tanh: "tanh",
  Erf: "erf",
  Sin: "sin",
  Cos: "cos",
  Abs: "abs",
  Not: "not",
};

/** Reads region input `i` at coordinates of that input's shape. */
export type InputReader = (i: number, coords: Coords) => AnyVal;

/** The emitter's state: memo scopes (a value emitted inside a loop is not visible after it) and cached rows. */
export class RegionEmitter {
  private readonly scopes: Map<string, AnyVal>[] = [new Map()];
  constructor(
    private readonly b: Builder,
    readonly region: Region,
    private readonly inputShapes: readonly (readonly number[])[],
    private readonly readInput: InputReader,
    private readonly synth: string,
    private readonly inputDtypes: readonly ScalarDType[] = [],
  ) {}

  /** Dtype of an argument (inputs: as declared to the emitter, f32 when unknown). */
  dtypeOf(a: RegionArg): ScalarDType {
    if ("in" in a) return this.inputDtypes[a.in] ?? "f32";
    if ("node" in a) return (this.region.nodes[a.node] as RegionNode).dtype;
    return a.dtype;
  }

  /** Runs `fn` in a nested memo scope (use for loop and branch bodies). */
  scoped<T>(fn: () => T): T {
    this.scopes.push(new Map());
    try {
      return fn();
    } finally {
      this.scopes.pop();
    }
  }

  private key(node: number, coords: Coords): string {
    return `${node}|${coords.map((c) => JSON.stringify(c.expr)).join(",")}`;
  }

  /** Caches `v` (rounded to the node's dtype) as node `node` at `coords` in the outermost scope (reduction results). */
  setOuter(node: number, coords: Coords, v: AnyVal): void {
    const r = this.b.let_(this.round(v, (this.region.nodes[node] as RegionNode).dtype), `red${node}`);
    (this.scopes[0] as Map<string, AnyVal>).set(this.key(node, coords), r);
  }

  private lookup(k: string): AnyVal | undefined {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const v = (this.scopes[i] as Map<string, AnyVal>).get(k);
      if (v !== undefined) return v;
    }
    return undefined;
  }

  private fail(node: number, msg: string): never {
    throw new KernelgenError("bad_param", `region node ${node} (${this.region.nodes[node]?.op}): ${msg}`, {
      synth: this.synth,
      param: `region.nodes[${node}]`,
    });
  }

  /** Shape of an argument. */
  shapeOf(a: RegionArg): readonly number[] {
    if ("in" in a) return this.inputShapes[a.in] as readonly number[];
    if ("node" in a) return (this.region.nodes[a.node] as RegionNode).shape;
    return [];
  }

  /** The value of argument `a` at coordinates of its own shape. */
  arg(a: RegionArg, coords: Coords): AnyVal {
    if ("in" in a) return this.readInput(a.in, coords);
    if ("node" in a) return this.at(a.node, coords);
    return this.literal(a.lit, a.dtype);
  }

  private literal(v: number, d: ScalarDType): AnyVal {
    const { f32, i32, u32, bool } = this.b;
    switch (exprTypeOf(d)) {
      case "f32":
        return f32(d === "bf16" ? roundToBf16(v) : d === "f16" ? roundToF16(v) : v);
      case "i32":
        return i32(v | 0);
      case "u32":
        return u32(d === "u8" ? v & 0xff : v >>> 0);
      case "bool":
        return bool(v !== 0);
    }
  }

  /** Right-aligned broadcast of `coords` (of shape `outShape`) onto an operand of shape `shape`. */
  broadcastTo(coords: Coords, outShape: readonly number[], shape: readonly number[]): Coords {
    const r = outShape.length;
    return shape.map((d, j) => (d === 1 ? this.b.u32(0) : (coords[j + r - shape.length] as Val<"u32">)));
  }

  /** Rounds a computed value to a node's storage dtype (what the reference stores). */
  private round(v: AnyVal, d: ScalarDType): AnyVal {
    const { pack, unpack } = this.b;
    if (d === "bf16" || d === "f16") return unpack(d, pack(d, v as Val<"f32">));
    if (d === "u8") return (v as Val<"u32">).and(0xff);
    return v;
  }

  /** One pointwise op over already-evaluated operands, through the shared ExprNode emitter. */
  private pointwise(node: number, n: RegionNode, ops: AnyVal[]): AnyVal {
    const leaves: ExprNode[] = ops.map((_, i) => ({ op: "leaf", name: `o${i}` }));
    let op: ExprNode;
    if (BINARY[n.op] !== undefined) op = { op: "binary", fn: BINARY[n.op] as never, a: 0, b: 1 };
    else if (CMP[n.op] !== undefined) op = { op: "cmp", fn: CMP[n.op] as never, a: 0, b: 1 };
    else if (UNARY[n.op] !== undefined) op = { op: "unary", fn: UNARY[n.op] as never, a: 0 };
    else if (n.op === "Select") op = { op: "select", cond: 0, a: 1, b: 2 };
    else if (n.op === "Cast") op = { op: "cast", to: exprTypeOf(n.params.to as ScalarDType), a: 0 };
    else return this.fail(node, "is not a pointwise op this emitter knows");
    const nodes = [...leaves, op];
    const byName = (name: string) => ops[Number(name.slice(1))] as AnyVal;
    const types = typeNodes(this.synth, nodes, (name) => byName(name).type as ExprType);
    const vals = emitNodes(this.b, nodes, types, byName);
    return vals[nodes.length - 1] as AnyVal;
  }

  /** The value of node `node` at coordinates `coords` of its shape (emitted once per scope). */
  at(node: number, coords: Coords): AnyVal {
    const k = this.key(node, coords);
    const hit = this.lookup(k);
    if (hit !== undefined) return hit;
    const v = this.round(this.compute(node, coords), (this.region.nodes[node] as RegionNode).dtype);
    const bound = this.b.let_(v, `n${node}`);
    (this.scopes[this.scopes.length - 1] as Map<string, AnyVal>).set(k, bound);
    return bound;
  }

  private compute(node: number, c: Coords): AnyVal {
    const b = this.b;
    const n = this.region.nodes[node] as RegionNode;
    const p = n.params as Record<string, unknown>;
    const args = n.args;
    const argAt = (i: number, coords: Coords) => this.arg(args[i] as RegionArg, coords);
    const bcast = (i: number) => this.broadcastTo(c, n.shape, this.shapeOf(args[i] as RegionArg));
    switch (n.op) {
      case "Reshape": {
        const inShape = this.shapeOf(args[0] as RegionArg);
        const st = contiguousStrides(n.shape);
        let lin: Val<"u32"> = b.u32(0);
        c.forEach((x, d) => {
          if ((n.shape[d] as number) > 1) lin = lin.add((st[d] as number) === 1 ? x : x.mul(st[d] as number));
        });
        const linV = b.let_(lin, "lin");
        const inSt = contiguousStrides(inShape);
        return argAt(
          0,
          inShape.map((d, j) =>
            d === 1
              ? b.u32(0)
              : b.let_(j === 0 ? linV.div(inSt[j] as number) : linV.div(inSt[j] as number).rem(d), "ri"),
          ),
        );
      }
      case "Broadcast":
        return argAt(0, bcast(0));
      case "Slice": {
        const start = p.start as number[],
          step = p.step as number[];
        return argAt(
          0,
          c.map((x, d) => x.mul(step[d] as number).add(start[d] as number)),
        );
      }
      case "Transpose": {
        const perm = p.perm as number[];
        const inC: Val<"u32">[] = new Array(perm.length);
        perm.forEach((src, d) => {
          inC[src] = c[d] as Val<"u32">;
        });
        return argAt(0, inC);
      }
      case "Iota": {
        const ax = p.axis as number;
        const v = c[ax < 0 ? ax + c.length : ax] as Val<"u32">;
        const t = exprTypeOf(p.dtype as ScalarDType);
        return t === "u32" ? v : t === "bool" ? v.ne(0) : v.cast(t as "f32");
      }
      case "Concat": {
        const ax = (p.axis as number) < 0 ? (p.axis as number) + n.shape.length : (p.axis as number);
        const t = exprTypeOf(n.dtype);
        const v = b.var_(zero(b, t), "cat");
        let lo = 0;
        const parts = args.map((a) => {
          const s = this.shapeOf(a);
          const r = { lo, s };
          lo += s[ax] as number;
          return r;
        });
        const chain = (i: number): void => {
          const { lo: off, s } = parts[i] as { lo: number; s: readonly number[] };
          const body = () =>
            this.scoped(() =>
              v.set(
                argAt(
                  i,
                  c.map((x, d) => (d === ax ? x.sub(off) : x)).map((x, d) => ((s[d] as number) === 1 ? b.u32(0) : x)),
                ) as Val<"f32">,
              ),
            );
          if (i === parts.length - 1) return body();
          b.if_((c[ax] as Val<"u32">).lt(off + (s[ax] as number)), body, () => chain(i + 1));
        };
        chain(0);
        return v;
      }
      case "Gather": {
        const ax =
          (p.axis as number) < 0 ? (p.axis as number) + this.shapeOf(args[0] as RegionArg).length : (p.axis as number);
        const xs = this.shapeOf(args[0] as RegionArg);
        const q = this.shapeOf(args[1] as RegionArg).length;
        const id = argAt(1, c.slice(ax, ax + q)) as Val<"i32">;
        const row = b.let_(b.min(b.max(id, b.i32(0)), b.i32((xs[ax] as number) - 1)).u32(), "gid");
        return argAt(0, [...c.slice(0, ax), row, ...c.slice(ax + q)]);
      }
      case "DynamicSlice": {
        const xs = this.shapeOf(args[0] as RegionArg);
        const sizes = p.sizes as number[];
        return argAt(
          0,
          c.map((x, d) => x.add(startAt(this, b, args[d + 1] as RegionArg, (xs[d] as number) - (sizes[d] as number)))),
        );
      }
      case "DynamicUpdateSlice": {
        const us = this.shapeOf(args[1] as RegionArg);
        const starts = c.map((_, d) =>
          startAt(this, b, args[d + 2] as RegionArg, (n.shape[d] as number) - (us[d] as number)),
        );
        let inside: Val<"bool"> = b.bool(true);
        c.forEach((x, d) => {
          inside = inside.and(x.ge(starts[d] as Val<"u32">)).and(x.lt((starts[d] as Val<"u32">).add(us[d] as number)));
        });
        const v = b.var_(zero(b, exprTypeOf(n.dtype)), "dus");
        b.if_(
          b.let_(inside, "inside"),
          () =>
            this.scoped(() =>
              v.set(
                argAt(
                  1,
                  c.map((x, d) => x.sub(starts[d] as Val<"u32">)),
                ) as Val<"f32">,
              ),
            ),
          () => this.scoped(() => v.set(argAt(0, c) as Val<"f32">)),
        );
        return v;
      }
      case "Rope": {
        if (p.style !== "half" && p.style !== "interleaved") return this.fail(node, `Rope style ${String(p.style)}`);
        const D = n.shape[n.shape.length - 1] as number,
          // The partner's distance: D/2 (rotate-half) or 1 (interleaved pairs 2i, 2i+1).
          h = p.style === "half" ? D / 2 : 1;
        const j = c[c.length - 1] as Val<"u32">;
        const first = b.let_(p.style === "half" ? j.lt(h) : j.and(1).eq(0), "first");
        const partner = [...c.slice(0, -1), b.let_(b.select(first, j.add(h), j.sub(h)), "pj")];
        const x = argAt(0, c) as Val<"f32">;
        const px = argAt(0, partner) as Val<"f32">;
        const rot = b.select(first, px.neg(), px);
        const d = p.dtype as ScalarDType;
        const m1 = this.round(x.mul(argAt(1, bcast(1)) as Val<"f32">), d) as Val<"f32">;
        const m2 = this.round(rot.mul(argAt(2, bcast(2)) as Val<"f32">), d) as Val<"f32">;
        return m1.add(m2);
      }
      case "Reduce":
        // Row kernels pre-compute their reductions; anywhere else the thread reduces sequentially (any axes).
        return emitInlineReduce(this, b, n, c);
      default: {
        const ops = args.map((_, i) => argAt(i, bcast(i)));
        return this.pointwise(node, n, ops);
      }
    }
  }
}

function zero(b: Builder, t: ExprType): AnyVal {
  return t === "f32" ? b.f32(0) : t === "i32" ? b.i32(0) : t === "u32" ? b.u32(0) : b.bool(false);
}

/** A runtime start (an i32 scalar argument) clamped into [0, hi], as u32. */
function startAt(e: RegionEmitter, b: Builder, a: RegionArg, hi: number): Val<"u32"> {
  return clampIndex(b, e.arg(a, []) as Val<"i32">, Math.max(0, hi), "start");
}

/**
 * Stores element `c` of the window `space` of DynamicUpdateSlice node `dus` in place: `out[start + c] = update[c]`,
 * each start clamped to `output.shape − space` (as graph-ir does); the rest of the aliased output is left as it is.
 */
export function storeWindow(
  em: RegionEmitter,
  b: Builder,
  out: Arr,
  output: Access,
  dus: RegionNode,
  space: readonly number[],
  c: Coords,
): void {
  const starts = c.map((_, d) =>
    startAt(em, b, dus.args[d + 2] as RegionArg, (output.shape[d] as number) - (space[d] as number)),
  );
  storeAccess(
    b,
    out,
    output,
    c.map((x, d) => x.add(starts[d] as Val<"u32">)),
    em.arg(dus.args[1] as RegionArg, c),
  );
}
