// A decode-like step (GEMV over bf16 weights, an elementwise epilogue, an in-place State update) bound
// once and replayed with new slot bytes: each replay checked in float64; replays create no objects.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lowerWgsl } from "@poot/codegen";
import { kernel } from "@poot/kernel-dsl";
import { synthesizeElementwise, synthesizeGemv, type ExprNode } from "@poot/kernelgen";
import { codegenCaps, synthCaps, type Step, type WgpuBuffer, type WgpuContext } from "@poot/backend-wgpu";
import { bf16Bits, bf16Value, openTestContext, rand, relErr } from "./helpers.js";

let ctx: WgpuContext | undefined;
let why = "";
beforeAll(async () => {
  const r = await openTestContext();
  if ("ctx" in r) ctx = r.ctx;
  else why = r.reason;
});
afterAll(() => ctx?.dispose());

const K = 64,
  N = 24;
const leaf = (name: string): ExprNode => ({ op: "leaf", name });

/** acc[i] += y[i]: a State updated in place (read_write), as a KV-cache write is. */
const accumulate = kernel("accumulate", { workgroupSize: [32, 1, 1] }, (k) => {
  const acc = k.buffer("acc", "f32", "read_write");
  const y = k.buffer("y", "f32", "read");
  const i = k.let_(k.gid.x, "i");
  k.if_(i.lt(N), () => acc.set(i, acc.at(i).add(y.at(i))));
});

interface Built {
  step: Step;
  x: WgpuBuffer;
  y: WgpuBuffer;
  acc: WgpuBuffer;
  w: Uint16Array;
}

async function build(c: WgpuContext): Promise<Built> {
  const caps = synthCaps(c.caps),
    lower = codegenCaps(c.caps);
  const w = Uint16Array.from(rand(11, N * K), bf16Bits);
  const W = await c.buffers.upload("weight", w, "W");
  const x = await c.buffers.create("slot", K * 4, "x");
  const h = await c.buffers.create("io", N * 4, "h");
  const y = await c.buffers.create("io", N * 4, "y");
  const acc = await c.buffers.create("state", N * 4, "acc");
  acc.write(new Float32Array(N));
  const gemv = synthesizeGemv({ name: "gemv", K, N, weight: { dtype: "bf16", layout: "nk" } }, caps);
  // y = h · sigmoid(h) (SiLU), written as h / (1 + exp(-h))
  const silu = synthesizeElementwise(
    {
      name: "silu",
      shape: [N],
      inputs: [{ name: "h", dtype: "f32", shape: [N] }],
      nodes: [
        leaf("h"),
        { op: "unary", fn: "neg", a: 0 },
        { op: "unary", fn: "exp", a: 1 },
        { op: "const", value: 1, type: "f32" },
        { op: "binary", fn: "add", a: 2, b: 3 },
        { op: "binary", fn: "div", a: 0, b: 4 },
      ],
      outputs: [{ name: "y", dtype: "f32", node: 5 }],
    },
    caps,
  );
  const kernels = [
    await c.bind({
      kernel: gemv.kernel,
      code: lowerWgsl(gemv.kernel, lower),
      grid: gemv.grid,
      args: { x: { buffer: x }, W: { buffer: W }, y: { buffer: h } },
    }),
    await c.bind({
      kernel: silu.kernel,
      code: lowerWgsl(silu.kernel, lower),
      grid: silu.grid,
      args: { h: { buffer: h }, y: { buffer: y } },
    }),
    await c.bind({
      kernel: accumulate,
      code: lowerWgsl(accumulate, lower),
      grid: [1, 1, 1],
      args: { acc: { buffer: acc }, y: { buffer: y } },
    }),
  ];
  return { step: c.step(kernels, { label: "decode" }), x, y, acc, w };
}

