// The gate-routed IndexedMatMul kernels (routed experts from graph-plan) in the interpreter, against graph-ir's
// float64 evaluation of the dense primitive chain the tracers emit (every expert on every token, gate-weighted).

import { Builder, evaluate, isPacked, stridesOf } from "@poot/graph-ir";
import type { DType, HostData, Ref } from "@poot/graph-ir";
import type { Access, KernelRequest, Region } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { synthesizeRequest } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { Q8_0, randomBlocks, toWords } from "./formats.js";
import { expectClose, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

const CAPS: SynthCaps = { maxWorkgroup: 64, sharedBytes: 8192 };
const WIDE: SynthCaps = { maxWorkgroup: 256, sharedBytes: 49152, subgroupSize: 32 };

let nextValue = 0;
const access = (dtype: DType, shape: readonly number[]): Access => {
  const v = nextValue++;
  return { value: v, root: v, dtype, shape, strides: stridesOf(shape), offset: 0 };
};

/** silu(g) · u over two accumulators [T, S, F], the chain the tracers emit. */
function swiglu(shape: number[]): Region {
  const n = (op: string, args: Region["nodes"][number]["args"]): Region["nodes"][number] => ({
    op,
    args,
    params: {},
    dtype: "f32",
    shape,
  });
  return {
    nodes: [
      n("Neg", [{ in: 0 }]),
      n("Exp", [{ node: 0 }]),
      n("Add", [{ node: 1 }, { lit: 1, dtype: "f32" }]),
      n("Div", [{ in: 0 }, { node: 2 }]),
      n("Mul", [{ node: 3 }, { in: 1 }]),
    ],
    result: 4,
  };
}

/** Gates [T, E]: S distinct experts per row with positive weights, zero elsewhere; row 0 has one chosen gate at 0. */
function topKGates(r: () => number, T: number, E: number, S: number): { gates: Float32Array; chosen: number[][] } {
  const gates = new Float32Array(T * E);
  const chosen: number[][] = [];
  for (let t = 0; t < T; t++) {
    const picks = [...Array(E).keys()]
      .sort(() => r() - 0.5)
      .slice(0, S)
      .sort((a, b) => a - b);
    for (const e of picks) gates[t * E + e] = 0.05 + r();
    // An underflowed gate: chosen by the router but zero, so the routed kernel leaves its slot empty.
    if (t === 0 && S > 1) gates[t * E + picks[S - 1]!] = 0;
    chosen.push(picks.filter((e) => gates[t * E + e] !== 0));
  }
  return { gates, chosen };
}

type WKind = "f32" | "bf16" | "q8_0";
const wDtype = (k: WKind): DType => (k === "q8_0" ? { packed: Q8_0 } : k);
function weights(
  r: () => number,
  k: WKind,
  n: number,
): { host: HostData; kernel: Float32Array | Uint16Array | Uint32Array } {
  if (k === "f32") {
    const w = randF32(r, n, 0.5);
    return { host: w, kernel: w };
  }
  if (k === "bf16") {
    const w = randBf16(r, n);
    return { host: w, kernel: w };
  }
  const bytes = randomBlocks(r, Q8_0, n / Q8_0.blockSize);
  return { host: bytes as unknown as HostData, kernel: toWords(bytes) };
}

/** f32 view of a weight const for the dense oracle. */
const widen = (b: Builder, w: Ref): Ref => (isPacked(w.dtype) ? b.decodePacked(w) : b.f32(w));

function launch(
  req: KernelRequest,
  caps: SynthCaps,
  inputs: readonly (Float32Array | Uint16Array | Uint32Array)[],
  n: number,
): Float32Array {
  const k = synthesizeRequest(req, caps, "routed");
  const out = poisoned(k.kernel, "out", n) as Float32Array;
  const buffers: Record<string, Float32Array | Uint16Array | Uint32Array> = { out };
  for (const bnd of k.bindings) if (bnd.source.kind === "input") buffers[bnd.buffer] = inputs[bnd.source.index]!;
  run(k.kernel, {
    grid: [...k.grid],
    buffers,
    ...(k.subgroupSize === undefined ? {} : { subgroupSize: k.subgroupSize }),
  });
  return out;
}

describe("gate-routed IndexedMatMul: gate/up with SwiGLU per slot", () => {
  const cases: [number, number, number, number, number, WKind, SynthCaps][] = [
    [1, 4, 2, 8, 5, "f32", CAPS],
    [3, 8, 2, 33, 17, "bf16", WIDE],
    [5, 6, 3, 64, 7, "q8_0", CAPS],
    [2, 3, 1, 1, 1, "f32", CAPS],
  ];
  for (const [T, E, S, D, F, wk, caps] of cases) {
    it(`T=${T} E=${E} top-${S} D=${D} F=${F}, ${wk} experts: each slot equals the dense expert's value, empty slots 0`, () => {
      const r = rng(T * 1000 + E * 100 + D + F);
      const x = randF32(r, T * D);
      const wg = weights(r, wk, E * F * D),
        wu = weights(r, wk, E * F * D);
      const { gates, chosen } = topKGates(r, T, E, S);
      const req: KernelRequest = {
        kind: "indexed-matmul",
        op: "IndexedMatMul",
        region: null,
        emulated16: false,
        inputs: [
          access("f32", [T, D]),
          access(wDtype(wk), [E, F, D]),
          access(wDtype(wk), [E, F, D]),
          access("f32", [T, E]),
        ],
        output: access("f32", [T, S, F]),
        params: {
          accDtype: "f32",
          heads: 2,
          epilogue: swiglu([T, S, F]),
          routing: { by: "gates", slots: S, combine: "slots", post: null },
        } as never,
      };
      const got = launch(req, caps, [x, wg.kernel, wu.kernel, gates], T * S * F);
      // Oracle: every expert on every token, as the tracers emit it.
      const b = new Builder();
      const xe = b.broadcast(b.reshape(b.const("x", "f32", [T, D]), [1, T, D]), [E, T, D]);
      const g = b.matmul(xe, b.transpose(widen(b, b.const("wg", wDtype(wk), [E, F, D])), [0, 2, 1]));
      const u = b.matmul(xe, b.transpose(widen(b, b.const("wu", wDtype(wk), [E, F, D])), [0, 2, 1]));
      b.output("h", b.mul(b.div(g, b.add(b.exp(b.neg(g)), 1)), u));
      const h = evaluate(b.build(), { consts: { x, wg: wg.host, wu: wu.host } }).outputs.h!.data;
      const want = new Float64Array(T * S * F);
      chosen.forEach((es, t) =>
        es.forEach((e, s) => {
          for (let n = 0; n < F; n++) want[(t * S + s) * F + n] = h[(e * T + t) * F + n]!;
        }),
      );
      expectClose(got, want, Math.max(1e-3, ...Array.from(h, Math.abs)), 2e-5);
    });
  }
});

describe("gate-routed IndexedMatMul: down projection, gate weighting, slot sum and residual", () => {
  const cases: [number, number, number, number, number, WKind, SynthCaps][] = [
    [1, 4, 2, 9, 5, "f32", CAPS],
    [4, 8, 3, 17, 33, "bf16", WIDE],
    [3, 6, 2, 7, 64, "q8_0", CAPS],
    [2, 2, 1, 1, 1, "f32", CAPS],
  ];
  for (const [T, E, S, D, F, wk, caps] of cases) {
    it(`T=${T} E=${E} top-${S} D=${D} F=${F}, ${wk} experts: equals Σ_e gate·(h_e·W_e) + residual over all experts`, () => {
      const r = rng(T * 7 + E * 11 + D * 13 + F);
      const hd = randF32(r, E * T * F);
      const wd = weights(r, wk, E * D * F);
      const resid = randF32(r, T * D);
      const { gates, chosen } = topKGates(r, T, E, S);
      // Per-slot rows: the dense activation of each chosen expert; empty slots hold garbage the kernel must skip.
      const hs = Float32Array.from({ length: T * S * F }, () => 1e30);
      chosen.forEach((es, t) =>
        es.forEach((e, s) => hs.set(hd.subarray((e * T + t) * F, (e * T + t + 1) * F), (t * S + s) * F)),
      );
      const weighting: Region = {
        nodes: [{ op: "Mul", args: [{ in: 0 }, { in: 1 }], params: {}, dtype: "f32", shape: [T, S, D] }],
        result: 0,
      };
      const post: Region = {
        nodes: [{ op: "Add", args: [{ in: 1 }, { in: 0 }], params: {}, dtype: "f32", shape: [T, D] }],
        result: 0,
      };
      const req: KernelRequest = {
        kind: "indexed-matmul",
        op: "IndexedMatMul",
        region: null,
        emulated16: false,
        inputs: [access("f32", [T, S, F]), access(wDtype(wk), [E, D, F]), access("f32", [T, E]), access("f32", [T, D])],
        output: access("f32", [T, D]),
        params: {
          accDtype: "f32",
          epilogue: weighting,
          routing: { by: "gates", slots: S, combine: "sum", post },
        } as never,
      };
      const got = launch(req, caps, [hs, wd.kernel, gates, resid], T * D);
      const b = new Builder();
      const y = b.matmul(
        b.const("h", "f32", [E, T, F]),
        b.transpose(widen(b, b.const("wd", wDtype(wk), [E, D, F])), [0, 2, 1]),
      );
      const gt = b.reshape(b.transpose(b.const("gates", "f32", [T, E]), [1, 0]), [E, T, 1]);
      b.output("y", b.add(b.const("resid", "f32", [T, D]), b.sum(b.mul(y, gt), [0])));
      const o = evaluate(b.build(), { consts: { h: hd, wd: wd.host, gates, resid } }).outputs.y!.data;
      expectClose(got, o, Math.max(...Array.from(o, Math.abs)), 2e-5);
    });
  }

  it("refuses a per-slot epilogue that is not elementwise (a row reduction)", () => {
    const T = 2,
      E = 4,
      S = 2,
      D = 8,
      F = 8;
    const red: Region = {
      nodes: [
        {
          op: "Reduce",
          args: [{ in: 0 }],
          params: { kind: "sum", axes: [-1], keepdim: true },
          dtype: "f32",
          shape: [T, S, 1],
        },
      ],
      result: 0,
    };
    const req: KernelRequest = {
      kind: "indexed-matmul",
      op: "IndexedMatMul",
      region: null,
      emulated16: false,
      inputs: [access("f32", [T, F]), access("f32", [E, D, F]), access("f32", [T, E])],
      output: access("f32", [T, S, 1]),
      params: {
        accDtype: "f32",
        epilogue: red,
        routing: { by: "gates", slots: S, combine: "slots", post: null },
      } as never,
    };
    expect(() => synthesizeRequest(req, CAPS, "bad")).toThrow(expect.objectContaining({ code: "bad_param" }));
  });
});
