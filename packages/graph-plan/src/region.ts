// Regions: the fused expression DAG carried in a composite op's params (plain JSON data). A region is
// a small graph of primitive nodes over the composite's inputs; its reference semantics run each node.

import {
  numel,
  opContext,
  roundInPlace,
  tensorFromHost,
  typeString,
  dtypeEquals,
  shapeEquals,
  type OpContext,
  type OpTable,
  type Params,
  type ScalarDType,
  type Tensor,
  type TensorData,
  type ValueType,
} from "@poot/graph-ir";

/** A literal scalar inside a region (same shape as graph-ir's Literal, as a plain type so params stay JSON data). */
export type RegionLiteral = { readonly lit: number; readonly dtype: ScalarDType };

/** A region node operand: the composite's input `in`, an earlier node, or a literal scalar. */
export type RegionArg = { readonly in: number } | { readonly node: number } | RegionLiteral;

/** One node of a region: `op[params](args)` with its declared result type. */
export type RegionNode = {
  /** Op name (a primitive, or `Rope`). */
  readonly op: string;
  /** Operands. */
  readonly args: readonly RegionArg[];
  /** Op params. */
  readonly params: Params;
  /** Result dtype (regions hold scalar dtypes only). */
  readonly dtype: ScalarDType;
  /** Result shape. */
  readonly shape: readonly number[];
};

/** A fused expression DAG: nodes in topological order and the node whose value the region returns. */
export type Region = {
  /** Nodes, each reading inputs, literals or earlier nodes. */
  readonly nodes: readonly RegionNode[];
  /** Index of the result node. */
  readonly result: number;
};

/** True for an argument naming a composite input. */
export function isInputArg(a: RegionArg): a is { readonly in: number } {
  return "in" in a;
}

/** True for a literal argument. */
export function isLiteralArg(a: RegionArg): a is RegionLiteral {
  return "lit" in a;
}

/** True for an argument naming an earlier node. */
export function isNodeArg(a: RegionArg): a is { readonly node: number } {
  return "node" in a;
}

/** Reads a region out of params, failing with bad-param when it is not shaped like one. */
export function regionParam(ctx: OpContext, v: unknown, name = "region"): Region {
  const r = v as Region | undefined;
  if (
    r === null ||
    typeof r !== "object" ||
    !Array.isArray(r.nodes) ||
    !Number.isInteger(r.result) ||
    r.result < 0 ||
    r.result >= r.nodes.length
  ) {
    ctx.fail("bad-param", `param ${name} is not a region`);
  }
  return r;
}

/** Types every node of a region against its declared type; returns the result type. */
export function typeRegion(region: Region, inputs: readonly ValueType[], ops: OpTable, outer: OpContext): ValueType {
  const types: ValueType[] = [];
  region.nodes.forEach((n, k) => {
    const def = ops[n.op];
    if (def === undefined || (def.category === "composite" && n.op !== "Rope"))
      outer.fail("unknown-op", `region node ${k} uses op ${n.op}, which regions cannot hold`);
    const argTypes = n.args.map((a): ValueType => {
      if (isLiteralArg(a)) return { dtype: a.dtype, shape: [] };
      if (isInputArg(a)) {
        const t = inputs[a.in];
        if (t === undefined) return outer.fail("bad-param", `region node ${k} reads missing input ${a.in}`);
        return t;
      }
      const t = types[(a as { node: number }).node];
      if (t === undefined || (a as { node: number }).node >= k)
        return outer.fail(
          "bad-param",
          `region node ${k} reads node ${(a as { node: number }).node}, which is not earlier`,
        );
      return t;
    });
    const ctx = opContext(n.op, outer.values, outer.eqn);
    const arity = def!.arity;
    if (typeof arity === "number" ? n.args.length !== arity : n.args.length < arity.min)
      outer.fail("bad-arity", `region node ${k} (${n.op}) has ${n.args.length} operands`);
    const t = def!.infer(argTypes, n.params, ctx);
    if (!dtypeEquals(t.dtype, n.dtype) || !shapeEquals(t.shape, n.shape)) {
      outer.fail("shape-mismatch", `region node ${k} (${n.op}) declares ${typeString(n)} but gives ${typeString(t)}`);
    }
    types.push(t);
  });
  return types[region.result]!;
}