function f32(bytes: Uint8Array): Float32Array {
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

describe("a step bound once and replayed", () => {
  it("replays with new slot bytes match float64 step by step, State accumulating; replays create nothing", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const b = await build(ctx);
    const accWant = new Float64Array(N);
    let before = ctx.stats();
    for (let s = 0; s < 4; s++) {
      const xs = rand(100 + s, K, -2, 2);
      b.x.write(xs);
      await b.step.submit();
      const yWant = new Float64Array(N);
      for (let n = 0; n < N; n++) {
        let hv = 0;
        for (let k = 0; k < K; k++) hv += xs[k]! * bf16Value(b.w[n * K + k]!);
        yWant[n] = hv / (1 + Math.exp(-hv));
        accWant[n]! += yWant[n]!;
      }
      expect(relErr(f32(await b.y.read()), yWant), `step ${s} y`).toBeLessThan(1e-5);
      expect(relErr(f32(await b.acc.read()), accWant), `step ${s} acc`).toBeLessThan(1e-5);
      // The first reads make one staging buffer per buffer read; after that, nothing is created.
      if (s === 0) before = ctx.stats();
      else expect(ctx.stats()).toEqual(before);
    }
    b.step.dispose();
  });

  it("the same WGSL binds to the cached pipeline: one compile, then hits", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const gemv = synthesizeGemv(
      { name: "gemv_cache", K: 8, N: 8, weight: { dtype: "f32", layout: "nk" } },
      synthCaps(ctx.caps),
    );
    const code = lowerWgsl(gemv.kernel, codegenCaps(ctx.caps));
    const mk = async () => ({
      x: { buffer: await ctx!.buffers.create("io", 32, "x") },
      W: { buffer: await ctx!.buffers.create("io", 256, "W") },
      y: { buffer: await ctx!.buffers.create("io", 32, "y") },
    });
    const s0 = ctx.stats();
    const a = await ctx.bind({ kernel: gemv.kernel, code, grid: gemv.grid, args: await mk() });
    const b = await ctx.bind({ kernel: gemv.kernel, code, grid: gemv.grid, args: await mk() });
    const s1 = ctx.stats();
    expect(s1.pipelines - s0.pipelines).toBe(1);
    expect(s1.pipelineHits - s0.pipelineHits).toBe(1);
    expect(a.pipeline.pipeline).toBe(b.pipeline.pipeline);
    expect(a.pipeline.hash).toMatch(/^[0-9a-f]{16}$/);
  });

  it("per-dispatch timestamps: one timing per kernel, in order", async (t) => {
    if (ctx === undefined) return t.skip(why);
    if (!ctx.caps.timestamps) return t.skip("the adapter lacks timestamp-query");
    const b = await build(ctx);
    b.x.write(rand(7, K));
    const timings = await b.step.profile();
    expect(timings.map((x) => x.kernel)).toEqual(["gemv", "silu", "accumulate"]);
    for (const x of timings) expect(Number.isFinite(x.ns) && x.ns >= 0).toBe(true);
    console.log(
      `per-dispatch GPU time on ${ctx.caps.adapter}: ${timings.map((x) => `${x.kernel} ${x.ns} ns`).join(", ")}`,
    );
    // Profiling ran the step: its result equals a plain submit of the same slot bytes.
    const viaProfile = Array.from(f32(await b.y.read()));
    await b.step.submit();
    expect(Array.from(f32(await b.y.read()))).toEqual(viaProfile);
    b.step.dispose();
  });

  it("packed inputs (a binding limit of 2 storage buffers): a changing member is re-copied every step", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const n = 40;
    const ew = synthesizeElementwise(
      {
        name: "fma",
        shape: [n],
        inputs: ["a", "b", "c"].map((name) => ({ name, dtype: "f32" as const, shape: [n] })),
        nodes: [
          leaf("a"),
          leaf("b"),
          { op: "binary", fn: "mul", a: 0, b: 1 },
          leaf("c"),
          { op: "binary", fn: "add", a: 2, b: 3 },
        ],
        outputs: [{ name: "y", dtype: "f32", node: 4 }],
      },
      synthCaps(ctx.caps),
    );
    const code = lowerWgsl(ew.kernel, { ...codegenCaps(ctx.caps), maxStorageBuffers: 2 });
    const packed = code.bindings.find((s) => s.kind === "packed");
    // The slot input `c` must be among the packed members for this test to exercise the per-step copy.
    expect(
      packed?.kind === "packed" && packed.members.some((m) => m.buffer === "c"),
      "codegen packs c with the other inputs",
    ).toBe(true);
    const [av, bv] = [rand(1, n), rand(2, n)];
    const bufs = {
      a: await ctx.buffers.upload("weight", av, "a"),
      b: await ctx.buffers.upload("weight", bv, "b"),
      c: await ctx.buffers.create("slot", n * 4, "c"),
      y: await ctx.buffers.create("io", n * 4, "y"),
    };
    const bound = await ctx.bind({
      kernel: ew.kernel,
      code,
      grid: ew.grid,
      args: {
        a: { buffer: bufs.a },
        b: { buffer: bufs.b },
        c: { buffer: bufs.c, changes: true },
        y: { buffer: bufs.y },
      },
    });
    const step = ctx.step([bound]);
    for (const seed of [3, 4]) {
      const cv = rand(seed, n);
      bufs.c.write(cv);
      await step.submit();
      const want = Array.from(av, (v, i) => v * bv[i]! + cv[i]!);
      expect(relErr(f32(await bufs.y.read()), want), `seed ${seed}`).toBeLessThan(1e-6);
    }
  });
});
