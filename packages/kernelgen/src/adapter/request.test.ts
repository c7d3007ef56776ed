// synthesizeRequest's refusals are typed, and its caps mapping follows DeviceCaps: unit tests on hand-made requests.

import { describe, expect, it } from "vitest";
import type { Access, KernelRequest } from "@poot/graph-plan";
import { defaultTarget } from "@poot/graph-plan";
import { bf16BitsToF32, f32ToBf16Bits, interpret } from "@poot/kernel-dsl";
import { KernelgenError } from "../errors.js";
import { synthCapsFrom, synthesizeRequest } from "./request.js";

const dense = (value: number, shape: number[], dtype: Access["dtype"] = "f32"): Access => {
  const strides = shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1));
  return { value, root: value, dtype, shape, strides, offset: 0 };
};

const CAPS = { maxWorkgroup: 64, sharedBytes: 16384 };

function req(
  kind: KernelRequest["kind"],
  op: string,
  inputs: Access[],
  output: Access,
  params: Record<string, unknown> = {},
): KernelRequest {
  return { kind, op, inputs, output, params: params as never, region: null, emulated16: false };
}

describe("synthesizeRequest", () => {
  it("maps DeviceCaps to SynthCaps (subgroups when wider than one lane)", () => {
    const c = synthCapsFrom(defaultTarget("wgpu").caps as never);
    expect(c).toEqual({ maxWorkgroup: 256, subgroupSize: 32, sharedBytes: 16384, maxGridDim: 65535, computeUnits: 32 });
  });

  it("splits decode attention (transient partials + a combine dispatch) only when the caps allow it", () => {
    const q = dense(0, [1, 4, 1, 8]),
      k = dense(1, [1, 2, 512, 8]),
      v = dense(2, [1, 2, 512, 8]),
      lim = dense(3, [1, 1, 1, 1], "i32");
    const r = req("attention", "Attention", [q, k, v, lim], dense(4, [1, 4, 1, 8]), {
      scale: 1,
      softCap: null,
      mask: "causal",
      window: 0,
      groups: 2,
    });
    const caps = { ...CAPS, computeUnits: 132 };
    expect(synthesizeRequest(r, caps).then).toBeUndefined();
    const s = synthesizeRequest(r, { ...caps, splitAttention: true });
    // 4 rows on 132 SMs, 512 keys: min(ceil(264 / 4), 512 / 64) = 8 splits of (max, sum, acc[8]).
    expect(s.transient).toEqual({ buffer: "part", elements: 4 * 8 * 10 });
    expect(s.bindings.map((b) => b.buffer)).toEqual(["q", "k", "v", "limit"]);
    expect(s.then?.bindings).toEqual([{ buffer: "out", source: { kind: "output" } }]);
    expect(s.then?.kernel.buffers.map((b) => b.name)).toEqual(["part", "out"]);
  });

  it("passes matrix-unit shapes through, and picks the tensor-core GEMM for a bf16-weight prefill contraction only where caps list a unit it issues", () => {
    const cuda = synthCapsFrom(defaultTarget("cuda").caps as never);
    expect(cuda.matrixShapes).toContainEqual({ m: 16, n: 8, k: 16, input: "bf16" });
    const r = (w: Access["dtype"]) =>
      req("gemm", "ContractionEpilogue", [dense(0, [24, 40]), dense(1, [48, 40], w)], dense(2, [24, 48]), {
        transposeB: true,
        accDtype: "f32",
        epilogue: null,
      });
    const hasMma = (c: Parameters<typeof synthesizeRequest>[1], w: Access["dtype"]): boolean =>
      JSON.stringify(synthesizeRequest(r(w), c).kernel.body).includes('"s":"mma"');
    expect(hasMma(cuda, "bf16")).toBe(true);
    expect(synthesizeRequest(r("bf16"), cuda).subgroupSize).toBe(32);
    expect(hasMma(cuda, "f32")).toBe(false);
    for (const kind of ["wgpu", "vulkan", "cpu"] as const)
      expect(hasMma(synthCapsFrom(defaultTarget(kind).caps as never), "bf16")).toBe(false);
    // ROCm's default (an MI300X) has MFMA: 64-lane subgroups (decision 2401).
    const rocm = synthCapsFrom(defaultTarget("rocm").caps as never);
    expect(hasMma(rocm, "bf16")).toBe(true);
    expect(synthesizeRequest(r("bf16"), rocm).subgroupSize).toBe(64);

    // The chosen kernel, bound as the adapter says, runs in the interpreter and matches an f64 product of the inputs.
    const rk = synthesizeRequest(r("bf16"), cuda);
    expect(rk.bindings.map((b) => [b.buffer, b.source])).toEqual([
      ["A", { kind: "input", index: 0 }],
      ["W", { kind: "input", index: 1 }],
      ["C", { kind: "output" }],
    ]);
    let seed = 3;
    const rnd = (): number => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
    const A = Float32Array.from({ length: 24 * 40 }, rnd);
    const W = Uint16Array.from({ length: 48 * 40 }, () => f32ToBf16Bits(rnd()));
    const C = new Float32Array(24 * 48).fill(Number.NaN);
    interpret(rk.kernel, { grid: [...rk.grid], buffers: { A, W, C }, subgroupSize: rk.subgroupSize ?? 0 });
    let worst = 0;
    for (let m = 0; m < 24; m++)
      for (let n = 0; n < 48; n++) {
        let want = 0,
          scale = 0;
        for (let k = 0; k < 40; k++) {
          const t = (A[m * 40 + k] as number) * bf16BitsToF32(W[n * 40 + k] as number);
          want += t;
          scale += Math.abs(t);
        }
        worst = Math.max(worst, Math.abs((C[m * 48 + n] as number) - want) / scale);
      }
    expect(worst).toBeLessThan(1e-5);
  });

  it("refuses attention with an unknown mask kind, naming the mask", () => {
    const q = dense(0, [1, 2, 1, 8]),
      k = dense(1, [1, 2, 4, 8]),
      v = dense(2, [1, 2, 4, 8]),
      m = dense(3, [1, 1, 1, 4], "bool");
    const r = req("attention", "Attention", [q, k, v, m], dense(4, [1, 2, 1, 8]), {
      scale: 1,
      softCap: null,
      mask: "alibi",
      maskApply: "select",
      window: 0,
      groups: 1,
    });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(KernelgenError);
    expect(() => synthesizeRequest(r, CAPS)).toThrow(
      expect.objectContaining({ code: "bad_param", context: expect.objectContaining({ param: "mask" }) }),
    );
  });

  it("leaves two-stage argmax to the imported library", () => {
    const r = req("reduction-row", "ArgMaxChunk", [dense(0, [2, 100])], dense(1, [2, 4], "i32"), { chunk: 32 });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(expect.objectContaining({ code: "bad_param" }));
  });

  it("serves a strided (transposed view) weight through the inline contraction instead of the fixed-layout GEMV", () => {
    const w: Access = { ...dense(1, [8, 16]), strides: [1, 8] };
    const r = req("gemv", "ContractionEpilogue", [dense(0, [1, 16]), w], dense(2, [1, 8]), {
      transposeB: true,
      accDtype: "f32",
      epilogue: null,
    });
    expect(synthesizeRequest(r, CAPS).bindings.map((x) => x.buffer)).toEqual(["in0", "in1", "out"]);
  });

  it("refuses a strided tensor where RoPE needs a dense one", () => {
    const x: Access = { ...dense(0, [2, 8]), strides: [1, 2] };
    const r = req("rope", "Rope", [x, dense(1, [2, 8]), dense(2, [2, 8])], dense(3, [2, 8]), {
      style: "half",
      dtype: "f32",
    });
    expect(() => synthesizeRequest(r, CAPS)).toThrow(expect.objectContaining({ code: "bad_shape" }));
  });

  it("binds every kernel buffer to a request input or the output", () => {
    const r = req("gemv", "ContractionEpilogue", [dense(0, [2, 16]), dense(1, [8, 16])], dense(2, [2, 8]), {
      transposeB: true,
      accDtype: "f32",
      epilogue: null,
    });
    const k = synthesizeRequest(r, CAPS);
    expect(k.bindings).toEqual([
      { buffer: "x", source: { kind: "input", index: 0 } },
      { buffer: "W", source: { kind: "input", index: 1 } },
      { buffer: "y", source: { kind: "output" } },
    ]);
  });
});

