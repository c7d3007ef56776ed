// Real kernels used by the codegen tests: GEMV with a shared-memory tree reduction, a subgroup row sum,
// bf16 unpack/pack, an elementwise kernel with many inputs, atomics. Written as plain kernel IR data.

import type { Expr, Kernel, ScalarType, Stmt, ValueType } from "@poot/kernel-dsl";

// ── tiny IR constructors (the IR is plain data) ──
export const u = (v: number): Expr => ({ k: "const", type: "u32", value: v });
export const i = (v: number): Expr => ({ k: "const", type: "i32", value: v });
export const f = (v: number): Expr => ({ k: "const", type: "f32", value: v });
export const loc = (name: string, type: ValueType): Expr => ({ k: "local", type, name });
export const par = (name: string, type: "u32" | "i32" | "f32"): Expr => ({ k: "param", type, name });
export const gid = (axis: 0 | 1 | 2 = 0): Expr => ({ k: "builtin", type: "u32", name: "global_id", axis });
export const lid = (axis: 0 | 1 | 2 = 0): Expr => ({ k: "builtin", type: "u32", name: "local_id", axis });
export const wid = (axis: 0 | 1 | 2 = 0): Expr => ({ k: "builtin", type: "u32", name: "workgroup_id", axis });
export const sb = (name: "local_index" | "subgroup_id" | "subgroup_lane" | "subgroup_size"): Expr => ({ k: "builtin", type: "u32", name });
export const bin = (op: "add" | "sub" | "mul" | "div" | "rem" | "and" | "or" | "xor" | "shl" | "shr", a: Expr, b: Expr): Expr => ({ k: "binary", type: a.type, op, a, b });
export const add = (a: Expr, b: Expr): Expr => bin("add", a, b);
export const mul = (a: Expr, b: Expr): Expr => bin("mul", a, b);
export const cmp = (op: "eq" | "ne" | "lt" | "le" | "gt" | "ge", a: Expr, b: Expr): Expr => ({ k: "cmp", type: "bool", op, a, b });
export const ld = (array: string, type: ValueType, index: Expr, space: "global" | "workgroup" | "private" = "global"): Expr => ({ k: "load", type, space, array, index });
export const st = (array: string, index: Expr, value: Expr, space: "global" | "workgroup" | "private" = "global"): Stmt => ({ s: "store", space, array, index, value });
export const call = (fn: "exp" | "log" | "sqrt" | "rsqrt" | "tanh" | "erf" | "sin" | "cos" | "abs" | "min" | "max" | "fma" | "floor", ...args: Expr[]): Expr => ({ k: "call", type: args[0]!.type, fn, args });
export const cast = (type: ScalarType, a: Expr): Expr => ({ k: "cast", type, a });
export const let_ = (name: string, value: Expr): Stmt => ({ s: "let", name, type: value.type, value });

/** y[row] = Σ_k W[row, k] · x[k]; one workgroup of 64 per row, strided partial sums, shared-memory tree. */
export const gemv: Kernel = {
  name: "gemv_tree",
  workgroupSize: [64, 1, 1],
  specs: [],
  buffers: [
    { name: "w", binding: 0, elem: "f32", access: "read" },
    { name: "x", binding: 1, elem: "f32", access: "read" },
    { name: "y", binding: 2, elem: "f32", access: "write" },
  ],
  uniforms: [{ name: "k", type: "u32" }],
  shared: [{ name: "partial", elem: "f32", length: 64 }],
  body: [
    let_("row", wid(0)),
    let_("t", lid(0)),
    { s: "var", name: "acc", type: "f32", init: f(0) },
    {
      s: "for", var: "c", type: "u32", start: loc("t", "u32"), end: par("k", "u32"), step: u(64),
      body: [{ s: "assign", name: "acc", value: call("fma", ld("w", "f32", add(mul(loc("row", "u32"), par("k", "u32")), loc("c", "u32"))), ld("x", "f32", loc("c", "u32")), loc("acc", "f32")) }],
    },
    st("partial", loc("t", "u32"), loc("acc", "f32"), "workgroup"),
    { s: "barrier" },
    { s: "var", name: "half", type: "u32", init: u(32) },
    {
      s: "while", cond: cmp("gt", loc("half", "u32"), u(0)),
      body: [
        {
          s: "if", cond: cmp("lt", loc("t", "u32"), loc("half", "u32")),
          then: [st("partial", loc("t", "u32"), add(ld("partial", "f32", loc("t", "u32"), "workgroup"), ld("partial", "f32", add(loc("t", "u32"), loc("half", "u32")), "workgroup")), "workgroup")],
          else: [],
        },
        { s: "barrier" },
        { s: "assign", name: "half", value: bin("shr", loc("half", "u32"), u(1)) },
      ],
    },
    { s: "if", cond: cmp("eq", loc("t", "u32"), u(0)), then: [st("y", loc("row", "u32"), ld("partial", "f32", u(0), "workgroup"))], else: [] },
  ],
};

