// Synthesized GEMV and tiled GEMM (both weight layouts, f32/bf16/f16 weights, epilogues, batches) in the
// interpreter against graph-ir MatMul + elementwise primitives evaluated in float64.

import { Builder, evaluate, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { KernelgenError, cpuSynthCaps, synthesizeGemm, synthesizeGemv } from "@poot/kernelgen";
import type { Epilogue, SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randF32, rng, run } from "./helpers.js";

type WDtype = "f32" | "bf16" | "f16";

function randW(r: () => number, n: number, dt: WDtype): Float32Array | Uint16Array {
  if (dt === "f32") return randF32(r, n);
  const conv = dt === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
  return Uint16Array.from({ length: n }, () => conv(r() * 2 - 1));
}

/** Epilogue y = silu(acc + bias[n]) + res[m, n], stored as the output dtype. */
function biasSiluResidual(): Epilogue {
  return {
    inputs: [
      { name: "bias", dtype: "f32", kind: "col" },
      { name: "res", dtype: "f32", kind: "element" },
    ],
    nodes: [
      { op: "leaf", name: "acc" },
      { op: "leaf", name: "bias" },
      { op: "binary", fn: "add", a: 0, b: 1 }, // 2: z
      { op: "unary", fn: "neg", a: 2 },
      { op: "unary", fn: "exp", a: 3 },
      { op: "const", value: 1, type: "f32" },
      { op: "binary", fn: "add", a: 4, b: 5 },
      { op: "binary", fn: "div", a: 2, b: 6 },
      { op: "leaf", name: "res" },
      { op: "binary", fn: "add", a: 7, b: 8 },
    ],
    node: 9,
  };
}

/** Oracle: x [B, M, K] @ W (layout) [+ epilogue]; returns y and Σ|terms| for the tolerance. */
function oracleMatmul(
  B: number,
  M: number,
  K: number,
  N: number,
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  wDtype: WDtype,
  layout: "nk" | "kn",
  extra?: { bias: ArrayLike<number>; res: ArrayLike<number>; out: "f32" | "bf16" },
) {
  const g = new Builder();
  const xr = g.const("x", "f32", [B, M, K]);
  const wRaw = g.const("w", wDtype, layout === "nk" ? [N, K] : [K, N]);
  const wf = g.f32(wRaw);
  const wkn = layout === "nk" ? g.transpose(wf, [1, 0]) : wf;
  const wb = g.broadcast(g.reshape(wkn, [1, K, N]), [B, K, N]);
  const acc = g.matmul(xr, wb);
  let y: Ref = acc;
  if (extra !== undefined) {
    const z = g.add(acc, g.const("bias", "f32", [N]));
    y = g.add(g.silu(z), g.const("res", "f32", [B, M, N]));
    if (extra.out === "bf16") y = g.cast(y, "bf16");
  }
  g.output("y", y);
  g.output("s", g.matmul(g.unary("Abs", xr), g.unary("Abs", wb)));
  const consts: Record<string, ArrayLike<number>> = {
    x,
    w,
    ...(extra === undefined ? {} : { bias: extra.bias, res: extra.res }),
  };
  const o = evaluate(g.build(), { consts }).outputs;
  return { y: o.y!.data, s: o.s!.data };
}

const CAPS_SG: SynthCaps = { maxWorkgroup: 256, sharedBytes: 16384, subgroupSize: 32 };
const CAPS_TREE: SynthCaps = { maxWorkgroup: 128, sharedBytes: 8192 };
const CAPS_CPU: SynthCaps = cpuSynthCaps();
const capsLabel = (c: SynthCaps): string =>
  c.serialThreads ? "cpu: serial threads" : c.subgroupSize === undefined ? "tree" : "subgroups";

describe("synthesized GEMV", () => {
  const cases: [number, number, number, WDtype, "nk" | "kn", SynthCaps][] = [
    [1, 1, 1, "f32", "nk", CAPS_TREE],
    [1, 70, 33, "bf16", "nk", CAPS_SG],
    [3, 129, 40, "f16", "nk", CAPS_TREE],
    [8, 16, 5, "f32", "nk", CAPS_SG],
    [1, 1, 1, "f32", "kn", CAPS_TREE],
    [1, 300, 65, "bf16", "kn", CAPS_SG],
    [4, 33, 7, "f16", "kn", CAPS_TREE],
    // CPU: a thread per row, four vec4 sums over load4 reads (ragged K and N included).
    [1, 1, 1, "f32", "nk", CAPS_CPU],
    [1, 72, 33, "bf16", "nk", CAPS_CPU],
    [3, 129, 40, "f16", "nk", CAPS_CPU],
    [8, 16, 9, "f32", "nk", CAPS_CPU],
    [2, 256, 17, "f16", "nk", CAPS_CPU],
    [1, 40, 5, "f32", "kn", CAPS_CPU],
    // CPU SIMD loads: K = 75 runs the 16-wide loop, the 4-wide loop and a 3-element tail; K = 3 only the tail.
    [1, 75, 6, "f16", "nk", CAPS_CPU],
    [2, 75, 1, "bf16", "nk", CAPS_CPU],
    [1, 3, 5, "f32", "nk", CAPS_CPU],
    // CPU register tiles (decision 2305): tiles of 8 rows over grid z, the last one ragged, one vec4 sum per row.
    [19, 75, 6, "f16", "nk", CAPS_CPU],
    [9, 64, 11, "f32", "nk", CAPS_CPU],
    [16, 132, 3, "bf16", "nk", CAPS_CPU],
  ];
  for (const [B, K, N, dt, layout, caps] of cases) {
    it(`B=${B} K=${K} N=${N} ${dt} ${layout} (${capsLabel(caps)})`, () => {
      const r = rng(B * 100000 + K * 100 + N);
      const x = randF32(r, B * K);
      const w = randW(r, K * N, dt);
      const s = synthesizeGemv({ name: "gemv", K, N, batch: B, weight: { dtype: dt, layout } }, caps);
      const y = poisoned(s.kernel, "y", B * N);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, W: w, y },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      const ref = oracleMatmul(B, 1, K, N, x, w, dt, layout);
      expectClose(y as Float32Array, ref.y, ref.s);
    });
  }

  // caps.vectorLoads (CUDA): [N, K] half-precision weights read as vec4<u32> words, x as vec4<f32>.
  const CAPS_VEC: SynthCaps = { ...CAPS_SG, vectorLoads: true };
  // Words in flight per lane (decision 0805): K/8 words over 32 lanes, at most 8 over all heads.
  for (const [B, K, N, dt, heads, unroll] of [
    [1, 512, 19, "bf16", 1, 2],
    [3, 256, 9, "f16", 1, 1],
    [2, 512, 7, "bf16", 2, 2],
    [1, 2048, 5, "bf16", 1, 8],
    [2, 1024, 6, "bf16", 2, 4],
    [1, 4096, 3, "f16", 1, 8],
  ] as const) {
    it(`16-byte loads: B=${B} K=${K} N=${N} ${dt} heads=${heads} (unroll ${unroll})`, () => {
      const r = rng(B * 7 + K + N + heads);
      const x = randF32(r, B * K);
      const ws = Array.from({ length: heads }, () => randW(r, N * K, dt) as Uint16Array);
      // heads=2: y = acc · acc1 (each accumulation checked through the product's error bound).
      const epilogue: Epilogue | undefined =
        heads === 2
          ? {
              inputs: [],
              nodes: [
                { op: "leaf", name: "acc" },
                { op: "leaf", name: "acc1" },
                { op: "binary", fn: "mul", a: 0, b: 1 },
              ],
              node: 2,
            }
          : undefined;
      const s = synthesizeGemv(
        {
          name: "gemv_vec",
          K,
          N,
          batch: B,
          heads,
          weight: { dtype: dt, layout: "nk" },
          ...(epilogue === undefined ? {} : { epilogue }),
        },
        CAPS_VEC,
      );
      expect(s.kernel.buffers.find((p) => p.name === "W")?.elem).toBe("vec4<u32>");
      const y = poisoned(s.kernel, "y", B * N);
      const wb = Object.fromEntries(ws.map((w, h) => [h === 0 ? "W" : `W${h}`, new Uint32Array(w.buffer)]));
      run(s.kernel, { grid: [...s.grid], buffers: { x, ...wb, y }, subgroupSize: 32 });
      const refs = ws.map((w) => oracleMatmul(B, 1, K, N, x, w, dt, "nk"));
      if (heads === 1) expectClose(y as Float32Array, refs[0]!.y, refs[0]!.s);
      else {
        const [g, u] = refs as [(typeof refs)[0], (typeof refs)[0]];
        const want = Array.from(g.y, (a, i) => Math.fround(a * u.y[i]!));
        expectClose(
          y as Float32Array,
          want,
          Array.from(g.s, (sg, i) => sg * Math.abs(u.y[i]!) + Math.abs(g.y[i]!) * u.s[i]! + Math.abs(want[i]!)),
        );
      }
    });
  }
  it("16-byte loads need K % (8 · lanes) = 0: K = 200 keeps the scalar form", () => {
    const s = synthesizeGemv(
      { name: "g", K: 200, N: 4, weight: { dtype: "bf16", layout: "nk" } },
      { ...CAPS_SG, vectorLoads: true },
    );
    expect(s.kernel.buffers.find((p) => p.name === "W")?.elem).not.toBe("vec4<u32>");
  });

  it("with a bias + SiLU + residual epilogue stored as bf16", () => {
    const [B, K, N] = [2, 37, 19];
    const r = rng(9);
    const x = randF32(r, B * K),
      w = randW(r, N * K, "bf16"),
      bias = randF32(r, N),
      res = randF32(r, B * N);
    const s = synthesizeGemv(
      {
        name: "gemv_ep",
        K,
        N,
        batch: B,
        weight: { dtype: "bf16", layout: "nk" },
        outDtype: "bf16",
        epilogue: biasSiluResidual(),
      },
      CAPS_SG,
    );
    const y = poisoned(s.kernel, "y", B * N);
    run(s.kernel, { grid: [...s.grid], buffers: { x, W: w, bias, res, y }, subgroupSize: 32 });
    const ref = oracleMatmul(B, 1, K, N, x, w, "bf16", "nk", { bias, res, out: "bf16" });
    // bf16 storage: f32 accumulation-order noise may move a value across a rounding boundary; allow one bf16 ulp.
    const got = Array.from(y as Uint16Array, (h) => new Float32Array(new Uint32Array([h << 16]).buffer)[0]!);
    expectClose(
      got,
      ref.y,
      Array.from(ref.y, (v) => Math.abs(v)),
      2 ** -7,
      1e-6,
    );
  });

  it("on the CPU caps a nk GEMV has no workgroup memory and no barrier (threads run one after another)", () => {
    const s = synthesizeGemv({ name: "g", K: 64, N: 30, weight: { dtype: "f16", layout: "nk" } }, CAPS_CPU);
    expect(s.kernel.shared).toHaveLength(0);
    expect(JSON.stringify(s.kernel.body)).not.toContain('"s":"barrier"');
    expect(s.grid).toEqual([Math.ceil(30 / 8), 1, 1]);
  });

  for (const [layout, caps] of [
    ["nk", CAPS_SG],
    ["kn", CAPS_TREE],
    ["nk", CAPS_CPU],
  ] as const) {
    it(`two weights sharing x (gate and up, ${layout}, ${capsLabel(caps)}) with a SwiGLU epilogue: silu(acc) · acc1`, () => {
      // On the CPU 11 rows: register tiles of 8 rows per gate/up row pair (decision 2305), the second ragged.
      const [B, K, N] = [caps === CAPS_CPU ? 11 : 3, 40, 21];
      const r = rng(caps === CAPS_CPU ? 93 : layout === "nk" ? 91 : 92);
      const x = randF32(r, B * K),
        wg = randW(r, N * K, "bf16"),
        wu = randW(r, N * K, "bf16");
      const epilogue: Epilogue = {
        inputs: [],
        nodes: [
          { op: "leaf", name: "acc" },
          { op: "unary", fn: "neg", a: 0 },
          { op: "unary", fn: "exp", a: 1 },
          { op: "const", value: 1, type: "f32" },
          { op: "binary", fn: "add", a: 2, b: 3 },
          { op: "binary", fn: "div", a: 0, b: 4 },
          { op: "leaf", name: "acc1" },
          { op: "binary", fn: "mul", a: 5, b: 6 },
        ],
        node: 7,
      };
      const s = synthesizeGemv(
        { name: "gate_up", K, N, batch: B, heads: 2, weight: { dtype: "bf16", layout }, epilogue },
        caps,
      );
      expect(s.kernel.buffers.map((p) => p.name)).toEqual(["x", "W", "W1", "y"]);
      const y = poisoned(s.kernel, "y", B * N);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, W: wg, W1: wu, y },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      const g = oracleMatmul(B, 1, K, N, x, wg, "bf16", layout);
      const u = oracleMatmul(B, 1, K, N, x, wu, "bf16", layout);
      const want = Array.from(g.y, (a, i) => Math.fround(Math.fround(a / (1 + Math.exp(-a))) * u.y[i]!));
      // Error of silu(g)·u from the two accumulations: |u|·Σ|g terms| + |silu(g)|·Σ|u terms| (silu' ≤ 1.1).
      const scale = Array.from(
        g.s,
        (sg, i) => 1.1 * sg * Math.abs(u.y[i]!) + Math.abs(g.y[i]!) * u.s[i]! + Math.abs(want[i]!),
      );
      expectClose(y as Float32Array, want, scale);
    });
  }

  it("on the CPU caps more rows than a tile run as tiles of 8 rows over grid z", () => {
    const s = synthesizeGemv({ name: "g", K: 64, N: 30, batch: 19, weight: { dtype: "f16", layout: "nk" } }, CAPS_CPU);
    expect(s.grid).toEqual([Math.ceil(30 / 8), 1, 3]);
  });

  it("refuses a batch above 8 (off the CPU) and an integer weight with typed errors", () => {
    expect(() =>
      synthesizeGemv({ name: "g", K: 4, N: 4, batch: 9, weight: { dtype: "f32", layout: "nk" } }, CAPS_SG),
    ).toThrow(KernelgenError);
    expect(() => synthesizeGemv({ name: "g", K: 4, N: 4, weight: { dtype: "i32", layout: "nk" } }, CAPS_SG)).toThrow(
      expect.objectContaining({ code: "bad_dtype" }),
    );
  });
});