/** Reference semantics of a region: runs each node as the op it names, rounding each result to its dtype. */
export function evalRegion(region: Region, inputs: readonly Tensor[], ops: OpTable, outer: OpContext): TensorData {
  const vals: Tensor[] = [];
  const lastUse = new Int32Array(region.nodes.length).fill(-1);
  region.nodes.forEach((n, k) =>
    n.args.forEach((a) => {
      if (isNodeArg(a)) lastUse[a.node] = k;
    }),
  );
  region.nodes.forEach((n, k) => {
    const args = n.args.map((a): Tensor => {
      if (isInputArg(a)) return inputs[a.in]!;
      if (isNodeArg(a)) return vals[a.node]!;
      const lit = a as RegionLiteral;
      return tensorFromHost(lit.dtype, [], [lit.lit])!;
    });
    const out = { dtype: n.dtype, shape: n.shape };
    let data = ops[n.op]!.evaluate(args, n.params, out, opContext(n.op, outer.values, outer.eqn));
    // A view may hand back its operand's array; copy before rounding so the operand is never changed.
    if (args.some((t) => t.data === data)) data = data.slice();
    roundInPlace(n.dtype, data);
    vals[k] = { dtype: n.dtype, shape: n.shape, data };
    // Free intermediates early: a region can hold a whole KV cache copy.
    n.args.forEach((a) => {
      if (isNodeArg(a) && lastUse[a.node] === k && a.node !== region.result) vals[a.node] = undefined as never;
    });
  });
  const r = vals[region.result]!;
  return r.data.length === numel(r.shape) ? r.data : r.data.slice(0, numel(r.shape));
}

/** Counts region nodes by op (for reports). */
export function regionOps(region: Region): string[] {
  return region.nodes.map((n) => n.op);
}

/**
 * The gate's input (0 or 1) when `r` is exactly SwiGLU over its first two inputs, `silu(in_g) · in_u` in f32 with
 * silu as graph-ir's builder writes it (`in_g / (exp(−in_g) + 1)`, either operand order of the add and the
 * product), else null: the two-heads epilogue that the CPU's native GEMVs apply themselves (caps `swigluWeights`,
 * decision 2360).
 */
export function swigluGate(r: Region): 0 | 1 | null {
  const ns = r.nodes;
  if (ns.length !== 5 || ns.some((n) => n.dtype !== "f32")) return null;
  const node = (a: RegionArg | undefined, op: string): RegionNode | undefined => {
    const n = a !== undefined && isNodeArg(a) ? ns[a.node] : undefined;
    return n?.op === op ? n : undefined;
  };
  const isIn = (a: RegionArg | undefined, i: number): boolean => a !== undefined && isInputArg(a) && a.in === i;
  const one = (a: RegionArg | undefined): boolean => a !== undefined && isLiteralArg(a) && a.lit === 1;
  const mul = ns[r.result]!;
  if (mul.op !== "Mul" || mul.args.length !== 2) return null;
  for (const g of [0, 1] as const) {
    const [m0, m1] = mul.args;
    const div = node(isIn(m1, 1 - g) ? m0 : isIn(m0, 1 - g) ? m1 : undefined, "Div");
    if (div === undefined || !isIn(div.args[0], g)) continue;
    const add = node(div.args[1], "Add");
    if (add === undefined || add.args.length !== 2) continue;
    const [a0, a1] = add.args;
    const exp = node(one(a1) ? a0 : one(a0) ? a1 : undefined, "Exp");
    const neg = exp === undefined ? undefined : node(exp.args[0], "Neg");
    if (neg !== undefined && isIn(neg.args[0], g)) return g;
  }
  return null;
}