/** out[row] = Σ_k a[row, k]: one subgroup per row, lanes stride over k, then a subgroup reduction. */
export const rowSum: Kernel = {
  name: "row_sum_subgroup",
  workgroupSize: [64, 1, 1],
  specs: [],
  buffers: [
    { name: "a", binding: 0, elem: "f32", access: "read" },
    { name: "out", binding: 1, elem: "f32", access: "write" },
  ],
  uniforms: [{ name: "k", type: "u32" }, { name: "rows", type: "u32" }],
  shared: [],
  body: [
    let_("row", add(mul(wid(0), bin("div", u(64), sb("subgroup_size"))), sb("subgroup_id"))),
    { s: "var", name: "acc", type: "f32", init: f(0) },
    {
      s: "if", cond: cmp("lt", loc("row", "u32"), par("rows", "u32")),
      then: [{
        s: "for", var: "c", type: "u32", start: sb("subgroup_lane"), end: par("k", "u32"), step: sb("subgroup_size"),
        body: [{ s: "assign", name: "acc", value: add(loc("acc", "f32"), ld("a", "f32", add(mul(loc("row", "u32"), par("k", "u32")), loc("c", "u32")))) }],
      }],
      else: [],
    },
    { s: "subgroup", name: "total", type: "f32", op: "reduce_add", value: loc("acc", "f32") },
    { s: "if", cond: { k: "binary", type: "bool", op: "and", a: cmp("eq", sb("subgroup_lane"), u(0)), b: cmp("lt", loc("row", "u32"), par("rows", "u32")) }, then: [st("out", loc("row", "u32"), loc("total", "f32"))], else: [] },
  ],
};

/** bf16 in both forms: packed pairs in u32 words (unpack, scale, pack) and a bf16 buffer (widen, scale, narrow). */
export const bf16Scale: Kernel = {
  name: "bf16_scale",
  workgroupSize: [64, 1, 1],
  specs: [],
  buffers: [
    { name: "pairs_in", binding: 0, elem: "u32", access: "read" },
    { name: "pairs_out", binding: 1, elem: "u32", access: "write" },
    { name: "h_in", binding: 2, elem: "bf16", access: "read" },
    { name: "h_out", binding: 3, elem: "bf16", access: "write" },
  ],
  uniforms: [{ name: "n", type: "u32" }, { name: "alpha", type: "f32" }],
  shared: [],
  body: [
    let_("gi", gid(0)),
    { s: "if", cond: cmp("ge", loc("gi", "u32"), par("n", "u32")), then: [{ s: "return" }], else: [] },
    { s: "let", name: "v", type: "vec2<f32>", value: { k: "unpack", type: "vec2<f32>", fmt: "bf16x2", a: ld("pairs_in", "u32", loc("gi", "u32")) } },
    { s: "let", name: "sv", type: "vec2<f32>", value: { k: "vec", type: "vec2<f32>", elems: [mul({ k: "extract", type: "f32", a: loc("v", "vec2<f32>"), lane: 0 }, par("alpha", "f32")), mul({ k: "extract", type: "f32", a: loc("v", "vec2<f32>"), lane: 1 }, par("alpha", "f32"))] } },
    st("pairs_out", loc("gi", "u32"), { k: "pack", type: "u32", fmt: "bf16x2", a: loc("sv", "vec2<f32>") }),
    st("h_out", loc("gi", "u32"), mul(ld("h_in", "f32", loc("gi", "u32")), par("alpha", "f32"))),
  ],
};