describe("regions with reductions outside row kernels", () => {
  it("a Reduce over a middle axis (non-keepdim) inside an elementwise region, and as a bare op", async () => {
    const { Builder, evaluate } = await import("@poot/graph-ir");
    const { interpret } = await import("@poot/kernel-dsl");
    const x = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i) * 3);
    const w = Float32Array.from({ length: 4 }, (_, i) => i - 1.5);
    const region = {
      nodes: [
        {
          op: "Reduce",
          args: [{ in: 0 }],
          params: { kind: "max", axes: [1], keepdim: false },
          dtype: "f32" as const,
          shape: [2, 4],
        },
        { op: "Mul", args: [{ node: 0 }, { in: 1 }], params: {}, dtype: "f32" as const, shape: [2, 4] },
      ],
      result: 1,
    };
    const r: KernelRequest = {
      kind: "elementwise",
      op: "Fused",
      inputs: [dense(0, [2, 3, 4]), dense(1, [4])],
      output: dense(2, [2, 4]),
      params: { region } as never,
      region: region as never,
      emulated16: false,
    };
    const k = synthesizeRequest(r, CAPS);
    const out = new Float32Array(8).fill(NaN);
    interpret(k.kernel, { grid: [...k.grid], buffers: { in0: x, in1: w, out } });
    const g = new Builder();
    g.output("y", g.mul(g.reduce("max", g.const("x", "f32", [2, 3, 4]), [1]), g.const("w", "f32", [4])));
    expect(Array.from(out)).toEqual(Array.from(evaluate(g.build(), { consts: { x, w } }).outputs.y!.data));
    // The bare op over a non-last axis (argmax, numpy order) is served the same way.
    const ra: KernelRequest = {
      kind: "reduction-row",
      op: "Reduce",
      inputs: [dense(0, [2, 3, 4])],
      output: dense(1, [2, 4], "i32"),
      params: { kind: "argmax", axes: [1], keepdim: false } as never,
      region: null,
      emulated16: false,
    };
    const ka = synthesizeRequest(ra, CAPS);
    const idx = new Int32Array(8).fill(-7);
    interpret(ka.kernel, { grid: [...ka.grid], buffers: { in0: x, out: idx } });
    const ga = new Builder();
    ga.output("i", ga.argmax(ga.const("x", "f32", [2, 3, 4]), 1));
    expect(Array.from(idx)).toEqual(Array.from(evaluate(ga.build(), { consts: { x } }).outputs.i!.data));
  });
});