describe("synthesized tiled GEMM", () => {
  const cases: [number, number, number, number, WDtype, "nk" | "kn", SynthCaps][] = [
    [1, 1, 1, 1, "f32", "kn", CAPS_TREE],
    [1, 17, 20, 33, "bf16", "nk", CAPS_SG],
    [1, 70, 24, 9, "f32", "kn", CAPS_SG],
    [2, 33, 18, 65, "f16", "nk", CAPS_TREE],
    [1, 130, 5, 140, "f32", "kn", { maxWorkgroup: 256, sharedBytes: 16384 }],
  ];
  for (const [B, M, K, N, dt, layout, caps] of cases) {
    it(`batch=${B} M=${M} K=${K} N=${N} ${dt} ${layout} (max ${caps.maxWorkgroup} threads, ${caps.sharedBytes} B shared)`, () => {
      const r = rng(M * 1000 + K * 10 + N + B);
      const a = randF32(r, B * M * K);
      const w = randW(r, K * N, dt);
      const s = synthesizeGemm({ name: "gemm", M, N, K, batch: B, weight: { dtype: dt, layout } }, caps);
      const C = poisoned(s.kernel, "C", B * M * N);
      run(s.kernel, { grid: [...s.grid], buffers: { A: a, W: w, C } });
      const ref = oracleMatmul(B, M, K, N, a, w, dt, layout);
      expectClose(C as Float32Array, ref.y, ref.s);
    });
  }

  it("picks larger micro-tiles for larger outputs and shrinks TK to fit shared memory", () => {
    expect(
      synthesizeGemm(
        { name: "g", M: 256, N: 256, K: 64, weight: { dtype: "f32", layout: "kn" } },
        { maxWorkgroup: 256, sharedBytes: 32768 },
      ).tiling,
    ).toEqual({ TM: 64, TN: 64, TK: 16, RM: 4, RN: 4 });
    expect(
      synthesizeGemm(
        { name: "g", M: 256, N: 256, K: 64, weight: { dtype: "f32", layout: "kn" } },
        { maxWorkgroup: 256, sharedBytes: 2048 },
      ).tiling.TK,
    ).toBe(4);
    expect(() =>
      synthesizeGemm(
        { name: "g", M: 256, N: 256, K: 64, weight: { dtype: "f32", layout: "kn" } },
        { maxWorkgroup: 256, sharedBytes: 256 },
      ),
    ).toThrow(expect.objectContaining({ code: "exceeds_caps" }));
  });

  it("with the epilogue (bias + SiLU + residual), f32 out", () => {
    const [M, K, N] = [5, 21, 18];
    const r = rng(31);
    const a = randF32(r, M * K),
      w = randW(r, K * N, "f32"),
      bias = randF32(r, N),
      res = randF32(r, M * N);
    const s = synthesizeGemm(
      { name: "gemm_ep", M, N, K, weight: { dtype: "f32", layout: "kn" }, epilogue: biasSiluResidual() },
      CAPS_SG,
    );
    const C = poisoned(s.kernel, "C", M * N);
    run(s.kernel, { grid: [...s.grid], buffers: { A: a, W: w, bias, res, C } });
    const ref = oracleMatmul(1, M, K, N, a, w, "f32", "kn", { bias, res, out: "f32" });
    expectClose(
      C as Float32Array,
      ref.y,
      Array.from(ref.s, (v) => v + 1),
    );
  });
});