/** Number of inputs of {@link manyInputs}. */
export const MANY = 10;

/** out[i] = Σ_j (j+1) · in_j[i] · exp(-|in_0[i]|): ten read-only inputs, more than small devices can bind. */
export const manyInputs: Kernel = {
  name: "ew_many_inputs",
  workgroupSize: [64, 1, 1],
  specs: [],
  buffers: [
    ...Array.from({ length: MANY }, (_, j) => ({ name: `in${j}`, binding: j, elem: "f32" as const, access: "read" as const })),
    { name: "out", binding: MANY, elem: "f32", access: "write" },
  ],
  uniforms: [{ name: "n", type: "u32" }],
  shared: [],
  body: [
    let_("gi", gid(0)),
    {
      s: "if", cond: cmp("lt", loc("gi", "u32"), par("n", "u32")),
      then: [
        { s: "var", name: "acc", type: "f32", init: f(0) },
        ...Array.from({ length: MANY }, (_, j): Stmt => ({ s: "assign", name: "acc", value: add(loc("acc", "f32"), mul(f(j + 1), ld(`in${j}`, "f32", loc("gi", "u32")))) })),
        st("out", loc("gi", "u32"), mul(loc("acc", "f32"), call("exp", { k: "unary", type: "f32", op: "neg", a: call("abs", ld("in0", "f32", loc("gi", "u32"))) }))),
      ],
      else: [],
    },
  ],
};

/** A histogram (global u32 atomics via a shared-memory histogram) plus a global f32 atomic sum. */
export const atomics: Kernel = {
  name: "histogram_atomics",
  workgroupSize: [64, 1, 1],
  specs: [{ name: "BINS", default: 16 }],
  buffers: [
    { name: "vals", binding: 0, elem: "u32", access: "read" },
    { name: "hist", binding: 1, elem: "u32", access: "read_write", atomic: true },
    { name: "total", binding: 2, elem: "f32", access: "read_write", atomic: true },
  ],
  uniforms: [{ name: "n", type: "u32" }],
  shared: [{ name: "local_hist", elem: "u32", length: { spec: "BINS" }, atomic: true }],
  body: [
    let_("t", lid(0)),
    { s: "if", cond: cmp("lt", loc("t", "u32"), { k: "spec", type: "u32", name: "BINS" }), then: [{ s: "atomic", op: "store", type: "u32", space: "workgroup", array: "local_hist", index: loc("t", "u32"), value: u(0) }], else: [] },
    { s: "barrier" },
    let_("gi", gid(0)),
    {
      s: "if", cond: cmp("lt", loc("gi", "u32"), par("n", "u32")),
      then: [
        let_("val", ld("vals", "u32", loc("gi", "u32"))),
        { s: "atomic", op: "add", type: "u32", space: "workgroup", array: "local_hist", index: bin("rem", loc("val", "u32"), { k: "spec", type: "u32", name: "BINS" }), value: u(1), name: "old_count" },
        { s: "atomic", op: "add", type: "f32", space: "global", array: "total", index: u(0), value: cast("f32", loc("val", "u32")) },
      ],
      else: [],
    },
    { s: "barrier" },
    {
      s: "if", cond: cmp("lt", loc("t", "u32"), { k: "spec", type: "u32", name: "BINS" }),
      then: [
        { s: "atomic", op: "load", type: "u32", space: "workgroup", array: "local_hist", index: loc("t", "u32"), name: "cnt" },
        { s: "atomic", op: "add", type: "u32", space: "global", array: "hist", index: loc("t", "u32"), value: loc("cnt", "u32"), name: "prev" },
      ],
      else: [],
    },
  ],
};

/** All test kernels. */
export const ALL_KERNELS: readonly Kernel[] = [gemv, rowSum, bf16Scale, manyInputs, atomics];