describe("requests for unfused primitives", () => {
  it("a primitive whose literal operand is missing from the request is a typed error, not a malformed kernel", () => {
    const r: KernelRequest = {
      kind: "elementwise",
      op: "Mul",
      inputs: [dense(0, [2, 3])],
      output: dense(1, [2, 3]),
      params: {} as never,
      region: null,
      emulated16: false,
    };
    expect(() => synthesizeRequest(r, CAPS)).toThrow(
      expect.objectContaining({ code: "bad_param", message: expect.stringContaining("literal operand") }),
    );
  });
});

describe("row regions whose reduction is transposed before the output", () => {
  it("x / sqrt(sum(x²)) per [t, h] row, then Transpose to [h, t, d] (qk-norm before RoPE), equals evaluate", async () => {
    const { Builder, evaluate } = await import("@poot/graph-ir");
    const { interpret } = await import("@poot/kernel-dsl");
    const [T, H, D] = [3, 5, 8];
    const x = Float32Array.from({ length: T * H * D }, (_, i) => Math.sin(i * 0.7) * 2);
    const region = {
      nodes: [
        { op: "Mul", args: [{ in: 0 }, { in: 0 }], params: {}, dtype: "f32" as const, shape: [T, H, D] },
        {
          op: "Reduce",
          args: [{ node: 0 }],
          params: { kind: "sum", axes: [-1], keepdim: true },
          dtype: "f32" as const,
          shape: [T, H, 1],
        },
        { op: "Sqrt", args: [{ node: 1 }], params: {}, dtype: "f32" as const, shape: [T, H, 1] },
        { op: "Recip", args: [{ node: 2 }], params: {}, dtype: "f32" as const, shape: [T, H, 1] },
        { op: "Mul", args: [{ in: 0 }, { node: 3 }], params: {}, dtype: "f32" as const, shape: [T, H, D] },
        { op: "Transpose", args: [{ node: 4 }], params: { perm: [1, 0, 2] }, dtype: "f32" as const, shape: [H, T, D] },
      ],
      result: 5,
    };
    const r: KernelRequest = {
      kind: "reduction-row",
      op: "FusedRow",
      inputs: [dense(0, [T, H, D])],
      output: dense(1, [H, T, D]),
      params: { region } as never,
      region: region as never,
      emulated16: false,
    };
    const k = synthesizeRequest(r, { ...CAPS, subgroupSize: 8 });
    const out = new Float32Array(T * H * D).fill(NaN);
    interpret(k.kernel, {
      grid: [...k.grid],
      buffers: { in0: x, out },
      ...(k.subgroupSize === undefined ? {} : { subgroupSize: k.subgroupSize }),
    });
    const g = new Builder();
    const xv = g.const("x", "f32", [T, H, D]);
    g.output("y", g.transpose(g.mul(xv, g.recip(g.sqrt(g.reduce("sum", g.mul(xv, xv), [-1], true)))), [1, 0, 2]));
    const want = evaluate(g.build(), { consts: { x } }).outputs.y!.data;
    for (let i = 0; i < want.length; i++)
      expect(Math.abs(out[i]! - want[i]!), `element ${i}`).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[i]!)));
  });
});
