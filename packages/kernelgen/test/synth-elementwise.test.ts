// Synthesized elementwise regions in the interpreter against the same math as graph-ir primitives (float64
// eval): broadcasting, mixed storage dtypes, multiple outputs, integer semantics, strided views, ragged sizes.

import { Builder, evaluate, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { KernelgenError, synthesizeElementwise } from "@poot/kernelgen";
import type { ElementwiseInput, ElementwiseOutput, SynthCaps } from "@poot/kernelgen";
import { Dual } from "./dual.js";
import { expectClose, expectExact, poisoned, randF32, rng, run } from "./helpers.js";

const CAPS: SynthCaps = { maxWorkgroup: 256, sharedBytes: 16384 };

interface Case {
  readonly shape: number[];
  readonly inputs: (ElementwiseInput & { data: ArrayLike<number> })[];
  readonly build: (
    d: Dual,
    leaves: Record<string, ReturnType<Dual["leaf"]>>,
  ) => Record<string, { node: ReturnType<Dual["leaf"]>; dtype: ElementwiseOutput["dtype"] }>;
}

/** Runs the synthesized region and the graph oracle; returns both per output. */
function check(c: Case, caps = CAPS, rel = 1e-6) {
  const g = new Builder();
  const d = new Dual(g);
  const consts: Record<string, ArrayLike<number>> = {};
  const leaves: Record<string, ReturnType<Dual["leaf"]>> = {};
  for (const inp of c.inputs) {
    const storage = inp.dtype === "bool" ? "bool" : inp.dtype;
    const raw: Ref = g.const(inp.name, storage, inp.shape);
    const wide = inp.dtype === "bf16" || inp.dtype === "f16" ? g.cast(raw, "f32") : raw;
    leaves[inp.name] = d.leaf(inp.name, wide);
    consts[inp.name] = inp.data;
  }
  const outs = c.build(d, leaves);
  const outputs: ElementwiseOutput[] = Object.entries(outs).map(([name, o]) => ({
    name,
    dtype: o.dtype,
    node: o.node.i,
  }));
  for (const [name, o] of Object.entries(outs)) {
    const widened = o.dtype === "bf16" || o.dtype === "f16" ? g.cast(o.node.ref, o.dtype) : o.node.ref;
    g.output(name, g.broadcast(widened, c.shape));
  }
  const ref = evaluate(g.build(), { consts }).outputs;
  const s = synthesizeElementwise({ name: "region", shape: c.shape, inputs: c.inputs, nodes: d.nodes, outputs }, caps);
  const n = c.shape.reduce((a, b) => a * b, 1);
  const buffers: Record<string, ArrayLike<number>> = {};
  for (const inp of c.inputs) buffers[inp.name] = inp.data;
  for (const o of outputs) buffers[o.name] = poisoned(s.kernel, o.name, n);
  run(s.kernel, { grid: [...s.grid], buffers: buffers as never });
  for (const o of outputs) {
    const want = ref[o.name]!.data;
    const got = buffers[o.name]!;
    if (o.dtype === "bf16")
      expectExact(
        Array.from(got, (x) => x),
        Array.from(want, (x) => f32ToBf16Bits(x)),
      );
    else if (o.dtype === "f16")
      expectExact(
        Array.from(got, (x) => x),
        Array.from(want, (x) => f32ToF16Bits(x)),
      );
    else if (o.dtype === "f32")
      expectClose(
        got,
        want,
        Array.from(want, (x) => Math.abs(x)),
        rel,
        1e-7,
      );
    else expectExact(got, want);
  }
  return s;
}

describe("synthesized elementwise regions", () => {
  it("SwiGLU-like region with broadcast bias, a bf16 input and three outputs (f32, bf16, bool)", () => {
    const r = rng(1);
    const shape = [3, 5, 7];
    check({
      shape,
      inputs: [
        { name: "a", dtype: "f32", shape, data: randF32(r, 105, 4) },
        {
          name: "b",
          dtype: "bf16",
          shape: [5, 1],
          data: Uint16Array.from({ length: 5 }, () => f32ToBf16Bits(r() * 2 - 1)),
        },
        { name: "c", dtype: "f32", shape: [7], data: randF32(r, 7) },
      ],
      build: (d, { a, b, c }) => ({
        y: { node: d.bin("add", d.bin("mul", d.silu(a!), b!), c!), dtype: "f32" },
        m: { node: d.bin("max", a!, c!), dtype: "bf16" },
        gt: { node: d.cmp("gt", a!, b!), dtype: "bool" },
      }),
    });
  });

  it("integer semantics: division by zero is 0, shifts, bit ops, casts both ways", () => {
    const r = rng(2);
    const x = Int32Array.from({ length: 24 }, () => Math.floor(r() * 2000) - 1000);
    const y = Int32Array.from([3, 0, -7, 1, 0, 5]);
    check({
      shape: [4, 6],
      inputs: [
        { name: "x", dtype: "i32", shape: [4, 6], data: x },
        { name: "y", dtype: "i32", shape: [6], data: y },
      ],
      build: (d, { x, y }) => ({
        q: { node: d.bin("div", x!, y!), dtype: "i32" },
        s: {
          node: d.bin("xor", d.bin("shl", x!, d.const(3, "i32")), d.bin("shr", x!, d.const(2, "i32"))),
          dtype: "i32",
        },
        f: { node: d.bin("mul", d.cast(x!, "f32"), d.const(0.5, "f32")), dtype: "f32" },
        t: { node: d.cast(d.bin("mul", d.cast(y!, "f32"), d.const(2.75, "f32")), "i32"), dtype: "i32" },
      }),
    });
  });

  it("transcendental and rounding nodes: erf, tanh, pow, log, sqrt, round-to-bf16 in the middle", () => {
    const r = rng(3);
    const n = 257;
    const a = Float32Array.from({ length: n }, () => r() * 3 + 0.01);
    const p = Float32Array.from({ length: n }, () => Math.round(r() * 6 - 3) / 2);
    check(
      {
        shape: [n],
        inputs: [
          { name: "a", dtype: "f32", shape: [n], data: a },
          { name: "p", dtype: "f32", shape: [n], data: p },
        ],
        build: (d, { a, p }) => ({
          e: { node: d.bin("add", d.un("erf", a!), d.un("tanh", d.un("neg", a!))), dtype: "f32" },
          w: { node: d.bin("pow", d.bin("sub", a!, d.const(1.5, "f32")), p!), dtype: "f32" },
          l: { node: d.bin("mul", d.un("log", a!), d.round(d.un("sqrt", a!), "bf16")), dtype: "f32" },
        }),
      },
      CAPS,
      4e-6,
    );
  });

  it("one element, and a transposed strided view with an iota leaf", () => {
    check({
      shape: [1],
      inputs: [{ name: "a", dtype: "f32", shape: [1], data: Float32Array.of(2.5) }],
      build: (d, { a }) => ({ y: { node: d.un("recip", a!), dtype: "f32" } }),
    });
    // out[i, j] = xT[i, j] + j where xT is the [3, 4] transpose of a contiguous [4, 3] tensor.
    const x = randF32(rng(4), 12);
    const g = new Builder();
    const xt = g.transpose(g.const("x", "f32", [4, 3]), [1, 0]);
    g.output("y", g.add(xt, g.cast(g.iota([3, 4], 1), "f32")));
    const want = evaluate(g.build(), { consts: { x } }).outputs.y!.data;
    const s = synthesizeElementwise(
      {
        name: "tr",
        shape: [3, 4],
        inputs: [{ name: "x", dtype: "f32", shape: [4, 3], strides: [1, 3] }],
        nodes: [
          { op: "leaf", name: "x" },
          { op: "leaf", name: "#1" },
          { op: "cast", to: "f32", a: 1 },
          { op: "binary", fn: "add", a: 0, b: 2 },
        ],
        outputs: [{ name: "y", dtype: "f32", node: 3 }],
      },
      CAPS,
    );
    const y = poisoned(s.kernel, "y", 12);
    run(s.kernel, { grid: [...s.grid], buffers: { x, y } });
    expectExact(y as Float32Array, want);
  });

  it("a small workgroup limit still covers every element (many workgroups)", () => {
    const r = rng(5);
    const s = check(
      {
        shape: [2, 33],
        inputs: [
          {
            name: "a",
            dtype: "f16",
            shape: [2, 33],
            data: Uint16Array.from({ length: 66 }, () => 0x3c00 + Math.floor(r() * 512)),
          },
        ],
        build: (d, { a }) => ({ y: { node: d.bin("mul", a!, a!), dtype: "f16" } }),
      },
      { maxWorkgroup: 8, sharedBytes: 0 },
    );
    expect(s.grid[0]).toBe(9);
  });

  it("ill-typed DAGs and bad shapes are typed errors", () => {
    const base = {
      name: "bad",
      shape: [2],
      inputs: [{ name: "a", dtype: "f32" as const, shape: [2] }],
      outputs: [{ name: "y", dtype: "f32" as const, node: 1 }],
    };
    expect(() =>
      synthesizeElementwise(
        {
          ...base,
          nodes: [
            { op: "leaf", name: "a" },
            { op: "binary", fn: "shl", a: 0, b: 0 },
          ],
        },
        CAPS,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_dtype" }));
    expect(() =>
      synthesizeElementwise(
        {
          ...base,
          nodes: [
            { op: "leaf", name: "zz" },
            { op: "unary", fn: "exp", a: 0 },
          ],
        },
        CAPS,
      ),
    ).toThrow(KernelgenError);
    expect(() =>
      synthesizeElementwise(
        {
          ...base,
          inputs: [{ name: "a", dtype: "f32", shape: [3] }],
          nodes: [
            { op: "leaf", name: "a" },
            { op: "unary", fn: "exp", a: 0 },
          ],
        },
        CAPS,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_shape" }));
  });
});
